/* The relay state machine (relay.h): per communicator, its children (a client's rank with its
 * count, or a child relay with its subtree's min/max), the digest round in flight (answers
 * merged into groups per slot), and the verdict once known. At the root the rounds are the
 * flat coordinator's (coord.c: digest at min(count)-1, narrowing with K spaced digests, then
 * K records), decided on groups instead of per-member answers; the narrowing asks one rank per
 * group of the round that found the difference (chained digests: its members agree on every
 * earlier slot), and relays pass it only towards those ranks. P2P records are matched where
 * they meet (p2pmatch.h); what is not matched within about an interval goes up (RP2P), a pair
 * that differs goes up as its two records, and the root issues the verdict. DEADLOCK: the
 * clients' WAITs go up to the root (relay_dl.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "relay_int.h"

/* Every allocation failure goes through here (as coord.c's co_nomem): a relay that lost state
 * must not judge from what is left; its host stops the checker. Returns NULL. */
void *ncg_rl_nomem(struct ncg_relay *r)
{
    r->nomem = 1;
    return NULL;
}

int ncg_relay_out_of_memory(const struct ncg_relay *r)
{
    return r->nomem;
}

__attribute__((format(printf, 2, 3))) void ncg_rl_event(const struct ncg_relay *r, const char *fmt,
                                                        ...)
{
    if (!r->ops.event)
        return;
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->ops.event(r->ops.arg, line);
}

/* ---- pure helpers ---- */

static int range_cmp(const void *a, const void *b)
{
    const struct ncg_rrange *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void ranges_union(struct ncg_rgroup *d, const struct ncg_rgroup *s)
{
    struct ncg_rrange t[2 * NCG_RELAY_RANGES];
    size_t n = 0, m = 0;
    for (uint32_t i = 0; i < d->nrange; i++)
        t[n++] = d->r[i];
    for (uint32_t i = 0; i < s->nrange; i++)
        t[n++] = s->r[i];
    qsort(t, n, sizeof *t, range_cmp);
    for (size_t i = 0; i < n; i++) {
        if (m && (uint64_t)t[m - 1].hi + 1 >= t[i].lo) {
            if (t[i].hi > t[m - 1].hi)
                t[m - 1].hi = t[i].hi;
            continue;
        }
        t[m++] = t[i];
    }
    d->truncated |= s->truncated;
    if (m > NCG_RELAY_RANGES) {
        m = NCG_RELAY_RANGES;
        d->truncated = 1;
    }
    memcpy(d->r, t, sizeof *t * m);
    d->nrange = (uint8_t)m;
}

void ncg_rslot_merge(struct ncg_rslot *s, const struct ncg_rgroup *g)
{
    for (uint32_t i = 0; i < s->ngroups; i++) {
        struct ncg_rgroup *h = &s->g[i];
        if (h->status != g->status || (g->status == NCG_ANS_OK && h->digest != g->digest))
            continue;
        ranges_union(h, g);
        h->nranks += g->nranks;
        return;
    }
    if (s->ngroups < NCG_RELAY_GROUPS) {
        s->g[s->ngroups++] = *g;
        return;
    }
    s->more = 1;
}

int ncg_rslot_agrees(const struct ncg_rslot *s)
{
    uint32_t ok = 0, n = 0;
    for (uint32_t i = 0; i < s->ngroups; i++) {
        if (s->g[i].status == NCG_ANS_GONE)
            return -1;
        ok++;
        n += s->g[i].nranks;
    }
    if (ok >= 2 || s->more)
        return 0;
    return n >= 2 ? 1 : -1;
}

char *ncg_rgroup_ranks(const struct ncg_rgroup *g, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < g->nrange && len < cap; i++) {
        int w =
            g->r[i].lo == g->r[i].hi
                ? snprintf(buf + len, cap - len, "%s%u", i ? "," : "", g->r[i].lo)
                : snprintf(buf + len, cap - len, "%s%u-%u", i ? "," : "", g->r[i].lo, g->r[i].hi);
        len += w > 0 ? (size_t)w : 0;
    }
    if (g->truncated && len < cap)
        snprintf(buf + len, cap - len, ",... (%u ranks)", g->nranks);
    return buf;
}

uint32_t ncg_relay_parent(uint32_t node, uint32_t nnodes, uint32_t fanout)
{
    uint32_t lo = 0, hi = nnodes;
    if (node == 0 || node >= nnodes || fanout < 1)
        return 0;
    for (;;) {
        uint32_t rest = hi - lo - 1, sz = (rest + fanout - 1) / fanout;
        uint32_t c = lo + 1 + (node - lo - 1) / sz * sz; /* the chunk holding node */
        if (c == node)
            return lo;
        lo = c;
        hi = c + sz < hi ? c + sz : hi;
    }
}

/* ---- tables ---- */

struct ncg_relay *ncg_relay_new(const struct ncg_relay_params *p, const struct ncg_relay_ops *ops)
{
    struct ncg_relay *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->p = *p;
    r->ops = *ops;
    if (!r->p.interval_ms)
        r->p.interval_ms = 100;
    r->next_qid = 1;
    return r;
}

static void comm_free(struct rcomm *c)
{
    ncg_p2pm_clear(&c->p2p);
    ncg_verdict_free(c->last);
    ncg_release_free(&c->rel);
    free(c->acc);
    free(c->pend);
    free(c->k);
    free(c);
}

void ncg_relay_free(struct ncg_relay *r)
{
    if (!r)
        return;
    ncg_rl_dl_free(r);
    for (size_t i = 0; i < r->ncomm; i++)
        comm_free(r->comm[i]);
    free(r->comm);
    free(r->conn);
    free(r);
}

void ncg_relay_get_stats(const struct ncg_relay *r, struct ncg_relay_stats *st)
{
    *st = r->st;
    st->comms = r->ncomm;
    st->verified = 0;
    st->p2p_held = 0;
    for (size_t i = 0; i < r->ncomm; i++) {
        st->verified += r->comm[i]->rd.vc;
        st->p2p_held += r->comm[i]->p2p.n;
    }
}

struct rconn *ncg_rl_conn_get(struct ncg_relay *r, int id)
{
    if (id < 0 || id >= r->nconn || !r->conn[id].used)
        return NULL;
    return &r->conn[id];
}

void ncg_relay_connected(struct ncg_relay *r, int conn, uint64_t now_ns)
{
    if (conn < 0)
        return;
    if (conn >= r->nconn) {
        int n = conn + 16;
        struct rconn *nc = realloc(r->conn, sizeof *nc * (size_t)n);
        if (!nc) {
            ncg_rl_nomem(r);
            r->ops.drop(r->ops.arg, conn);
            return;
        }
        memset(nc + r->nconn, 0, sizeof *nc * (size_t)(n - r->nconn));
        r->conn = nc;
        r->nconn = n;
    }
    memset(&r->conn[conn], 0, sizeof r->conn[conn]);
    r->conn[conn].used = 1;
    r->conn[conn].since_ns = r->conn[conn].last_rx_ns = now_ns;
    r->conn[conn].grank = -1;
}

struct rcomm *ncg_rl_comm_find(struct ncg_relay *r, uint64_t id)
{
    for (size_t i = 0; i < r->ncomm; i++)
        if (r->comm[i]->id == id)
            return r->comm[i];
    return NULL;
}

/* A refusal by one of relay.h's bounds: counted; 1 the first time for this flag (the caller
 * then says it in one event line), 0 after. */
int ncg_rl_refuse_first(struct ncg_relay *r, uint8_t *said)
{
    r->st.refused++;
    int first = !*said;
    *said = 1;
    return first;
}

/* 1 when conn may register one more kid (relay.h's bounds), else refused (said once). */
static int kid_room(struct ncg_relay *r, int conn, int relay)
{
    struct rconn *cc = ncg_rl_conn_get(r, conn);
    uint32_t cap = relay ? NCG_RELAY_MAX_COMMS : NCG_RELAY_CONN_RANKS;
    if (!cc || cc->nkids < cap)
        return 1;
    if (ncg_rl_refuse_first(r, &cc->refused))
        ncg_rl_event(r, "refused: %s %u on %s registers more than %u %s; the others go unchecked",
                     relay ? "the relay of node" : "pid", relay ? cc->node : cc->pid, cc->host, cap,
                     relay ? "communicators" : "communicator ranks");
    return 0;
}

/* The comm, created if new (within NCG_RELAY_MAX_COMMS). conn >= 0: for a kid of conn's about to
 * be added (relay: a child relay's), so a new comm is not created when conn has no room. */
