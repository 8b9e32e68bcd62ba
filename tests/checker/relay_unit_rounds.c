/* Relay unit tests, digest rounds through a tree: agreement, a MISMATCH narrowed over
 * representatives and named, the plain VERDICT form for clients, the figures gather for a status
 * view, the root's wait for every rank, and the read-only view (relay_view.c). */
#include "relay_unit.h"

void test_agree(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    for (int t = 0; t < 5; t++)
        tick_all(3);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.rounds >= 1 && st.verdicts == 0);
    ncg_relay_get_stats(T.r[2], &st);
    CHECK(st.rounds >= 1); /* the root's query reached the leaf */
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 0);
    tree_free(3);
}

void test_mismatch(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    for (int t = 0; t < 4; t++)
        tick_all(3); /* slots 0..9 verified */
    int q0[6];
    for (int i = 0; i < T.ncl; i++) {
        T.cl[i].count = 100;
        q0[i] = T.cl[i].queries;
    }
    T.cl[5].odd_from = 57; /* rank 5, under two relays */
    report_all();
    for (int t = 0; t < 10; t++)
        tick_all(3);
    for (int i = 0; i < T.ncl; i++) {
        CHECK(T.cl[i].verdicts == 1); /* every rank, exactly once */
        CHECK(T.cl[i].v && T.cl[i].v->kind == NCG_V_MISMATCH);
    }
    /* the plain round at slot 99 asked every rank; the narrowing after it (32 spaced digests
     * over slots 10..99, then the records) only rank 0 for 0-4 and rank 5, down relay 1 to
     * relay 2 and not to ranks 2 and 3 */
    for (int i = 0; i < T.ncl; i++) {
        int want = i == 0 || i == 5 ? 3 : 1;
        CHECK(T.cl[i].queries - q0[i] == want);
        CHECK(T.cl[i].targeted == want - 1);
    }
    const struct ncg_verdict *v = T.cl[0].v;
    if (v) {
        CHECK(v->slot == 57 && !strcmp(v->subject, "5") && v->ncalls == 2);
        CHECK(!strcmp(v->calls[0].ranks, "0-4") && !strcmp(v->calls[1].ranks, "5"));
        CHECK(v->calls[1].call.func == 2 && v->last_agreed == 56);
    }
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.verdicts == 1);
    /* the same verdict again from the parent: ignored, not delivered twice */
    struct ncg_msg m = {.type = NCG_MSG_RVERDICT};
    m.u.rverdict.comm_nranks = 6;
    m.u.rverdict.v = T.cl[0].v;
    ncg_relay_parent_message(T.r[2], &m, T.now);
    pump();
    ncg_relay_get_stats(T.r[2], &st);
    CHECK(st.forwarded == 1 && st.ignored == 1 && T.cl[4].verdicts == 1);
    tree_free(3);
}

/* Every rank at 100 calls, rank 5 (beneath two relays) differing from slot 57 on (its other
 * flags set by the caller), reported, then ten ticks: the verdict is in. */
static void run_rank5_odd_from57(void)
{
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 100;
    T.cl[5].odd_from = 57;
    report_all();
    for (int t = 0; t < 10; t++)
        tick_all(3);
}

/* A narrowing round's representative does not answer (here: "none" for the slots): the root
 * asks the same slots of every rank and narrows from there, naming the same ranks. */
void test_mismatch_rep_missing(void)
{
    tree(1);
    T.cl[5].none_targeted = 1;
    run_rank5_odd_from57();
    const struct ncg_verdict *v = T.cl[0].v;
    CHECK(T.cl[0].verdicts == 1 && v && v->kind == NCG_V_MISMATCH);
    if (v)
        CHECK(v->slot == 57 && !strcmp(v->subject, "5") && !strcmp(v->calls[0].ranks, "0-4") &&
              !strcmp(v->calls[1].ranks, "5"));
    /* plain, narrowing for representatives, the same of everyone, the records of everyone */
    CHECK(T.cl[5].targeted == 1 && T.cl[5].queries == 4 && T.cl[1].queries == 3);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.targeted == 1 && st.verdicts == 1);
    tree_free(3);
}

