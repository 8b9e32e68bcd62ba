/* Unit tests of the coordinator's state machine (coord/), driven by simulated members over
 * its ops (no sockets): MISMATCH narrowed over more than K slots, authentication, P2P MISMATCH,
 * RANK DIED / EXITED, LAG, DEADLOCK of streams, a multi-rank process, the exit release. */
#include "unit.h"

/* ---- the simulation: a coordinator, its members as plain arrays ---- */

#define MAXC 16
struct sim {
    struct ncg_coord *co;
    int nconn;
    struct ncg_msg_query q[MAXC]; /* last query per conn */
    int has_q[MAXC];
    int verdicts[MAXC];
    int nq[MAXC]; /* QUERYs sent to each connection */
    int drops[MAXC];
    int releases[MAXC]; /* RELEASEs sent to each connection (the exit release) */
    uint8_t vkind[MAXC];
    uint8_t vsev[MAXC];
    char vsum[MAXC][512];
    uint64_t now;
    /* member streams: calls per conn (one comm, rank = conn) */
    struct ncg_call calls[MAXC][4096];
    uint64_t count[MAXC];
};

static struct sim S;

static void sim_send(void *arg, int conn, const struct ncg_msg *m)
{
    (void)arg;
    if (m->type == NCG_MSG_QUERY) {
        S.q[conn] = m->u.query;
        S.has_q[conn] = 1;
        S.nq[conn]++;
    } else if (m->type == NCG_MSG_VERDICT) {
        S.verdicts[conn]++;
        S.vkind[conn] = m->u.verdict->kind;
        S.vsev[conn] = m->u.verdict->severity;
        ncg_verdict_summary(m->u.verdict, S.vsum[conn], sizeof S.vsum[conn]);
    } else if (m->type == NCG_MSG_RELEASE) {
        S.releases[conn]++;
    }
}

static void sim_drop(void *arg, int conn)
{
    (void)arg;
    S.drops[conn]++;
}

static double sim_exit_wait = 5; /* the exit release's bound of the next sim_init */

static void sim_init(int n, uint64_t token, double lag_warn, double lag_abort)
{
    memset(&S, 0, sizeof S);
    struct ncg_coord_params p = {.token = token,
                                 .interval_ms = 100,
                                 .heartbeat_timeout_s = 5,
                                 .lag_warn_s = lag_warn,
                                 .lag_abort_s = lag_abort,
                                 .exit_wait_s = sim_exit_wait};
    struct ncg_coord_ops ops = {sim_send, sim_drop, NULL, NULL};
    S.co = ncg_coord_new(&p, &ops);
    S.nconn = n;
    S.now = 1000000000ull;
    for (int i = 0; i < n; i++) {
        ncg_coord_connected(S.co, i, S.now);
        struct ncg_msg h = {.type = NCG_MSG_HELLO};
        h.u.hello.token = token;
        h.u.hello.pid = 100 + (uint32_t)i;
        h.u.hello.global_rank = i;
        strcpy(h.u.hello.host, "h");
        ncg_coord_message(S.co, i, &h, S.now);
    }
}

static uint64_t digest_at(int r, uint64_t slot)
{
    uint64_t d = 0;
    for (uint64_t s = 0; s <= slot; s++) {
        const struct ncg_call *c = &S.calls[r][s];
        d = ncg_digest_next(d, ncg_fingerprint(c->func, c->count, c->dtype, c->redop, c->root));
    }
    return d;
}

static void sim_issue(int r, struct ncg_call c)
{
    c.seq = S.count[r];
    S.calls[r][S.count[r]++] = c;
}

