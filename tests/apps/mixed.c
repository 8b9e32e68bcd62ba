/* mixed: a healthy, busy NCCL workload for no-false-positive tests. Per rank: a world comm,
 * a parity split ("dp") and a duplicate of world made by split ("aux"). The main thread
 * alternates AllReduce/Broadcast/AllGather/ReduceScatter on world with grouped collectives and
 * a send/recv ring on dp; a second thread concurrently drives aux with AllReduce, AlltoAll and
 * its own grouped p2p ring. Every result is checked. Usage (under ncg-launch):
 *   mixed [--iters N] [--mismatch ITER]
 * N iterations (default 200, about 12 calls each per rank). --mismatch ITER: at that iteration
 * the last rank passes a different count to the world AllReduce (a certain hang, for tests).
 * Asynchronous mode (FAKENCCL_ASYNC=1): each thread enqueues on its own stream and synchronizes
 * before it checks a result.
 * Exit 0 and "mixed: N ranks, M calls per rank ok" from rank 0 when all is right. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"

#define CNT 16

static int g_rank, g_world, g_iters = 200, g_mismatch = -1;
static ncclComm_t g_aux;
static long g_aux_calls;
static int g_aux_bad;

static void bad(const char *what, int it)
{
    fprintf(stderr, "mixed: rank %d: wrong result in %s at iteration %d\n", g_rank, what, it);
    exit(1);
}

static void *aux_thread(void *arg)
{
    (void)arg;
    int n = g_world, me = g_rank;
    int32_t *a2a_s = malloc(sizeof(int32_t) * CNT * (size_t)n);
    int32_t *a2a_r = malloc(sizeof(int32_t) * CNT * (size_t)n);
    cudaStream_t st = ncg_test_stream(); /* this thread's own stream (asynchronous mode) */
    for (int it = 0; it < g_iters; it++) {
        double v = me + it, s = 0;
        NCG_CHECK(ncclAllReduce(&v, &s, 1, ncclFloat64, ncclSum, g_aux, st));
        NCG_CHECK(ncg_test_sync(g_aux));
        if (s != (double)n * (n - 1) / 2 + (double)n * it)
            g_aux_bad++;
        for (int j = 0; j < n; j++)
            for (int k = 0; k < CNT; k++)
                a2a_s[j * CNT + k] = me * 1000 + j * 10 + it % 10;
        NCG_CHECK(ncclAlltoAll(a2a_s, a2a_r, CNT, ncclInt32, g_aux, st));
        NCG_CHECK(ncg_test_sync(g_aux));
        for (int j = 0; j < n; j++)
            if (a2a_r[j * CNT] != j * 1000 + me * 10 + it % 10)
                g_aux_bad++;
        int32_t out = me * 7 + it, in = -1;
        NCG_CHECK(ncclGroupStart());
        NCG_CHECK(ncclSend(&out, 1, ncclInt32, (me + 1) % n, g_aux, st));
        NCG_CHECK(ncclRecv(&in, 1, ncclInt32, (me + n - 1) % n, g_aux, st));
        NCG_CHECK(ncclGroupEnd());
        NCG_CHECK(ncg_test_sync(g_aux));
        if (in != ((me + n - 1) % n) * 7 + it)
            g_aux_bad++;
        g_aux_calls += 4;
    }
    free(a2a_s);
    free(a2a_r);
    return NULL;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            g_iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mismatch") && i + 1 < argc)
            g_mismatch = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: mixed [--iters N] [--mismatch ITER]\n");
            return 2;
        }
    }
    g_rank = ncg_test_rank();
    g_world = ncg_test_world();
    int me = g_rank, n = g_world;
    ncclUniqueId id;
    if (ncg_test_share_id(&id) != 0)
        return 1;
    ncclComm_t world, dp;
    NCG_CHECK(ncclCommInitRank(&world, n, id, me));
    NCG_CHECK(ncclCommSplit(world, me % 2, me, &dp, NULL));
    NCG_CHECK(ncclCommSplit(world, 0, me, &g_aux, NULL));
    int dn, dr;
    NCG_CHECK(ncclCommCount(dp, &dn));
    NCG_CHECK(ncclCommUserRank(dp, &dr));

    pthread_t th;
    pthread_create(&th, NULL, aux_thread, NULL);
    long calls = 3; /* init + two splits */
    cudaStream_t st = ncg_test_stream();
    float *buf = malloc(sizeof(float) * CNT * (size_t)n), *shard = malloc(sizeof(float) * CNT);
    int64_t *gat = malloc(sizeof(int64_t) * (size_t)n);
    for (int it = 0; it < g_iters; it++) {
        /* world: the FSDP-like pattern */
        for (int k = 0; k < CNT; k++)
            buf[k] = (float)(me + k);
        size_t cnt = (it == g_mismatch && me == n - 1) ? CNT + 1 : CNT;
        NCG_CHECK(ncclAllReduce(buf, buf, cnt, ncclFloat32, ncclSum, world, st));
        NCG_CHECK(ncg_test_sync(world));
        if (buf[1] != (float)(n * (n - 1) / 2 + n))
            bad("world AllReduce", it);
        int root = it % n;
        int32_t b = me == root ? it : -1;
        NCG_CHECK(ncclBcast(&b, 1, ncclInt32, root, world, st));
        NCG_CHECK(ncg_test_sync(world));
        if (b != it)
            bad("world Bcast", it);
        int64_t mine = (int64_t)me * it;
        NCG_CHECK(ncclAllGather(&mine, gat, 1, ncclInt64, world, st));
        NCG_CHECK(ncg_test_sync(world));
        for (int r = 0; r < n; r++)
            if (gat[r] != (int64_t)r * it)
                bad("world AllGather", it);
        for (int k = 0; k < CNT * n; k++)
            buf[k] = 1.0f;
        NCG_CHECK(ncclReduceScatter(buf, shard, CNT, ncclFloat32, ncclSum, world, st));
        NCG_CHECK(ncg_test_sync(world));
        if (shard[0] != (float)n)
            bad("world ReduceScatter", it);
        /* dp: a group with two collectives and a p2p ring */
        int32_t x = dr, mx = -1, mn = -1, in = -1, out = dr + it;
        NCG_CHECK(ncclGroupStart());
        NCG_CHECK(ncclAllReduce(&x, &mx, 1, ncclInt32, ncclMax, dp, st));
        NCG_CHECK(ncclAllReduce(&x, &mn, 1, ncclInt32, ncclMin, dp, st));
        NCG_CHECK(ncclSend(&out, 1, ncclInt32, (dr + 1) % dn, dp, st));
        NCG_CHECK(ncclRecv(&in, 1, ncclInt32, (dr + dn - 1) % dn, dp, st));
        NCG_CHECK(ncclGroupEnd());
        NCG_CHECK(ncg_test_sync(dp));
        if (mx != dn - 1 || mn != 0 || in != (dr + dn - 1) % dn + it)
            bad("dp group", it);
        calls += 8;
    }
    pthread_join(th, NULL);
    if (g_aux_bad)
        bad("aux thread", -1);
    NCG_CHECK(ncclCommDestroy(g_aux));
    NCG_CHECK(ncclCommDestroy(dp));
    NCG_CHECK(ncclCommDestroy(world));
    free(buf);
    free(shard);
    free(gat);
    if (me == 0)
        printf("mixed: %d ranks, %ld calls per rank ok\n", n, calls + g_aux_calls + 3);
    return 0;
}