/* Relays 1 and 2 both under the root (fork): the narrowing for ranks 0 and 5 goes down to
 * relay 2 only; relay 1's subtree (ranks 2, 3) hears the plain round alone. */
void test_mismatch_sibling(void)
{
    T.fork = 1;
    tree(1);
    T.fork = 0;
    run_rank5_odd_from57();
    const struct ncg_verdict *v = T.cl[0].v;
    CHECK(v && v->kind == NCG_V_MISMATCH && v->slot == 57 && !strcmp(v->subject, "5"));
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 1);
    struct ncg_relay_stats s1, s2;
    ncg_relay_get_stats(T.r[1], &s1);
    ncg_relay_get_stats(T.r[2], &s2);
    CHECK(s1.targeted == 0 && s2.targeted == 2 && s1.rounds == 1);
    CHECK(T.cl[2].queries == 1 && T.cl[3].queries == 1 && T.cl[4].queries == 1);
    tree_free(3);
}

/* A rank the differing plain round did not hear from (rank 5 has not reported: rounds start
 * without it after the root's wait) might differ earlier than the groups that answered, were
 * it to answer later: representatives stand only for groups that name every rank, so here the
 * narrowing asks every rank it has. */
void test_mismatch_absent_rank(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 100;
    T.cl[5].relay = -1; /* never reports */
    T.cl[4].odd_from = 90;
    report_all();
    tick_all(3);
    T.now += 1000000000ull; /* past the root's wait for every rank */
    for (int t = 0; t < 10; t++)
        tick_all(3);
    const struct ncg_verdict *v = T.cl[0].v;
    CHECK(v && v->kind == NCG_V_MISMATCH);
    if (v)
        CHECK(v->slot == 90 && !strcmp(v->subject, "4"));
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.targeted == 0 && st.verdicts == 1);
    for (int i = 0; i < 5; i++)
        CHECK(T.cl[i].targeted == 0 && T.cl[i].queries >= 3);
    tree_free(3);
}

/* The digests differ from slot 57 on but every record there reads the same call (the
 * difference lies in slots the rings no longer keep): one call, said so as coord.c does. */
void test_mismatch_alike(void)
{
    tree(1);
    T.cl[5].same_call = 1;
    run_rank5_odd_from57();
    const struct ncg_verdict *v = T.cl[0].v;
    CHECK(T.cl[0].verdicts == 1 && v && v->kind == NCG_V_MISMATCH);
    if (v) {
        CHECK(v->slot == 57 && v->ncalls == 1 && !strcmp(v->calls[0].ranks, "0-5"));
        CHECK(!strcmp(v->detail, "the calls at slot 57 look alike: the first difference lies in "
                                 "slots no longer kept"));
        CHECK(v->subject[0] == 0);
    }
    tree_free(3);
}

/* Real clients (interpose/agent/client.c) read a plain VERDICT: with client_verdicts, clients get
 * that form (the comm's size, per-rank arrays) and relays still get RVERDICT. */
void test_client_verdicts(void)
{
    T.client_verdicts = 1;
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    ncg_relay_closed(T.r[2], 1, T.now);
    T.cl[5].relay = -1;
    pump();
    for (int i = 0; i < 5; i++)
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].plain == 1 && T.cl[i].v && T.cl[i].v->nranks == 6 &&
              !strcmp(T.cl[i].v->subject, "5"));
    for (int i = 0; i < 5; i++) /* every rank's figures gathered, the dead one's from its relay */
        for (int k = 0; k < 6 && T.cl[i].v; k++)
            CHECK(T.cl[i].v->counts[k] == 10 && T.cl[i].v->members[k] == k);
    tree_free(3);
    T.client_verdicts = 0;
}