/* One interval: every live member reports, answers its pending query, then a tick. */
static void sim_round(int alive_mask)
{
    S.now += 100000000ull;
    for (int r = 0; r < S.nconn; r++) {
        if (!(alive_mask & (1 << r)))
            continue;
        struct ncg_msg m = {.type = NCG_MSG_REPORT};
        m.u.report.n = 1;
        m.u.report.e[0] = (struct ncg_report_entry){
            0xc0, (uint32_t)S.nconn, (uint32_t)r, S.count[r], r, 0, 0, 0, 0};
        ncg_coord_message(S.co, r, &m, S.now);
    }
    for (int loop = 0; loop < 8; loop++) {
        int any = 0;
        for (int r = 0; r < S.nconn; r++) {
            if (!(alive_mask & (1 << r)) || !S.has_q[r])
                continue;
            S.has_q[r] = 0;
            any = 1;
            static struct ncg_msg a;
            memset(&a, 0, sizeof a);
            a.type = NCG_MSG_ANSWER;
            a.u.answer.comm_id = S.q[r].comm_id;
            a.u.answer.qid = S.q[r].qid;
            a.u.answer.rank = (uint32_t)r;
            a.u.answer.n = S.q[r].n;
            for (uint32_t k = 0; k < S.q[r].n; k++) {
                uint64_t s = S.q[r].slot[k];
                struct ncg_answer *x = &a.u.answer.a[k];
                x->call.seq = s;
                if (s >= S.count[r]) {
                    x->status = NCG_ANS_NONE;
                    continue;
                }
                x->status = NCG_ANS_OK;
                x->digest = digest_at(r, s);
                x->call = S.calls[r][s];
                snprintf(x->site, sizeof x->site, "rank%d", r);
            }
            ncg_coord_message(S.co, r, &a, S.now);
        }
        if (!any)
            break;
    }
    ncg_coord_tick(S.co, S.now);
}

static int total_verdicts(void)
{
    int n = 0;
    for (int i = 0; i < S.nconn; i++)
        n += S.verdicts[i];
    return n;
}

static const struct ncg_call AR = {0, 8, -1, NCG_F_ALLREDUCE, 7, 0};

/* The view's communicators (a scraper's): how many, and *done of the last one. */
static void count_comm(void *arg, const struct ncg_coord_comm_view *c)
{
    int *a = arg;
    a[0]++;
    a[1] = c->done && c->verdict;
}
static int view_comms(int *done)
{
    int a[2] = {0, 0};
    struct ncg_coord_view_ops ops = {.comm = count_comm, .arg = a};
    ncg_coord_view(S.co, S.now, &ops);
    if (done)
        *done = a[1];
    return a[0];
}

