/* scen: divergence scenarios for the checker's end-to-end tests, written as an ordinary NCCL
 * program (run under ncg-launch, with or without the shim). Usage: scen SCENARIO [ITERS]
 *   healthy  several comms (world, a split, a second root comm driven by a second thread),
 *            groups, a p2p ring, rank 0 pausing before a barrier: must exit 0, no verdict
 *   count    rank 1 calls AllReduce with count+1 at iteration ITERS/2 (MISMATCH)
 *   newgroup rank 1 splits the world comm (a new process group) at ITERS/2 while the others
 *            call AllReduce on it (MISMATCH: CommSplit vs AllReduce)
 *   split    comm split by rank%2; rank 2 calls Broadcast instead of AllReduce in the even half
 *   p2p      pipeline ring of send/recv; rank 2 sends one element more to rank 3 (P2P MISMATCH)
 *   early    rank 1 returns from main at ITERS/2 (RANK EXITED)
 *   mallocspin  20 AllReduce, then rank 1 SIGKILLs itself and the others spin in malloc/free
 *            for ITERS seconds (the stack capture interrupts a thread inside malloc)
 *   abort    rank 1 calls ncclCommAbort at ITERS/2, waits 1 s, returns (RANK EXITED, named)
 *   late     ITERS AllReduce, then every rank destroys its comms and exits, but the last rank
 *            (or SCEN_VICTIM) first waits $SCEN_LATE_S (default 1) seconds and issues one more
 *            AllReduce, which the others never match (RANK EXITED after ncclCommDestroy, the
 *            checker's host gone); SCEN_LATE_SPLIT=1: all on the split child of rank%2 (the
 *            victim's half holds no checker host when rank 0 is not in it, rank 0 leaves
 *            1.5 s after the others and the victim's call comes at 2.5 s); SCEN_LATE_LEAVE=R:MS:
 *            rank R destroys its comms and exits MS ms after the others
 *   kill     rank 1 SIGKILLs itself at ITERS/2 (RANK DIED)
 *   inittime prints how long this rank's ncclCommInitRank of the world comm took, and then an
 *            ncclCommSplit of it (after an AllReduce: every rank enters it together)
 *   crashinit right after init and one AllReduce rank 1 (or SCEN_VICTIM) SIGKILLs itself; the
 *            others make 20 AllReduces (RANK DIED: its REPORT went out before init returned)
 *   hostskip rank 0 (the checker's host) makes ITERS/2 AllReduces and returns from main, the
 *            others make ITERS (RANK EXITED: the host's process stays while they run)
 *   hostfirst healthy: rank 0 returns right after its ITERS AllReduces; the others sleep 1.5 s,
 *            then make 20 AllReduces on a split child without rank 0 and exit 0 (with
 *            SCEN_VICTIM, that rank SIGKILLs itself at the 11th of them: RANK DIED)
 *   stop     rank 2 SIGSTOPs itself at ITERS/2 (RANK DIED after the heartbeat timeout)
 *   lag      rank 1 sleeps $SCEN_LAG_S (default 3) seconds at ITERS/2, then goes on (LAG);
 *            $SCEN_LAG_TAIL_S: then every rank goes on with 100 all-reduces a second that long
 *   steady   AllReduce(8 floats) in a loop for ITERS seconds (side-channel traffic benchmark)
 *   invert   world and a second comm (SCEN_INVERT=split: a split child, the default; root: a
 *            second root comm; p2p: rank 0 sends to rank 1 on world instead; streams: the split
 *            child on a second stream of the thread) used in turn; at ITERS/2 rank 1 (or
 *            SCEN_VICTIM) takes them in the other order (DEADLOCK; with streams only in the
 * synchronous mode: two streams overlap) steady: $SCEN_GAP_US spaces the calls (as a GPU would);
 * $SCEN_PORT_FILE gets the checker's port (rank 0); with $SCEN_FDS=N rank 0 then opens up to N
 * descriptors and prints how many it got and its checker thread's CPU seconds. $SCEN_SPLIT_WORLD=1:
 * in split, every rank calls AllReduce on the world comm at the end. $SCEN_VICTIM overrides the
 * rank that kills/stops itself or leaves early. $SCEN_RTSIG=handle installs the application's own
 * handler on SIGRTMIN+7 (the signal ncclguard borrows to capture stacks), =block blocks that signal
 * in the main thread; either way the checker must leave it alone. The handler, if it ever runs,
 * prints "scen: own handler ran". healthy also forks a child (a data-loader worker) that exits
 * through exit() meanwhile. Before the diverging call, the diverging rank prints "scen: diverge at
 * <unix time>". Asynchronous mode (FAKENCCL_ASYNC=1): calls enqueue on the thread's stream; the
 * host synchronizes (and checks the comm's async error) every 4 iterations, as a training step's
 * loss.item() would, and before reading a result.
 * A failed NCCL call prints "scen: rank R: <call>: <error>" and exits 3. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdint.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"

static int rank, world;
static ncclComm_t cur; /* the comm of the latest collective, for ncclGetLastError */

