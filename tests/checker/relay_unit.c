/* Unit tests of the relay tree (interpose/relay/, wire_relay.c): the pure helpers (group
 * merging, rank ranges, agreement), the new frames' codecs (round trip, every truncation),
 * and small trees driven through an in-memory network where every message is encoded and
 * decoded. This file: that network (relay_unit.h), a failing malloc, and main, which runs each
 * topic's tests (relay_unit_<topic>.c) in a fixed order. */
#include "relay_unit.h"

NCG_CHECK_PROGRAM("relay_unit");

/* Failed allocations, in-process (tests/checker/failalloc.c's approach): while fail_alloc is
 * set, malloc/calloc/realloc of this program fail with ENOMEM. Not under ASan/TSan, whose own
 * allocators these would bypass. */
int fail_alloc;
#ifndef NCG_SANITIZED
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t m);
void *__libc_realloc(void *p, size_t n);
void *malloc(size_t n)
{
    if (fail_alloc) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t m)
{
    if (fail_alloc) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n)
{
    if (fail_alloc && n) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, n);
}
#endif

/* ---- codec round trips (every topic's frames) ---- */

void roundtrip(const struct ncg_msg *m, struct ncg_msg *out)
{
    static uint8_t buf[1 << 17];
    long n = ncg_wire_encode(m, buf, sizeof buf);
    CHECK(n > 0);
    if (n <= 0)
        return;
    for (long cut = 0; cut < n; cut++) { /* every truncation: "more bytes", never a message */
        struct ncg_msg t;
        long k = ncg_wire_decode(buf, (size_t)cut, &t);
        CHECK(k == 0);
        if (k > 0)
            ncg_msg_release(&t);
    }
    CHECK(ncg_wire_decode(buf, (size_t)n, out) == n);
    buf[NCG_WIRE_HDR + 1] ^= 0xff; /* corrupt the payload: decoded or refused, never a crash */
    struct ncg_msg t;
    if (ncg_wire_decode(buf, (size_t)n, &t) > 0)
        ncg_msg_release(&t);
}

long encode_decode(const struct ncg_msg *m)
{
    static uint8_t buf[8192];
    struct ncg_msg t;
    long n = ncg_wire_encode(m, buf, sizeof buf);
    if (n <= 0)
        return n;
    n = ncg_wire_decode(buf, (size_t)n, &t);
    if (n > 0)
        ncg_msg_release(&t);
    return n;
}

/* ---- trees over an in-memory network ---- */

struct net T;

void push(int kind, int relay, int conn, const struct ncg_msg *m)
{
    static uint8_t buf[1 << 17];
    long n = ncg_wire_encode(m, buf, sizeof buf);
    CHECK(n > 0);
    if (n <= 0 || T.qt - T.qh >= MAXQ)
        return;
    struct pkt *p = &T.q[T.qt++ % MAXQ];
    p->kind = kind;
    p->relay = relay;
    p->conn = conn;
    p->n = n;
    p->b = malloc((size_t)n);
    memcpy(p->b, buf, (size_t)n);
}

struct opsarg {
    int relay;
};
static struct opsarg OA[MAXR];