void test_coord_mismatch(void)
{
    sim_init(4, 77, 60, 0);
    /* 300 agreeing calls over several rounds: no verdict */
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 50; i++)
            for (int r = 0; r < 4; r++)
                sim_issue(r, AR);
        sim_round(0xf);
    }
    sim_round(0xf);
    CHECK(total_verdicts() == 0);
    /* then 200 more calls in one burst with a count mismatch on rank 2 at slot 300+137:
     * found by narrowing over more than K slots */
    for (int i = 0; i < 200; i++)
        for (int r = 0; r < 4; r++) {
            struct ncg_call c = AR;
            if (r == 2 && i == 137)
                c.count = 9;
            sim_issue(r, c);
        }
    for (int k = 0; k < 6; k++)
        sim_round(0xf);
    CHECK(total_verdicts() == 4);
    CHECK(S.vkind[0] == NCG_V_MISMATCH);
    CHECK(strstr(S.vsum[0], "slot 437") != NULL);
    CHECK(strstr(S.vsum[0], "AllReduce(count=9, float32, sum) on rank 2 vs AllReduce(count=8, "
                            "float32, sum) on ranks 0-1,3"));
    /* the ranks exit (the verdict's action): the comm and its verdict stay in the view (a
     * scraper's /metrics) for NCG_CO_KEEP_NS, then go; its id registering again starts anew.
     * Every process says its last goodbye first; then a REPORT of the comm still comes on rank
     * 0's connection (a late frame of a process that left): it neither revives the rank nor
     * replaces the kept verdict with a comm of phantom members */
    struct ncg_msg bye = {.type = NCG_MSG_GOODBYE};
    bye.u.goodbye.flags = NCG_BYE_PROCESS | NCG_BYE_VERDICT;
    for (int r = 0; r < 4; r++)
        ncg_coord_message(S.co, r, &bye, S.now);
    S.now += 11000000000ull; /* past the exit release's bound */
    ncg_coord_tick(S.co, S.now);
    int done = 0;
    CHECK(view_comms(&done) == 1 && done == 1);
    struct ncg_msg late = {.type = NCG_MSG_REPORT};
    late.u.report.n = 1;
    late.u.report.e[0] = (struct ncg_report_entry){0xc0, 4, 0, S.count[0], 0, 0, 0, 0, 0};
    ncg_coord_message(S.co, 0, &late, S.now);
    ncg_coord_tick(S.co, S.now);
    CHECK(view_comms(&done) == 1 && done == 1);
    for (int r = 0; r < 4; r++)
        ncg_coord_closed(S.co, r, S.now);
    ncg_coord_tick(S.co, S.now);
    CHECK(view_comms(&done) == 1 && done == 1);
    S.now += 60000000000ull;
    ncg_coord_tick(S.co, S.now);
    CHECK(view_comms(&done) == 1 && done == 1);
    S.now += 61000000000ull;
    ncg_coord_tick(S.co, S.now);
    CHECK(view_comms(NULL) == 0);
    ncg_coord_free(S.co);
    /* kept, then the same id reports again (a job restarted with a fixed NCCL_COMM_ID): a new
     * comm, not the old verdict */
    sim_init(2, 77, 60, 0);
    for (int r = 0; r < 2; r++)
        sim_issue(r, AR);
    sim_issue(1, AR);
    sim_issue(0, (struct ncg_call){0, 9, -1, NCG_F_ALLREDUCE, 7, 0});
    for (int k = 0; k < 4; k++)
        sim_round(0x3);
    CHECK(total_verdicts() == 2);
    for (int r = 0; r < 2; r++)
        ncg_coord_closed(S.co, r, S.now);
    S.now += 11000000000ull;
    ncg_coord_tick(S.co, S.now);
    CHECK(view_comms(&done) == 1 && done == 1);
    for (int r = 0; r < 2; r++) { /* new connections, same comm id, counts from 0 */
        ncg_coord_connected(S.co, r, S.now);
        struct ncg_msg h = {.type = NCG_MSG_HELLO};
        h.u.hello.token = 77;
        h.u.hello.global_rank = r;
        ncg_coord_message(S.co, r, &h, S.now);
        S.count[r] = 0;
    }
    sim_round(0x3);
    CHECK(view_comms(&done) == 1 && done == 0);
    ncg_coord_free(S.co);
}

void test_coord_auth(void)
{
    sim_init(2, 77, 60, 0);
    /* conn 5: wrong token; conn 6: garbage type before HELLO; both dropped, state unchanged */
    ncg_coord_connected(S.co, 5, S.now);
    struct ncg_msg h = {.type = NCG_MSG_HELLO};
    h.u.hello.token = 78;
    ncg_coord_message(S.co, 5, &h, S.now);
    CHECK(S.drops[5] == 1);
    ncg_coord_connected(S.co, 6, S.now);
    struct ncg_msg r = {.type = NCG_MSG_REPORT};
    r.u.report.n = 1;
    r.u.report.e[0] = (struct ncg_report_entry){0xc0, 2, 0, 999, 0, 0, 0, 0, 0};
    ncg_coord_message(S.co, 6, &r, S.now);
    CHECK(S.drops[6] == 1);
    ncg_coord_closed(S.co, 6, S.now); /* no effect after the drop */
    for (int i = 0; i < 3; i++) {
        sim_issue(0, AR);
        sim_issue(1, AR);
        sim_round(0x3);
    }
    CHECK(total_verdicts() == 0);
    ncg_coord_free(S.co);
}

