/* Relay unit tests, p2p (relay_p2p.c): send/recv records matched at the relay where both ends
 * meet, sent up otherwise, P2P MISMATCH as the flat coordinator words it, records ageing out at
 * the root, the held-records bound, an allocation failing. */
#include "relay_unit.h"

/* Client c's k-th send to (send) or recv from peer, of count float32 elements. */
static void p2p(const struct client *c, int send, int peer, uint64_t k, uint64_t count)
{
    struct ncg_msg m = {.type = NCG_MSG_P2P};
    m.u.p2p.comm_id = 0xc0;
    m.u.p2p.rank = NCG_BYE_ANYRANK;
    m.u.p2p.n = 1;
    m.u.p2p.r[0] = (struct ncg_p2p_rec){k, count, peer, send ? NCG_F_SEND : NCG_F_RECV, 7};
    push(TO_CHILD, c->relay, c->conn, &m);
    pump();
}

static void stats(int relay, struct ncg_relay_stats *st)
{
    ncg_relay_get_stats(T.r[relay], st);
}

static int verdicts_total(void)
{
    int n = 0;
    for (int i = 0; i < T.ncl; i++)
        n += T.cl[i].verdicts;
    return n;
}

/* Both ends beneath one relay: matched there, nothing sent up, no verdict. The other side may
 * come an interval later (the hold). */
void test_p2p_leaf(void)
{
    tree(1);
    report_all();
    tick_all(3);
    p2p(&T.cl[4], 1, 5, 0, 8);
    p2p(&T.cl[5], 0, 4, 0, 8);
    p2p(&T.cl[5], 0, 4, 1, 16); /* the recv first, the send one tick later */
    p2p(&T.cl[5], 0, 4, 1, 16); /* the same side again: dropped */
    tick_all(3);
    p2p(&T.cl[4], 1, 5, 1, 16);
    for (int t = 0; t < 5; t++)
        tick_all(3);
    struct ncg_relay_stats st;
    stats(2, &st);
    CHECK(st.p2p_matched == 2 && st.p2p_held == 0 && st.p2p_up == 0 && T.rp2p_recs[2] == 0);
    stats(0, &st);
    CHECK(st.p2p_matched == 0 && st.p2p_held == 0 && st.verdicts == 0);
    CHECK(verdicts_total() == 0);
    tree_free(3);
}

/* Ends beneath different relays: each sends its record up after the hold and the lowest
 * common relay matches them. Forked tree: relays 1 and 2 under the root (ranks 2 and 4); chain:
 * rank 3 at relay 1, rank 5 at relay 2 beneath it (matched at relay 1, not at the root). */
void test_p2p_cross(void)
{
    T.fork = 1;
    tree(1);
    report_all();
    tick_all(3);
    p2p(&T.cl[2], 1, 4, 0, 8);
    p2p(&T.cl[4], 0, 2, 0, 8);
    for (int t = 0; t < 4; t++)
        tick_all(3);
    struct ncg_relay_stats st;
    CHECK(T.rp2p_recs[1] == 1 && T.rp2p_recs[2] == 1);
    stats(0, &st);
    CHECK(st.p2p_matched == 1 && st.p2p_held == 0 && st.verdicts == 0);
    stats(1, &st);
    CHECK(st.p2p_matched == 0 && st.p2p_held == 0);
    CHECK(verdicts_total() == 0);
    tree_free(3);
    T.fork = 0;

    tree(1);
    report_all();
    tick_all(3);
    p2p(&T.cl[5], 1, 3, 0, 8);
    p2p(&T.cl[3], 0, 5, 0, 8);
    for (int t = 0; t < 4; t++)
        tick_all(3);
    CHECK(T.rp2p_recs[2] == 1 && T.rp2p_recs[1] == 0);
    stats(1, &st);
    CHECK(st.p2p_matched == 1 && st.p2p_held == 0);
    stats(0, &st);
    CHECK(st.p2p_matched == 0 && st.p2p_held == 0 && st.verdicts == 0);
    CHECK(verdicts_total() == 0);
    tree_free(3);
}