static void op_send(void *arg, int conn, const struct ncg_msg *m)
{
    int ri = ((struct opsarg *)arg)->relay;
    int cr = T.child_relay[ri][conn];
    if (cr >= 0)
        push(TO_PARENT, cr, 0, m);
    else
        push(TO_CLIENT, ri, conn, m);
}
static void op_drop(void *arg, int conn)
{
    (void)arg;
    (void)conn;
}
static void op_up(void *arg, const struct ncg_msg *m)
{
    int ri = ((struct opsarg *)arg)->relay;
    if (m->type == NCG_MSG_RSTAT && m->u.rstat.n) {
        T.stat_ents[ri] += (int)m->u.rstat.n;
        T.stat_last[ri] = m->u.rstat.e[m->u.rstat.n - 1];
    }
    if (m->type == NCG_MSG_RP2P)
        T.rp2p_recs[ri] += (int)m->u.rp2p.n;
    T.rwait_up[ri] += m->type == NCG_MSG_RWAIT;
    if (m->type == NCG_MSG_RSLOW) {
        static uint8_t b[1 << 16];
        T.rslow_bytes[ri] += ncg_wire_encode(m, b, sizeof b);
        for (uint32_t e = 0; e < m->u.rslow->n; e++)
            for (uint32_t j = 0; j < m->u.rslow->e[e].ns; j++) {
                T.rslow_slots[ri]++;
                T.rslow_who[ri] += m->u.rslow->e[e].s[j].has_who;
                T.rslow_unordered[ri] +=
                    j && m->u.rslow->e[e].s[j].slot <= m->u.rslow->e[e].s[j - 1].slot;
            }
    }
    if (m->type == NCG_MSG_RFAULT) {
        if (!T.rfaults[ri]++)
            T.rfault_first[ri] = m->u.rfault;
        T.rfault_ranks[ri] += (int)m->u.rfault.n;
    }
    push(TO_CHILD, T.parent[ri], T.parent_conn[ri], m);
}
static void op_event(void *arg, const char *line)
{
    int ri = ((struct opsarg *)arg)->relay;
    T.refused_ev[ri] += strstr(line, "refused") != NULL;
    T.merged_ev[ri] += strstr(line, "merged") != NULL;
    T.p2p_ev[ri] += strstr(line, "p2p records") != NULL;
}

static uint64_t digest_of(const struct client *c, uint64_t slot)
{
    return slot >= c->odd_from ? 0xbad0000 + slot : 0x600d0000 + slot;
}

static struct client *client_at(int relay, int conn)
{
    for (int i = 0; i < T.ncl; i++)
        if (T.cl[i].relay == relay && T.cl[i].conn == conn)
            return &T.cl[i];
    return NULL;
}

static void client_rx(struct client *c, const struct ncg_msg *m)
{
    if (m->type == NCG_MSG_QUERY) {
        c->queries++;
        c->targeted += m->u.query.nrep != 0;
        static struct ncg_msg a;
        memset(&a, 0, sizeof a);
        a.type = NCG_MSG_ANSWER;
        a.u.answer.comm_id = m->u.query.comm_id;
        a.u.answer.qid = m->u.query.qid;
        a.u.answer.rank = (uint32_t)c->rank;
        a.u.answer.n = m->u.query.n;
        for (uint32_t k = 0; k < m->u.query.n; k++) {
            uint64_t s = m->u.query.slot[k];
            struct ncg_answer *x = &a.u.answer.a[k];
            x->status = m->u.query.nrep && c->none_targeted ? NCG_ANS_NONE : NCG_ANS_OK;
            x->digest = digest_of(c, s);
            x->call.seq = s;
            x->call.func = s >= c->odd_from && !c->same_call ? 2 : 1;
            x->call.count = 8;
            x->call.root = -1;
        }
        push(TO_CHILD, c->relay, c->conn, &a);
    } else if (m->type == NCG_MSG_RVERDICT) {
        c->verdicts++;
        const struct ncg_verdict *v = m->u.rverdict.v;
        c->slow_ended += v && v->kind == NCG_V_SLOW && v->slow.ended && v->slow.rank == 5 &&
                         v->slow.global_rank == 5;
        if (!c->v) {
            c->v = m->u.rverdict.v;
            ((struct ncg_msg *)m)->u.rverdict.v = NULL; /* keep it */
        }
    } else if (m->type == NCG_MSG_RELEASE) {
        c->releases++;
    } else if (m->type == NCG_MSG_VERDICT) { /* client_verdicts: the plain form */
        c->verdicts++;
        c->plain++;
        if (!c->v) {
            c->v = m->u.verdict;
            ((struct ncg_msg *)m)->u.verdict = NULL;
        }
    }
}