void test_coord_p2p(void)
{
    sim_init(2, 0, 60, 0);
    sim_round(0x3);
    struct ncg_msg p = {.type = NCG_MSG_P2P};
    p.u.p2p.comm_id = 0xc0;
    p.u.p2p.n = 2;
    p.u.p2p.r[0] = (struct ncg_p2p_rec){0, 32, 1, NCG_F_SEND, 7};
    p.u.p2p.r[1] = (struct ncg_p2p_rec){1, 33, 1, NCG_F_SEND, 7};
    p.u.p2p.rank = 0;
    ncg_coord_message(S.co, 0, &p, S.now);
    p.u.p2p.rank = 1; /* v14: the records' comm rank */
    p.u.p2p.r[0] = (struct ncg_p2p_rec){0, 32, 0, NCG_F_RECV, 7};
    p.u.p2p.r[1] = (struct ncg_p2p_rec){1, 32, 0, NCG_F_RECV, 7};
    ncg_coord_message(S.co, 1, &p, S.now);
    CHECK(S.verdicts[0] == 1 && S.verdicts[1] == 1);
    CHECK(S.vkind[1] == NCG_V_P2P_MISMATCH);
    CHECK(strstr(
        S.vsum[1],
        "Send(count=33, float32, peer=1) on rank 0 vs Recv(count=32, float32, peer=0) on rank 1"));
    ncg_coord_free(S.co);
}

void test_coord_liveness(void)
{
    /* connection lost without goodbye: RANK DIED to the others */
    sim_init(3, 0, 60, 0);
    sim_round(0x7);
    ncg_coord_closed(S.co, 1, S.now);
    CHECK(S.verdicts[0] == 1 && S.verdicts[2] == 1 && S.vkind[0] == NCG_V_RANK_DIED);
    CHECK(strstr(S.vsum[0], "rank 1 died"));
    ncg_coord_free(S.co);

    /* silent past the heartbeat timeout (5 s) */
    sim_init(3, 0, 60, 0);
    sim_round(0x7);
    for (int i = 0; i < 60; i++)
        sim_round(0x5);
    CHECK(S.vkind[0] == NCG_V_RANK_DIED && S.drops[1] == 1);
    CHECK(strstr(S.vsum[0], "silent"));
    ncg_coord_free(S.co);

    /* the coordinator itself was suspended for 20 s: nobody is declared dead */
    sim_init(3, 0, 60, 0);
    sim_round(0x7);
    S.now += 20000000000ull;
    ncg_coord_tick(S.co, S.now);
    sim_round(0x7);
    CHECK(total_verdicts() == 0);
    ncg_coord_free(S.co);

    /* clean goodbye at equal counts: nothing; then others go on: RANK EXITED */
    sim_init(3, 0, 60, 0);
    for (int r = 0; r < 3; r++)
        sim_issue(r, AR);
    sim_round(0x7);
    struct ncg_msg g = {.type = NCG_MSG_GOODBYE};
    g.u.goodbye.flags = NCG_BYE_PROCESS;
    g.u.goodbye.n = 1;
    g.u.goodbye.comm_id[0] = 0xc0;
    g.u.goodbye.count[0] = 1;
    g.u.goodbye.rank[0] = NCG_BYE_ANYRANK;
    ncg_coord_message(S.co, 1, &g, S.now);
    ncg_coord_closed(S.co, 1, S.now);
    sim_round(0x5);
    CHECK(total_verdicts() == 0);
    sim_issue(0, AR);
    sim_round(0x5);
    CHECK(S.verdicts[0] == 1 && S.vkind[0] == NCG_V_RANK_EXITED);
    ncg_coord_free(S.co);
}

void test_coord_lag(void)
{
    /* equal counts for a long time (a checkpoint pause): no verdict */
    sim_init(2, 0, 1.0, 3.0);
    sim_issue(0, AR);
    sim_issue(1, AR);
    for (int i = 0; i < 50; i++)
        sim_round(0x3);
    CHECK(total_verdicts() == 0);
    /* counts differ but someone progresses every round: no verdict */
    for (int i = 0; i < 50; i++) {
        sim_issue(0, AR);
        sim_round(0x3);
    }
    CHECK(total_verdicts() == 0);
    /* nobody progresses: a warning after 1 s, an error after 3 s */
    for (int i = 0; i < 15; i++)
        sim_round(0x3);
    CHECK(S.vkind[0] == NCG_V_LAG && S.vsev[0] == NCG_SEV_WARN);
    for (int i = 0; i < 25; i++)
        sim_round(0x3);
    CHECK(S.vkind[0] == NCG_V_LAG && S.vsev[0] == NCG_SEV_ERROR);
    CHECK(strstr(S.vsum[0], "rank 1 behind"));
    ncg_coord_free(S.co);
}