static struct rcomm *comm_get(struct ncg_relay *r, uint64_t id, uint32_t nranks, int conn,
                              int relay)
{
    struct rcomm *c = ncg_rl_comm_find(r, id);
    if (c)
        return c->nranks == nranks ? c : NULL;
    if (nranks == 0 || nranks > NCG_WIRE_MAX_RANKS)
        return NULL;
    if (conn >= 0 && !kid_room(r, conn, relay))
        return NULL;
    if (r->ncomm >= NCG_RELAY_MAX_COMMS) {
        if (ncg_rl_refuse_first(r, &r->refused))
            ncg_rl_event(r, "refused: more than %u communicators; the others go unchecked here",
                         NCG_RELAY_MAX_COMMS);
        return NULL;
    }
    if (r->ncomm == r->capcomm) {
        size_t n = r->capcomm ? r->capcomm * 2 : 8;
        struct rcomm **nc = realloc(r->comm, sizeof *nc * n);
        if (!nc)
            return ncg_rl_nomem(r);
        r->comm = nc;
        r->capcomm = n;
    }
    if (!(c = calloc(1, sizeof *c)))
        return ncg_rl_nomem(r);
    c->id = id;
    c->nranks = nranks;
    r->comm[r->ncomm++] = c;
    return c;
}

static struct rkid *kid_find(struct rcomm *c, int conn, int relay, uint32_t rank)
{
    for (uint32_t i = 0; i < c->nk; i++)
        if (c->k[i].conn == conn && c->k[i].relay == relay && (relay || c->k[i].rank == rank))
            return &c->k[i];
    return NULL;
}

/* The kids that count against their connection's bound: a child relay's (one per comm), a
 * client's live ranks (a process holds no more at once; those that said goodbye are kept, one
 * per rank: on_report). */
static int kid_counts(const struct rkid *k)
{
    return k->relay || k->state == K_ACTIVE;
}

/* k stops counting against its connection's bound (it leaves, or is removed). */
static void kid_uncount(struct ncg_relay *r, const struct rkid *k)
{
    struct rconn *cc = ncg_rl_conn_get(r, k->conn);
    if (cc && kid_counts(k) && cc->nkids)
        cc->nkids--;
}

/* A client kid of rank that said goodbye, on any connection. */
static struct rkid *kid_gone(struct rcomm *c, uint32_t rank)
{
    for (uint32_t i = 0; i < c->nk; i++)
        if (!c->k[i].relay && c->k[i].state == K_GONE && c->k[i].rank == rank)
            return &c->k[i];
    return NULL;
}

/* A zeroed kid at the end of c's table (grown as needed), or NULL out of memory. */
static struct rkid *kid_new(struct ncg_relay *r, struct rcomm *c)
{
    if (c->nk == c->capk) {
        uint32_t n = c->capk ? c->capk * 2 : 8;
        struct rkid *nk = realloc(c->k, sizeof *nk * n);
        if (!nk)
            return ncg_rl_nomem(r);
        c->k = nk;
        c->capk = n;
    }
    struct rkid *k = &c->k[c->nk++];
    memset(k, 0, sizeof *k);
    return k;
}

static struct rkid *kid_add(struct ncg_relay *r, struct rcomm *c, int conn, int relay,
                            uint32_t rank)
{
    struct rconn *cc = ncg_rl_conn_get(r, conn);
    if (!cc || !kid_room(r, conn, relay))
        return NULL;
    struct rkid *k = kid_new(r, c);
    if (!k)
        return NULL;
    k->conn = conn;
    k->relay = (uint8_t)relay;
    k->rank = rank;
    k->state = K_ACTIVE;
    cc->nkids++;
    return k;
}

/* ---- sending ---- */

/* The tree's verdict as a client expects it: per-rank arrays (counts unknown here). */
static struct ncg_verdict *client_verdict(struct ncg_relay *r, const struct rcomm *c,
                                          const struct ncg_verdict *tv)
{
    struct ncg_verdict *v = ncg_verdict_new(c->nranks);
    if (!v)
        return ncg_rl_nomem(r);
    int64_t *counts = v->counts;
    int32_t *members = v->members;
    *v = *tv;
    v->nranks = c->nranks;
    v->counts = counts;
    v->members = members;
    v->notes = NULL;
    if (tv->notes && ncg_verdict_set_notes(v, tv->notes) < 0)
        ncg_rl_nomem(r);
    return v;
}

/* ---- the exit release (release.h) ---- */

/* RELEASE to every connection the verdict went to, and to the child relays beneath that hold
 * the comm now (one that reattached after losing its link: its ranks wait for it). */
static void release_down(struct ncg_relay *r, struct rcomm *c)
{
    struct ncg_msg m = {.type = NCG_MSG_RELEASE, .u.exit.comm_id = c->id};
    for (uint32_t i = 0; i < c->rel.n; i++)
        if (ncg_rl_conn_get(r, c->rel.conn[i]))
            r->ops.send(r->ops.arg, c->rel.conn[i], &m);
    for (uint32_t i = 0; i < c->nk; i++) {
        int cn = c->k[i].conn, sent = 0;
        if (!c->k[i].relay || !ncg_rl_conn_get(r, cn))
            continue;
        for (uint32_t j = 0; j < c->rel.n && !sent; j++)
            sent = c->rel.conn[j] == cn;
        for (uint32_t j = 0; j < i && !sent; j++)
            sent = c->k[j].relay && c->k[j].conn == cn;
        if (!sent)
            r->ops.send(r->ops.arg, cn, &m);
    }
    c->rel.state = NCG_REL_RELEASED;
}

/* Every connection c's error verdict went to said DONE or closed (or, at the root, the
 * deadline passed): the root releases them all; a relay below says DONE for its subtree. */
static void release_check(struct ncg_relay *r, struct rcomm *c)
{
    if (!ncg_release_due(&c->rel, r->now_ns))
        return;
    if (r->p.root) {
        int first;
        uint32_t left = ncg_release_pending(&c->rel, &first);
        if (left)
            ncg_rl_event(r,
                         "exit release of comm %016" PRIx64 " after %.1f s without the DONE of %u "
                         "connection%s",
                         c->id, r->p.exit_wait_s, left, left > 1 ? "s" : "");
        release_down(r, c);
        return;
    }
    c->rel.state = NCG_REL_READY;
    if (r->attached) {
        struct ncg_msg m = {.type = NCG_MSG_DONE, .u.exit.comm_id = c->id};
        r->ops.up(r->ops.arg, &m);
    }
}

/* The error verdict went to conn: waited for, or (the others released already) released. */
static void release_add(struct ncg_relay *r, struct rcomm *c, int conn)
{
    const struct rconn *cc = ncg_rl_conn_get(r, conn);
    if (c->rel.state == NCG_REL_WAITING && cc && cc->relay && ncg_release_adopt(&c->rel, conn))
        return; /* a subtree that reattached here: still waited for, as before */
    if (c->rel.state == NCG_REL_RELEASED) {
        struct ncg_msg m = {.type = NCG_MSG_RELEASE, .u.exit.comm_id = c->id};
        r->ops.send(r->ops.arg, conn, &m);
    } else if (c->rel.state != NCG_REL_NONE && ncg_release_add(&c->rel, conn) < 0) {
        ncg_rl_nomem(r);
    }
}

/* conn said DONE for comm_id, or is gone (gone: every comm; a client's is forgotten, a child
 * relay's subtree stays waited for, until the root's deadline, as it may reattach elsewhere). */
static void release_mark(struct ncg_relay *r, int conn, uint64_t comm_id, int gone, int relay)
{
    for (size_t ci = 0; ci < r->ncomm; ci++) {
        struct rcomm *c = r->comm[ci];
        if (gone)
            ncg_release_drop(&c->rel, conn, relay);
        if (c->rel.state != NCG_REL_WAITING || (!gone && c->id != comm_id))
            continue;
        if (!gone && relay)
            ncg_release_adopt(&c->rel, conn);
        if (!gone)
            ncg_release_mark(&c->rel, conn);
        release_check(r, c);
    }
}

int ncg_relay_releases_waiting(const struct ncg_relay *r)
{
    int n = 0;
    for (size_t ci = 0; ci < r->ncomm; ci++)
        n += r->comm[ci]->rel.state == NCG_REL_WAITING;
    return n;
}

/* c's verdict to conn, or (conn < 0) to every child once; client connections get a plain
 * VERDICT when the relay serves real clients. */
static void send_verdict(struct ncg_relay *r, struct rcomm *c, struct ncg_verdict *v, int conn)
{
    struct ncg_msg m = {.type = NCG_MSG_RVERDICT}, cm = {.type = NCG_MSG_VERDICT};
    m.u.rverdict.comm_nranks = c->nranks;
    m.u.rverdict.v = v;
    cm.u.verdict = r->p.client_verdicts ? client_verdict(r, c, v) : NULL;
    for (uint32_t i = 0; i < c->nk; i++) {
        int cn = c->k[i].conn;
        uint32_t j;
        for (j = 0; j < i; j++)
            if (c->k[j].conn == cn)
                break;
        if (j < i || (conn >= 0 && cn != conn) || !ncg_rl_conn_get(r, cn))
            continue;
        r->ops.send(r->ops.arg, cn, !c->k[i].relay && cm.u.verdict ? &cm : &m);
        if (v->severity == NCG_SEV_ERROR)
            release_add(r, c, cn);
    }
    ncg_verdict_free(cm.u.verdict);
}

