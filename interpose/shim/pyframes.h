/* Python frames of an application thread, when the process runs CPython (3.9 and later),
 * found at run time (libpython is never linked): CPython's faulthandler entry point
 * _Py_DumpTracebackThreads, which reads every thread's frames without the GIL and is safe while
 * those threads are blocked in C code, writes into a memfd; the text is parsed here. Python
 * names threads by pthread_t, the ring by kernel tid: each thread that issues NCCL calls
 * registers the pair once, at its first call (off the steady-state hot path). */
#ifndef NCG_PYFRAMES_H
#define NCG_PYFRAMES_H

#include <stddef.h>
#include <stdint.h>

#define NCG_PY_MAX 16 /* frames kept, innermost first */

struct ncg_pyframe {
    char file[160];
    char func[64];
    int line;
    char src[128]; /* the source line, stripped; "" when unreadable */
};

struct ncg_pystack {
    uint32_t tid;         /* kernel tid of the thread */
    unsigned long thread; /* its Python thread id (pthread_t) */
    int n;                /* frames in f */
    int more;             /* frames left out beyond NCG_PY_MAX */
    struct ncg_pyframe f[NCG_PY_MAX];
};

/* Remember that kernel thread tid is pthread_self() (the calling thread). Any thread, at its
 * first recorded NCCL call; lock-free, no allocation, no syscall. */
void ncg_py_register_thread(uint32_t tid);

/* The pthread_t registered for tid, or 0. Any thread; lock-free. */
unsigned long ncg_py_thread_of(uint32_t tid);

/* Whether this process runs an initialised CPython. Checker thread; may call dlopen(NOLOAD). */
int ncg_py_present(void);

/* Every Python thread's traceback, faulthandler's text ("Thread 0x... (most recent call first):"
 * then "  File \"f.py\", line N in fn" lines), into buf (NUL-terminated). Returns the length,
 * or a negative errno: -ENOSYS not a CPython process. Checker thread only (one at a time);
 * never takes the GIL; a memfd and file I/O, no allocation beyond buf. */
long ncg_py_dump_text(char *buf, size_t cap);

/* The Python frames of the thread with kernel tid (registered), innermost first, with source
 * lines where the file is readable. 0 with out->n >= 1; -ENOSYS not Python, -ESRCH that thread
 * runs no Python frame (or was never registered). Checker thread only. */
int ncg_py_capture(uint32_t tid, struct ncg_pystack *out);

/* Parses faulthandler's text: the frames of Python thread `thread` into out (innermost first,
 * no source lines). Pure; returns 0 or -ESRCH when the thread is not in the text. */
int ncg_py_parse(const char *text, unsigned long thread, struct ncg_pystack *out);

#endif