/* SCEN_PORT_FILE: the port in bytes 46..47 of the id's tail (docs/checker.md), as text. */
static void write_port(const char *path, const ncclUniqueId *id)
{
    const unsigned char *u = (const unsigned char *)id->internal;
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%u\n", (unsigned)(u[46] << 8 | u[47]));
        fclose(f);
    }
}

/* SCEN_FDS=N: how many descriptors the application can still open, and the CPU seconds the
 * checker thread ("ncclguard") has used so far. */
static void try_fds(int want)
{
    int got = 0, *fds = calloc((size_t)want, sizeof *fds);
    while (fds && got < want && (fds[got] = open("/dev/null", O_RDONLY)) >= 0)
        got++;
    for (int i = 0; i < got; i++)
        close(fds[i]);
    free(fds);
    double cpu = -1;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char p[300], name[64] = "", st[1024];
        snprintf(p, sizeof p, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(p, "r");
        if (!f)
            continue;
        if (!fgets(name, sizeof name, f))
            name[0] = 0;
        fclose(f);
        if (strncmp(name, "ncclguard", 9))
            continue;
        snprintf(p, sizeof p, "/proc/self/task/%s/stat", e->d_name);
        if ((f = fopen(p, "r")) && fgets(st, sizeof st, f)) {
            char *q = strrchr(st, ')');
            unsigned long ut = 0, stt = 0;
            if (q && sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
                            &stt) == 2)
                cpu = (double)(ut + stt) / (double)sysconf(_SC_CLK_TCK);
        }
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    printf("scen: rank 0 opened %d of %d descriptors; checker thread cpu %.2f s\n", got, want, cpu);
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != ncclSuccess) {                                                                   \
            fprintf(stderr, "scen: rank %d: %s: %s\n", rank, #call, ncclGetErrorString(r_));       \
            if (cur)                                                                               \
                fprintf(stderr, "scen: rank %d: last error: %s\n", rank, ncclGetLastError(cur));   \
            exit(3);                                                                               \
        }                                                                                          \
    } while (0)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void mark(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    fprintf(stderr, "scen: diverge at %ld.%06ld\n", (long)tv.tv_sec, (long)tv.tv_usec);
}

static void own_handler(int sig)
{
    (void)sig;
    static const char msg[] = "scen: own handler ran\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
}

static void rtsig_setup(void)
{
    const char *m = getenv("SCEN_RTSIG");
    if (m && !strcmp(m, "handle")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = own_handler;
        sigaction(SIGRTMIN + 7, &sa, NULL);
    } else if (m && !strcmp(m, "block")) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGRTMIN + 7);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
    }
}

static float buf_a[4096], buf_b[4096 * 16];
static float buf_c[64], buf_d[64]; /* a second stream's own buffers (invert, streams) */