static struct ncg_verdict *verdict_dup(struct ncg_relay *r, const struct ncg_verdict *v)
{
    struct ncg_verdict *d = ncg_verdict_new(0);
    if (!d)
        return ncg_rl_nomem(r);
    int64_t *counts = d->counts;
    int32_t *members = d->members;
    *d = *v;
    d->nranks = 0;
    d->counts = counts;
    d->members = members;
    d->notes = NULL;
    if (v->notes && ncg_verdict_set_notes(d, v->notes) < 0) {
        ncg_verdict_free(d);
        return ncg_rl_nomem(r);
    }
    return d;
}

/* The root's verdict on c (takes v): kept for late members, sent down the whole tree. */
void ncg_rl_verdict_issue(struct ncg_relay *r, struct rcomm *c, struct ncg_verdict *v)
{
    char sum[512];
    if (r->nomem) { /* judged from incomplete state: the host stops the checker instead */
        ncg_verdict_free(v);
        return;
    }
    v->nranks = c->nranks; /* the headline's "(N ranks)"; the summary reads no per-rank array */
    ncg_verdict_summary(v, sum, sizeof sum);
    v->nranks = 0;
    ncg_rl_event(r, "%s %s", v->severity == NCG_SEV_WARN ? "warning:" : "verdict:", sum);
    r->st.verdicts++;
    if (v->severity == NCG_SEV_WARN) { /* sent, not kept: the checking goes on */
        send_verdict(r, c, v, -1);
        ncg_verdict_free(v);
        return;
    }
    c->done = 1;
    c->q_active = 0;
    ncg_verdict_free(c->last);
    c->last = v;
    ncg_release_begin(&c->rel, r->now_ns + (uint64_t)(r->p.exit_wait_s * 1e9));
    send_verdict(r, c, v, -1);
    release_check(r, c); /* nobody to wait for beneath */
}

struct ncg_vcomm ncg_rl_vcomm(const struct rcomm *c)
{
    return (struct ncg_vcomm){c->id, c->nranks, (int64_t)c->rd.vc - 1, NULL, NULL};
}

/* Past NCG_RELAY_PEND queued faults: the new fault's ranks not queued yet join the last one
 * (the first, which the root's verdict will name, is never touched); beyond NCG_RELAY_DEAD
 * ranks they are dropped. Said once per detachment. */
static void pend_merge(struct ncg_relay *r, struct rcomm *c, const uint32_t *ranks, uint32_t n)
{
    struct ncg_msg_rfault *last = &c->pend[c->npend - 1];
    for (uint32_t i = 0; i < n; i++) {
        int have = 0;
        for (uint32_t p = 0; p < c->npend && !have; p++)
            for (uint32_t j = 0; j < c->pend[p].n && !have; j++)
                have = c->pend[p].rank[j] == ranks[i];
        if (!have && last->n < NCG_RELAY_DEAD)
            last->rank[last->n++] = ranks[i];
    }
    if (ncg_rl_refuse_first(r, &c->pend_full))
        ncg_rl_event(r,
                     "comm %016" PRIx64
                     ": more than %u faults while detached from the parent; later "
                     "ones merged into the last",
                     c->id, NCG_RELAY_PEND);
}

/* Ranks of c died (n of them): the root decides, any other relay tells its parent (or keeps
 * the fault until it has one again). */
static void fault(struct ncg_relay *r, struct rcomm *c, const uint32_t *ranks, uint32_t n,
                  const char *detail)
{
    if (c->done || !n)
        return;
    r->st.faults++;
    if (n > NCG_RELAY_DEAD)
        n = NCG_RELAY_DEAD;
    if (r->p.root) {
        int32_t tmp[NCG_RELAY_DEAD];
        for (uint32_t i = 0; i < n; i++)
            tmp[i] = (int32_t)ranks[i];
        struct ncg_vcomm vc = ncg_rl_vcomm(c);
        struct ncg_verdict *v = ncg_v_rank_died(&vc, tmp, n, detail);
        if (!v) {
            ncg_rl_nomem(r);
            return;
        }
        ncg_rl_verdict_issue(r, c, v);
        return;
    }
    struct ncg_msg m = {.type = NCG_MSG_RFAULT};
    m.u.rfault.comm_id = c->id;
    m.u.rfault.nranks = c->nranks;
    m.u.rfault.n = n;
    memcpy(m.u.rfault.rank, ranks, sizeof *ranks * n);
    snprintf(m.u.rfault.detail, sizeof m.u.rfault.detail, "%s", detail);
    if (r->attached) {
        r->ops.up(r->ops.arg, &m);
        return;
    }
    if (c->npend >= NCG_RELAY_PEND) {
        pend_merge(r, c, ranks, n);
        return;
    }
    struct ncg_msg_rfault *np = realloc(c->pend, sizeof *np * (c->npend + 1));
    if (!np) {
        ncg_rl_nomem(r);
        return;
    }
    c->pend = np;
    c->pend[c->npend++] = m.u.rfault;
}

/* ---- rounds ---- */

static void round_done(struct ncg_relay *r, struct rcomm *c);

static void round_check(struct ncg_relay *r, struct rcomm *c)
{
    if (c->q_active && c->nwait == 0)
        round_done(r, c);
}

/* Whether kid k is to hear the round in flight: every kid, or for a round limited to some
 * ranks, a client holding one of them or a child relay whose subtree may hold one. */
static int kid_asked(const struct rcomm *c, const struct rkid *k)
{
    if (!c->nrep || (k->relay && !k->span_known))
        return 1;
    for (uint32_t i = 0; i < c->nrep; i++) {
        if (!k->relay && k->rank == c->rep[i])
            return 1;
        for (uint32_t j = 0; k->relay && j < k->nspan; j++)
            if (c->rep[i] >= k->span[j].lo && c->rep[i] <= k->span[j].hi)
                return 1;
    }
    return 0;
}

/* Starts answering (or, at the root, asking) q's slots on c: the QUERY goes to every active
 * child (or only towards q's representatives); answers are merged into c->acc. */
static void round_begin(struct ncg_relay *r, struct rcomm *c, const struct ncg_msg_query *q)
{
    free(c->acc);
    if (!(c->acc = calloc(1, sizeof *c->acc))) {
        c->q_active = 0;
        ncg_rl_nomem(r);
        return;
    }
    c->acc->comm_id = c->id;
    c->acc->qid = q->qid;
    c->acc->n = q->n;
    c->qid = q->qid;
    c->rd.mode = q->mode;
    c->rd.qn = q->n;
    memcpy(c->rd.qslot, q->slot, sizeof *q->slot * q->n);
    c->nrep = q->nrep;
    memcpy(c->rep, q->rep, sizeof c->rep);
    c->q_active = 1;
    c->nwait = 0;
    r->st.rounds++;
    r->st.targeted += q->nrep != 0;
    struct ncg_msg m = {.type = NCG_MSG_QUERY};
    m.u.query = *q;
    m.u.query.comm_id = c->id;
    for (uint32_t i = 0; i < c->nk; i++) {
        struct rkid *k = &c->k[i];
        k->waiting = 0;
        if (k->state != K_ACTIVE || (k->relay && !k->active) || !ncg_rl_conn_get(r, k->conn) ||
            !kid_asked(c, k))
            continue;
        k->waiting = 1;
        c->nwait++;
        uint32_t j;
        for (j = 0; j < i; j++)
            if (c->k[j].conn == k->conn && c->k[j].waiting)
                break;
        if (j == i)
            r->ops.send(r->ops.arg, k->conn, &m);
    }
    round_check(r, c);
}

static void root_query(struct ncg_relay *r, struct rcomm *c)
{
    struct ncg_msg_query q = {
        .comm_id = c->id, .qid = r->next_qid++, .mode = c->rd.mode, .n = c->rd.qn, .nrep = c->nrep};
    memcpy(q.slot, c->rd.qslot, sizeof q.slot);
    memcpy(q.rep, c->rep, sizeof q.rep);
    round_begin(r, c, &q);
}

/* The plain round's slot 0 differs: if its groups name every rank of the communicator (all
 * answered, none truncated, at most NCG_QUERY_REPS of them), the narrowing rounds ask one rank
 * of each. A rank outside them (one that attached after the round began, a subtree inactive
 * then, a rank gone) may differ earlier than any of them: then every rank is asked, as before. */
static void reps_choose(struct rcomm *c)
{
    const struct ncg_rslot *s = &c->acc->s[0];
    uint64_t n = 0;
    c->nrep = 0;
    if (s->more || s->ngroups < 2 || s->ngroups > NCG_QUERY_REPS)
        return;
    for (uint32_t i = 0; i < s->ngroups; i++) {
        if (s->g[i].status != NCG_ANS_OK || s->g[i].truncated || !s->g[i].nrange)
            return;
        n += s->g[i].nranks;
    }
    if (n != c->nranks)
        return;
    for (uint32_t i = 0; i < s->ngroups; i++) {
        const struct ncg_rgroup *g = &s->g[i];
        c->rep[i] = g->r[0].lo;
        c->repg[i].nranks = g->nranks;
        c->repg[i].nrange = g->nrange;
        memcpy(c->repg[i].r, g->r, sizeof g->r);
    }
    c->nrep = (uint8_t)s->ngroups;
}