/* Field by field (a struct's padding is not compared). */
static int same_runs(const struct ncg_figrun *x, const struct ncg_figrun *y, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (x[i].lo != y[i].lo || x[i].n != y[i].n || x[i].count != y[i].count ||
            x[i].count_hi != y[i].count_hi || x[i].done != y[i].done || x[i].glo != y[i].glo ||
            x[i].gstride != y[i].gstride || x[i].state != y[i].state || x[i].flags != y[i].flags)
            return 0;
    return 1;
}

/* The figures gather for a status view (relay.h): a request at the root gathers every rank's
 * figures through two levels of relays (counts, completed counts, global ranks, a dead rank's
 * last figures from its node relay); a range; the refusals; the codecs of its frames and of a
 * tree verdict carrying runs. */
void test_figs_gather(void)
{
    const struct ncg_figrun *fr;
    uint32_t n, lo, hi;
    uint64_t at;
    char t[256];
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = T.cl[i].done = T.cl[i].done_hi = i == 3 ? 9 : 10;
    report_all();
    tick_all(3);
    CHECK(ncg_relay_figs_last(T.r[0], 0xc0, &fr, &n, &lo, &hi, &at) == -ENOENT);
    CHECK(ncg_relay_figs_request(T.r[0], 0xc1, 0, 5, T.now) == -ENOENT);
    CHECK(ncg_relay_figs_request(T.r[0], 0xc0, 3, 6, T.now) == -EINVAL);
    CHECK(ncg_relay_figs_request(T.r[0], 0xc0, 4, 3, T.now) == -EINVAL);
    ncg_relay_closed(T.r[2], 1, T.now); /* rank 5 dies: the RANK DIED verdict gathers too */
    T.cl[5].relay = -1;
    pump();
    CHECK(ncg_relay_figs_last(T.r[0], 0xc0, &fr, &n, &lo, &hi, &at) == 0);
    CHECK(lo == 0 && hi == 5 && at == T.now);
    CHECK(!strcmp(ncg_figruns_counts_text(fr, n, 6, t, sizeof t), "10 on 0-2,4-5; 9 on 3"));
    for (uint32_t j = 0; j < n; j++) {
        CHECK(ncg_figrun_grank(&fr[j], 0) == (int32_t)fr[j].lo); /* global = comm rank here */
        if (fr[j].lo + fr[j].n == 6)
            CHECK(fr[j].state == NCG_FIG_DEAD && fr[j].n == 1 && fr[j].done == 10);
    }
    tree_free(3);

    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 20 + (uint64_t)i;
    report_all();
    tick_all(3);
    CHECK(ncg_relay_figs_request(T.r[0], 0xc0, 2, 4, T.now) == 0);
    CHECK(ncg_relay_figs_request(T.r[0], 0xc0, 0, 5, T.now) == -EBUSY); /* relays not answered */
    pump();
    CHECK(ncg_relay_figs_last(T.r[0], 0xc0, &fr, &n, &lo, &hi, &at) == 0 && lo == 2 && hi == 4);
    CHECK(!strcmp(ncg_figruns_counts_text(fr, n, 6, t, sizeof t),
                  "not gathered on 0-1,5; 22 on 2; 23 on 3; 24 on 4"));
    /* a subtree that never answers: the root's deadline, its ranks unknown */
    CHECK(ncg_relay_figs_request(T.r[0], 0xc0, 0, 5, T.now) == 0);
    T.frozen = 1; /* relay 1 (ranks 2-5 beneath) hears nothing more */
    pump();
    CHECK(ncg_relay_figs_request(T.r[0], 0xc0, 0, 5, T.now) == -EBUSY);
    for (int k = 0; k < 11; k++)
        tick_all(3);
    T.frozen = -1;
    CHECK(ncg_relay_figs_last(T.r[0], 0xc0, &fr, &n, &lo, &hi, &at) == 0 && lo == 0 && hi == 5);
    CHECK(!strcmp(ncg_figruns_counts_text(fr, n, 6, t, sizeof t),
                  "20 on 0; 21 on 1; not gathered on 2-5"));
    tree_free(3);

    static struct ncg_msg m, o;
    static struct ncg_msg_rfiga a;
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RFIGQ;
    m.u.rfigq = (struct ncg_msg_rfigq){0xc0, NCG_WIRE_MAX_RANKS, 7, 100, (NCG_WIRE_MAX_RANKS)-1};
    roundtrip(&m, &o);
    CHECK(o.u.rfigq.nranks == NCG_WIRE_MAX_RANKS && o.u.rfigq.lo == 100 &&
          o.u.rfigq.hi == (NCG_WIRE_MAX_RANKS)-1);
    memset(&a, 0, sizeof a);
    a = (struct ncg_msg_rfiga){0xc0, NCG_WIRE_MAX_RANKS, 7, 2, {{0}}};
    a.r[0] =
        (struct ncg_figrun){0, NCG_WIRE_MAX_RANKS / 2, 1235, 1235, 1234, 0, 1, NCG_FIG_ACTIVE, 0};
    a.r[1] = (struct ncg_figrun){
        NCG_WIRE_MAX_RANKS / 2, NCG_WIRE_MAX_RANKS / 2, 1230, 1235, 1230, -1, 0, 0, NCG_FIG_COARSE};
    m.type = NCG_MSG_RFIGA;
    m.u.rfiga = &a;
    roundtrip(&m, &o);
    CHECK(o.u.rfiga && o.u.rfiga->n == 2 && same_runs(o.u.rfiga->r, a.r, 2));
    ncg_msg_release(&o);
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RVERDICT;
    m.u.rverdict.comm_nranks = NCG_WIRE_MAX_RANKS;
    m.u.rverdict.v = ncg_verdict_new(0);
    m.u.rverdict.v->kind = NCG_V_LAG;
    CHECK(ncg_verdict_set_figs(m.u.rverdict.v, a.r, 2) == 0);
    roundtrip(&m, &o);
    CHECK(o.u.rverdict.v && o.u.rverdict.v->nfigs == 2 && same_runs(o.u.rverdict.v->figs, a.r, 2));
    ncg_msg_release(&o);
    m.u.rverdict.comm_nranks = (NCG_WIRE_MAX_RANKS)-1; /* runs past the comm: refused */
    {
        static uint8_t buf[4096];
        CHECK(ncg_wire_encode(&m, buf, sizeof buf) < 0);
    }
    ncg_verdict_free(m.u.rverdict.v);
}

