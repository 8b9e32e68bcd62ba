/* NCCL 2.30's one-sided signals, grow, suspend and parameters on the CPU NCCL; the programs
 * tests/fakenccl/t_signals.sh and tests/checker/t_signals.sh run (healthy and hanging shapes).
 *   exchange [ITERS]   every rank puts a block into the next rank's window with a signal and
 *                      waits for the previous one's; ncclSignal with a wait for 2; a wait with
 *                      two descriptors; data checked
 *   gone               rank 0 waits for a signal from rank 1, which exits without sending
 *   destroy            the same, rank 1 destroys the communicator and stays
 *   cycle              ranks 0 and 1 each wait for the other's signal before sending theirs
 *   grow [MISMATCH]    ranks 0..N-2 grow their comm by rank N-1 (a process with no comm before)
 *                      and all-reduce on it; MISMATCH: the new rank passes another count
 *   suspend S          all-reduce, suspend S seconds (memory statistics checked), resume,
 *                      all-reduce
 *   devapi             ncclDevCommCreate twice on the world comm (refused: no GPU)
 *   params             the parameter API (single process) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "ncg_test.h"

#define N 1024

static int rank, world;
static cudaStream_t st;

static void stamp(const char *what)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    printf("signals: rank %d %s at %ld.%06ld\n", rank, what, (long)tv.tv_sec, (long)tv.tv_usec);
    fflush(stdout);
}

static ncclComm_t world_comm(void)
{
    ncclUniqueId id;
    ncclComm_t c;
    if (ncg_test_share_id(&id) != 0)
        exit(1);
    NCG_CHECK(ncclCommInitRank(&c, world, id, rank));
    return c;
}

static void allreduce_check(ncclComm_t c, int n, int count)
{
    float *b = calloc((size_t)count, sizeof *b);
    for (int i = 0; i < count; i++)
        b[i] = (float)(rank + 1);
    NCG_CHECK(ncclAllReduce(b, b, (size_t)count, ncclFloat32, ncclSum, c, st));
    NCG_CHECK(ncg_test_sync(c));
    if (b[0] != (float)(n * (n + 1) / 2)) {
        fprintf(stderr, "signals: rank %d: allreduce %g, want %d\n", rank, b[0], n * (n + 1) / 2);
        exit(1);
    }
    free(b);
}

static int exchange(int iters)
{
    ncclComm_t c = world_comm();
    float *win_buf, *src = malloc(N * sizeof *src);
    NCG_CHECK(ncclMemAlloc((void **)&win_buf, 2 * N * sizeof *win_buf));
    ncclWindow_t win;
    NCG_CHECK(
        ncclCommWindowRegister(c, win_buf, 2 * N * sizeof *win_buf, &win, NCCL_WIN_COLL_SYMMETRIC));
    void *up = NULL;
    NCG_CHECK(ncclWinGetUserPtr(c, win, &up));
    if (up != win_buf) {
        fprintf(stderr, "signals: ncclWinGetUserPtr %p, want %p\n", up, (void *)win_buf);
        return 1;
    }
    int next = (rank + 1) % world, prev = (rank + world - 1) % world;
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < N; i++)
            src[i] = (float)(rank * 100000 + it * 1000 + i % 1000);
        size_t off = (size_t)(it % 2) * N * sizeof(float);
        NCG_CHECK(ncclPutSignal(src, N, ncclFloat32, next, win, off, 0, 0, 0, c, st));
        ncclWaitSignalDesc_t d = {1, prev, 0, 0};
        NCG_CHECK(ncclWaitSignal(1, &d, c, st));
        NCG_CHECK(ncg_test_sync(c));
        const float *got = win_buf + (it % 2) * N;
        for (int i = 0; i < N; i++)
            if (got[i] != (float)(prev * 100000 + it * 1000 + i % 1000)) {
                fprintf(stderr, "signals: rank %d iter %d: [%d] = %g\n", rank, it, i, got[i]);
                return 1;
            }
        /* the target's next put may overwrite the block only after this rank read it */
        allreduce_check(c, world, 1);
    }
    /* signals without data: two to the next rank, one wait for both */
    NCG_CHECK(ncclSignal(next, 0, 0, 0, c, st));
    NCG_CHECK(ncclSignal(next, 0, 0, 0, c, st));
    ncclWaitSignalDesc_t two = {2, prev, 0, 0};
    NCG_CHECK(ncclWaitSignal(1, &two, c, st));
    /* one wait with two descriptors: from the previous and the next rank */
    if (world > 2) {
        NCG_CHECK(ncclSignal(next, 0, 0, 0, c, st));
        NCG_CHECK(ncclSignal(prev, 0, 0, 0, c, st));
        ncclWaitSignalDesc_t both[2] = {{1, prev, 0, 0}, {1, next, 0, 0}};
        NCG_CHECK(ncclWaitSignal(2, both, c, st));
    }
    NCG_CHECK(ncg_test_sync(c));
    allreduce_check(c, world, 4);
    NCG_CHECK(ncclCommWindowDeregister(c, win));
    NCG_CHECK(ncclCommDestroy(c));
    NCG_CHECK(ncclMemFree(win_buf));
    free(src);
    printf("signals: rank %d: %d exchanges ok\n", rank, iters);
    return 0;
}

