/* Python frames of application threads (pyframes.h): CPython found at run time, its
 * faulthandler entry point called from the checker thread (as faulthandler's own watchdog
 * thread does, without the GIL) into a memfd, the text parsed; and the tid -> pthread_t table
 * that ties a ring record's thread to Python's thread id. */
#define _GNU_SOURCE
#include "pyframes.h"

#include <ctype.h>
#include <elf.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dlsym.h"

/* ---------- tid -> pthread_t (open addressing; entries are never removed, a reused tid is
 * overwritten by the new thread's registration at its first call) ---------- */

#define NCG_PY_THREADS 1024u
static struct {
    uint32_t tid;
    unsigned long thread;
} T[NCG_PY_THREADS];

void ncg_py_register_thread(uint32_t tid)
{
    if (!tid)
        return;
    unsigned long me = (unsigned long)pthread_self();
    for (uint32_t i = 0, k = tid * 2654435761u; i < NCG_PY_THREADS; i++, k++) {
        uint32_t *slot = &T[k % NCG_PY_THREADS].tid, cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (cur == 0) {
            uint32_t zero = 0;
            if (!__atomic_compare_exchange_n(slot, &zero, tid, 0, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE) &&
                zero != tid)
                continue;
            cur = tid;
        }
        if (cur == tid) {
            __atomic_store_n(&T[k % NCG_PY_THREADS].thread, me, __ATOMIC_RELEASE);
            return;
        }
    }
}

unsigned long ncg_py_thread_of(uint32_t tid)
{
    for (uint32_t i = 0, k = tid * 2654435761u; tid && i < NCG_PY_THREADS; i++, k++) {
        uint32_t cur = __atomic_load_n(&T[k % NCG_PY_THREADS].tid, __ATOMIC_ACQUIRE);
        if (cur == tid)
            return __atomic_load_n(&T[k % NCG_PY_THREADS].thread, __ATOMIC_ACQUIRE);
        if (cur == 0)
            return 0;
    }
    return 0;
}

/* ---------- finding CPython ---------- */

typedef const char *(*dump_fn)(int fd, void *interp, void *tstate);
typedef void *(*interp_fn)(void);
typedef int (*isinit_fn)(void);

static struct {
    int tried;
    dump_fn dump;
    interp_fn interp; /* PyInterpreterState_Main, else PyInterpreterState_Head */
    isinit_fn isinit;
} PY;

static int find_libpython(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const char *b = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    b = b ? b + 1 : info->dlpi_name;
    if (b && strncmp(b, "libpython3.", 11) == 0) {
        snprintf(arg, 512, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

/* A local (not exported) function of the loaded object at base, from the .symtab of its file
 * on disk: builds that keep faulthandler's entry point hidden (3.13, some shared 3.9/3.10) but
 * are not stripped. 0 when absent. Checker thread; reads the file, allocates temporarily. */
static uintptr_t file_symbol(const char *path, uintptr_t base, const char *name)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    uintptr_t found = 0;
    ElfW(Shdr) *sh = NULL;
    char *str = NULL;
    ElfW(Sym) *sym = NULL;
    ElfW(Ehdr) eh;
    if (fd < 0)
        return 0;
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
        eh.e_shentsize != sizeof *sh || eh.e_shnum == 0 || eh.e_shnum > 4096)
        goto out;
    size_t shsz = (size_t)eh.e_shnum * sizeof *sh;
    if (!(sh = malloc(shsz)) || pread(fd, sh, shsz, (off_t)eh.e_shoff) != (ssize_t)shsz)
        goto out;
    for (unsigned i = 0; i < eh.e_shnum && !found; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh.e_shnum ||
            sh[i].sh_size > (64u << 20) || sh[sh[i].sh_link].sh_size > (64u << 20))
            continue;
        const ElfW(Shdr) *ss = &sh[sh[i].sh_link];
        sym = malloc(sh[i].sh_size);
        str = malloc(ss->sh_size + 1);
        if (!sym || !str ||
            pread(fd, sym, sh[i].sh_size, (off_t)sh[i].sh_offset) != (ssize_t)sh[i].sh_size ||
            pread(fd, str, ss->sh_size, (off_t)ss->sh_offset) != (ssize_t)ss->sh_size)
            goto out;
        str[ss->sh_size] = 0;
        for (size_t k = 0; k < sh[i].sh_size / sizeof *sym; k++)
            if (ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC && sym[k].st_shndx != SHN_UNDEF &&
                sym[k].st_name < ss->sh_size && strcmp(str + sym[k].st_name, name) == 0) {
                found = base + sym[k].st_value;
                break;
            }
        free(sym);
        free(str);
        sym = NULL;
        str = NULL;
    }
out:
    free(sh);
    free(sym);
    free(str);
    close(fd);
    return found;
}