/* The root's rounds wait (up to a second) for every rank of the comm: a mismatch found among
 * the ranks attached first would name only them. */
void test_round_waits(void)
{
    tree(0);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    T.cl[1].odd_from = 5;
    T.cl[2].relay = T.cl[3].relay = -1; /* relay 1's ranks attach late */
    report_all();
    for (int t = 0; t < 5; t++)
        tick_all(2);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.rounds == 0 && T.cl[0].verdicts == 0);
    T.cl[2].relay = T.cl[3].relay = 1;
    report_all();
    for (int t = 0; t < 8; t++)
        tick_all(2);
    CHECK(T.cl[0].verdicts == 1 && T.cl[3].verdicts == 1);
    if (T.cl[0].v) /* every member named: 1 vs 0,2-3 */
        CHECK(T.cl[0].v->ncalls == 2 && (!strcmp(T.cl[0].v->calls[0].ranks, "0,2-3") ||
                                         !strcmp(T.cl[0].v->calls[1].ranks, "0,2-3")));
    tree_free(2);
    /* a rank that never registers delays the check by a second only */
    tree(0);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    T.cl[3].relay = -1;
    report_all();
    for (int t = 0; t < 14; t++)
        tick_all(2);
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.rounds >= 1);
    tree_free(2);
}

