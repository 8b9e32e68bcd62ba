/* Capture of another thread's native stack (stack.h). The handler, installed only for the
 * capture (sigaction, restored after), does only async-signal-safe work: it copies the
 * interrupted registers (the signal's ucontext) and parks the thread (nanosleep) while the
 * checker thread walks its stack, which cannot change meanwhile: the handler's own frames are
 * all below the interrupted stack pointer. No allocation, no lock, no TLS of a library loaded
 * later (libunwind runs in the checker thread only). A state word arms it, so a late or stray
 * signal records nothing; a handler left waiting past 2 s returns on its own. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include "stack.h"
#include "unw.h"

#define NCG_STACK_SIG (SIGRTMIN + 7)
#define NCG_PARK_MS 2000 /* longest a thread waits in the handler for the walk */

/* ARMED -> (handler) BUSY -> PARKED -> (checker, walk done) RELEASED -> (handler) DONE; the
 * handler gives up PARKED -> ABANDONED after NCG_PARK_MS; the checker disarms ARMED -> IDLE. */
enum { S_IDLE = 0, S_ARMED, S_BUSY, S_PARKED, S_RELEASED, S_DONE, S_ABANDONED };

static struct {
    int state;     /* S_*, __atomic */
    int broken;    /* a handler never left: the state is not ours to reuse */
    pid_t pid;     /* __atomic: written before arming, read by the handler */
    ucontext_t uc; /* the interrupted registers, written by the handler before PARKED */
} S;