static void allreduce_on(ncclComm_t c, size_t n, cudaStream_t s)
{
    cur = c;
    if (s && s != ncg_test_stream()) /* another stream runs concurrently: other buffers */
        CK(ncclAllReduce(buf_c, buf_d, n, ncclFloat32, ncclSum, c, s));
    else
        CK(ncclAllReduce(buf_a, buf_b, n, ncclFloat32, ncclSum, c, s));
}

static void allreduce(ncclComm_t c, size_t n)
{
    allreduce_on(c, n, ncg_test_stream());
}

struct second {
    ncclComm_t comm;
    int iters;
};

static void *second_thread(void *arg)
{
    struct second *s = arg;
    static int32_t x[64], y[64 * 64];
    for (int i = 0; i < s->iters; i++) {
        CK(ncclAllGather(x, y, 16, ncclInt32, s->comm, ncg_test_stream()));
        CK(ncclBroadcast(x, x, 8, ncclInt32, i % world, s->comm, ncg_test_stream()));
        if (i % 4 == 3)
            CK(ncg_test_sync(s->comm));
    }
    return NULL;
}

static void p2p_ring(ncclComm_t c, size_t n, size_t send_extra)
{
    int next = (rank + 1) % world, prev = (rank + world - 1) % world;
    CK(ncclGroupStart());
    CK(ncclSend(buf_a, n + send_extra, ncclFloat32, next, c, ncg_test_stream()));
    CK(ncclRecv(buf_b, n, ncclFloat32, prev, c, ncg_test_stream()));
    CK(ncclGroupEnd());
}

/* slow: a data-parallel loop, compute then one all-reduce per step. The compute is a sleep of
 * SCEN_STEP_MS (30) x (1 + a random 0..SCEN_JITTER_PCT% + SCEN_SLOW_PCT% (20) on SCEN_SLOW_RANK,
 * from step SCEN_SLOW_SWITCH on SCEN_SLOW_RANK2 instead), on the host, or with SCEN_SLOW_ON=stream
 * under asynchronous NCCL a host function of that length enqueued on the stream before the
 * all-reduce (a kernel of given duration: the CPU CUDA runtime runs it on the stream). */
static void sleep_fn(void *arg)
{
    usleep((useconds_t)(uintptr_t)arg);
}