static int rep_in(const struct ncg_rgroup *g, uint32_t rank)
{
    for (uint32_t i = 0; i < g->nrange; i++)
        if (rank >= g->r[i].lo && rank <= g->r[i].hi)
            return 1;
    return 0;
}

/* A round asked only the representatives: each answer group is made the groups its
 * representatives stand for. 0 when some representative's answer is missing at some slot (it
 * left, or its subtree moved): the round is then to be asked of every rank. */
static int reps_expand(struct rcomm *c)
{
    for (uint32_t k = 0; k < c->acc->n; k++) {
        struct ncg_rslot *s = &c->acc->s[k];
        uint32_t seen = 0;
        if (s->more)
            return 0;
        for (uint32_t j = 0; j < s->ngroups; j++) {
            struct ncg_rgroup *g = &s->g[j], e = *g;
            e.nranks = 0;
            e.nrange = 0;
            e.truncated = 0;
            for (uint32_t i = 0; i < c->nrep; i++) {
                if (!rep_in(g, c->rep[i]))
                    continue;
                struct ncg_rgroup t = {.nrange = c->repg[i].nrange};
                memcpy(t.r, c->repg[i].r, sizeof t.r);
                ranges_union(&e, &t);
                e.nranks += c->repg[i].nranks;
                seen++;
            }
            if (!e.nranks)
                return 0; /* no representative in it: not this round's answer */
            *g = e;
        }
        if (seen != c->nrep)
            return 0;
    }
    return 1;
}

static int group_cmp(const void *a, const void *b)
{
    const struct ncg_rgroup *x = *(const struct ncg_rgroup *const *)a;
    const struct ncg_rgroup *y = *(const struct ncg_rgroup *const *)b;
    return x->nranks > y->nranks ? -1 : x->nranks < y->nranks;
}

/* A round's slot k, for mismatch_calls. */
struct mm_slot {
    const struct rcomm *c;
    uint32_t k;
};

/* Slot k's records differ: the verdict names each distinct call (coord.c groups members by
 * call, not digest: groups whose digests differ but whose calls read the same are one call). */
static void mismatch_calls(void *arg, struct ncg_verdict *v)
{
    const struct mm_slot *m = arg;
    const struct rcomm *c = m->c;
    uint32_t k = m->k;
    const struct ncg_rslot *s = &c->acc->s[k];
    const struct ncg_rgroup *g[NCG_RELAY_GROUPS];
    struct ncg_rgroup byc[NCG_RELAY_GROUPS]; /* the groups merged per distinct call */
    const struct ncg_rgroup *bys[NCG_RELAY_GROUPS];
    uint32_t ng = 0, nc = 0;
    for (uint32_t i = 0; i < s->ngroups; i++)
        if (s->g[i].status == NCG_ANS_OK)
            g[ng++] = &s->g[i];
    qsort(g, ng, sizeof *g, group_cmp);
    for (uint32_t i = 0; i < ng; i++) {
        uint32_t j;
        for (j = 0; j < nc; j++)
            if (ncg_call_same(&byc[j].call, &g[i]->call))
                break;
        if (j == nc) {
            byc[nc++] = *g[i];
            continue;
        }
        ranges_union(&byc[j], g[i]);
        byc[j].nranks += g[i]->nranks;
    }
    for (uint32_t i = 0; i < nc; i++)
        bys[i] = &byc[i];
    qsort(bys, nc, sizeof *bys, group_cmp);
    struct ncg_rgroup others = {.status = NCG_ANS_OK};
    for (uint32_t i = 0; i < nc && i < NCG_WIRE_MAX_CALLS; i++) {
        struct ncg_vcall *vc = &v->calls[v->ncalls++];
        vc->call = bys[i]->call;
        vc->call.seq = c->rd.qslot[k];
        ncg_rgroup_ranks(bys[i], vc->ranks, sizeof vc->ranks);
        snprintf(vc->site, sizeof vc->site, "%s", bys[i]->site);
        if (i) {
            ranges_union(&others, bys[i]);
            others.nranks += bys[i]->nranks;
        }
    }
    if (nc > 1)
        ncg_rgroup_ranks(&others, v->subject, sizeof v->subject);
}

static void mismatch_verdict(struct ncg_relay *r, struct rcomm *c, uint32_t k)
{
    struct ncg_vcomm vc = ncg_rl_vcomm(c);
    struct mm_slot m = {c, k};
    struct ncg_verdict *v =
        ncg_v_mismatch(&vc, c->rd.qslot[k], mismatch_calls, &m, c->acc->s[k].more);
    if (!v) {
        ncg_rl_nomem(r);
        return;
    }
    ncg_rl_verdict_issue(r, c, v);
}

static int root_agrees(void *arg, uint32_t k)
{
    return ncg_rslot_agrees(&((struct rcomm *)arg)->acc->s[k]);
}

/* The root's decision on a finished round: the coordinator's (round.c), on merged groups. */
static void root_decide(struct ncg_relay *r, struct rcomm *c)
{
    uint32_t k = 0;
    int plain = !c->rd.narrow;
    if (c->nrep && !reps_expand(c)) {
        c->nrep = 0; /* a representative did not answer: the same slots, of every rank */
        root_query(r, c);
        return;
    }
    int next = ncg_round_done(&c->rd, root_agrees, c, &k);
    if (next == NCG_ROUND_ASK && plain)
        reps_choose(c);
    if (next == NCG_ROUND_MISMATCH)
        mismatch_verdict(r, c, k);
    else if (next == NCG_ROUND_ASK)
        root_query(r, c);
    if (next != NCG_ROUND_ASK)
        c->nrep = 0;
}

static void round_done(struct ncg_relay *r, struct rcomm *c)
{
    c->q_active = 0;
    if (r->p.root) {
        root_decide(r, c);
        return;
    }
    if (r->attached) {
        struct ncg_msg m = {.type = NCG_MSG_RANSWER};
        m.u.ranswer = c->acc;
        r->ops.up(r->ops.arg, &m);
    }
}

/* coord.c's check_exited over the tree: ranks that left after fewer calls than another
 * member issued will never be matched (RANK EXITED). */
static void root_check_exited(struct ncg_relay *r, struct rcomm *c)
{
    struct ncg_rgone g[NCG_RELAY_DEAD];
    uint32_t ng = 0;
    uint64_t mx = 0;
    for (uint32_t i = 0; i < c->nk; i++) {
        const struct rkid *k = &c->k[i];
        if (k->state == K_ACTIVE && (!k->relay || k->active))
            mx = k->max > mx ? k->max : mx;
        if (!k->relay && k->state == K_GONE && ng < NCG_RELAY_DEAD)
            g[ng++] = (struct ncg_rgone){k->rank, k->how, k->max};
        for (uint32_t j = 0; k->relay && j < k->ngone && ng < NCG_RELAY_DEAD; j++)
            g[ng++] = k->gone[j];
    }
    for (uint32_t j = 0; j < ng; j++)
        mx = g[j].count > mx ? g[j].count : mx;
    int32_t who[NCG_RELAY_DEAD];
    size_t n = 0;
    uint64_t fin = 0;
    int how = -1; /* how they left, when all the same way */
    for (uint32_t j = 0; j < ng; j++)
        if (g[j].count < mx) {
            who[n++] = (int32_t)g[j].rank;
            fin = g[j].count;
            how = how == -1 || how == g[j].how ? g[j].how : 0;
        }
    if (!n)
        return;
    struct ncg_vcomm vc = ncg_rl_vcomm(c);
    struct ncg_verdict *v = ncg_v_exited(&vc, who, n, fin, mx, how);
    if (!v) {
        ncg_rl_nomem(r);
        return;
    }
    ncg_rl_verdict_issue(r, c, v);
}

size_t ncg_relay_left(const struct ncg_relay *r, uint64_t *ids, uint64_t *counts, size_t cap)
{
    size_t n = 0;
    for (size_t ci = 0; ci < r->ncomm && n < cap; ci++) {
        const struct rcomm *c = r->comm[ci];
        uint64_t low = UINT64_MAX;
        for (uint32_t i = 0; i < c->nk; i++) {
            const struct rkid *k = &c->k[i];
            if (!k->relay && k->state == K_GONE && k->max < low)
                low = k->max;
            for (uint32_t j = 0; k->relay && j < k->ngone; j++)
                low = k->gone[j].count < low ? k->gone[j].count : low;
        }
        if (c->done || low == UINT64_MAX)
            continue;
        ids[n] = c->id;
        counts[n++] = low;
    }
    return n;
}

/* Unverified slots below which plain rounds come every other interval: a quarter of the
 * shim's ring, so a difference found is narrowed while every member still holds its slots. */
#define PACE_SLOTS (NCG_COLL_RING / 4)

/* A plain round when the slowest member moved past what is verified: one per interval, as the
 * flat coordinator, while more than PACE_SLOTS slots wait; else one per two intervals (each
 * round is a QUERY and an ANSWER per rank, more than half of a rank's traffic; digests are
 * chained, so a later round still covers every slot: a difference is found up to an interval
 * later, never missed). Only when no round is in flight (narrowing follows at once). */