/* DEADLOCK under asynchronous NCCL, through the coordinator: two ranks, comms 0xc0 and 0xd0,
 * slot 20 of each enqueued in opposite orders on one stream (queued WAIT entries). */
static void dl_report(int r, uint64_t done_c0)
{
    struct ncg_msg m = {.type = NCG_MSG_REPORT};
    m.u.report.n = 2;
    m.u.report.e[0] = (struct ncg_report_entry){
        0xc0, 2, (uint32_t)r, 24, r, done_c0, 50, done_c0 > 24 ? done_c0 : 24, NCG_REP_SAMPLED};
    m.u.report.e[1] =
        (struct ncg_report_entry){0xd0, 2, (uint32_t)r, 24, r, 20, 50, 24, NCG_REP_SAMPLED};
    ncg_coord_message(S.co, r, &m, S.now);
}

static void dl_wait(int r, uint64_t first, uint8_t stream_c0)
{
    struct ncg_msg m = {.type = NCG_MSG_WAIT};
    m.u.wait.n = 2;
    for (int k = 0; k < 2; k++) {
        struct ncg_wait_ent *e = &m.u.wait.w[k];
        /* rank 0: c0 then d0; rank 1: d0 then c0 */
        int c0 = (k == 0) == (r == 0);
        *e = (struct ncg_wait_ent){.comm_id = c0 ? 0xc0 : 0xd0,
                                   .rank = (uint32_t)r,
                                   .tid = 50,
                                   .queued = 1,
                                   .stream = c0 ? stream_c0 : 1,
                                   .order = (uint32_t)(first + (uint64_t)k)};
        e->call = AR;
        e->call.seq = 20;
        snprintf(e->site, sizeof e->site, "train.c:%d", c0 ? 10 : 11);
    }
    ncg_coord_message(S.co, r, &m, S.now);
}

/* rounds of REPORT + WAIT from both ranks; returns the DEADLOCK verdicts received */
static int dl_rounds(int rounds, uint64_t done_c0, uint8_t stream_c0)
{
    for (int i = 0; i < rounds; i++) {
        S.now += 100000000ull;
        for (int r = 0; r < 2; r++) {
            dl_report(r, done_c0);
            dl_wait(r, 7 + (uint64_t)r, stream_c0);
        }
        ncg_coord_tick(S.co, S.now);
    }
    int n = 0;
    for (int r = 0; r < 2; r++)
        n += S.verdicts[r] && S.vkind[r] == NCG_V_DEADLOCK ? S.verdicts[r] : 0;
    return n;
}

void test_coord_deadlock_streams(void)
{
    /* one sighting is not enough: the second, after both processes sent a newer WAIT, is */
    sim_init(2, 77, 60, 0);
    CHECK(dl_rounds(1, 20, 1) == 0);
    CHECK(dl_rounds(1, 20, 1) == 4); /* a verdict per comm, to both members */
    CHECK(S.vsev[0] == NCG_SEV_ERROR);
    CHECK(strstr(S.vsum[0], "wait on each other across comms") != NULL);
    ncg_coord_free(S.co);
    /* rank 1's c0 call on another stream: the two streams may overlap, no verdict */
    sim_init(2, 77, 60, 0);
    CHECK(dl_rounds(6, 20, 2) == 0 && total_verdicts() == 0);
    ncg_coord_free(S.co);
    /* slot 20 of c0 known complete on the members (their REPORTs moved on): stale entries */
    sim_init(2, 77, 60, 0);
    CHECK(dl_rounds(6, 21, 1) == 0 && total_verdicts() == 0);
    ncg_coord_free(S.co);
}