/* Rank 0 waits for a signal rank 1 never sends: rank 1 exits (how 0) or destroys (how 1). */
static int gone(int how)
{
    ncclComm_t c = world_comm();
    allreduce_check(c, world, 8);
    if (rank == 1) {
        if (how == 1) {
            NCG_CHECK(ncclCommDestroy(c));
            sleep(30);
        }
        return 0;
    }
    if (rank != 0)
        return 0;
    ncclWaitSignalDesc_t d = {1, 1, 0, 0};
    stamp("waits");
    NCG_CHECK(ncclWaitSignal(1, &d, c, st));
    NCG_CHECK(ncg_test_sync(c));
    printf("signals: rank 0: the signal came\n");
    return 0;
}

static int cycle(void)
{
    ncclComm_t c = world_comm();
    allreduce_check(c, world, 8);
    int peer = 1 - rank;
    ncclWaitSignalDesc_t d = {1, peer, 0, 0};
    stamp("waits");
    NCG_CHECK(ncclWaitSignal(1, &d, c, st));
    NCG_CHECK(ncclSignal(peer, 0, 0, 0, c, st));
    NCG_CHECK(ncg_test_sync(c));
    printf("signals: rank %d: the cycle completed\n", rank);
    return 0;
}

static void grow_id_io(ncclUniqueId *id, int write_it)
{
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s.grow", getenv("NCG_ID_FILE"));
    if (write_it) {
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || write(fd, id, sizeof *id) != (ssize_t)sizeof *id || close(fd) ||
            rename(tmp, path)) {
            perror("signals: grow id");
            exit(1);
        }
        return;
    }
    for (int i = 0; i < 6000; i++) {
        int fd = open(path, O_RDONLY);
        if (fd >= 0) {
            ssize_t n = read(fd, id, sizeof *id);
            close(fd);
            if (n == (ssize_t)sizeof *id)
                return;
        }
        usleep(10000);
    }
    fprintf(stderr, "signals: no grow id\n");
    exit(1);
}

static int grow(int mismatch)
{
    int old = world - 1; /* ranks 0..old-1 have a comm; rank old joins by the grow */
    ncclComm_t g = NULL;
    if (rank < old) {
        ncclUniqueId id;
        ncclComm_t c;
        if (ncg_test_share_id(&id) != 0)
            return 1;
        NCG_CHECK(ncclCommInitRank(&c, old, id, rank));
        allreduce_check(c, old, 16);
        ncclUniqueId gid;
        if (rank == 0) {
            NCG_CHECK(ncclCommGetUniqueId(c, &gid));
            grow_id_io(&gid, 1);
        }
        NCG_CHECK(ncclCommGrow(c, world, rank == 0 ? &gid : NULL, -1, &g, NULL));
        allreduce_check(c, old, 16); /* the parent lives on */
        NCG_CHECK(ncclCommDestroy(c));
    } else {
        ncclUniqueId gid;
        grow_id_io(&gid, 0);
        NCG_CHECK(ncclCommGrow(NULL, world, &gid, rank, &g, NULL));
    }
    int n = -1, r = -1;
    NCG_CHECK(ncclCommCount(g, &n));
    NCG_CHECK(ncclCommUserRank(g, &r));
    if (n != world || r != rank) {
        fprintf(stderr, "signals: grown comm rank %d of %d, want %d of %d\n", r, n, rank, world);
        return 1;
    }
    for (int i = 0; i < 3; i++)
        allreduce_check(g, world, mismatch && rank == old && i == 1 ? 33 : 32);
    NCG_CHECK(ncclCommDestroy(g));
    printf("signals: rank %d: grown to %d ranks ok\n", rank, world);
    return 0;
}