static int scen_slow(ncclComm_t comm, int steps)
{
    const char *e;
    int r1 = (e = getenv("SCEN_SLOW_RANK")) ? atoi(e) : -1;
    int r2 = (e = getenv("SCEN_SLOW_RANK2")) ? atoi(e) : r1;
    int sw = (e = getenv("SCEN_SLOW_SWITCH")) ? atoi(e) : steps;
    double pct = (e = getenv("SCEN_SLOW_PCT")) ? atof(e) : 20;
    double jit = (e = getenv("SCEN_JITTER_PCT")) ? atof(e) : 0;
    double ms = (e = getenv("SCEN_STEP_MS")) ? atof(e) : 30;
    int on_stream = (e = getenv("SCEN_SLOW_ON")) && !strcmp(e, "stream") && ncg_test_async();
    typedef int (*hostfn_t)(cudaStream_t, void (*)(void *), void *);
    hostfn_t launch = on_stream ? (hostfn_t)dlsym(RTLD_DEFAULT, "cudaLaunchHostFunc") : NULL;
    if (on_stream && !launch) {
        fprintf(stderr, "scen: cudaLaunchHostFunc not found\n");
        return 1;
    }
    unsigned seed = 0x9e3779b9u * (unsigned)(rank + 1) ^ (unsigned)getpid();
    for (int i = 0; i < steps; i++) {
        int slow = rank == (i < sw ? r1 : r2);
        double f =
            1 + (jit > 0 ? jit / 100 * rand_r(&seed) / RAND_MAX : 0) + (slow ? pct / 100 : 0);
        uintptr_t us = (uintptr_t)(ms * f * 1000);
        if (launch) {
            if (launch(ncg_test_stream(), sleep_fn, (void *)us) != 0) {
                fprintf(stderr, "scen: cudaLaunchHostFunc failed\n");
                return 1;
            }
        } else {
            usleep((useconds_t)us);
        }
        allreduce(comm, 1024);
        CK(ncg_test_sync(comm));
    }
    CK(ncclCommDestroy(comm));
    if (rank == 0)
        printf("scen: slow done\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: scen "
                "healthy|count|split|p2p|early|abort|kill|crashinit|hostskip|hostfirst|inittime|"
                "stop|lag|"
                "mallocspin|steady|slow "
                "[ITERS]\n");
        return 2;
    }
    const char *sc = argv[1];
    int iters = argc > 2 ? atoi(argv[2]) : 200;
    rtsig_setup();
    rank = ncg_test_rank();
    world = ncg_test_world();
    ncclUniqueId id;
    if (ncg_test_share_id(&id) != 0)
        return 1;
    ncclComm_t comm;
    if (!strcmp(sc, "invert"))
        ncg_test_stream(); /* the device's runtime before the comms, as a framework sets it up
                              (the checker then decides the completion mode from the first call) */
    double t_init = now_us();
    CK(ncclCommInitRank(&comm, world, id, rank));
    t_init = now_us() - t_init;
    if (getenv("SCEN_REVERSED")) { /* the scenario on a child whose comm ranks are reversed
                                      (key -rank): comm rank world-1-r is launcher rank r */
        ncclComm_t rev;
        CK(ncclCommSplit(comm, 0, -rank, &rev, NULL));
        comm = rev;
    }
    if (!strcmp(sc, "slow"))
        return scen_slow(comm, iters);
    int half = iters / 2;
    const char *vs = getenv("SCEN_VICTIM");
    int victim = vs ? atoi(vs) : -1;

    if (!strcmp(sc, "healthy")) {
        ncclUniqueId id2;
        if (ncg_test_share_id_named(&id2, "b") != 0)
            return 1;
        struct second s = {.iters = iters};
        CK(ncclCommInitRank(&s.comm, world, id2, rank));
        ncclComm_t sub;
        CK(ncclCommSplit(comm, rank % 2, rank, &sub, NULL));
        pid_t worker = fork(); /* a data-loader worker: inherits everything, uses nothing */
        if (worker == 0) {
            usleep(200000);
            exit(0);
        }
        pthread_t th;
        pthread_create(&th, NULL, second_thread, &s);
        for (int i = 0; i < iters; i++) {
            allreduce(comm, 16 + (size_t)(i % 7));
            CK(ncclGroupStart());
            CK(ncclReduceScatter(buf_a, buf_b, 4, ncclFloat32, ncclMax, comm, ncg_test_stream()));
            CK(ncclAllGather(buf_a, buf_b, 4, ncclFloat32, comm, ncg_test_stream()));
            CK(ncclGroupEnd());
            p2p_ring(comm, 32 + (size_t)(i % 3), 0);
            allreduce(sub, 8);
            if (i == half && rank == 0)
                usleep((useconds_t)(getenv("SCEN_PAUSE_S") ? atof(getenv("SCEN_PAUSE_S")) * 1e6
                                                           : 1e6)); /* before the barrier */
            if (i == half)
                allreduce(comm, 1);
            if (i % 4 == 3)
                CK(ncg_test_sync(comm));
        }
        pthread_join(th, NULL);
        int st = 0;
        if (worker > 0 &&
            (waitpid(worker, &st, 0) != worker || !WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
            fprintf(stderr, "scen: rank %d: worker exited badly (%d)\n", rank, st);
            return 4;
        }
        CK(ncclCommDestroy(sub));
        CK(ncclCommDestroy(s.comm));
        CK(ncclCommDestroy(comm));
        if (rank == 0)
            printf("scen: healthy done\n");
        return 0;
    }
    if (!strcmp(sc, "mallocspin")) { /* rank 1 dies; the others spin in malloc/free */
        for (int i = 0; i < 20; i++)
            allreduce(comm, 8);
        if (rank == (victim >= 0 ? victim : 1)) {
            usleep(300000);
            kill(getpid(), SIGKILL);
        }
        struct timeval t0, t;
        gettimeofday(&t0, NULL);
        unsigned long spins = 0, x = (unsigned long)rank + 1;
        do {
            for (int k = 0; k < 1000; k++, spins++) {
                x = x * 6364136223846793005ul + 1442695040888963407ul;
                void *p = malloc(16 + (x >> 52));
                if (p)
                    *(volatile char *)p = 1;
                free(p);
            }
            gettimeofday(&t, NULL);
        } while (t.tv_sec - t0.tv_sec < iters);
        printf("scen: rank %d spun %lu mallocs\n", rank, spins);
        return 0;
    }
    if (!strcmp(sc, "steady")) {
        if (getenv("SCEN_PORT_FILE") && rank == 0) /* the checker's port, from the id's tail */
            write_port(getenv("SCEN_PORT_FILE"), &id);
        struct timeval t0, t;
        gettimeofday(&t0, NULL);
        long n = 0, gap_us = getenv("SCEN_GAP_US") ? atol(getenv("SCEN_GAP_US")) : 0;
        int stop = 0;
        while (!stop) {
            for (int k = 0; k < 100; k++, n++) {
                allreduce(comm, 8);
                if (gap_us > 0)
                    usleep((useconds_t)gap_us); /* calls spaced like a GPU's */
            }
            gettimeofday(&t, NULL);
            /* everyone must agree on when to stop: rank 0 decides, the others follow */
            float s0 = (float)(rank == 0 && t.tv_sec - t0.tv_sec >= iters), s1 = 0;
            CK(ncclAllReduce(&s0, &s1, 1, ncclFloat32, ncclMax, comm, ncg_test_stream()));
            CK(ncg_test_sync(comm));
            stop = s1 > 0;
        }
        if (getenv("SCEN_FDS") && rank == 0)
            try_fds(atoi(getenv("SCEN_FDS")));
        CK(ncclCommDestroy(comm));
        if (rank == 0)
            printf("scen: steady: %ld calls per rank\n", n);
        return 0;
    }
    if (!strcmp(sc, "invert")) {
        const char *how = getenv("SCEN_INVERT") ? getenv("SCEN_INVERT") : "split";
        ncclComm_t other;
        if (!strcmp(how, "root")) {
            ncclUniqueId id2;
            if (ncg_test_share_id_named(&id2, "b") != 0)
                return 1;
            CK(ncclCommInitRank(&other, world, id2, rank));
        } else {
            CK(ncclCommSplit(comm, 0, rank, &other, NULL));
        }
        int p2p = !strcmp(how, "p2p");
        cudaStream_t s0 = ncg_test_stream();
        cudaStream_t s1 = !strcmp(how, "streams") ? ncg_test_stream_n(1) : s0;
        int inv = victim > 0 && victim < world ? victim : 1; /* the rank taking them inverted */
        for (int i = 0; i < iters; i++) {
            int inverted = i == half && rank == inv;
            if (inverted)
                mark();
            if (p2p && rank == 0 && i == half)
                CK(ncclSend(buf_a, 8, ncclFloat32, inv, comm, s0));
            else if (!inverted && !(p2p && i == half))
                allreduce_on(comm, 8, s0);
            allreduce_on(other, 8, s1);
            if (p2p && rank == inv && i == half)
                CK(ncclRecv(buf_b, 8, ncclFloat32, 0, comm, s0));
            else if (inverted)
                allreduce_on(comm, 8, s0);
            if (i % 4 == 3)
                CK(ncg_test_sync(comm));
        }
        CK(ncg_test_sync(comm));
        CK(ncclCommDestroy(other));
        CK(ncclCommDestroy(comm));
        if (rank == 0)
            printf("scen: invert done\n");
        return 0;
    }
    if (!strcmp(sc, "late")) {
        ncclComm_t sub = comm;
        if (getenv("SCEN_LATE_SPLIT"))
            CK(ncclCommSplit(comm, rank % 2, rank, &sub, NULL));
        int v = victim >= 0 ? victim : world - 1;
        /* A second for every checker link to be up while the comms live: a process that
         * connects only after destroying its comm (a loaded machine, a 20-call job) never tells
         * its checker it was a member, and then nobody can name its exit */
        usleep(1000000);
        for (int i = 0; i < iters; i++) {
            allreduce(sub, 8);
            if (i % 4 == 3)
                CK(ncg_test_sync(sub));
        }
        CK(ncg_test_sync(sub));
        /* Split: the checker's host leaves last (it knew who left before it), 1.5 s after the
         * others, and the late call comes 1 s after that (margins for a loaded machine: the
         * host must have heard every GOODBYE, and be gone, before the late call) */
        if (sub != comm && rank == 0)
            usleep(1500000);
        if (rank == v) { /* the barrier one step late: the others are gone */
            const char *s = getenv("SCEN_LATE_S");
            usleep((useconds_t)((s ? atof(s) : sub != comm ? 2.5 : 1.0) * 1e6));
            mark();
            allreduce(sub, 8);
            CK(ncg_test_sync(sub));
        }
        /* SCEN_LATE_LEAVE=R:MS: rank R leaves MS ms after the others (its goodbye reaches a
         * node relay that is about to leave) */
        const char *lv = getenv("SCEN_LATE_LEAVE");
        if (lv && atoi(lv) == rank && strchr(lv, ':'))
            usleep((useconds_t)(atof(strchr(lv, ':') + 1) * 1000));
        if (sub != comm)
            CK(ncclCommDestroy(sub));
        CK(ncclCommDestroy(comm));
        fprintf(stderr, "scen: rank %d done\n", rank);
        return 0;
    }
    if (!strcmp(sc, "inittime")) { /* what creating a communicator costs (scripts/bench-init.sh) */
        allreduce(comm, 8);
        CK(ncg_test_sync(comm));
        ncclComm_t sub;
        double t_split = now_us();
        CK(ncclCommSplit(comm, 0, rank, &sub, NULL));
        t_split = now_us() - t_split;
        allreduce(sub, 8);
        CK(ncg_test_sync(sub));
        printf("scen: rank %d: ncclCommInitRank %.0f us, ncclCommSplit %.0f us\n", rank, t_init,
               t_split);
        CK(ncclCommDestroy(sub));
        CK(ncclCommDestroy(comm));
        return 0;
    }
    if (!strcmp(sc, "crashinit")) {
        allreduce(comm, 8);
        if (rank == (victim >= 0 ? victim : 1)) {
            mark();
            kill(getpid(), SIGKILL);
        }
        for (int i = 0; i < 20; i++) {
            allreduce(comm, 8);
            if (i % 4 == 3)
                CK(ncg_test_sync(comm));
        }
        CK(ncg_test_sync(comm));
        fprintf(stderr, "scen: rank %d done\n", rank);
        return 0;
    }
    if (!strcmp(sc, "hostskip") || !strcmp(sc, "hostfirst")) {
        int skip = !strcmp(sc, "hostskip");
        ncclComm_t sub = NULL;
        if (!skip) /* the checker's host takes no part */
            CK(ncclCommSplit(comm, rank == 0 ? NCCL_SPLIT_NOCOLOR : 0, rank, &sub, NULL));
        for (int i = 0; i < iters; i++) {
            if (skip && rank == 0 && i == half) {
                mark();
                return 0; /* leaves without destroying: atexit says goodbye */
            }
            allreduce(comm, 8);
            if (i % 4 == 3)
                CK(ncg_test_sync(comm));
        }
        CK(ncg_test_sync(comm));
        if (rank == 0) {
            fprintf(stderr, "scen: rank 0 done\n");
            return 0; /* right after its last collective */
        }
        if (sub) {
            usleep(1500000);
            for (int i = 0; i < 20; i++) {
                if (i == 10 && rank == victim) { /* the checker's host is gone by now */
                    mark();
                    kill(getpid(), SIGKILL);
                }
                allreduce(sub, 8);
            }
            CK(ncg_test_sync(sub));
            CK(ncclCommDestroy(sub));
        }
        CK(ncclCommDestroy(comm));
        fprintf(stderr, "scen: rank %d done\n", rank);
        return 0;
    }
    if (!strcmp(sc, "split")) {
        ncclComm_t sub;
        allreduce(comm, 8);
        CK(ncclCommSplit(comm, rank % 2, rank, &sub, NULL));
        for (int i = 0; i < iters; i++) {
            if (i == half && rank == 2) {
                mark();
                CK(ncclBroadcast(buf_a, buf_a, 8, ncclFloat32, 0, sub, ncg_test_stream()));
            } else {
                allreduce(sub, 8);
            }
            if (i % 4 == 3)
                CK(ncg_test_sync(sub));
        }
        if (getenv("SCEN_SPLIT_WORLD")) /* then the world comm again (the even half is gone) */
            allreduce(comm, 8);
        CK(ncclCommDestroy(sub));
        CK(ncclCommDestroy(comm));
        fprintf(stderr, "scen: rank %d done\n", rank);
        return 0;
    }
    for (int i = 0; i < iters; i++) {
        if (i == half) {
            if (!strcmp(sc, "count") && rank == 1) {
                mark();
                allreduce(comm, 9);
                continue;
            }
            if (!strcmp(sc, "newgroup") && rank == 1) {
                ncclComm_t sub; /* blocks: its peers are in an AllReduce on comm */
                mark();
                CK(ncclCommSplit(comm, 0, rank, &sub, NULL));
                continue;
            }
            if (!strcmp(sc, "p2p") && rank == 2) {
                mark();
                p2p_ring(comm, 32, 1);
                continue;
            }
            if (!strcmp(sc, "early") && rank == (victim >= 0 ? victim : 1)) {
                mark();
                return 0; /* leaves without destroying: atexit says goodbye */
            }
            if (!strcmp(sc, "abort") && rank == (victim >= 0 ? victim : 1)) {
                mark();
                CK(ncclCommAbort(comm));
                sleep(1); /* the checker hears of the abort before the process exits */
                return 0;
            }
            /* The victims end after their process reported to the checker (one interval, 100
             * ms): one that dies before is a rank the checker never knew (README, Limits). */
            if (!strcmp(sc, "kill") && rank == (victim >= 0 ? victim : 1)) {
                usleep(300000);
                mark();
                kill(getpid(), SIGKILL);
            }
            if (!strcmp(sc, "stop") && rank == (victim >= 0 ? victim : 2)) {
                usleep(300000);
                mark();
                raise(SIGSTOP);
            }
            if (!strcmp(sc, "lag") && rank == 1) {
                const char *s = getenv("SCEN_LAG_S");
                mark();
                usleep((useconds_t)((s ? atof(s) : 3.0) * 1e6));
            }
        }
        if (!strcmp(sc, "p2p"))
            p2p_ring(comm, 32, 0);
        else
            allreduce(comm, 8);
        if (i % 4 == 3)
            CK(ncg_test_sync(comm));
    }
    if (!strcmp(sc, "lag") && getenv("SCEN_LAG_TAIL_S")) /* the job going on, recovered */
        for (long k = 0, n = (long)(atof(getenv("SCEN_LAG_TAIL_S")) * 100); k < n; k++) {
            allreduce(comm, 8);
            CK(ncg_test_sync(comm));
            usleep(10000);
        }
    CK(ncclCommDestroy(comm));
    if (rank == 0)
        printf("scen: %s done\n", sc);
    fprintf(stderr, "scen: rank %d done\n", rank);
    return 0;
}
