/* comms: communicator management. ncclCommSplit (color by parity, key reversing the order,
 * NCCL_SPLIT_NOCOLOR, a split of a split), ncclCommShrink (the excluded ranks leave), two
 * threads each driving its own communicator concurrently, a nonblocking init
 * (ncclInProgress, then ncclSuccess from ncclCommGetAsyncError), InitRankScalable, re-init of
 * the same id, and the id's unused tail (bytes 40..127) being ignored. Exit 0 when right. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"

static int g_rank, g_world, g_fail;

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            g_fail++;                                                                              \
            fprintf(stderr, "comms: rank %d: ", g_rank);                                           \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

static int64_t sum_of(ncclComm_t c, int64_t v)
{
    int64_t out = -1;
    NCG_CHECK(ncclAllReduce(&v, &out, 1, ncclInt64, ncclSum, c, NULL));
    return out;
}

struct thr {
    ncclComm_t comm;
    int64_t base;
    int iters, bad;
};

static void *thread_main(void *arg)
{
    struct thr *t = arg;
    int n;
    NCG_CHECK(ncclCommCount(t->comm, &n));
    for (int i = 0; i < t->iters; i++) {
        int64_t v = t->base + i, out = 0;
        NCG_CHECK(ncclAllReduce(&v, &out, 1, ncclInt64, ncclSum, t->comm, NULL));
        if (out != (t->base + i) * n)
            t->bad++;
    }
    return NULL;
}

int main(void)
{
    g_rank = ncg_test_rank();
    g_world = ncg_test_world();
    int me = g_rank, n = g_world;
    ncclUniqueId id;
    if (ncg_test_share_id(&id) != 0)
        return 1;
    /* the tail belongs to others (ncclguard writes there): each rank scribbles differently */
    memset(id.internal + 40, 0x40 + me, sizeof id.internal - 40);
    ncclComm_t world;
    NCG_CHECK(ncclCommInitRank(&world, n, id, me));
    int cnt = -1, r = -1;
    NCG_CHECK(ncclCommCount(world, &cnt));
    NCG_CHECK(ncclCommUserRank(world, &r));
    EXPECT(cnt == n && r == me, "count %d rank %d", cnt, r);

    /* split: color = parity, key = -rank (reverses the order) */
    ncclComm_t half;
    NCG_CHECK(ncclCommSplit(world, me % 2, -me, &half, NULL));
    int hn, hr;
    NCG_CHECK(ncclCommCount(half, &hn));
    NCG_CHECK(ncclCommUserRank(half, &hr));
    int want_n = (n - me % 2 + 1) / 2;
    int want_r = want_n - 1 - me / 2;
    EXPECT(hn == want_n && hr == want_r, "split: %d/%d, want %d/%d", hr, hn, want_r, want_n);
    int64_t s = sum_of(half, me);
    int64_t want_s = 0;
    for (int k = me % 2; k < n; k += 2)
        want_s += k;
    EXPECT(s == want_s, "split sum %lld want %lld", (long long)s, (long long)want_s);

    /* NOCOLOR: rank 0 takes no part */
    ncclComm_t some = (ncclComm_t)(uintptr_t)1;
    NCG_CHECK(ncclCommSplit(world, me == 0 ? NCCL_SPLIT_NOCOLOR : 7, 0, &some, NULL));
    if (me == 0) {
        EXPECT(some == NULL, "NOCOLOR gave a communicator");
    } else {
        NCG_CHECK(ncclCommCount(some, &cnt));
        EXPECT(cnt == n - 1, "colored split count %d", cnt);
        EXPECT(sum_of(some, 1) == n - 1, "colored split sum");
    }

    /* a split of a split, then back to the parents: every comm keeps its own slots */
    ncclComm_t quarter;
    NCG_CHECK(ncclCommSplit(half, hr % 2, hr, &quarter, NULL));
    int qn;
    NCG_CHECK(ncclCommCount(quarter, &qn));
    EXPECT(sum_of(quarter, 1) == qn, "split of split");
    EXPECT(sum_of(world, 1) == n, "world after splits");

    /* two threads, each on its own communicator, at the same time */
    struct thr t1 = {half, 1000, 300, 0}, t2 = {world, 5, 300, 0};
    pthread_t th;
    pthread_create(&th, NULL, thread_main, &t1);
    thread_main(&t2);
    pthread_join(th, NULL);
    EXPECT(t1.bad == 0 && t2.bad == 0, "threads: %d and %d wrong results", t1.bad, t2.bad);

    /* shrink: the last rank is excluded and leaves; the others continue without it */
    if (n > 1) {
        int ex = n - 1;
        if (me != ex) {
            ncclComm_t small;
            NCG_CHECK(ncclCommShrink(world, &ex, 1, &small, NULL, NCCL_SHRINK_DEFAULT));
            NCG_CHECK(ncclCommCount(small, &cnt));
            NCG_CHECK(ncclCommUserRank(small, &r));
            EXPECT(cnt == n - 1 && r == me, "shrink: %d/%d", r, cnt);
            EXPECT(sum_of(small, me) == (int64_t)(n - 1) * (n - 2) / 2, "shrink sum");
            NCG_CHECK(ncclCommDestroy(small));
            /* excluding rank 0 renumbers everyone */
            if (n > 2 && me != 0) {
                int ex2[2] = {ex, 0};
                NCG_CHECK(ncclCommShrink(world, ex2, 2, &small, NULL, NCCL_SHRINK_ABORT));
                NCG_CHECK(ncclCommUserRank(small, &r));
                EXPECT(r == me - 1, "shrink renumbering: %d", r);
                EXPECT(sum_of(small, 1) == n - 2, "second shrink sum");
                NCG_CHECK(ncclCommDestroy(small));
            }
        }
    }

    /* nonblocking init from a fresh id (shared as "nb") */
    ncclUniqueId id2;
    if (ncg_test_share_id_named(&id2, "nb") != 0)
        return 1;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclComm_t nb;
    ncclResult_t ir = ncclCommInitRankConfig(&nb, n, id2, me, &cfg);
    EXPECT(ir == ncclInProgress || ir == ncclSuccess, "nonblocking init returned %d", ir);
    EXPECT(ir == ncclInProgress, "nonblocking init did not return ncclInProgress");
    ncclResult_t st;
    int polls = 0, inprog = 0;
    do {
        NCG_CHECK(ncclCommGetAsyncError(nb, &st));
        polls++;
        if (st == ncclInProgress)
            inprog++;
    } while (st == ncclInProgress && polls < 10000000);
    EXPECT(st == ncclSuccess && inprog >= 1, "nonblocking init: state %d after %d polls", st,
           polls);
    EXPECT(sum_of(nb, 2) == 2 * n, "nonblocking comm sum");
    NCG_CHECK(ncclCommFinalize(nb));
    NCG_CHECK(ncclCommDestroy(nb));

    /* InitRankScalable with the same id array everywhere, and a re-init of the same id */
    for (int round = 0; round < 2; round++) {
        ncclComm_t sc;
        ncclUniqueId ids[2] = {id2, id};
        NCG_CHECK(ncclCommInitRankScalable(&sc, n, me, 2, ids, NULL));
        EXPECT(sum_of(sc, 3) == 3 * n, "scalable comm sum (round %d)", round);
        NCG_CHECK(ncclCommDestroy(sc));
    }

    NCG_CHECK(ncclCommDestroy(quarter));
    if (some)
        NCG_CHECK(ncclCommDestroy(some));
    NCG_CHECK(ncclCommDestroy(half));
    NCG_CHECK(ncclCommDestroy(world));
    if (g_fail)
        return 1;
    if (me == 0)
        printf("comms: %d ranks: split, nocolor, shrink, threads, nonblocking, scalable ok\n", n);
    return 0;
}