void pump(void)
{
    while (T.qh < T.qt) {
        struct pkt p = T.q[T.qh++ % MAXQ];
        struct ncg_msg m;
        long k = ncg_wire_decode(p.b, (size_t)p.n, &m);
        CHECK(k == p.n);
        free(p.b);
        if (k != p.n)
            continue;
        if (p.relay == T.frozen) {
            ncg_msg_release(&m);
            continue;
        }
        if (p.kind == TO_CHILD)
            ncg_relay_message(T.r[p.relay], p.conn, &m, T.now);
        else if (p.kind == TO_PARENT)
            ncg_relay_parent_message(T.r[p.relay], &m, T.now);
        else {
            struct client *c = client_at(p.relay, p.conn);
            if (c)
                client_rx(c, &m);
        }
        ncg_msg_release(&m);
    }
}

void report_all(void)
{
    for (int i = 0; i < T.ncl; i++) {
        struct client *c = &T.cl[i];
        if (c->relay < 0)
            continue;
        struct ncg_msg m = {.type = NCG_MSG_REPORT};
        m.u.report.n = 1;
        m.u.report.e[0].comm_id = 0xc0;
        m.u.report.e[0].nranks = (uint32_t)T.ncl;
        m.u.report.e[0].rank = (uint32_t)c->rank;
        m.u.report.e[0].count = c->count;
        m.u.report.e[0].global_rank = c->rank;
        m.u.report.e[0].done = c->done;
        m.u.report.e[0].done_hi = c->done_hi;
        m.u.report.e[0].flags = c->sampled ? NCG_REP_SAMPLED : 0;
        m.u.report.nslow[0] = c->nslow;
        memcpy(m.u.report.slow[0], c->slow, sizeof c->slow);
        c->nslow = 0;
        push(TO_CHILD, c->relay, c->conn, &m);
    }
    pump();
}

void tick_all(int nr)
{
    T.now += 100000000ull;
    for (int i = nr - 1; i >= 0; i--) { /* leaves first: their RSTAT reaches the root */
        ncg_relay_tick(T.r[i], T.now);
        pump();
    }
}

/* Root 0 with clients 0,1 and child relay 1 (conn 2); relay 1 with clients 2,3 (rank 2 is in
 * relay 1's own process). With three_levels, relay 2 under relay 1 (conn 2) holds ranks 4,5
 * (with T.fork: under the root, conn 3). */
void tree(int three_levels)
{
    uint8_t cv = T.client_verdicts, fork = T.fork;
    double lw = T.lag_warn_s, la = T.lag_abort_s, sw = T.stuck_warn_s, sa = T.stuck_abort_s;
    double ew = T.exit_wait_s;
    memset(&T, 0, sizeof T);
    T.client_verdicts = cv;
    T.fork = fork;
    T.lag_warn_s = lw;
    T.lag_abort_s = la;
    T.stuck_warn_s = sw;
    T.stuck_abort_s = sa;
    T.exit_wait_s = ew;
    T.frozen = -1;
    memset(T.child_relay, -1, sizeof T.child_relay);
    int nr = three_levels ? 3 : 2;
    for (int i = 0; i < nr; i++) {
        struct ncg_relay_params p = {0};
        p.interval_ms = 100;
        p.heartbeat_timeout_s = 10;
        p.node = (uint32_t)i;
        p.root = i == 0;
        p.pid = 1000 + 2 * (uint32_t)i; /* = the pid of the relay's first rank */
        p.client_verdicts = T.client_verdicts;
        p.lag_warn_s = T.lag_warn_s;
        p.lag_abort_s = T.lag_abort_s;
        p.stuck_warn_s = T.stuck_warn_s;
        p.stuck_abort_s = T.stuck_abort_s;
        p.exit_wait_s = T.exit_wait_s;
        p.slow_window = 16; /* not from the environment */
        p.slow_share = 0.05;
        strcpy(p.host, "h");
        OA[i].relay = i;
        struct ncg_relay_ops ops = {op_send, op_drop, op_up, op_event, &OA[i]};
        T.r[i] = ncg_relay_new(&p, &ops);
    }
    int nranks = 2 * nr;
    for (int rk = 0; rk < nranks; rk++) {
        struct client *c = &T.cl[T.ncl++];
        c->relay = rk / 2;
        c->conn = rk % 2;
        c->rank = rk;
        c->pid = 1000 + (uint32_t)rk;
        c->odd_from = UINT64_MAX;
        ncg_relay_connected(T.r[c->relay], c->conn, T.now);
        struct ncg_msg h = {.type = NCG_MSG_HELLO};
        h.u.hello.pid = c->pid;
        h.u.hello.global_rank = rk;
        strcpy(h.u.hello.host, "h");
        push(TO_CHILD, c->relay, c->conn, &h);
    }
    for (int i = 1; i < nr; i++) {
        int up = T.fork && i == 2 ? 0 : i - 1, conn = T.fork && i == 2 ? 3 : 2;
        T.parent[i] = up;
        T.parent_conn[i] = conn;
        T.child_relay[up][conn] = i;
        ncg_relay_connected(T.r[up], conn, T.now);
        ncg_relay_parent_up(T.r[i], T.now);
    }
    pump();
}