/* The verdict every client got: the flat coordinator's P2P MISMATCH, word for word. */
static void check_p2p_verdict(int src, int dst, const char *summary)
{
    char want[256], sum[512];
    snprintf(want, sizeof want, "%d,%d", src < dst ? src : dst, src < dst ? dst : src);
    for (int i = 0; i < T.ncl; i++) {
        const struct ncg_verdict *v = T.cl[i].v;
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].plain == 1 && v && v->kind == NCG_V_P2P_MISMATCH);
        if (!v)
            continue;
        CHECK(!strcmp(v->subject, want) && v->slot == 0 && v->ncalls == 2 && v->nranks == 6);
        snprintf(want, sizeof want, "send #0 from rank %d to rank %d", src, dst);
        CHECK(!strcmp(v->detail, want));
        ncg_verdict_summary(v, sum, sizeof sum);
        CHECK(strstr(sum, summary) != NULL);
        snprintf(want, sizeof want, "%d,%d", src < dst ? src : dst, src < dst ? dst : src);
    }
}

/* A send of 33 against a recv of 32 beneath one relay: found there, sent up as its two
 * records, the root's verdict reaches every client once (as real clients read it). */
void test_p2p_mismatch_leaf(void)
{
    T.client_verdicts = 1;
    tree(1);
    report_all();
    tick_all(3);
    p2p(&T.cl[4], 1, 5, 0, 33);
    p2p(&T.cl[5], 0, 4, 0, 32);
    struct ncg_relay_stats st;
    stats(2, &st);
    CHECK(st.p2p_matched == 1 && st.p2p_held == 0);
    for (int t = 0; t < 4; t++)
        tick_all(3);
    CHECK(T.rp2p_recs[2] == 2 && T.rp2p_recs[1] == 2); /* the pair, passed on by relay 1 */
    stats(0, &st);
    CHECK(st.verdicts == 1);
    stats(2, &st);
    CHECK(st.verdicts == 0); /* only the root issues verdicts */
    check_p2p_verdict(4, 5,
                      "P2P MISMATCH on comm 00000000000000c0 (6 ranks): Send(count=33, float32, "
                      "peer=5) on rank 4 vs Recv(count=32, float32, peer=4) on rank 5");
    p2p(&T.cl[4], 1, 5, 1, 40); /* after the verdict: ignored */
    p2p(&T.cl[5], 0, 4, 1, 41);
    for (int t = 0; t < 4; t++)
        tick_all(3);
    CHECK(verdicts_total() == T.ncl);
    tree_free(3);
    T.client_verdicts = 0;
}

/* The mismatching ends in sibling subtrees (forked tree, ranks 2 and 4): matched at the root. */
void test_p2p_mismatch_cross(void)
{
    T.client_verdicts = 1;
    T.fork = 1;
    tree(1);
    report_all();
    tick_all(3);
    p2p(&T.cl[4], 0, 2, 0, 32); /* the recv first */
    tick_all(3);
    p2p(&T.cl[2], 1, 4, 0, 33);
    for (int t = 0; t < 4; t++)
        tick_all(3);
    struct ncg_relay_stats st;
    stats(0, &st);
    CHECK(st.verdicts == 1 && st.p2p_matched == 1);
    check_p2p_verdict(2, 4,
                      "P2P MISMATCH on comm 00000000000000c0 (6 ranks): Send(count=33, float32, "
                      "peer=4) on rank 2 vs Recv(count=32, float32, peer=2) on rank 4");
    tree_free(3);
    T.fork = 0;
    T.client_verdicts = 0;
}

/* Unmatched records go up to the root and age out there after NCG_P2PM_AGE_NS: the other side
 * arriving later is held alone (no verdict, even though it differs). */