static void on_signal(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    int saved = errno, armed = S_ARMED;
    if (si->si_code != SI_TKILL || si->si_pid != __atomic_load_n(&S.pid, __ATOMIC_RELAXED))
        return; /* not our tgkill */
    if (!ucv || !__atomic_compare_exchange_n(&S.state, &armed, S_BUSY, 0, __ATOMIC_ACQUIRE,
                                             __ATOMIC_RELAXED))
        return;
    memcpy(&S.uc, ucv, sizeof S.uc);
    /* The registers before PARKED: the checker reads them once it sees PARKED. */
    __atomic_store_n(&S.state, S_PARKED, __ATOMIC_RELEASE);
    struct timespec ms = {0, 1000000};
    for (int t = 0; t < NCG_PARK_MS && __atomic_load_n(&S.state, __ATOMIC_ACQUIRE) == S_PARKED; t++)
        nanosleep(&ms, NULL);
    int parked = S_PARKED;
    if (!__atomic_compare_exchange_n(&S.state, &parked, S_ABANDONED, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        __atomic_store_n(&S.state, S_DONE, __ATOMIC_RELEASE); /* RELEASED: the walk is over */
    errno = saved;
}

/* Reads one word of this process's memory without faulting on a bad address. */
static int peek(uint64_t addr, uint64_t *val)
{
    struct iovec l = {val, sizeof *val}, r = {(void *)(uintptr_t)addr, sizeof *val};
    return syscall(SYS_process_vm_readv, getpid(), &l, 1UL, &r, 1UL, 0UL) == sizeof *val ? 0 : -1;
}

static uint64_t uc_reg(const ucontext_t *uc, int which)
{
#if defined(__x86_64__)
    return (uint64_t)uc->uc_mcontext.gregs[which == 0 ? REG_RIP : REG_RBP];
#elif defined(__aarch64__)
    return which == 0 ? (uint64_t)uc->uc_mcontext.pc : (uint64_t)uc->uc_mcontext.regs[29];
#else
    (void)uc;
    (void)which;
    return 0;
#endif
}

/* The parked thread's stack from its registers, innermost first: pcs[0] is the interrupted pc
 * + 1 (read as a return address), then return addresses. libunwind when it is there, else a
 * frame-pointer walk with checked reads. Checker thread. */
static int walk(const ucontext_t *uc, uint64_t *pcs, int max)
{
    int n = 0;
    const struct ncg_unw *U = ncg_unw();
    uint64_t ip = uc_reg(uc, 0);
    if (!ip || max <= 0)
        return 0;
    pcs[n++] = ip + 1;
    if (U->init_local2 && U->step && U->get_reg) {
        static ncg_unw_buf cur; /* one capture at a time (checker thread) */
        static ucontext_t copy;
        copy = *uc;
        if (U->init_local2(&cur, &copy, 1 /* UNW_INIT_SIGNAL_FRAME */) == 0) {
            while (n < max && U->step(&cur) > 0) {
                uint64_t pc = 0;
                if (U->get_reg(&cur, NCG_UNW_RIP, &pc) != 0 || !pc)
                    break;
                pcs[n++] = pc;
            }
            return n;
        }
    }
    uint64_t fp = uc_reg(uc, 1), ret, next;
    while (n < max && fp && !(fp & 7) && peek(fp + 8, &ret) == 0 && peek(fp, &next) == 0 && ret) {
        pcs[n++] = ret;
        if (next <= fp || next - fp > (1u << 24)) /* frames go up the stack, not too far */
            break;
        fp = next;
    }
    return n;
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

/* Waits up to ms for the state to become want. */
static int wait_state(int want, long ms)
{
    for (long t = 0; t < ms; t++) {
        if (__atomic_load_n(&S.state, __ATOMIC_ACQUIRE) == want)
            return 1;
        sleep_ms(1);
    }
    return __atomic_load_n(&S.state, __ATOMIC_ACQUIRE) == want;
}

int ncg_stack_capture(uint32_t tid, uint64_t *pcs, int max)
{
    int sig = NCG_STACK_SIG, rc, n = 0;
#if defined(__SANITIZE_THREAD__)
    /* TSan runs an asynchronous signal's handler later, at its own safe point: the registers
     * the handler sees are no longer where the thread is, and a walk from them reads garbage. */
    (void)sig, (void)rc, (void)n, (void)pcs, (void)tid, (void)max;
    return -ENOTSUP;
#endif
    if (S.broken)
        return -EBUSY;
    if (!tid || tid == (uint32_t)syscall(SYS_gettid) || max <= 0)
        return -EINVAL;
    (void)ncg_unw(); /* loaded here, not while the thread is parked */
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
    __atomic_store_n(&S.pid, getpid(), __ATOMIC_RELAXED);
    __atomic_store_n(&S.state, S_ARMED, __ATOMIC_RELEASE);
    rc = 0;
    if (syscall(SYS_tgkill, getpid(), (pid_t)tid, sig) != 0)
        rc = -errno;
    else if (!wait_state(S_PARKED, 300))
        rc = -ETIMEDOUT;
    if (rc == 0) {
        n = walk(&S.uc, pcs, max);
        int parked = S_PARKED;
        if (!__atomic_compare_exchange_n(&S.state, &parked, S_RELEASED, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            n = 0; /* it gave up waiting: the stack may have moved under the walk */
        if (!wait_state(S_DONE, 200) && __atomic_load_n(&S.state, __ATOMIC_ACQUIRE) != S_ABANDONED)
            S.broken = 1;
    } else {
        int armed = S_ARMED;
        if (!__atomic_compare_exchange_n(&S.state, &armed, S_IDLE, 0, __ATOMIC_ACQUIRE,
                                         __ATOMIC_ACQUIRE)) {
            /* The handler started after all: let it go, and wait for it to leave. */
            int parked = S_PARKED;
            wait_state(S_PARKED, 200);
            __atomic_compare_exchange_n(&S.state, &parked, S_RELEASED, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE);
            int st = wait_state(S_DONE, 200) ? S_DONE : __atomic_load_n(&S.state, __ATOMIC_ACQUIRE);
            S.broken = st != S_DONE && st != S_ABANDONED;
        }
    }
    /* SIG_IGN first: it discards the signal if it is still pending (SIG_DFL would end the
     * process when it is delivered), then the application's disposition back. */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(sig, &ign, NULL);
    sigaction(sig, &old, NULL);
    if (!S.broken)
        __atomic_store_n(&S.state, S_IDLE, __ATOMIC_RELEASE);
    if (rc != 0)
        return rc;
    return n > 0 ? n : -ENOENT;
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
    case -ENOTSUP:
        return "not under ThreadSanitizer (it defers signals to its own safe points)";
    default:
        return strerror(-rc);
    }
}