static void root_round_start(struct ncg_relay *r, struct rcomm *c, uint64_t now_ns)
{
    uint64_t iv = (uint64_t)r->p.interval_ms * 1000000ull;
    if (c->round_ns && now_ns - c->round_ns < iv - iv / 8)
        return;                          /* a tick a little early still counts */
    struct dfig f = ncg_rl_comm_dfig(c); /* relay_hang.c */
    uint64_t mn = f.mn;
    if (!c->seen_ns)
        c->seen_ns = now_ns;
    /* Subtrees attach one after another (parents are looked up): a round waits up to a
     * second for every rank, so that a verdict names the whole communicator. */
    if (f.known < c->nranks && now_ns - c->seen_ns < 1000000000ull)
        return;
    if (f.active < 2 || mn == UINT64_MAX || mn <= c->rd.vc)
        return;
    if (c->round_ns && now_ns - c->round_ns < 2 * iv - iv / 8 && mn - c->rd.vc <= PACE_SLOTS)
        return;
    c->round_ns = now_ns;
    ncg_round_plain(&c->rd, mn - 1);
    c->nrep = 0;
    root_query(r, c);
}

/* ---- p2p ---- */

/* Records on their way to the parent, one RP2P frame at a time. */
struct p2p_out {
    struct ncg_relay *r;
    struct ncg_msg_rp2p f;
};

static void p2p_out_flush(struct p2p_out *o)
{
    static struct ncg_msg m;
    if (!o->f.n)
        return;
    m.type = NCG_MSG_RP2P;
    m.u.rp2p = o->f;
    o->r->ops.up(o->r->ops.arg, &m);
    o->r->st.p2p_up += o->f.n;
    o->f.n = 0;
}

static void p2p_out_add(void *arg, const struct ncg_p2pm_rec *e)
{
    struct p2p_out *o = arg;
    if (o->f.n == NCG_WIRE_MAX_P2P)
        p2p_out_flush(o);
    o->f.r[o->f.n++] = (struct ncg_rp2p_rec){(uint32_t)ncg_p2pm_origin(e), e->rec};
}

static void p2p_verdict(struct ncg_relay *r, struct rcomm *c, const struct ncg_p2pm_rec pair[2])
{
    struct ncg_vcomm vc = ncg_rl_vcomm(c);
    struct ncg_verdict *v = ncg_v_p2p(&vc, pair); /* the flat coordinator's words */
    if (!v) {
        ncg_rl_nomem(r);
        return;
    }
    ncg_rl_verdict_issue(r, c, v);
}

/* Records that meet at this relay, each with the comm rank that reported it: a pair that
 * agrees ends here; one that differs is the root's verdict (below the root its two records
 * wait in bad[] for the next tick, which sends them up after the RSTAT that names the comm;
 * the first such pair suffices); the others are held (p2p_tick). */
static void p2p_match(struct ncg_relay *r, struct rcomm *c, const struct ncg_rp2p_rec *in,
                      uint32_t n, uint64_t now_ns)
{
    for (uint32_t i = 0; i < n && !c->done; i++) {
        struct ncg_p2pm_rec pair[2];
        int res = ncg_p2pm_add(&c->p2p, (int32_t)in[i].rank, c->nranks, &in[i].rec, now_ns, pair);
        if (res == NCG_P2PM_EQUAL || res == NCG_P2PM_DIFFER)
            r->st.p2p_matched++;
        if (res == NCG_P2PM_DIFFER && r->p.root) {
            p2p_verdict(r, c, pair);
        } else if (res == NCG_P2PM_DIFFER && !c->nbad) {
            for (int j = 0; j < 2; j++)
                c->bad[j] = (struct ncg_rp2p_rec){(uint32_t)ncg_p2pm_origin(&pair[j]), pair[j].rec};
            c->nbad = 2;
        } else if (res == NCG_P2PM_FULL) {
            if (ncg_rl_refuse_first(r, &c->p2p_full))
                ncg_rl_event(r,
                             "comm %016" PRIx64
                             ": more than %u p2p records unmatched here; later ones "
                             "refused until some match or age out",
                             c->id, NCG_P2PM_MAX);
        } else if (res == NCG_P2PM_NOMEM) {
            ncg_rl_nomem(r);
        }
    }
}

/* A client's records: from its lowest live rank on the comm, as coord.c's on_p2p. */
static void on_p2p(struct ncg_relay *r, int conn, const struct ncg_msg_p2p *p, uint64_t now_ns)
{
    struct rcomm *c = ncg_rl_comm_find(r, p->comm_id);
    if (!c || c->done || p->n > NCG_WIRE_MAX_P2P)
        return;
    int64_t me = -1;
    for (uint32_t i = 0; i < c->nk; i++) {
        const struct rkid *k = &c->k[i];
        if (!k->relay && k->conn == conn && k->state == K_ACTIVE && (me < 0 || k->rank < me))
            me = k->rank;
    }
    if (me < 0)
        return; /* not registered (its REPORT comes first) */
    struct ncg_rp2p_rec in[NCG_WIRE_MAX_P2P];
    for (uint32_t i = 0; i < p->n; i++)
        in[i] = (struct ncg_rp2p_rec){(uint32_t)me, p->r[i]};
    p2p_match(r, c, in, p->n, now_ns);
}

static void on_rp2p(struct ncg_relay *r, const struct ncg_msg_rp2p *p, uint64_t now_ns)
{
    struct rcomm *c = comm_get(r, p->comm_id, p->nranks, -1, 0);
    if (c && !c->done)
        p2p_match(r, c, p->r, p->n, now_ns);
}

/* Below the root and attached, in a tick that sent RSTAT (up: so the parent knows the comm
 * first; once an interval), a differing pair and the records held for more than an interval go
 * up; all: every held record (the comm is about to be forgotten). At the root, or detached,
 * records older than NCG_P2PM_AGE_NS are dropped (sweep: once a second). */
static void p2p_tick(struct ncg_relay *r, struct rcomm *c, uint64_t now_ns, int sweep, int up,
                     int all)
{
    if (c->done) {
        ncg_p2pm_clear(&c->p2p);
        c->nbad = 0;
        return;
    }
    if (!c->p2p.n && !c->nbad)
        return;
    if (r->p.root || !r->attached) {
        if (sweep)
            ncg_p2pm_take(&c->p2p, now_ns, NCG_P2PM_AGE_NS, NULL, NULL);
        return;
    }
    if (!up && !all)
        return;
    struct p2p_out o;
    o.r = r;
    o.f.comm_id = c->id;
    o.f.nranks = c->nranks;
    o.f.n = 0;
    for (uint32_t j = 0; j < c->nbad; j++)
        o.f.r[o.f.n++] = c->bad[j];
    c->nbad = 0;
    uint64_t hold = (uint64_t)r->p.interval_ms * 1000000ull;
    ncg_p2pm_take(&c->p2p, all ? UINT64_MAX : now_ns, all ? 0 : hold, p2p_out_add, &o);
    p2p_out_flush(&o);
}

/* ---- children's messages ---- */

static void kid_remove(struct ncg_relay *r, struct rcomm *c, uint32_t i)
{
    if (c->k[i].waiting && c->nwait)
        c->nwait--;
    kid_uncount(r, &c->k[i]);
    c->k[i] = c->k[--c->nk];
    round_check(r, c);
}

static void on_report(struct ncg_relay *r, int conn, const struct ncg_msg_report *rep,
                      uint64_t now_ns)
{
    for (uint32_t e = 0; e < rep->n; e++) {
        const struct ncg_report_entry *x = &rep->e[e];
        struct rcomm *c = x->rank < x->nranks ? comm_get(r, x->comm_id, x->nranks, conn, 0) : NULL;
        if (!c)
            continue;
        struct rkid *k = kid_find(c, conn, 0, x->rank);
        if (!k && (k = kid_gone(c, x->rank))) {
            /* The rank left and registers again (another connection): no second kid. Held by
             * no connection any more, it is this one's now (it gets the verdict). */
            if (!ncg_rl_conn_get(r, k->conn)) {
                k->conn = conn;
                if (c->done && c->last)
                    send_verdict(r, c, c->last, conn);
            }
            continue;
        }
        if (!k) {
            if (!(k = kid_add(r, c, conn, 0, x->rank)))
                continue;
            k->min = k->max = x->count;
            k->known = k->active = 1;
            k->dmin = x->done;
            k->dhi = x->done_hi > x->done ? x->done_hi : x->done;
            k->sampled = (x->flags & NCG_REP_SAMPLED) != 0;
            k->tid = x->tid;
            c->progress_ns = c->dprogress_ns = now_ns;
            if (c->done && c->last)
                send_verdict(r, c, c->last, conn); /* too late for it: it concerns it */
            continue;
        }
        if (k->state != K_ACTIVE)
            continue;
        if (x->count > k->max) {
            k->min = k->max = x->count;
            c->progress_ns = now_ns;
        }
        /* as coord.c's on_report: done only grows; the upper bound is the latest one */
        uint64_t hi = x->done_hi > x->done ? x->done_hi : x->done;
        if (x->done > k->dmin || hi > k->dhi) {
            c->dprogress_ns = now_ns; /* completion moved (or what bounds it did) */
            k->dmin = x->done > k->dmin ? x->done : k->dmin;
        }
        k->dhi = hi > k->dmin ? hi : k->dmin;
        k->sampled = (x->flags & NCG_REP_SAMPLED) != 0;
        k->tid = x->tid;
    }
}