void tree_free(int nr)
{
    for (int i = 0; i < nr; i++)
        ncg_relay_free(T.r[i]);
    for (int i = 0; i < T.ncl; i++)
        ncg_verdict_free(T.cl[i].v);
    while (T.qh < T.qt)
        free(T.q[T.qh++ % MAXQ].b);
}

void goodbye(struct client *c, uint64_t count, uint8_t flags)
{
    struct ncg_msg m = {.type = NCG_MSG_GOODBYE};
    m.u.goodbye.flags = flags | NCG_BYE_PROCESS;
    m.u.goodbye.n = 1;
    m.u.goodbye.comm_id[0] = 0xc0;
    m.u.goodbye.count[0] = count;
    m.u.goodbye.rank[0] = NCG_BYE_ANYRANK;
    push(TO_CHILD, c->relay, c->conn, &m);
    pump();
    ncg_relay_closed(T.r[c->relay], c->conn, T.now); /* then the process exits */
    c->relay = -1;
}

/* ---- the read-only view, as the status endpoint reads it ---- */

static void view_conn(void *arg, const struct ncg_relay_conn_view *v)
{
    struct vseen *s = arg;
    s->nconn++;
    if (v->relay) {
        s->nrelay++;
        s->relay_node = v->node;
    }
}

static void view_comm(void *arg, const struct ncg_relay_comm_view *v)
{
    struct vseen *s = arg;
    s->ncomm++;
    s->c = *v;
    for (uint32_t i = 0; i < v->nhere && i < 8; i++)
        s->here[i] = v->here[i];
}

struct vseen view_of(int relay)
{
    struct vseen s;
    memset(&s, 0, sizeof s);
    struct ncg_relay_view_ops ops = {view_conn, view_comm, &s};
    ncg_relay_view(T.r[relay], T.now, &ops);
    return s;
}

int main(void)
{
    test_codec_rslow();
    test_slow_pend();
    test_slow_tree();
    test_slow_jitter();
    test_slow_partial();
    test_slow_late();
    test_release_detached();
    test_release_late();
    test_release_reattach_released();
    test_release();
    test_lag();
    test_stuck();
    test_silent_relay();
    test_exited();
    test_gone_wait();
    test_topology();
    test_params_of();
    test_helpers();
    test_codecs();
    test_codec_rp2p();
    test_agree();
    test_mismatch();
    test_mismatch_alike();
    test_mismatch_rep_missing();
    test_mismatch_sibling();
    test_mismatch_absent_rank();
    test_client_verdicts();
    test_figs_gather();
    test_client_died();
    test_relay_died();
    test_detached_fault();
    for (int k = 0; k < 2; k++) {
        probe_exited(k);
        probe_detached(k);
    }
    probe_late();
    probe_relay_leaves(0);
    probe_relay_leaves(1);
    test_nomem();
    test_conn_cap();
    test_unauthed_cap();
    test_comm_cap();
    test_reregister();
    test_pend_cap();
    test_p2p_leaf();
    test_p2p_cross();
    test_p2p_mismatch_leaf();
    test_p2p_mismatch_cross();
    test_p2p_age();
    test_p2p_cap();
    test_p2p_nomem();
    test_late_at_root();
    test_round_waits();
    test_late_compared();
    test_view();
    test_deadlock();
    test_deadlock_many();
    return ncg_check_done();
}