static int suspend(int secs)
{
    ncclComm_t c = world_comm();
    allreduce_check(c, world, 8);
    uint64_t v = 0, total = 0;
    NCG_CHECK(ncclCommSuspend(c, NCCL_SUSPEND_MEM));
    NCG_CHECK(ncclCommMemStats(c, ncclStatGpuMemSuspended, &v));
    NCG_CHECK(ncclCommMemStats(c, ncclStatGpuMemTotal, &total));
    if (v != 1 || total == 0) {
        fprintf(stderr, "signals: suspended %llu total %llu\n", (unsigned long long)v,
                (unsigned long long)total);
        return 1;
    }
    float x = 1;
    if (ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, c, st) == ncclSuccess) {
        fprintf(stderr, "signals: a call on a suspended comm succeeded\n");
        return 1;
    }
    sleep((unsigned)secs);
    NCG_CHECK(ncclCommResume(c));
    NCG_CHECK(ncclCommMemStats(c, ncclStatGpuMemSuspended, &v));
    if (v != 0)
        return 1;
    allreduce_check(c, world, 8);
    NCG_CHECK(ncclCommDestroy(c));
    printf("signals: rank %d: suspended %d s ok\n", rank, secs);
    return 0;
}

struct ncclDevCommRequirements;
struct ncclDevComm;
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const struct ncclDevCommRequirements *reqs,
                               struct ncclDevComm *outDevComm);

static int devapi(void)
{
    ncclComm_t c = world_comm();
    char reqs[256] = {0}, dev[4096];
    for (int i = 0; i < 2; i++)
        if (ncclDevCommCreate(c, (const struct ncclDevCommRequirements *)reqs,
                              (struct ncclDevComm *)dev) == ncclSuccess)
            printf("signals: rank %d: device communicator created\n", rank);
    allreduce_check(c, world, 8);
    NCG_CHECK(ncclCommDestroy(c));
    printf("signals: rank %d: devapi ok\n", rank);
    return 0;
}

static int params(void)
{
    ncclParamHandle_t h;
    int32_t i32 = 0;
    uint16_t u16 = 0;
    const char *s = NULL, **keys = NULL;
    int len = 0, nkeys = 0;
    char raw[64];
    setenv("FAKENCCL_TIMEOUT_S", "7", 1);
    NCG_CHECK(ncclParamBind(&h, "FAKENCCL_TIMEOUT_S"));
    NCG_CHECK(ncclParamGetI32(h, &i32));
    NCG_CHECK(ncclParamGetU16(h, &u16));
    NCG_CHECK(ncclParamGetStr(h, &s));
    NCG_CHECK(ncclParamGet(h, raw, sizeof raw, &len));
    NCG_CHECK(ncclParamGetParameter("FAKENCCL_PUT_BYTES", &s, &len));
    NCG_CHECK(ncclParamGetAllParameterKeys(&keys, &nkeys));
    if (i32 != 7 || u16 != 7 || strcmp(s, "65536") || nkeys < 1 ||
        ncclParamBind(&h, "NO_SUCH_PARAM") == ncclSuccess) {
        fprintf(stderr, "signals: params wrong\n");
        return 1;
    }
    setenv("FAKENCCL_TIMEOUT_S", "-1", 1);
    if (ncclParamGetU8(h, (uint8_t *)raw) == ncclSuccess)
        return 1;
    ncclParamDumpAll();
    printf("signals: params ok (%d keys)\n", nkeys);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    rank = ncg_test_rank();
    world = ncg_test_world();
    st = ncg_test_stream();
    const char *m = argc > 1 ? argv[1] : "exchange";
    if (!strcmp(m, "exchange"))
        return exchange(argc > 2 ? atoi(argv[2]) : 20);
    if (!strcmp(m, "gone"))
        return gone(0);
    if (!strcmp(m, "destroy"))
        return gone(1);
    if (!strcmp(m, "cycle"))
        return cycle();
    if (!strcmp(m, "grow"))
        return grow(argc > 2);
    if (!strcmp(m, "suspend"))
        return suspend(argc > 2 ? atoi(argv[2]) : 1);
    if (!strcmp(m, "devapi"))
        return devapi();
    if (!strcmp(m, "params"))
        return params();
    fprintf(stderr, "signals: unknown mode %s\n", m);
    return 2;
}