static void on_rstat(struct ncg_relay *r, int conn, const struct ncg_msg_rstat *st, uint64_t now_ns)
{
    for (uint32_t e = 0; e < st->n; e++) {
        const struct ncg_rstat_ent *x = &st->e[e];
        struct rcomm *c = comm_get(r, x->comm_id, x->nranks, conn, 1);
        if (!c)
            continue;
        struct rkid *k = kid_find(c, conn, 1, 0);
        if (!k) {
            if (!(k = kid_add(r, c, conn, 1, 0)))
                continue;
            if (c->done && c->last)
                send_verdict(r, c, c->last, conn);
        }
        k->min = x->min;
        k->max = x->max;
        k->known = x->known;
        k->active = x->active;
        k->nown = x->nown;
        memcpy(k->own, x->own, sizeof *x->own * x->nown);
        k->ngone = x->ngone;
        memcpy(k->gone, x->gone, sizeof *x->gone * x->ngone);
        k->nlow = x->nlow;
        k->low_more = x->low_more;
        memcpy(k->low, x->low, sizeof *x->low * x->nlow);
        k->dmin = x->dmin;
        k->dhi = x->dhi;
        k->sampled = x->sampled;
        k->ndlow = x->ndlow;
        k->ndlow_l = x->ndlow_l;
        memcpy(k->dlow, x->dlow, sizeof *x->dlow * x->ndlow_l);
        uint64_t idle = (uint64_t)x->idle_ms * 1000000ull;
        uint64_t at = now_ns > idle ? now_ns - idle : 0; /* its last progress, in our clock */
        if (at > c->progress_ns)
            c->progress_ns = at;
        idle = (uint64_t)x->didle_ms * 1000000ull;
        at = now_ns > idle ? now_ns - idle : 0;
        if (at > c->dprogress_ns)
            c->dprogress_ns = at;
    }
}

static void answer_group(struct rcomm *c, uint32_t slot, const struct ncg_answer *a, uint32_t rank)
{
    struct ncg_rgroup g = {0};
    if (a->status == NCG_ANS_NONE)
        return;
    g.status =
        a->status == NCG_ANS_OK && a->call.seq == c->rd.qslot[slot] ? NCG_ANS_OK : NCG_ANS_GONE;
    if (g.status == NCG_ANS_OK) {
        g.digest = a->digest;
        g.call = a->call;
        snprintf(g.site, sizeof g.site, "%.*s", (int)sizeof g.site - 1, a->site);
    }
    g.nranks = 1;
    g.nrange = 1;
    g.r[0].lo = g.r[0].hi = rank;
    ncg_rslot_merge(&c->acc->s[slot], &g);
}

static void on_answer(struct ncg_relay *r, int conn, const struct ncg_msg_answer *a)
{
    struct rcomm *c = ncg_rl_comm_find(r, a->comm_id);
    if (!c || !c->q_active || a->qid != c->qid || a->n != c->rd.qn || a->rank >= c->nranks)
        return;
    struct rkid *k = kid_find(c, conn, 0, a->rank);
    if (!k || !k->waiting)
        return;
    for (uint32_t s = 0; s < c->rd.qn; s++)
        answer_group(c, s, &a->a[s], a->rank);
    k->waiting = 0;
    c->nwait--;
    round_check(r, c);
}

static void on_ranswer(struct ncg_relay *r, int conn, const struct ncg_msg_ranswer *a)
{
    struct rcomm *c = ncg_rl_comm_find(r, a->comm_id);
    if (!c || !c->q_active || a->qid != c->qid || a->n != c->rd.qn)
        return;
    struct rkid *k = kid_find(c, conn, 1, 0);
    if (!k || !k->waiting)
        return;
    struct ncg_rgroup span = {0}; /* the ranks that answered beneath k */
    for (uint32_t s = 0; s < c->rd.qn; s++) {
        for (uint32_t j = 0; j < a->s[s].ngroups; j++) {
            ncg_rslot_merge(&c->acc->s[s], &a->s[s].g[j]);
            ranges_union(&span, &a->s[s].g[j]);
        }
        c->acc->s[s].more |= a->s[s].more;
        span.truncated |= a->s[s].more;
    }
    if (!c->nrep) { /* a round of every rank: where the representatives of later ones are */
        k->span_known = !span.truncated;
        k->nspan = span.nrange;
        memcpy(k->span, span.r, sizeof k->span);
    }
    k->waiting = 0;
    c->nwait--;
    round_check(r, c);
}

static void on_goodbye(struct ncg_relay *r, int conn, const struct ncg_msg_goodbye *g)
{
    for (uint32_t e = 0; e < g->n; e++) {
        struct rcomm *c = ncg_rl_comm_find(r, g->comm_id[e]);
        for (uint32_t i = 0; c && i < c->nk; i++)
            if (c->k[i].conn == conn && !c->k[i].relay && c->k[i].state == K_ACTIVE) {
                kid_uncount(r, &c->k[i]);
                c->k[i].state = K_GONE;
                c->k[i].active = 0;
                c->k[i].how = g->flags & (NCG_BYE_ABORT | NCG_BYE_VERDICT);
                if (g->count[e] > c->k[i].max)
                    c->k[i].min = c->k[i].max = g->count[e];
                if (c->k[i].waiting) {
                    c->k[i].waiting = 0;
                    c->nwait--;
                }
                round_check(r, c);
                break; /* one rank per entry */
            }
    }
    if (!(g->flags & NCG_BYE_PROCESS))
        return;
    r->conn[conn].bye = 1;
    for (size_t ci = 0; ci < r->ncomm; ci++) {
        struct rcomm *c = r->comm[ci];
        for (uint32_t i = 0; i < c->nk; i++)
            if (c->k[i].conn == conn && !c->k[i].relay && c->k[i].state == K_ACTIVE) {
                kid_uncount(r, &c->k[i]);
                c->k[i].state = K_GONE;
                c->k[i].active = 0;
                c->k[i].how = g->flags & NCG_BYE_VERDICT;
                if (c->k[i].waiting) {
                    c->k[i].waiting = 0;
                    c->nwait--;
                }
            }
        round_check(r, c);
    }
}

static void on_rfault(struct ncg_relay *r, const struct ncg_msg_rfault *f)
{
    struct rcomm *c = comm_get(r, f->comm_id, f->nranks, -1, 0);
    if (c)
        fault(r, c, f->rank, f->n, f->detail);
}

/* A child relay's ranks that left stay known once it is gone (its process exits, its subtree
 * moves): kept as goodbyes of no connection, for RANK EXITED and the root's SHUTDOWN. */
static void keep_gone(struct ncg_relay *r, struct rcomm *c, const struct ncg_rgone *g, uint8_t n)
{
    for (uint8_t j = 0; j < n; j++) {
        if (kid_gone(c, g[j].rank))
            continue;
        struct rkid *k = kid_new(r, c);
        if (!k)
            return;
        k->conn = -1;
        k->rank = g[j].rank;
        k->state = K_GONE;
        k->how = g[j].how;
        k->min = k->max = g[j].count;
    }
}

/* conn is gone (closed, or silent): RANK DIED of what it held, then forget it. */
static void conn_lost(struct ncg_relay *r, int conn, const char *why)
{
    struct rconn *cc = ncg_rl_conn_get(r, conn);
    if (!cc)
        return;
    for (size_t ci = 0; ci < r->ncomm; ci++) {
        struct rcomm *c = r->comm[ci];
        uint32_t dead[NCG_RELAY_DEAD], nd = 0;
        char detail[NCG_WIRE_STR];
        for (uint32_t i = 0; i < c->nk;) {
            struct rkid *k = &c->k[i];
            if (k->conn != conn) {
                i++;
                continue;
            }
            if (!k->relay && k->state == K_GONE) { /* left: kept for RANK EXITED */
                k->conn = -1;
                k->waiting = 0;
                i++;
                continue;
            }
            if (cc->authed && !cc->bye) {
                if (k->relay)
                    for (uint32_t j = 0; j < k->nown && nd < NCG_RELAY_DEAD; j++)
                        dead[nd++] = k->own[j];
                else if (k->state == K_ACTIVE && nd < NCG_RELAY_DEAD)
                    dead[nd++] = k->rank;
            }
            struct ncg_rgone gone[NCG_RELAY_GONE];
            uint8_t ngone = k->relay ? k->ngone : 0;
            memcpy(gone, k->gone, sizeof gone);
            kid_remove(r, c, i);
            keep_gone(r, c, gone, ngone);
        }
        if (nd) {
            if (cc->relay)
                snprintf(detail, sizeof detail, "the relay of node %u (pid %u on %s) was lost: %s",
                         cc->node, cc->pid, cc->host, why);
            else
                snprintf(detail, sizeof detail, "pid %u on %s, %s", cc->pid, cc->host, why);
            fault(r, c, dead, nd, detail);
        }
    }
    if (cc->authed)
        ncg_rl_event(r, "leave: %s %u on %s (%s)", cc->relay ? "relay of node" : "pid",
                     cc->relay ? cc->node : cc->pid, cc->host, cc->bye ? "clean exit" : why);
    int was_relay = cc->relay;
    memset(cc, 0, sizeof *cc);
    release_mark(r, conn, 0, 1, was_relay);
}

