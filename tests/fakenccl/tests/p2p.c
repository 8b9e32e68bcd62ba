/* p2p: ncclSend/ncclRecv inside groups. A ring shift both ways in one group (would deadlock
 * if the group ran its calls one by one), every pair exchanging in one group, self sends,
 * several messages to one peer in one group (FIFO order), messages far larger than the
 * library's ring buffer, nested groups, and collectives mixed into a p2p group. Plus blocking
 * send/recv outside groups in an order that cannot deadlock. Exit 0 when all data is right. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"

static int g_rank, g_world, g_fail;

static int32_t pattern(int from, int to, int msg, size_t i)
{
    return (int32_t)(from * 1000003 + to * 10007 + msg * 101 + (int)(i % 100000));
}

static void fill(int32_t *b, size_t n, int from, int to, int msg)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pattern(from, to, msg, i);
}

static void expect(const char *what, const int32_t *b, size_t n, int from, int to, int msg)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pattern(from, to, msg, i)) {
            if (g_fail++ < 10)
                fprintf(stderr, "p2p: rank %d: %s: element %zu from %d = %d, want %d\n", g_rank,
                        what, i, from, b[i], pattern(from, to, msg, i));
            return;
        }
}

int main(void)
{
    g_rank = ncg_test_rank();
    g_world = ncg_test_world();
    int me = g_rank, n = g_world;
    ncclUniqueId id;
    if (ncg_test_share_id(&id) != 0)
        return 1;
    ncclComm_t comm;
    NCG_CHECK(ncclCommInitRank(&comm, n, id, me));
    int right = (me + 1) % n, left = (me + n - 1) % n;

    /* 1. ring shift both directions, small and large (1 MiB, beyond the 256 KiB p2p ring) */
    size_t sizes[] = {0, 1, 1000, ((size_t)1 << 18) + 3};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t cnt = sizes[s];
        int32_t *sr = malloc(cnt * 4 + 4), *sl = malloc(cnt * 4 + 4);
        int32_t *rr = malloc(cnt * 4 + 4), *rl = malloc(cnt * 4 + 4);
        fill(sr, cnt, me, right, 1);
        fill(sl, cnt, me, left, 2);
        NCG_CHECK(ncclGroupStart());
        NCG_CHECK(ncclSend(sr, cnt, ncclInt32, right, comm, NULL));
        NCG_CHECK(ncclSend(sl, cnt, ncclInt32, left, comm, NULL));
        NCG_CHECK(ncclRecv(rl, cnt, ncclInt32, left, comm, NULL));
        NCG_CHECK(ncclRecv(rr, cnt, ncclInt32, right, comm, NULL));
        NCG_CHECK(ncclGroupEnd());
        /* (with 1 or 2 ranks left == right: FIFO per pair gives the same answer) */
        expect("ring from left", rl, cnt, left, me, 1);
        expect("ring from right", rr, cnt, right, me, 2);
        free(sr);
        free(sl);
        free(rr);
        free(rl);
    }

    /* 2. all pairs (self included) in one group, three messages per pair, FIFO order */
    size_t cnt = 3000;
    int32_t *sb = malloc((size_t)n * 3 * cnt * 4), *rb = malloc((size_t)n * 3 * cnt * 4);
    for (int p = 0; p < n; p++)
        for (int m = 0; m < 3; m++)
            fill(sb + ((size_t)p * 3 + (size_t)m) * cnt, cnt, me, p, m);
    NCG_CHECK(ncclGroupStart());
    for (int m = 0; m < 3; m++)
        for (int k = 0; k < n; k++) {
            int p = (me + k) % n; /* every rank in a different order */
            NCG_CHECK(
                ncclRecv(rb + ((size_t)p * 3 + (size_t)m) * cnt, cnt, ncclInt32, p, comm, NULL));
            NCG_CHECK(
                ncclSend(sb + ((size_t)p * 3 + (size_t)m) * cnt, cnt, ncclInt32, p, comm, NULL));
        }
    NCG_CHECK(ncclGroupEnd());
    for (int p = 0; p < n; p++)
        for (int m = 0; m < 3; m++)
            expect("all pairs", rb + ((size_t)p * 3 + (size_t)m) * cnt, cnt, p, me, m);

    /* 3. nested groups with a collective among the p2p calls */
    int64_t one = 1, total = 0;
    int32_t out = pattern(me, right, 7, 0), in = 0;
    NCG_CHECK(ncclGroupStart());
    NCG_CHECK(ncclSend(&out, 1, ncclInt32, right, comm, NULL));
    NCG_CHECK(ncclGroupStart());
    NCG_CHECK(ncclAllReduce(&one, &total, 1, ncclInt64, ncclSum, comm, NULL));
    NCG_CHECK(ncclRecv(&in, 1, ncclInt32, left, comm, NULL));
    NCG_CHECK(ncclGroupEnd()); /* inner end launches nothing */
    if (total != 0) {
        fprintf(stderr, "p2p: rank %d: inner ncclGroupEnd launched the group\n", me);
        g_fail++;
    }
    NCG_CHECK(ncclGroupEnd());
    if (total != n || in != pattern(left, me, 7, 0)) {
        fprintf(stderr, "p2p: rank %d: nested group: sum %lld recv %d\n", me, (long long)total, in);
        g_fail++;
    }

    /* 4. blocking send/recv outside groups: even ranks send first, odd ranks receive first */
    if (n % 2 == 0) {
        int peer = me ^ 1;
        int32_t *a = malloc(cnt * 4), *b = malloc(cnt * 4);
        fill(a, cnt, me, peer, 9);
        if (me % 2 == 0) {
            NCG_CHECK(ncclSend(a, cnt, ncclInt32, peer, comm, NULL));
            NCG_CHECK(ncclRecv(b, cnt, ncclInt32, peer, comm, NULL));
        } else {
            NCG_CHECK(ncclRecv(b, cnt, ncclInt32, peer, comm, NULL));
            NCG_CHECK(ncclSend(a, cnt, ncclInt32, peer, comm, NULL));
        }
        expect("blocking pair", b, cnt, peer, me, 9);
        free(a);
        free(b);
    }
    free(sb);
    free(rb);
    NCG_CHECK(ncclCommDestroy(comm));
    if (g_fail)
        return 1;
    if (me == 0)
        printf("p2p: %d ranks: rings, all pairs, nested groups, blocking pairs ok\n", n);
    return 0;
}