/* (docs/simulator.md, finding 1: make sim SEED=640 SIM_ARGS='--workload mismatch') Rank 3
 * registers past the root's second of waiting, after slots 0..9 were verified on the others: it
 * differs from slot 5 on. Its slots below the verified mark are compared once it is known, and
 * MISMATCH names it at slot 5 (it was never compared: no verdict, and STUCK would have claimed
 * every rank issued them identically). */
void test_late_compared(void)
{
    tree(0);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    T.cl[3].odd_from = 5;
    T.cl[3].relay = -1;
    report_all();
    for (int t = 0; t < 14; t++)
        tick_all(2);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.rounds >= 1 && st.verified == 10 && T.cl[0].verdicts == 0);
    T.cl[3].relay = 1;
    report_all();
    for (int t = 0; t < 10; t++)
        tick_all(2);
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].v && T.cl[i].v->kind == NCG_V_MISMATCH);
    if (T.cl[0].v)
        CHECK(T.cl[0].v->slot == 5 && !strcmp(T.cl[0].v->subject, "3") &&
              T.cl[0].v->last_agreed == 4);
    tree_free(2);
}

/* ---- the read-only view (relay_view.c: the status endpoint's source) ---- */

/* Three levels (ranks 0,1 at the root, 2,3 at relay 1, 4,5 at relay 2): rank 5 behind. The
 * root's view: every rank's aggregates (issued 8..10, completed from 7), rank 5 the slowest,
 * one child relay, its own two ranks' rows; relay 2's view: its two ranks with their counts and
 * global ranks. A goodbye: left counted, the row says so. */
void test_view(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++) {
        T.cl[i].count = i == 5 ? 8 : 10;
        T.cl[i].done = T.cl[i].done_hi = T.cl[i].count - 1;
    }
    report_all();
    for (int t = 0; t < 3; t++)
        tick_all(3);
    struct vseen s = view_of(0);
    CHECK(s.nconn == 3 && s.nrelay == 1 && s.relay_node == 1 && s.ncomm == 1);
    CHECK(s.c.id == 0xc0 && s.c.nranks == 6 && s.c.known == 6 && s.c.active == 6 && !s.c.left);
    CHECK(s.c.issued_min == 8 && s.c.issued_max == 10 && s.c.done_min == 7);
    CHECK(s.c.nslow == 1 && s.c.slow[0] == 5 && !s.c.slow_more);
    CHECK(s.c.nrelays == 1 && !s.c.done && s.c.verdict == NULL);
    CHECK(s.c.nhere == 2 && s.here[0].rank == 0 && s.here[1].rank == 1);
    CHECK(s.here[1].global_rank == 1 && s.here[1].pid == 1001 && s.here[1].issued == 10 &&
          s.here[1].done == 9 && s.here[1].state == 1 && !strcmp(s.here[1].host, "h"));
    CHECK(ncg_relay_get_params(T.r[0])->root == 1);
    s = view_of(2);
    CHECK(s.nconn == 2 && s.nrelay == 0 && s.c.nrelays == 0 && s.c.nhere == 2);
    CHECK(s.here[0].rank == 4 && s.here[0].global_rank == 4 && s.here[0].issued == 10 &&
          s.here[1].rank == 5 && s.here[1].issued == 8 && s.here[1].done == 7);
    CHECK(s.c.issued_min == 8 && s.c.issued_max == 10 && s.c.nslow == 1 && s.c.slow[0] == 5);
    /* all equal: nobody is the slowest */
    T.cl[5].count = 10;
    report_all();
    for (int t = 0; t < 2; t++)
        tick_all(3);
    s = view_of(0);
    CHECK(s.c.issued_min == 10 && s.c.nslow == 0);
    goodbye(&T.cl[1], 10, 0);
    pump();
    s = view_of(0);
    CHECK(s.c.known == 6 && s.c.active == 5 && s.c.left == 1 && s.here[1].state == 2);
    tree_free(3);
}