void ncg_relay_closed(struct ncg_relay *r, int conn, uint64_t now_ns)
{
    r->now_ns = now_ns;
    conn_lost(r, conn, "connection lost without goodbye");
}

void ncg_relay_message(struct ncg_relay *r, int conn, const struct ncg_msg *m, uint64_t now_ns)
{
    struct rconn *cc = ncg_rl_conn_get(r, conn);
    if (!cc)
        return;
    if (!cc->authed) {
        uint64_t tok = m->type == NCG_MSG_HELLO    ? m->u.hello.token
                       : m->type == NCG_MSG_RHELLO ? m->u.rhello.token
                                                   : 0;
        if ((m->type != NCG_MSG_HELLO && m->type != NCG_MSG_RHELLO) ||
            (r->p.token && tok != r->p.token)) {
            memset(cc, 0, sizeof *cc);
            r->ops.drop(r->ops.arg, conn);
            return;
        }
        cc->authed = 1;
        cc->relay = m->type == NCG_MSG_RHELLO;
        if (cc->relay) {
            cc->pid = m->u.rhello.pid;
            cc->node = m->u.rhello.node;
            snprintf(cc->host, sizeof cc->host, "%.*s", (int)sizeof cc->host - 1, m->u.rhello.host);
        } else {
            cc->pid = m->u.hello.pid;
            cc->grank = m->u.hello.global_rank;
            snprintf(cc->host, sizeof cc->host, "%.*s", (int)sizeof cc->host - 1, m->u.hello.host);
        }
        cc->last_rx_ns = now_ns;
        struct ncg_msg w = {.type = NCG_MSG_WELCOME};
        w.u.welcome.pid = r->p.pid;
        w.u.welcome.global_rank = r->p.has_global_rank ? r->p.global_rank : -1;
        w.u.welcome.embedded = r->p.embedded;
        snprintf(w.u.welcome.host, sizeof w.u.welcome.host, "%s", r->p.host);
        r->ops.send(r->ops.arg, conn, &w);
        return;
    }
    cc->last_rx_ns = now_ns;
    switch (m->type) {
    case NCG_MSG_REPORT:
        if (!cc->relay)
            on_report(r, conn, &m->u.report, now_ns);
        break;
    case NCG_MSG_ANSWER:
        if (!cc->relay)
            on_answer(r, conn, &m->u.answer);
        break;
    case NCG_MSG_GOODBYE:
        if (!cc->relay)
            on_goodbye(r, conn, &m->u.goodbye);
        break;
    case NCG_MSG_RSTAT:
        if (cc->relay)
            on_rstat(r, conn, &m->u.rstat, now_ns);
        break;
    case NCG_MSG_RANSWER:
        if (cc->relay)
            on_ranswer(r, conn, m->u.ranswer);
        break;
    case NCG_MSG_RFAULT:
        if (cc->relay)
            on_rfault(r, &m->u.rfault);
        break;
    case NCG_MSG_P2P:
        if (!cc->relay)
            on_p2p(r, conn, &m->u.p2p, now_ns);
        break;
    case NCG_MSG_RP2P:
        if (cc->relay)
            on_rp2p(r, &m->u.rp2p, now_ns);
        break;
    case NCG_MSG_WAIT:
        if (!cc->relay)
            ncg_rl_on_wait(r, conn, &m->u.wait, now_ns);
        break;
    case NCG_MSG_RWAIT:
        if (cc->relay && m->u.rwait)
            ncg_rl_on_rwait(r, m->u.rwait);
        break;
    case NCG_MSG_DONE:
        release_mark(r, conn, m->u.exit.comm_id, 0, cc->relay);
        break;
    default: /* a second HELLO, or parent-to-child types: misuse */
        conn_lost(r, conn, "protocol misuse");
        r->ops.drop(r->ops.arg, conn);
        break;
    }
}

/* ---- the parent ---- */

/* Keeps the NCG_RELAY_GONE lowest final counts (those most likely below the others'). */
static void gone_add(struct ncg_rstat_ent *e, const struct ncg_rgone *g)
{
    uint32_t at = e->ngone;
    if (at == NCG_RELAY_GONE) {
        at = 0;
        for (uint32_t j = 1; j < e->ngone; j++)
            if (e->gone[j].count > e->gone[at].count)
                at = j;
        if (e->gone[at].count <= g->count)
            return;
    } else {
        e->ngone++;
    }
    e->gone[at] = *g;
}

static void low_add(struct ncg_rstat_ent *e, uint32_t rank)
{
    if (e->nlow < NCG_RELAY_LOW)
        e->low[e->nlow++] = rank;
    else
        e->low_more = 1;
}

static void send_stats(struct ncg_relay *r, uint64_t now_ns)
{
    static struct ncg_msg m;
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RSTAT;
    for (size_t ci = 0; ci < r->ncomm; ci++) {
        struct rcomm *c = r->comm[ci];
        struct ncg_rstat_ent *e = &m.u.rstat.e[m.u.rstat.n];
        memset(e, 0, sizeof *e);
        e->comm_id = c->id;
        e->nranks = c->nranks;
        e->min = e->dmin = e->dhi = UINT64_MAX;
        for (uint32_t i = 0; i < c->nk; i++) {
            const struct rkid *k = &c->k[i];
            e->known += k->relay ? k->known : 1;
            if (k->relay) {
                e->active += k->active;
            } else {
                e->active += k->state == K_ACTIVE;
                const struct rconn *cc = k->conn >= 0 ? &r->conn[k->conn] : NULL;
                if (cc && k->state == K_ACTIVE && cc->pid == r->p.pid && e->nown < NCG_RELAY_OWN)
                    e->own[e->nown++] = k->rank;
            }
            if (k->relay)
                for (uint32_t j = 0; j < k->ngone; j++)
                    gone_add(e, &k->gone[j]);
            else if (k->state == K_GONE)
                gone_add(e, &(struct ncg_rgone){k->rank, k->how, k->max});
            if (k->state == K_ACTIVE && (!k->relay || k->active)) {
                e->min = k->min < e->min ? k->min : e->min;
                e->max = k->max > e->max ? k->max : e->max;
                e->dmin = k->dmin < e->dmin ? k->dmin : e->dmin;
                e->dhi = k->dhi < e->dhi ? k->dhi : e->dhi;
                e->sampled |= k->sampled;
            }
        }
        if (e->min == UINT64_MAX)
            e->min = e->max = 0;
        if (e->dmin == UINT64_MAX)
            e->dmin = e->dhi = 0;
        for (uint32_t i = 0; i < c->nk; i++) { /* the ranks at min: the laggards, for LAG */
            const struct rkid *k = &c->k[i];
            if (k->state != K_ACTIVE || (k->relay && !k->active) || k->min != e->min)
                continue;
            if (!k->relay)
                low_add(e, k->rank);
            for (uint32_t j = 0; k->relay && j < k->nlow; j++)
                low_add(e, k->low[j]);
            e->low_more |= k->relay && k->low_more;
        }
        for (uint32_t i = 0; i < c->nk; i++) { /* the ranks at dmin: the stalled ones (STUCK) */
            const struct rkid *k = &c->k[i];
            if (k->state != K_ACTIVE || (k->relay && !k->active) || k->dmin != e->dmin)
                continue;
            e->ndlow += k->relay ? k->ndlow : 1;
            if (!k->relay && e->ndlow_l < NCG_RELAY_LOW)
                e->dlow[e->ndlow_l++] = k->rank;
            for (uint32_t j = 0; k->relay && j < k->ndlow_l && e->ndlow_l < NCG_RELAY_LOW; j++)
                e->dlow[e->ndlow_l++] = k->dlow[j];
        }
        uint64_t idle = now_ns > c->progress_ns ? (now_ns - c->progress_ns) / 1000000ull : 0;
        e->idle_ms = idle > UINT32_MAX ? UINT32_MAX : (uint32_t)idle;
        idle = now_ns > c->dprogress_ns ? (now_ns - c->dprogress_ns) / 1000000ull : 0;
        e->didle_ms = idle > UINT32_MAX ? UINT32_MAX : (uint32_t)idle;
        if (e->known > e->nranks)
            e->known = e->nranks;
        if (e->active > e->known)
            e->active = e->known;
        if (e->ndlow > e->active)
            e->ndlow = e->active;
        if (e->ndlow_l > e->ndlow)
            e->ndlow_l = (uint8_t)e->ndlow;
        c->sent_dead = e->active == 0;
        if (++m.u.rstat.n == NCG_RELAY_STAT) {
            r->ops.up(r->ops.arg, &m);
            m.u.rstat.n = 0;
        }
    }
    if (m.u.rstat.n || !r->ncomm)
        r->ops.up(r->ops.arg, &m); /* also the heartbeat when there is nothing to say */
}

