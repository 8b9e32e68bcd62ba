/* The relay state machine (relay.h): its tables (relay_int.h: per communicator its children, a
 * client's rank with its count or a child relay with its subtree's min/max; the connections),
 * the children's messages, RANK EXITED at the root, and the tick. The digest rounds are
 * relay_round.c (at the root the flat coordinator's, decided on groups of answers); verdicts,
 * faults and the exit release, relay_issue.c; p2p matching, relay_p2p.c; the parent link,
 * relay_parent.c; LAG and STUCK, relay_hang.c; DEADLOCK through the tree, relay_dl.c; the pure
 * helpers, relay_group.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "relay_int.h"

/* Every allocation failure goes through here (as the coordinator's ncg_co_nomem): a relay that lost
 * state must not judge from what is left; its host stops the checker. Returns NULL. */
void *ncg_rl_nomem(struct ncg_relay *r)
{
    r->nomem = 1;
    return NULL;
}

int ncg_relay_out_of_memory(const struct ncg_relay *r)
{
    return r->nomem;
}

static void vevent(const struct ncg_relay *r, const char *fmt, va_list ap)
{
    char line[600];
    if (!r->ops.event)
        return;
    vsnprintf(line, sizeof line, fmt, ap);
    r->ops.event(r->ops.arg, line);
}

__attribute__((format(printf, 2, 3))) void ncg_rl_event(const struct ncg_relay *r, const char *fmt,
                                                        ...)
{
    va_list ap;
    va_start(ap, fmt);
    vevent(r, fmt, ap);
    va_end(ap);
}

/* ---- tables ---- */

struct ncg_relay_params ncg_relay_params_of(const struct ncg_config *cfg)
{
    struct ncg_relay_params p = {0};
    p.interval_ms = cfg->interval_ms ? cfg->interval_ms : 100;
    p.heartbeat_timeout_s = cfg->heartbeat_timeout_s;
    p.lag_warn_s = cfg->lag_warn_s;
    p.lag_abort_s = cfg->lag_abort_s;
    p.stuck_warn_s = cfg->stuck_warn_s;
    p.stuck_abort_s = cfg->stuck_abort_s;
    p.exit_wait_s = cfg->exit_wait_s;
    p.slow_off = (uint8_t)!cfg->slow;
    p.slow_window = cfg->slow_window;
    p.slow_share = cfg->slow_share_pct / 100;
    p.slow_hold_s = cfg->slow_hold_s;
    return p;
}

struct ncg_relay_params ncg_relay_slow_defaults(void)
{
    struct ncg_config d;
    ncg_config_defaults(&d);
    return ncg_relay_params_of(&d);
}

struct ncg_relay *ncg_relay_new(const struct ncg_relay_params *p, const struct ncg_relay_ops *ops)
{
    struct ncg_relay *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->p = *p;
    r->ops = *ops;
    r->conns.size = sizeof(struct rconn);
    if (!r->p.interval_ms)
        r->p.interval_ms = 100;
    if (!r->p.slow_off && !r->p.slow_window && r->p.slow_share == 0) { /* not set: defaults */
        struct ncg_relay_params d = ncg_relay_slow_defaults();
        r->p.slow_window = d.slow_window;
        r->p.slow_share = d.slow_share;
        r->p.slow_hold_s = d.slow_hold_s;
    }
    r->next_qid = 1;
    return r;
}

