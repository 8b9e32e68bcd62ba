/* Capture of another thread's native stack (stack.h). The handler is installed only for the
 * capture (sigaction, restored after) and is async-signal-safe in practice: libunwind's
 * unw_backtrace when libunwind is there, else glibc's backtrace(), warmed up once here (its
 * first call loads libgcc_s). A state word arms it, so a late or stray signal records nothing. */
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include "stack.h"
#include "symbol.h"

#define NCG_STACK_SIG (SIGRTMIN + 7)

enum { S_IDLE = 0, S_ARMED, S_BUSY, S_DONE };

typedef int (*bt_fn)(void **pcs, int max);

static struct {
    int state;  /* S_*, __atomic: the checker arms it, the handler claims and completes it */
    int broken; /* a handler never finished: the buffer is not ours to reuse */
    pid_t pid;
    bt_fn bt;
    int n;
    uint64_t ip; /* the interrupted pc, from the signal's ucontext */
    void *pcs[NCG_STACK_MAX];
} S;

static uint64_t context_ip(const void *ucv)
{
    const ucontext_t *uc = ucv;
#if defined(__x86_64__)
    return (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uint64_t)uc->uc_mcontext.pc;
#else
    (void)uc;
    return 0;
#endif
}

static void on_signal(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    int saved = errno, armed = S_ARMED;
    if (si->si_code != SI_TKILL || si->si_pid != S.pid)
        return; /* not our tgkill */
    if (!__atomic_compare_exchange_n(&S.state, &armed, S_BUSY, 0, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED))
        return;
    S.ip = ucv ? context_ip(ucv) : 0;
    S.n = S.bt(S.pcs, NCG_STACK_MAX);
    /* The frames before the state: the checker reads them after it sees S_DONE. */
    __atomic_store_n(&S.state, S_DONE, __ATOMIC_RELEASE);
    errno = saved;
}

/* Whether thread tid of this process blocks sig (SigBlk in /proc). 1, 0, or -errno. */
static int thread_blocks(uint32_t tid, int sig)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/self/task/%u/status", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ESRCH : -errno;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -EIO;
    buf[n] = 0;
    const char *p = strstr(buf, "\nSigBlk:");
    if (!p)
        return 0;
    unsigned long long mask = strtoull(p + 8, NULL, 16);
    return sig >= 1 && sig <= 64 && (mask >> (sig - 1) & 1);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Waits up to ms for the handler to complete. */
static int wait_done(long ms)
{
    for (long t = 0; t < ms; t++) {
        if (__atomic_load_n(&S.state, __ATOMIC_ACQUIRE) == S_DONE)
            return 1;
        sleep_ms(1);
    }
    return __atomic_load_n(&S.state, __ATOMIC_ACQUIRE) == S_DONE;
}

int ncg_stack_capture(uint32_t tid, uint64_t *pcs, int max)
{
    int sig = NCG_STACK_SIG, rc;
    if (S.broken)
        return -EBUSY;
    if (!tid || tid == (uint32_t)syscall(SYS_gettid) || max <= 0)
        return -EINVAL;
    if (!S.bt) {
        S.bt = ncg_symbol_unw_backtrace();
        if (!S.bt) {
            void *warm[4];
            backtrace(warm, 4); /* loads libgcc_s now, not in the handler */
            S.bt = backtrace;
        }
    }
    if ((rc = thread_blocks(tid, sig)) != 0)
        return rc > 0 ? -EAGAIN : rc;
    struct sigaction old, sa;
    if (sigaction(sig, NULL, &old) != 0)
        return -errno;
    if ((old.sa_flags & SA_SIGINFO) || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN))
        return -EEXIST; /* the application's signal: leave it alone */
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) != 0)
        return -errno;
    S.pid = getpid();
    S.n = 0;
    __atomic_store_n(&S.state, S_ARMED, __ATOMIC_RELEASE);
    rc = 0;
    if (syscall(SYS_tgkill, S.pid, (pid_t)tid, sig) != 0)
        rc = -errno;
    else if (!wait_done(300))
        rc = -ETIMEDOUT;
    if (rc != 0) {
        int armed = S_ARMED;
        if (!__atomic_compare_exchange_n(&S.state, &armed, S_IDLE, 0, __ATOMIC_ACQUIRE,
                                         __ATOMIC_ACQUIRE) &&
            !wait_done(200)) /* the handler is running: give it a moment, then never reuse */
            S.broken = __atomic_load_n(&S.state, __ATOMIC_ACQUIRE) != S_DONE;
        if (!S.broken)
            __atomic_store_n(&S.state, S_IDLE, __ATOMIC_RELEASE);
    }
    /* SIG_IGN first: it discards the signal if it is still pending (SIG_DFL would end the
     * process when it is delivered), then the application's disposition back. */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(sig, &ign, NULL);
    sigaction(sig, &old, NULL);
    if (rc != 0)
        return rc;
    /* Drop the handler's own frames: keep from the interrupted pc on (its frame's entry). */
    int n = S.n < NCG_STACK_MAX ? S.n : NCG_STACK_MAX, first = -1, out = 0;
    for (int i = 0; i < n && first < 0; i++)
        if (S.ip && (uint64_t)(uintptr_t)S.pcs[i] == S.ip)
            first = i;
    if (first < 0) /* unwinder did not report the exact pc: the handler and the trampoline */
        first = n > 2 ? 2 : n;
    if (first < n && S.ip && (uint64_t)(uintptr_t)S.pcs[first] == S.ip) {
        pcs[out++] = S.ip + 1; /* the exact pc, read as a return address */
        first++;
    }
    for (int i = first; i < n && out < max; i++)
        if (S.pcs[i])
            pcs[out++] = (uint64_t)(uintptr_t)S.pcs[i];
    __atomic_store_n(&S.state, S_IDLE, __ATOMIC_RELEASE);
    return out ? out : -ENOENT;
}

const char *ncg_stack_strerror(int rc)
{
    switch (rc) {
    case -EEXIST:
        return "the application has its own handler on SIGRTMIN+7";
    case -EAGAIN:
        return "the thread blocks SIGRTMIN+7";
    case -ETIMEDOUT:
        return "the thread did not answer within 300 ms";
    case -EBUSY:
        return "an earlier capture never finished";
    case -ESRCH:
        return "the thread is gone";
    case -EINVAL:
        return "not an application thread";
    default:
        return strerror(-rc);
    }
}