void ncg_relay_parent_up(struct ncg_relay *r, uint64_t now_ns)
{
    struct ncg_msg m = {.type = NCG_MSG_RHELLO};
    m.u.rhello.token = r->p.token;
    m.u.rhello.pid = r->p.pid;
    m.u.rhello.node = r->p.node;
    snprintf(m.u.rhello.host, sizeof m.u.rhello.host, "%s", r->p.host);
    r->attached = 1;
    r->parent_rx_ns = now_ns;
    r->ops.up(r->ops.arg, &m);
    for (int i = 0; i < r->nconn; i++)
        r->conn[i].wait_sig = 0; /* the new parent has none of their WAITs yet */
    send_stats(r, now_ns);
    r->last_stat_ns = now_ns;
    for (size_t ci = 0; ci < r->ncomm; ci++) {
        struct rcomm *c = r->comm[ci];
        c->q_active = 0; /* a round of the previous parent: the new one never asked it */
        for (uint32_t i = 0; i < c->npend; i++) {
            struct ncg_msg f = {.type = NCG_MSG_RFAULT};
            f.u.rfault = c->pend[i];
            r->ops.up(r->ops.arg, &f);
        }
        free(c->pend);
        c->pend = NULL;
        c->npend = 0;
        c->pend_full = 0;
        if (c->rel.state == NCG_REL_READY) { /* its subtree's DONE, ready while detached */
            struct ncg_msg d = {.type = NCG_MSG_DONE, .u.exit.comm_id = c->id};
            r->ops.up(r->ops.arg, &d);
        }
    }
}

void ncg_relay_parent_down(struct ncg_relay *r)
{
    r->attached = 0;
    for (size_t ci = 0; ci < r->ncomm; ci++)
        r->comm[ci]->q_active = 0;
}

int ncg_relay_parent_silent(const struct ncg_relay *r, uint64_t now_ns)
{
    uint64_t hb = (uint64_t)(r->p.heartbeat_timeout_s * 1e9);
    return !r->p.root && r->attached && hb && now_ns > r->parent_rx_ns + hb;
}

void ncg_relay_parent_message(struct ncg_relay *r, const struct ncg_msg *m, uint64_t now_ns)
{
    r->parent_rx_ns = r->now_ns = now_ns;
    if (r->p.root)
        return;
    if (m->type == NCG_MSG_QUERY) {
        const struct ncg_msg_query *q = &m->u.query;
        struct rcomm *c = ncg_rl_comm_find(r, q->comm_id);
        if (!c || c->done) {
            static struct ncg_msg_ranswer empty;
            struct ncg_msg a = {.type = NCG_MSG_RANSWER};
            memset(&empty, 0, sizeof empty);
            empty.comm_id = q->comm_id;
            empty.qid = q->qid;
            empty.n = q->n;
            a.u.ranswer = &empty;
            r->ops.up(r->ops.arg, &a);
            return;
        }
        round_begin(r, c, q);
        return;
    }
    if (m->type == NCG_MSG_RASK) {
        ncg_rl_dl_ask(r, now_ns);
        return;
    }
    if (m->type == NCG_MSG_RVERDICT && m->u.rverdict.v) {
        struct rcomm *c = comm_get(r, m->u.rverdict.v->comm_id, m->u.rverdict.comm_nranks, -1, 0);
        if (!c)
            return;
        if (c->done) {
            r->st.ignored++;
            return;
        }
        r->st.forwarded++;
        if (m->u.rverdict.v->severity == NCG_SEV_WARN) { /* a warning: passed on, not kept */
            send_verdict(r, c, m->u.rverdict.v, -1);
            return;
        }
        struct ncg_verdict *v = verdict_dup(r, m->u.rverdict.v);
        if (!v)
            return;
        c->done = 1;
        c->q_active = 0;
        c->last = v;
        ncg_release_begin(&c->rel, UINT64_MAX); /* the root's deadline governs */
        send_verdict(r, c, v, -1);
        release_check(r, c);
        return;
    }
    if (m->type == NCG_MSG_RELEASE) { /* down to everyone the verdict went to */
        struct rcomm *c = ncg_rl_comm_find(r, m->u.exit.comm_id);
        if (c)
            release_down(r, c);
    }
}

void ncg_relay_tick(struct ncg_relay *r, uint64_t now_ns)
{
    uint64_t hb = (uint64_t)(r->p.heartbeat_timeout_s * 1e9);
    if (r->last_tick_ns && hb && now_ns - r->last_tick_ns > hb / 2) { /* we were not running */
        for (int i = 0; i < r->nconn; i++)
            r->conn[i].last_rx_ns = now_ns;
        r->parent_rx_ns = now_ns;
    }
    r->last_tick_ns = r->now_ns = now_ns;
    for (int i = 0; i < r->nconn; i++) {
        struct rconn *cc = &r->conn[i];
        if (!cc->used)
            continue;
        if (!cc->authed && now_ns - cc->since_ns > 5000000000ull) {
            memset(cc, 0, sizeof *cc);
            r->ops.drop(r->ops.arg, i);
        } else if (cc->authed && hb && now_ns - cc->last_rx_ns > hb) {
            char why[96];
            snprintf(why, sizeof why, "silent for %.1f s (frozen or unreachable)",
                     (double)(now_ns - cc->last_rx_ns) / 1e9);
            conn_lost(r, i, why);
            r->ops.drop(r->ops.arg, i);
        }
    }
    uint64_t iv = (uint64_t)r->p.interval_ms * 1000000ull;
    int stat_sent = 0;
    if (!r->p.root && r->attached && now_ns - r->last_stat_ns >= iv - iv / 8) { /* a tick a
                                                                  little early still counts */
        r->last_stat_ns = now_ns;
        send_stats(r, now_ns); /* before a comm whose ranks all left is forgotten below */
        stat_sent = 1;
    }
    int sweep = now_ns - r->last_sweep_ns > 1000000000ull;
    if (sweep)
        r->last_sweep_ns = now_ns;
    for (size_t ci = 0; ci < r->ncomm;) {
        struct rcomm *c = r->comm[ci];
        p2p_tick(r, c, now_ns, sweep, stat_sent, 0);
        release_check(r, c); /* the root's deadline */
        if (r->p.root && !c->done)
            root_check_exited(r, c);
        if (r->p.root && !c->done)
            ncg_rl_check_lag(r, c, now_ns);
        if (r->p.root && !c->done)
            ncg_rl_check_stuck(r, c, now_ns);
        if (r->p.root && !c->done && !c->q_active)
            root_round_start(r, c, now_ns);
        /* Faults queued while detached, and (below the root) a comm whose last RSTAT still
         * showed active ranks, are kept: the parent must hear of the ranks that left or died. */
        /* A comm with a verdict is kept: members that attach late (the processes of a node
         * whose relay died come to the root directly) still get it. */
        int live =
            c->npend != 0 || c->nbad != 0 || (!r->p.root && !c->sent_dead) || (c->done && c->last);
        int gone = 0;
        for (uint32_t i = 0; i < c->nk && !live; i++) {
            live = c->k[i].relay ? c->k[i].active > 0 : c->k[i].state == K_ACTIVE;
            gone += c->k[i].relay ? c->k[i].ngone : c->k[i].state == K_GONE;
        }
        /* At the root, ranks that left are kept for the heartbeat timeout after the last active
         * one went: the others may be between relays (theirs left, they reattach), and a call
         * of theirs beyond a count that left is RANK EXITED (or in the root's SHUTDOWN). */
        if (!live && r->p.root && gone && (uint32_t)gone < c->nranks) {
            if (!c->unlive_ns)
                c->unlive_ns = now_ns;
            live = now_ns - c->unlive_ns < (uint64_t)(r->p.heartbeat_timeout_s * 1e9);
        } else if (live) {
            c->unlive_ns = 0;
        }
        if (!live && !c->q_active) {
            p2p_tick(r, c, now_ns, 0, 0, 1); /* what it holds still concerns the parent */
            for (uint32_t i = 0; i < c->nk; i++)
                kid_uncount(r, &c->k[i]);
            comm_free(c);
            r->comm[ci] = r->comm[--r->ncomm];
            continue;
        }
        ci++;
    }
    if (r->p.root)
        ncg_rl_check_deadlock(r, now_ns);
    if (now_ns - r->last_ping_ns >= 500000000ull) {
        r->last_ping_ns = now_ns;
        struct ncg_msg m = {.type = NCG_MSG_PING};
        for (int i = 0; i < r->nconn; i++)
            if (r->conn[i].used && r->conn[i].authed)
                r->ops.send(r->ops.arg, i, &m);
    }
}