void test_p2p_age(void)
{
    tree(1);
    report_all();
    tick_all(3);
    p2p(&T.cl[4], 1, 0, 0, 8); /* to rank 0, which never receives it (yet) */
    p2p(&T.cl[1], 1, 0, 0, 8);
    for (int t = 0; t < 5; t++)
        tick_all(3);
    struct ncg_relay_stats st;
    stats(2, &st);
    CHECK(st.p2p_held == 0 && st.p2p_up == 1);
    stats(1, &st);
    CHECK(st.p2p_held == 0 && st.p2p_up == 1);
    stats(0, &st);
    CHECK(st.p2p_held == 2);
    T.now += NCG_P2PM_AGE_NS - 2000000000ull; /* not yet */
    report_all();
    tick_all(3);
    stats(0, &st);
    CHECK(st.p2p_held == 2);
    T.now += 3000000000ull;
    report_all();
    tick_all(3);
    tick_all(3);
    stats(0, &st);
    CHECK(st.p2p_held == 0);
    p2p(&T.cl[0], 0, 4, 0, 9);
    for (int t = 0; t < 3; t++)
        tick_all(3);
    stats(0, &st);
    CHECK(st.p2p_held == 1 && st.verdicts == 0 && verdicts_total() == 0);
    tree_free(3);
}

/* At most NCG_P2PM_MAX records held per comm: the others are refused with one event line
 * (at the root, and at a relay beneath it whose parent link is down, which holds them). */
void test_p2p_cap(void)
{
    tree(1);
    report_all();
    tick_all(3);
    static struct ncg_msg m;
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_P2P;
    m.u.p2p.comm_id = 0xc0;
    m.u.p2p.rank = NCG_BYE_ANYRANK;
    uint32_t total = NCG_P2PM_MAX + 100;
    for (int relay = 0; relay < 3; relay += 2) {
        if (relay)
            ncg_relay_parent_down(T.r[2]);
        for (uint32_t k = 0; k < total; k += NCG_WIRE_MAX_P2P) {
            m.u.p2p.n = 0;
            for (uint32_t j = 0; j < NCG_WIRE_MAX_P2P && k + j < total; j++)
                m.u.p2p.r[m.u.p2p.n++] =
                    (struct ncg_p2p_rec){k + j, 8, relay ? 5 : 1, NCG_F_SEND, 7};
            ncg_relay_message(T.r[relay], 0, &m, T.now); /* rank 0 to 1, or 4 to 5 */
        }
        struct ncg_relay_stats st;
        stats(relay, &st);
        CHECK(st.p2p_held == NCG_P2PM_MAX && st.refused == 100 && T.p2p_ev[relay] == 1);
        /* one of them received, as sent: it matches, and makes room for one more */
        m.u.p2p.n = 1;
        m.u.p2p.r[0] = (struct ncg_p2p_rec){7, 8, relay ? 4 : 0, NCG_F_RECV, 7};
        ncg_relay_message(T.r[relay], 1, &m, T.now);
        m.u.p2p.r[0] = (struct ncg_p2p_rec){total, 8, relay ? 5 : 1, NCG_F_SEND, 7};
        ncg_relay_message(T.r[relay], 0, &m, T.now);
        stats(relay, &st);
        CHECK(st.p2p_matched == 1 && st.p2p_held == NCG_P2PM_MAX && st.refused == 100);
    }
    CHECK(T.rp2p_recs[2] == 0 && verdicts_total() == 0);
    tree_free(3);
}

/* An allocation failing for a p2p record: the relay says it lost state. */
void test_p2p_nomem(void)
{
#ifdef NCG_SANITIZED
    return;
#endif
    tree(1);
    report_all();
    tick_all(3);
    struct ncg_msg m = {.type = NCG_MSG_P2P};
    m.u.p2p.comm_id = 0xc0;
    m.u.p2p.rank = NCG_BYE_ANYRANK;
    m.u.p2p.n = 1;
    m.u.p2p.r[0] = (struct ncg_p2p_rec){0, 8, 5, NCG_F_SEND, 7};
    fail_alloc = 1;
    ncg_relay_message(T.r[2], 0, &m, T.now);
    fail_alloc = 0;
    CHECK(ncg_relay_out_of_memory(T.r[2]));
    tree_free(3);
}
