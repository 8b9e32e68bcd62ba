/* async: fakenccl's asynchronous mode (FAKENCCL_ASYNC=1, with the CPU CUDA runtime on
 * LD_LIBRARY_PATH), one scenario per run, 2 ranks under ncg-launch:
 *   early     rank 1 calls 300 ms late; rank 0's AllReduce returns at once, the result is
 *             right after the synchronization
 *   mismatch  counts differ: both calls return at once, the stream stays busy (not ready),
 *             an abort from the host releases it
 *   revoke    counts differ, then ncclCommRevoke: the stream drains, the async error is
 *             ncclRemoteError and later calls fail
 *   destroy   rank 1 calls 300 ms late; rank 0's ncclCommDestroy waits for the pending work
 *   group     a group spanning two streams runs after both streams' earlier work
 *   nort      a NULL stream and no runtime loaded: one line from fakenccl, synchronous calls
 * Prints "async: <scenario> ok" from each rank; exit 1 with a reason otherwise. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"

static int g_rank;
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "async: rank %d: ", g_rank);                                               \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        exit(1);                                                                                   \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int (*stream_query)(cudaStream_t);
static int (*stream_sync)(cudaStream_t);
static int (*stream_create)(cudaStream_t *, unsigned int);
static int (*host_func)(cudaStream_t, void (*)(void *), void *);

static void need_runtime(void)
{
    if (!ncg_test_async())
        FAIL("no asynchronous mode (FAKENCCL_ASYNC=1 and libcudart.so.13 needed)");
    stream_query = (int (*)(cudaStream_t))dlsym(RTLD_DEFAULT, "cudaStreamQuery");
    stream_sync = (int (*)(cudaStream_t))dlsym(RTLD_DEFAULT, "cudaStreamSynchronize");
    stream_create =
        (int (*)(cudaStream_t *, unsigned int))dlsym(RTLD_DEFAULT, "cudaStreamCreateWithFlags");
    host_func =
        (int (*)(cudaStream_t, void (*)(void *), void *))dlsym(RTLD_DEFAULT, "cudaLaunchHostFunc");
    if (!stream_query || !stream_sync || !stream_create || !host_func)
        FAIL("runtime symbols missing");
}

static void slow(void *p)
{
    usleep(200 * 1000);
    *(int *)p = 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: async early|mismatch|revoke|destroy|group|nort\n");
        return 2;
    }
    const char *sc = argv[1];
    g_rank = ncg_test_rank();
    int world = ncg_test_world();
    ncclUniqueId id;
    if (ncg_test_share_id(&id) != 0)
        return 1;
    ncclComm_t comm;
    NCG_CHECK(ncclCommInitRank(&comm, world, id, g_rank));
    float in[16], out[16];
    for (int i = 0; i < 16; i++)
        in[i] = (float)(g_rank + 1);

    if (!strcmp(sc, "nort")) {
        NCG_CHECK(ncclAllReduce(in, out, 16, ncclFloat32, ncclSum, comm, NULL));
        if (out[0] != (float)(world * (world + 1) / 2))
            FAIL("nort: result %g before any synchronization", out[0]);
        NCG_CHECK(ncclCommDestroy(comm));
        printf("async: %s ok\n", sc);
        return 0;
    }
    need_runtime();
    cudaStream_t st = ncg_test_stream();
    if (!strcmp(sc, "early") || !strcmp(sc, "destroy")) {
        if (g_rank == 1)
            usleep(300 * 1000);
        out[0] = -1;
        double t0 = now_s();
        NCG_CHECK(ncclAllReduce(in, out, 16, ncclFloat32, ncclSum, comm, st));
        double ret = now_s() - t0;
        if (g_rank == 0 && ret > 0.1)
            FAIL("%s: the call took %.3f s to return (it waited for its peer)", sc, ret);
        if (!strcmp(sc, "destroy") && g_rank == 0) {
            NCG_CHECK(ncclCommDestroy(comm));
            double d = now_s() - t0;
            if (d < 0.2)
                FAIL("destroy returned after %.3f s, before the pending AllReduce could finish", d);
            if (out[0] != 3)
                FAIL("destroy: result %g after destroy (want 3)", out[0]);
            printf("async: %s ok\n", sc);
            return 0;
        }
        NCG_CHECK(ncg_test_sync(comm));
        if (out[0] != 3 || out[15] != 3)
            FAIL("%s: result %g after the synchronization (want 3)", sc, out[0]);
        NCG_CHECK(ncclCommDestroy(comm));
    } else if (!strcmp(sc, "mismatch") || !strcmp(sc, "revoke")) {
        double t0 = now_s();
        NCG_CHECK(ncclAllReduce(in, out, g_rank == 1 ? 9 : 8, ncclFloat32, ncclSum, comm, st));
        if (now_s() - t0 > 0.1)
            FAIL("%s: the mismatched call blocked the host", sc);
        usleep(300 * 1000);
        if (stream_query(st) == 0)
            FAIL("%s: the stream finished a mismatched collective", sc);
        if (!strcmp(sc, "mismatch")) {
            NCG_CHECK(ncclCommAbort(comm));
            if (stream_sync(st) != 0)
                FAIL("mismatch: stream error after the abort");
        } else {
            NCG_CHECK(ncclCommRevoke(comm, 0));
            if (stream_sync(st) != 0)
                FAIL("revoke: stream error after the revoke");
            ncclResult_t ae = ncclSuccess;
            NCG_CHECK(ncclCommGetAsyncError(comm, &ae));
            if (ae != ncclRemoteError)
                FAIL("revoke: async error %d, want ncclRemoteError", (int)ae);
            if (ncclAllReduce(in, out, 8, ncclFloat32, ncclSum, comm, st) == ncclSuccess)
                FAIL("revoke: a call on the revoked comm succeeded");
            NCG_CHECK(ncclCommAbort(comm));
        }
    } else if (!strcmp(sc, "group")) {
        cudaStream_t s2;
        if (stream_create(&s2, 1) != 0)
            FAIL("stream create");
        int done = 0;
        host_func(s2, slow, &done); /* s2's earlier work: the group must run after it */
        float out2[16];
        NCG_CHECK(ncclGroupStart());
        NCG_CHECK(ncclAllReduce(in, out, 16, ncclFloat32, ncclSum, comm, st));
        NCG_CHECK(ncclAllReduce(in, out2, 16, ncclFloat32, ncclMax, comm, s2));
        NCG_CHECK(ncclGroupEnd());
        if (stream_sync(st) != 0)
            FAIL("group: sync");
        if (!done)
            FAIL("group: ran before the earlier work of its second stream");
        if (out[0] != 3 || out2[0] != 2)
            FAIL("group: results %g %g (want 3 2)", out[0], out2[0]);
        NCG_CHECK(ncclCommDestroy(comm));
    } else {
        FAIL("unknown scenario %s", sc);
    }
    printf("async: %s ok\n", sc);
    return 0;
}