/* A process holding two ranks of a comm gets one QUERY per round (it answers for both). */
void test_coord_multirank(void)
{
    sim_init(2, 77, 60, 0);
    for (int round = 0; round < 3; round++) {
        S.now += 100000000ull;
        for (int p = 0; p < 2; p++) {
            struct ncg_msg m = {.type = NCG_MSG_REPORT};
            m.u.report.n = 2;
            for (uint32_t k = 0; k < 2; k++)
                m.u.report.e[k] = (struct ncg_report_entry){
                    0xe0, 4, 2 * (uint32_t)p + k, 10 * ((uint64_t)round + 1), 2 * p + (int)k, 0, 0,
                    0,    0};
            ncg_coord_message(S.co, p, &m, S.now);
        }
        ncg_coord_tick(S.co, S.now);
        for (int p = 0; p < 2; p++) {
            CHECK(S.nq[p] == round + 1);
            if (!S.has_q[p])
                continue;
            S.has_q[p] = 0;
            for (uint32_t k = 0; k < 2; k++) { /* the client's answer for each of its ranks */
                static struct ncg_msg a;
                memset(&a, 0, sizeof a);
                a.type = NCG_MSG_ANSWER;
                a.u.answer.comm_id = 0xe0;
                a.u.answer.qid = S.q[p].qid;
                a.u.answer.rank = 2 * (uint32_t)p + k;
                a.u.answer.n = S.q[p].n;
                for (uint32_t j = 0; j < S.q[p].n; j++) {
                    a.u.answer.a[j].status = NCG_ANS_OK;
                    a.u.answer.a[j].call = AR;
                    a.u.answer.a[j].call.seq = S.q[p].slot[j];
                    a.u.answer.a[j].digest = 0x1234 + S.q[p].slot[j];
                }
                ncg_coord_message(S.co, p, &a, S.now);
            }
        }
    }
    CHECK(total_verdicts() == 0);
    ncg_coord_free(S.co);
}

static int total_releases(void)
{
    int n = 0;
    for (int i = 0; i < S.nconn; i++)
        n += S.releases[i];
    return n;
}

static void sim_done(int conn)
{
    struct ncg_msg d = {.type = NCG_MSG_DONE, .u.exit.comm_id = 0xc0};
    ncg_coord_message(S.co, conn, &d, S.now);
}

/* The exit release: a MISMATCH on 4 ranks; nobody is released before every process said DONE
 * (or closed), each exactly once; a process that never says it holds the others until the
 * bound (2 s here) and no longer; a DONE for another comm releases nothing. */
void test_coord_release(void)
{
    for (int variant = 0; variant < 3; variant++) {
        sim_exit_wait = 2;
        sim_init(4, 77, 60, 0);
        for (int i = 0; i < 10; i++)
            for (int r = 0; r < 4; r++) {
                struct ncg_call c = AR;
                if (r == 3 && i == 5)
                    c.count = 9;
                sim_issue(r, c);
            }
        for (int k = 0; k < 4 && total_verdicts() == 0; k++)
            sim_round(0xf);
        CHECK(total_verdicts() == 4);
        uint64_t t0 = S.now;
        sim_done(0);
        sim_done(1);
        struct ncg_msg other = {.type = NCG_MSG_DONE, .u.exit.comm_id = 0xdead};
        ncg_coord_message(S.co, 2, &other, S.now);
        sim_round(0xf);
        CHECK(total_releases() == 0); /* 2 and 3 have not said DONE */
        if (variant == 0) {           /* everyone finishes */
            sim_done(2);
            CHECK(total_releases() == 0);
            sim_done(3);
            CHECK(total_releases() == 4);
        } else if (variant == 1) { /* 3 closes (killed), 2 says DONE */
            ncg_coord_closed(S.co, 3, S.now);
            CHECK(total_releases() == 0);
            sim_done(2);
            CHECK(total_releases() == 3 && S.releases[3] == 0);
        } else { /* 3 never says it: released at the bound, not before */
            sim_done(2);
            while (S.now < t0 + 1900000000ull) {
                sim_round(0x7);
                CHECK(total_releases() == 0);
            }
            for (int k = 0; k < 3; k++)
                sim_round(0x7);
            CHECK(S.now <= t0 + 2300000000ull && total_releases() == 4);
        }
        for (int k = 0; k < 5; k++) /* once */
            sim_round(0x7);
        CHECK(total_releases() == (variant == 1 ? 3 : 4));
        ncg_coord_free(S.co);
    }
    sim_exit_wait = 5;
}