static void comm_free(struct rcomm *c)
{
    ncg_rl_slow_free(c);
    ncg_rl_figs_free(c);
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
    ncg_conntab_free(&r->conns);
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

struct rconn *ncg_rl_conn_get(const struct ncg_relay *r, int id)
{
    return ncg_conntab_get(&r->conns, id);
}

void ncg_relay_connected(struct ncg_relay *r, int conn, uint64_t now_ns)
{
    /* Connections that said no HELLO yet are bounded: past NCG_RELAY_MAX_UNAUTHED the oldest
     * is dropped (a flood of idle or foreign connections never crowds out the job's). */
    int oldest = -1;
    if (ncg_conntab_unauthed(&r->conns, &oldest) >= (int)NCG_RELAY_MAX_UNAUTHED && oldest >= 0) {
        ncg_rl_refuse(r, &r->unauthed_said,
                      "refused connection %d: more than %u connections without a HELLO (the "
                      "oldest are dropped; said once)",
                      oldest, NCG_RELAY_MAX_UNAUTHED);
        ncg_conntab_close(&r->conns, oldest);
        r->ops.drop(r->ops.arg, oldest);
        r->st.dropped++;
    }
    if (conn >= 0 && !ncg_conntab_open(&r->conns, conn, now_ns)) {
        ncg_rl_nomem(r);
        r->ops.drop(r->ops.arg, conn);
    }
}

struct rcomm *ncg_rl_comm_find(struct ncg_relay *r, uint64_t id)
{
    for (size_t i = 0; i < r->ncomm; i++)
        if (r->comm[i]->id == id)
            return r->comm[i];
    return NULL;
}

__attribute__((format(printf, 3, 4))) void ncg_rl_refuse(struct ncg_relay *r, uint8_t *said,
                                                         const char *fmt, ...)
{
    r->st.refused++;
    if (*said)
        return;
    *said = 1;
    va_list ap;
    va_start(ap, fmt);
    vevent(r, fmt, ap);
    va_end(ap);
}

/* 1 when conn may register one more kid (relay.h's bounds), else refused (said once). */
static int kid_room(struct ncg_relay *r, int conn, int relay)
{
    struct rconn *cc = ncg_rl_conn_get(r, conn);
    uint32_t cap = relay ? NCG_RELAY_MAX_COMMS : NCG_RELAY_CONN_RANKS;
    if (!cc || cc->nkids < cap)
        return 1;
    ncg_rl_refuse(r, &cc->refused,
                  "refused: %s %u on %s registers more than %u %s; the others go unchecked",
                  relay ? "the relay of node" : "pid", relay ? cc->node : cc->pid, cc->host, cap,
                  relay ? "communicators" : "communicator ranks");
    return 0;
}

struct rcomm *ncg_rl_comm_get(struct ncg_relay *r, uint64_t id, uint32_t nranks, int conn,
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
        ncg_rl_refuse(r, &r->refused,
                      "refused: more than %u communicators; the others go unchecked here",
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

struct rkid *ncg_rl_kid_find(struct rcomm *c, int conn, int relay, uint32_t rank)
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
    k->grank = -1;
    k->sw_rank = -1;
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

/* ---- RANK EXITED, and what left ---- */

uint32_t ncg_rl_gone(const struct rcomm *c, struct ncg_rgone *g, uint64_t *mx_active)
{
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
    if (mx_active)
        *mx_active = mx;
    return ng;
}

/* coord.c's check_exited over the tree: ranks that left after fewer calls than another
 * member issued will never be matched (RANK EXITED). */
static void root_check_exited(struct ncg_relay *r, struct rcomm *c)
{
    struct ncg_rgone g[NCG_RELAY_DEAD];
    uint64_t mx = 0;
    uint32_t ng = ncg_rl_gone(c, g, &mx);
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
    ncg_rl_verdict_issue(r, c, ncg_v_exited(&vc, who, n, fin, mx, how));
}

/* Keeps e[0..*n) the (at most NCG_RELAY_LEFT_PER_COMM) lowest counts, with x offered. */
static void left_keep(struct ncg_relay_left_ent *e, size_t *n, struct ncg_relay_left_ent x)
{
    size_t k = *n;
    if (k == NCG_RELAY_LEFT_PER_COMM) {
        if (x.count >= e[k - 1].count)
            return;
        k--;
    } else {
        (*n)++;
    }
    for (; k > 0 && e[k - 1].count > x.count; k--)
        e[k] = e[k - 1];
    e[k] = x;
}

size_t ncg_relay_left(const struct ncg_relay *r, struct ncg_relay_left_ent *out, size_t cap)
{
    size_t n = 0;
    for (size_t ci = 0; ci < r->ncomm && n < cap; ci++) {
        const struct rcomm *c = r->comm[ci];
        struct ncg_relay_left_ent e[NCG_RELAY_LEFT_PER_COMM];
        size_t ne = 0;
        for (uint32_t i = 0; !c->done && i < c->nk; i++) {
            const struct rkid *k = &c->k[i];
            if (!k->relay && k->state == K_GONE)
                left_keep(e, &ne, (struct ncg_relay_left_ent){c->id, k->rank, k->max});
            for (uint32_t j = 0; k->relay && j < k->ngone; j++)
                left_keep(e, &ne,
                          (struct ncg_relay_left_ent){c->id, k->gone[j].rank, k->gone[j].count});
        }
        for (size_t j = 0; j < ne && n < cap; j++)
            out[n++] = e[j];
    }
    return n;
}

/* ---- children's messages ---- */

static void kid_remove(struct ncg_relay *r, struct rcomm *c, uint32_t i)
{
    if (c->k[i].waiting && c->nwait)
        c->nwait--;
    kid_uncount(r, &c->k[i]);
    c->k[i] = c->k[--c->nk];
    ncg_rl_round_check(r, c);
}

/* Whether conn holds a kid of c other than k: the process has c's verdict already. */
static int conn_held(const struct rcomm *c, int conn, const struct rkid *k)
{
    for (uint32_t i = 0; i < c->nk; i++)
        if (&c->k[i] != k && c->k[i].conn == conn)
            return 1;
    return 0;
}

static void on_report(struct ncg_relay *r, int conn, const struct ncg_msg_report *rep,
                      uint64_t now_ns)
{
    for (uint32_t e = 0; e < rep->n; e++) {
        const struct ncg_report_entry *x = &rep->e[e];
        struct rcomm *c =
            x->rank < x->nranks ? ncg_rl_comm_get(r, x->comm_id, x->nranks, conn, 0) : NULL;
        if (!c)
            continue;
        struct rkid *k = ncg_rl_kid_find(c, conn, 0, x->rank);
        if (!k && (k = kid_gone(c, x->rank))) {
            /* The rank left and registers again (another connection): no second kid. Held by
             * no connection any more, it is this one's now (it gets the verdict). */
            if (!ncg_rl_conn_get(r, k->conn)) {
                k->conn = conn;
                if (c->done && c->last && !conn_held(c, conn, k))
                    ncg_rl_send_verdict(r, c, c->last, conn);
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
            k->grank = x->global_rank < 0 ? -1 : x->global_rank;
            c->progress_ns = c->dprogress_ns = now_ns;
            /* too late for it: it concerns it (once per process) */
            if (c->done && c->last && !conn_held(c, conn, k))
                ncg_rl_send_verdict(r, c, c->last, conn);
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
        if (rep->nslow[e] && !c->done && !r->p.slow_off)
            ncg_rl_slow_report(r, c, k, rep->slow[e], rep->nslow[e], now_ns);
    }
}

/* A child relay's last progress, idle_ms before now in our clock, moves *t forward. */
static void seen_at(uint64_t *t, uint64_t now_ns, uint32_t idle_ms)
{
    uint64_t idle = (uint64_t)idle_ms * 1000000ull;
    uint64_t at = now_ns > idle ? now_ns - idle : 0;
    if (at > *t)
        *t = at;
}

static void on_rstat(struct ncg_relay *r, int conn, const struct ncg_msg_rstat *st, uint64_t now_ns)
{
    for (uint32_t e = 0; e < st->n; e++) {
        const struct ncg_rstat_ent *x = &st->e[e];
        struct rcomm *c = ncg_rl_comm_get(r, x->comm_id, x->nranks, conn, 1);
        if (!c)
            continue;
        struct rkid *k = ncg_rl_kid_find(c, conn, 1, 0);
        if (!k) {
            if (!(k = kid_add(r, c, conn, 1, 0)))
                continue;
            if (c->done && c->last)
                ncg_rl_send_verdict(r, c, c->last, conn);
        }
        /* a list of x's, and its count */
#define TAKE(list, n) memcpy(k->list, x->list, (k->n = x->n) * sizeof *x->list)
        k->min = x->min;
        k->max = x->max;
        k->known = x->known;
        k->active = x->active;
        TAKE(own, nown);
        TAKE(gone, ngone);
        k->low_more = x->low_more;
        TAKE(low, nlow);
        k->dmin = x->dmin;
        k->dhi = x->dhi;
        k->sampled = x->sampled;
        k->ndlow = x->ndlow;
        TAKE(dlow, ndlow_l);
#undef TAKE
        seen_at(&c->progress_ns, now_ns, x->idle_ms);
        seen_at(&c->dprogress_ns, now_ns, x->didle_ms);
    }
}

static void on_goodbye(struct ncg_relay *r, int conn, const struct ncg_msg_goodbye *g)
{
    for (uint32_t e = 0; e < g->n; e++) {
        struct rcomm *c = ncg_rl_comm_find(r, g->comm_id[e]);
        for (uint32_t i = 0; c && i < c->nk; i++)
            if (c->k[i].conn == conn && !c->k[i].relay && c->k[i].state == K_ACTIVE &&
                (g->rank[e] == NCG_BYE_ANYRANK || g->rank[e] == c->k[i].rank)) {
                kid_uncount(r, &c->k[i]);
                c->k[i].state = K_GONE;
                c->k[i].active = 0;
                c->k[i].how = g->flags & (NCG_BYE_ABORT | NCG_BYE_VERDICT);
#ifndef NCG_SIM_BREAK_DEPARTED_COUNT /* tests/dsim/t_dsim_broken.sh: forgotten */
                if (g->count[e] > c->k[i].max)
                    c->k[i].min = c->k[i].max = g->count[e];
#else
                c->k[i].min = c->k[i].max = 0;
#endif
                if (c->k[i].waiting) {
                    c->k[i].waiting = 0;
                    c->nwait--;
                }
                ncg_rl_round_check(r, c);
                break; /* one rank per entry */
            }
    }
    if (!(g->flags & NCG_BYE_PROCESS))
        return;
    ncg_rl_conn_get(r, conn)->bye = 1;
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
        ncg_rl_round_check(r, c);
    }
}

static void on_rfault(struct ncg_relay *r, const struct ncg_msg_rfault *f)
{
    struct rcomm *c = ncg_rl_comm_get(r, f->comm_id, f->nranks, -1, 0);
    if (c)
        ncg_rl_fault(r, c, f->rank, f->n, f->detail);
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
/* "pid P (global rank G) on H", "pid P on H" or "the relay of node N (pid P on H)": who a
 * connection is, for the event lines. */
static const char *conn_who(const struct rconn *cc, char *buf, size_t cap)
{
    if (cc->relay)
        snprintf(buf, cap, "the relay of node %u (pid %u on %s)", cc->node, cc->pid, cc->host);
    else if (cc->h.grank >= 0)
        snprintf(buf, cap, "pid %u (global rank %d) on %s", cc->pid, cc->h.grank, cc->host);
    else
        snprintf(buf, cap, "pid %u on %s", cc->pid, cc->host);
    return buf;
}

static void conn_lost(struct ncg_relay *r, int conn, const char *why)
{
    struct rconn *cc = ncg_rl_conn_get(r, conn);
    char who[128];
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
            if (cc->h.authed && !cc->bye) {
                if (k->relay)
                    for (uint32_t j = 0; j < k->nown && nd < NCG_RELAY_DEAD; j++)
                        dead[nd++] = k->own[j];
                else if (k->state == K_ACTIVE && nd < NCG_RELAY_DEAD)
                    dead[nd++] = k->rank;
            }
            if (cc->h.authed && !cc->bye)
                ncg_rl_figs_dead(r, c, k); /* its last figures stay known (gathers) */
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
            uint64_t age = 0;
            if (cc->h.last_rx_ns && r->now_ns > cc->h.last_rx_ns)
                age = r->now_ns - cc->h.last_rx_ns;
            if (!cc->relay && age > ncg_rl_stale_ns(r)) {
                int32_t st[NCG_RELAY_DEAD]; /* their counts are their last word */
                for (uint32_t j = 0; j < nd; j++)
                    st[j] = (int32_t)dead[j];
                ncg_v_note_stale_buf(detail, sizeof detail, st, nd, age);
            }
            ncg_rl_fault(r, c, dead, nd, detail);
        }
    }
    if (cc->h.authed)
        ncg_rl_event(r, "leave: %s (%s)", conn_who(cc, who, sizeof who),
                     cc->bye ? "clean exit" : why);
    int was_relay = cc->relay;
    ncg_conntab_close(&r->conns, conn);
    ncg_rl_release_mark(r, conn, 0, 1, was_relay);
}

void ncg_relay_closed(struct ncg_relay *r, int conn, uint64_t now_ns)
{
    r->now_ns = now_ns;
    conn_lost(r, conn, NCG_DIED_CLOSED);
}

void ncg_relay_message(struct ncg_relay *r, int conn, const struct ncg_msg *m, uint64_t now_ns)
{
    struct rconn *cc = ncg_rl_conn_get(r, conn);
    if (!cc)
        return;
    if (!cc->h.authed) {
        uint64_t tok = m->type == NCG_MSG_HELLO    ? m->u.hello.token
                       : m->type == NCG_MSG_RHELLO ? m->u.rhello.token
                                                   : 0;
        if ((m->type != NCG_MSG_HELLO && m->type != NCG_MSG_RHELLO) ||
            (r->p.token && tok != r->p.token)) {
            if (m->type != NCG_MSG_HELLO && m->type != NCG_MSG_RHELLO)
                ncg_rl_event(r, "refused connection %d: its first message is not a HELLO", conn);
            else if (m->type == NCG_MSG_HELLO)
                ncg_rl_event(r, "refused pid %u on %s (connection %d): wrong token", m->u.hello.pid,
                             m->u.hello.host, conn);
            else
                ncg_rl_event(r,
                             "refused the relay of node %u (pid %u on %s, connection %d): "
                             "wrong token",
                             m->u.rhello.node, m->u.rhello.pid, m->u.rhello.host, conn);
            ncg_conntab_close(&r->conns, conn);
            r->ops.drop(r->ops.arg, conn);
            r->st.dropped++;
            return;
        }
        cc->h.authed = 1;
        cc->relay = m->type == NCG_MSG_RHELLO;
        if (cc->relay) {
            cc->pid = m->u.rhello.pid;
            cc->node = m->u.rhello.node;
            snprintf(cc->host, sizeof cc->host, "%.*s", (int)sizeof cc->host - 1, m->u.rhello.host);
        } else {
            cc->pid = m->u.hello.pid;
            cc->h.grank = m->u.hello.global_rank;
            snprintf(cc->host, sizeof cc->host, "%.*s", (int)sizeof cc->host - 1, m->u.hello.host);
        }
        cc->h.last_rx_ns = now_ns;
        struct ncg_msg w = {.type = NCG_MSG_WELCOME};
        w.u.welcome.pid = r->p.pid;
        w.u.welcome.global_rank = r->p.has_global_rank ? r->p.global_rank : -1;
        w.u.welcome.embedded = r->p.embedded;
        snprintf(w.u.welcome.host, sizeof w.u.welcome.host, "%s", r->p.host);
        r->ops.send(r->ops.arg, conn, &w);
        char who[128];
        ncg_rl_event(r, "join: %s (connection %d)", conn_who(cc, who, sizeof who), conn);
        return;
    }
    cc->h.last_rx_ns = now_ns;
    switch (m->type) {
    case NCG_MSG_REPORT:
        if (!cc->relay)
            on_report(r, conn, &m->u.report, now_ns);
        break;
    case NCG_MSG_ANSWER:
        if (!cc->relay)
            ncg_rl_on_answer(r, conn, &m->u.answer);
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
            ncg_rl_on_ranswer(r, conn, m->u.ranswer);
        break;
    case NCG_MSG_RFAULT:
        if (cc->relay)
            on_rfault(r, &m->u.rfault);
        break;
    case NCG_MSG_P2P:
        if (!cc->relay)
            ncg_rl_on_p2p(r, conn, &m->u.p2p, now_ns);
        break;
    case NCG_MSG_RP2P:
        if (cc->relay)
            ncg_rl_on_rp2p(r, &m->u.rp2p, now_ns);
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
        ncg_rl_release_mark(r, conn, m->u.exit.comm_id, 0, cc->relay);
        break;
    case NCG_MSG_RFIGA:
        if (cc->relay && m->u.rfiga)
            ncg_rl_on_rfiga(r, conn, m->u.rfiga);
        break;
    case NCG_MSG_RSLOW:
        if (cc->relay && m->u.rslow && !r->p.slow_off)
            ncg_rl_on_rslow(r, conn, m->u.rslow, now_ns);
        break;
    default: /* a second HELLO, or parent-to-child types: misuse */
        conn_lost(r, conn, "protocol misuse");
        r->ops.drop(r->ops.arg, conn);
        r->st.dropped++;
        break;
    }
}

void ncg_relay_tick(struct ncg_relay *r, uint64_t now_ns)
{
    uint64_t hb = (uint64_t)(r->p.heartbeat_timeout_s * 1e9);
    if (ncg_conntab_resume(&r->conns, r->last_tick_ns, now_ns, hb, 0)) /* we were not running */
        r->parent_rx_ns = now_ns;
    r->last_tick_ns = r->now_ns = now_ns;
    for (int i = 0; i < r->conns.n; i++) {
        struct rconn *cc = ncg_conntab_at(&r->conns, i);
        enum ncg_conn_due due = ncg_conn_due(&cc->h, now_ns, hb);
        if (due == NCG_CONN_NO_HELLO) {
            ncg_rl_event(r, "refused connection %d: no HELLO within 5 s", i);
            ncg_conntab_close(&r->conns, i);
            r->ops.drop(r->ops.arg, i);
            r->st.dropped++;
        } else if (due == NCG_CONN_SILENT) {
            char why[96];
            ncg_v_silent(why, sizeof why, now_ns - cc->h.last_rx_ns);
            conn_lost(r, i, why);
            r->ops.drop(r->ops.arg, i);
            r->st.dropped++;
        }
    }
    uint64_t iv = (uint64_t)r->p.interval_ms * 1000000ull;
    int stat_sent = 0;
    if (!r->p.root && r->attached && now_ns - r->last_stat_ns >= iv - iv / 8) { /* a tick a
                                                                  little early still counts */
        r->last_stat_ns = now_ns;
        ncg_rl_send_stats(r, now_ns); /* before a comm whose ranks all left is forgotten below */
        stat_sent = 1;
    }
    int sweep = now_ns - r->last_sweep_ns > 1000000000ull;
    if (sweep)
        r->last_sweep_ns = now_ns;
    for (size_t ci = 0; ci < r->ncomm;) {
        struct rcomm *c = r->comm[ci];
        ncg_rl_p2p_tick(r, c, now_ns, sweep, stat_sent, 0);
        ncg_rl_release_check(r, c);      /* the root's deadline */
        ncg_rl_figs_check(r, c, now_ns); /* the gather's deadline */
        if (r->p.root && !c->done)
            root_check_exited(r, c);
        if (r->p.root && !c->done)
            ncg_rl_check_lag(r, c, now_ns);
        if (r->p.root && !c->done)
            ncg_rl_check_stuck(r, c, now_ns);
        if (r->p.root && !c->done && !c->q_active)
            ncg_rl_root_round_start(r, c, now_ns);
        if (c->slow && !c->done)
            ncg_rl_slow_tick(r, c, now_ns);
        /* Faults queued while detached, and (below the root) a comm whose last RSTAT still
         * showed active ranks, are kept: the parent must hear of the ranks that left or died. */
        /* A comm with a verdict is kept while members may attach late (the processes of a node
         * whose relay died come to the root directly): below the root while its verdict stands,
         * at the root for the heartbeat timeout after its last active rank went (then a job
         * reusing the id, a standalone checker's next run, starts afresh: memory stays bounded). */
        int verdict = c->done && c->last;
        int live = c->npend != 0 || c->nbad != 0 || (!r->p.root && !c->sent_dead) ||
                   (verdict && !r->p.root) || c->fq.active || c->pendv;
        int gone = 0;
        for (uint32_t i = 0; i < c->nk && !live; i++) {
            live = c->k[i].relay ? c->k[i].active > 0 : c->k[i].state == K_ACTIVE;
            gone += c->k[i].relay ? c->k[i].ngone : c->k[i].state == K_GONE;
        }
        /* At the root, ranks that left are kept for the heartbeat timeout after the last active
         * one went: the others may be between relays (theirs left, they reattach), and a call
         * of theirs beyond a count that left is RANK EXITED (or in the root's SHUTDOWN). */
        if (!live && r->p.root && (verdict || (gone && (uint32_t)gone < c->nranks))) {
            if (!c->unlive_ns)
                c->unlive_ns = now_ns;
            live = now_ns - c->unlive_ns < (uint64_t)(r->p.heartbeat_timeout_s * 1e9);
        } else if (live) {
            c->unlive_ns = 0;
        }
        if (!live && !c->q_active) {
            ncg_rl_p2p_tick(r, c, now_ns, 0, 0, 1); /* what it holds still concerns the parent */
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
    else if (r->attached)
        ncg_rl_slow_flush(r);
    if (now_ns - r->last_ping_ns >= 500000000ull) {
        r->last_ping_ns = now_ns;
        struct ncg_msg m = {.type = NCG_MSG_PING};
        for (int i = 0; i < r->conns.n; i++)
            if (ncg_conntab_authed(&r->conns, i))
                r->ops.send(r->ops.arg, i, &m);
    }
}
