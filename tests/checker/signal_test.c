/* Unit tests of one-sided signals in the p2p matcher (interpose/judge/sigmatch.c, p2pmatch.c): the
 * channel encoding, a signal pairs with the wait that needs it and never with a send/recv of the
 * same number, differing counts do not make a signal pair differ, a wait for n signals drops the
 * n-1 earlier ones still held, and a wait whose signal never came stays held (the gone-wait and
 * wait-for rules read that). */
#include <stdlib.h>

#include "check.h"
#include "p2pmatch.h"
#include "sigmatch.h"

NCG_CHECK_PROGRAM("signal_test");

static struct ncg_p2p_rec rec(uint64_t seq, uint64_t count, int32_t peer, uint8_t func)
{
    return (struct ncg_p2p_rec){seq, count, peer, func, 0};
}

int main(void)
{
    struct ncg_p2pm t = {0};
    struct ncg_p2pm_rec pair[2];
    uint64_t c0 = ncg_sig_chan(0, 0), c1 = ncg_sig_chan(3, 1);
    /* encoding: distinct channels, decodable, never an ordinary pair number */
    CHECK(c0 != c1);
    CHECK(ncg_sig_is(ncg_sig_seq(c0, 0)) && !ncg_sig_is(5));
    CHECK(ncg_sig_idx_of(ncg_sig_seq(c1, 9)) == 3 && ncg_sig_ctx_of(ncg_sig_seq(c1, 9)) == 1);
    CHECK(ncg_sig_k(ncg_sig_seq(c1, 9)) == 9);
    /* rank 0 signals rank 1 once; rank 1's send #0 to rank 0... no: its ordinary recv #0 from
     * rank 0 with the same k does not pair with the signal */
    CHECK(ncg_p2pm_add(&t, 0, 2, &(struct ncg_p2p_rec){ncg_sig_seq(c0, 0), 1, 1, NCG_F_SEND, 0}, 1,
                       pair) == NCG_P2PM_HELD);
    CHECK(ncg_p2pm_add(&t, 1, 2, &(struct ncg_p2p_rec){0, 1, 0, NCG_F_RECV, 0}, 1, pair) ==
          NCG_P2PM_HELD);
    /* the wait for one signal pairs with it: equal whatever the counts say */
    struct ncg_p2p_rec w = rec(ncg_sig_seq(c0, 0), 1, 0, NCG_F_RECV);
    CHECK(ncg_p2pm_add(&t, 1, 2, &w, 2, pair) == NCG_P2PM_EQUAL);
    CHECK(pair[0].src == 0 && pair[0].dst == 1);
    /* a wait on another channel does not take a signal of channel c0 */
    CHECK(ncg_p2pm_add(&t, 0, 2, &(struct ncg_p2p_rec){ncg_sig_seq(c0, 1), 1, 1, NCG_F_SEND, 0}, 3,
                       pair) == NCG_P2PM_HELD);
    CHECK(ncg_p2pm_add(&t, 1, 2, &(struct ncg_p2p_rec){ncg_sig_seq(c1, 0), 1, 0, NCG_F_RECV, 0}, 3,
                       pair) == NCG_P2PM_HELD);
    CHECK(ncg_p2pm_held(&t, 0, 1, ncg_sig_seq(c1, 0), NCG_F_RECV)); /* its sender is missing */
    /* three more signals on c0 (#1 held above, #2, #3), then one wait for 3 (#1..#3): matches #3
     * and drops #1 and #2 */
    for (uint64_t k = 2; k <= 3; k++)
        CHECK(ncg_p2pm_add(&t, 0, 2, &(struct ncg_p2p_rec){ncg_sig_seq(c0, k), 1, 1, NCG_F_SEND, 0},
                           4, pair) == NCG_P2PM_HELD);
    CHECK(ncg_p2pm_held(&t, 0, 1, ncg_sig_seq(c0, 1), NCG_F_SEND));
    w = rec(ncg_sig_seq(c0, 3), 3, 0, NCG_F_RECV);
    CHECK(ncg_p2pm_add(&t, 1, 2, &w, 5, pair) == NCG_P2PM_EQUAL);
    CHECK(!ncg_p2pm_held(&t, 0, 1, ncg_sig_seq(c0, 1), NCG_F_SEND));
    CHECK(!ncg_p2pm_held(&t, 0, 1, ncg_sig_seq(c0, 2), NCG_F_SEND));
    /* what is left: the ordinary recv and the c1 wait */
    CHECKF(t.n == 2, "%u held", t.n);
    /* the span of a wait: the n-1 signals before its own, bounded, none for one */
    uint64_t lo, hi;
    ncg_sig_wait_span(&w, &lo, &hi);
    CHECK(hi == ncg_sig_seq(c0, 3) && lo == ncg_sig_seq(c0, 1));
    struct ncg_p2p_rec big = rec(ncg_sig_seq(c0, 100000), 1000000, 0, NCG_F_RECV);
    ncg_sig_wait_span(&big, &lo, &hi);
    CHECK(hi - lo == NCG_SIG_DROP_MAX);
    struct ncg_p2p_rec one = rec(ncg_sig_seq(c0, 7), 1, 0, NCG_F_RECV);
    ncg_sig_wait_span(&one, &lo, &hi);
    CHECK(lo == hi);
    /* ordinary pairs still differ on counts */
    CHECK(ncg_p2pm_add(&t, 0, 2, &(struct ncg_p2p_rec){0, 2, 1, NCG_F_SEND, 0}, 6, pair) ==
          NCG_P2PM_DIFFER);
    ncg_p2pm_clear(&t);
    return ncg_check_done();
}