/* One WAIT from conn 0 with the entry e. */
static void gw_wait(const struct ncg_wait_ent *e, int n)
{
    struct ncg_msg m = {.type = NCG_MSG_WAIT};
    m.u.wait.n = (uint32_t)n;
    if (n)
        m.u.wait.w[0] = *e;
    ncg_coord_message(S.co, 0, &m, S.now);
}

/* A wait on a member that left (gonewait.h): rank 1 says goodbye at equal counts while rank 0
 * waits in a send to it (or a receive from it, or a collective slot it never completed):
 * RANK EXITED after NCG_GW_SIGHTINGS WAITs in a row, naming rank 1 and the waiting call; not
 * before, not when the wait went away in between, not while rank 1 is still there, and not for
 * a wait on another (present) peer. */
void test_coord_gone_wait(void)
{
    struct ncg_wait_ent send = {.comm_id = 0xc0, .rank = 0, .tid = 100, .p2p = 1};
    send.call = (struct ncg_call){0, 8, 1, NCG_F_SEND, 7, NCG_REDOP_NONE};
    strcpy(send.site, "main+0x10 (app+0x1010)");
    struct ncg_wait_ent recv = send, coll = send;
    recv.call.func = NCG_F_RECV;
    coll.p2p = 0;
    coll.call = (struct ncg_call){1, 8, -1, NCG_F_ALLREDUCE, 7, 0};
    const struct ncg_wait_ent *cases[] = {&send, &recv, &coll};
    for (int k = 0; k < 3; k++) {
        sim_init(3, 0, 60, 0);
        for (int r = 0; r < 3; r++)
            sim_issue(r, AR);
        sim_round(0x7);
        /* rank 1 still there: waiting on it is no verdict */
        for (int i = 0; i < 5; i++)
            gw_wait(cases[k], 1);
        CHECK(total_verdicts() == 0);
        struct ncg_msg g = {.type = NCG_MSG_GOODBYE};
        g.u.goodbye.flags = NCG_BYE_PROCESS;
        g.u.goodbye.n = 1;
        g.u.goodbye.comm_id[0] = 0xc0;
        g.u.goodbye.count[0] = 1;
        g.u.goodbye.rank[0] = 1;
        ncg_coord_message(S.co, 1, &g, S.now);
        sim_round(0x5);
        CHECK(total_verdicts() == 0);
        /* sightings interrupted by a WAIT without it start again */
        for (unsigned i = 0; i + 1 < NCG_GW_SIGHTINGS; i++)
            gw_wait(cases[k], 1);
        gw_wait(cases[k], 0);
        for (unsigned i = 0; i + 1 < NCG_GW_SIGHTINGS; i++)
            gw_wait(cases[k], 1);
        CHECK(total_verdicts() == 0);
        gw_wait(cases[k], 1);
        CHECK(S.verdicts[0] == 1 && S.verdicts[2] == 1 && S.vkind[0] == NCG_V_RANK_EXITED);
        CHECK(strstr(S.vsum[0], "rank 1 exited"));
        ncg_coord_free(S.co);
    }
    /* a wait on rank 2, present, while rank 1 left: nothing */
    sim_init(3, 0, 60, 0);
    sim_round(0x7);
    struct ncg_msg g = {.type = NCG_MSG_GOODBYE};
    g.u.goodbye.flags = NCG_BYE_PROCESS;
    g.u.goodbye.n = 1;
    g.u.goodbye.comm_id[0] = 0xc0;
    g.u.goodbye.rank[0] = 1;
    ncg_coord_message(S.co, 1, &g, S.now);
    send.call.root = 2;
    for (int i = 0; i < 5; i++)
        gw_wait(&send, 1);
    CHECK(total_verdicts() == 0);
    ncg_coord_free(S.co);
}