/* faulthandler's entry point in the object that holds Py_IsInitialized, from its .symtab. */
static dump_fn hidden_dump(void)
{
    Dl_info di;
    struct link_map *map = NULL;
    if (!PY.isinit || !dladdr1((void *)PY.isinit, &di, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return NULL;
    const char *path = map->l_name && map->l_name[0] == '/' ? map->l_name : "/proc/self/exe";
    return (dump_fn)file_symbol(path, map->l_addr, "_Py_DumpTracebackThreads");
}

static void py_bind(void *h)
{
    PY.dump = (dump_fn)ncg_real_dlsym(h, "_Py_DumpTracebackThreads");
    PY.isinit = (isinit_fn)ncg_real_dlsym(h, "Py_IsInitialized");
    PY.interp = (interp_fn)ncg_real_dlsym(h, "PyInterpreterState_Main");
    if (!PY.interp)
        PY.interp = (interp_fn)ncg_real_dlsym(h, "PyInterpreterState_Head");
}

int ncg_py_present(void)
{
    if (!PY.tried) {
        PY.tried = 1;
        /* The executable (Debian's python3) or a libpython in the global scope (a shared build,
         * an embedding program), else one loaded RTLD_LOCAL (a plugin that embeds Python). */
        py_bind(RTLD_DEFAULT);
        if (!PY.dump || !PY.isinit) {
            char name[512] = "";
            dl_iterate_phdr(find_libpython, name);
            void *h = name[0] ? dlopen(name, RTLD_NOLOAD | RTLD_LAZY) : NULL;
            if (h)
                py_bind(h); /* the handle stays open: libpython stays while we may call it */
        }
        if (!PY.dump && PY.isinit)
            PY.dump = hidden_dump();
    }
    return PY.dump && PY.isinit && PY.isinit();
}

long ncg_py_dump_text(char *buf, size_t cap)
{
    if (!cap)
        return -EINVAL;
    buf[0] = 0;
    if (!ncg_py_present())
        return -ENOSYS;
    /* A memfd: the writer never blocks on a full pipe, whatever the text's length. */
    int fd = memfd_create("ncclguard-py", MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    const char *err = PY.dump(fd, PY.interp ? PY.interp() : NULL, NULL);
    long len = 0;
    if (err) {
        len = snprintf(buf, cap, "(python: %s)\n", err);
    } else if (lseek(fd, 0, SEEK_SET) == 0) {
        while ((size_t)len < cap - 1) {
            ssize_t n = read(fd, buf + len, cap - 1 - (size_t)len);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            len += n;
        }
        buf[len] = 0;
    }
    close(fd);
    return len;
}

/* ---------- faulthandler's text ---------- */

/* "Thread 0x00007f...", "Current thread 0x..." at the start of line p: the id, else 0. */
static int thread_header(const char *p, unsigned long *id)
{
    if (strncmp(p, "Current thread 0x", 17) == 0)
        p += 17;
    else if (strncmp(p, "Thread 0x", 9) == 0)
        p += 9;
    else
        return 0;
    char *e;
    *id = strtoul(p, &e, 16);
    return e != p;
}

/* `  File "x.py", line 12 in fn` (faulthandler's format in 3.9..3.14). */
static int frame_line(const char *p, const char *end, struct ncg_pyframe *f)
{
    if (strncmp(p, "  File \"", 8) != 0)
        return 0;
    p += 8;
    const char *q = p;
    /* The name ends at the last `", line ` of the line (a file name may hold quotes). */
    const char *mark = NULL;
    for (const char *s = p; s + 8 <= end; s++)
        if (strncmp(s, "\", line ", 8) == 0)
            mark = s;
    if (!mark)
        return 0;
    snprintf(f->file, sizeof f->file, "%.*s", (int)(mark - q), q);
    p = mark + 8;
    f->line = isdigit((unsigned char)*p) ? atoi(p) : -1;
    const char *in = strstr(p, " in ");
    if (!in || in > end)
        snprintf(f->func, sizeof f->func, "?");
    else
        snprintf(f->func, sizeof f->func, "%.*s", (int)(end - in - 4), in + 4);
    f->src[0] = 0;
    return 1;
}

int ncg_py_parse(const char *text, unsigned long thread, struct ncg_pystack *out)
{
    int in = 0, found = 0;
    out->n = 0;
    out->more = 0;
    out->thread = thread;
    for (const char *p = text; p && *p;) {
        const char *end = strchr(p, '\n');
        if (!end)
            end = p + strlen(p);
        unsigned long id;
        if (thread_header(p, &id)) {
            in = id == thread;
            found |= in;
        } else if (in) {
            struct ncg_pyframe f;
            if (frame_line(p, end, &f)) {
                if (out->n < NCG_PY_MAX)
                    out->f[out->n++] = f;
                else
                    out->more++;
            } else if (strncmp(p, "  ...", 5) == 0) {
                out->more++;
            }
        }
        p = *end ? end + 1 : end;
    }
    return found ? 0 : -ESRCH;
}

/* Line `line` of file, leading blanks stripped, into out ("" when unreadable). */
static void source_line(const char *file, int line, char *out, size_t cap)
{
    out[0] = 0;
    if (line <= 0 || file[0] == '<')
        return;
    FILE *f = fopen(file, "re");
    if (!f)
        return;
    char buf[512];
    for (int n = 1; fgets(buf, sizeof buf, f); n++) {
        size_t len = strlen(buf);
        int whole = len && buf[len - 1] == '\n';
        if (n == line) {
            char *s = buf;
            while (*s == ' ' || *s == '\t')
                s++;
            s[strcspn(s, "\r\n")] = 0;
            snprintf(out, cap, "%s", s);
            break;
        }
        while (!whole && fgets(buf, sizeof buf, f)) { /* the rest of a long line */
            len = strlen(buf);
            whole = len && buf[len - 1] == '\n';
        }
    }
    fclose(f);
}

int ncg_py_capture(uint32_t tid, struct ncg_pystack *out)
{
    enum { CAP = 256 * 1024 };
    out->n = 0;
    out->tid = tid;
    unsigned long th = ncg_py_thread_of(tid);
    /* mapped for the capture only: nothing reserved in processes that never need it */
    char *text = mmap(NULL, CAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (text == MAP_FAILED)
        return -ENOMEM;
    int bad = ncg_py_dump_text(text, CAP) < 0                          ? -ENOSYS
              : !th || ncg_py_parse(text, th, out) != 0 || out->n == 0 ? -ESRCH
                                                                       : 0;
    munmap(text, CAP);
    if (bad)
        return bad;
    out->tid = tid;
    for (int i = 0; i < out->n; i++)
        source_line(out->f[i].file, out->f[i].line, out->f[i].src, sizeof out->f[i].src);
    return 0;
}
