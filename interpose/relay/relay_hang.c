/* The root's checks for hangs, on the subtrees' aggregates (relay_int.h's state). LAG (coord.c's
 * check_lag): counts differ and nothing beneath grew for lag_warn_s. STUCK (coord_hang.c's): every
 * rank issued slot k identically, some has not completed it, nothing completed for stuck_warn_s.
 * DEADLOCK is relay_dl.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "relay_int.h"

struct dfig ncg_rl_comm_dfig(const struct rcomm *c)
{
    struct dfig f = {UINT64_MAX, 0, UINT64_MAX, UINT64_MAX, 0, 0, 0};
    for (uint32_t i = 0; i < c->nk; i++) {
        const struct rkid *k = &c->k[i];
        f.known += k->relay ? k->known : 1;
        if (k->state != K_ACTIVE || (k->relay && !k->active))
            continue;
        f.active += k->relay ? k->active : 1;
        f.mn = k->min < f.mn ? k->min : f.mn;
        f.mx = k->max > f.mx ? k->max : f.mx;
        f.dmin = k->dmin < f.dmin ? k->dmin : f.dmin;
        f.dhi = k->dhi < f.dhi ? k->dhi : f.dhi;
        f.sampled |= k->sampled;
    }
    return f;
}

/* coord.c's check_lag over the tree: counts differ and nothing beneath grew for lag_warn_s. */
void ncg_rl_check_lag(struct ncg_relay *r, struct rcomm *c, uint64_t now_ns)
{
    struct dfig f = ncg_rl_comm_dfig(c);
    uint64_t mn = f.mn, mx = f.mx;
    if (f.known < c->nranks)
        return; /* not every member known yet */
    double idle = (double)(now_ns - c->progress_ns) / 1e9;
    int due = ncg_v_lag_due(mn, mx, idle, r->p.lag_warn_s, r->p.lag_abort_s, &c->lag_warned);
    if (!due)
        return;
    int32_t who[NCG_RELAY_DEAD];
    size_t n = 0;
    int more = 0;
    for (uint32_t i = 0; i < c->nk; i++) {
        const struct rkid *k = &c->k[i];
        if (k->state != K_ACTIVE || (k->relay && !k->active) || k->min != mn)
            continue;
        if (!k->relay && n < NCG_RELAY_DEAD)
            who[n++] = (int32_t)k->rank;
        for (uint32_t j = 0; k->relay && j < k->nlow && n < NCG_RELAY_DEAD; j++)
            who[n++] = (int32_t)k->low[j];
        more |= k->relay && k->low_more;
    }
    struct ncg_vcomm vc = ncg_rl_vcomm(c);
    struct ncg_verdict *v = ncg_v_lag(&vc, who, n, more, due == 2, mn, mx, idle);
    if (!v) {
        ncg_rl_nomem(r);
        return;
    }
    c->lag_warned = 1;
    ncg_rl_verdict_issue(r, c, v);
}

/* coord_hang.c's hang_behind_lag needs to know which members of c share a process with
 * members of another comm: the tree carries no such thing. A conservative stand-in: some other
 * comm has incomplete work (its max count above its min completed) while some member may not
 * have issued its first incomplete slot (min count at most its min upper bound): while so, no
 * sampled STUCK (a missed STUCK rather than a false one). */
static int root_behind_lag(const struct ncg_relay *r, const struct rcomm *c)
{
    for (size_t ci = 0; ci < r->ncomm; ci++) {
        const struct rcomm *o = r->comm[ci];
        if (o == c || o->done)
            continue;
        struct dfig f = ncg_rl_comm_dfig(o);
        if (f.mn != UINT64_MAX && f.mn <= f.dhi && f.mx > f.dmin)
            return 1;
    }
    return 0;
}

/* The call at slot k from the last round's records, when it asked them (one call everywhere):
 * its group, or NULL. */
static const struct ncg_rgroup *stuck_call(const struct rcomm *c, uint64_t k)
{
    if (!c->acc || c->rd.mode != NCG_QUERY_RECORDS)
        return NULL;
    for (uint32_t j = 0; j < c->rd.qn && j < c->acc->n; j++) {
        const struct ncg_rslot *s = &c->acc->s[j];
        if (c->rd.qslot[j] != k || s->ngroups != 1 || s->more || s->g[0].status != NCG_ANS_OK)
            continue;
        return &s->g[0];
    }
    return NULL;
}

/* A kid of c holding comm rank rank as a client of this relay, or NULL. */
static const struct rkid *client_kid(const struct rcomm *c, uint32_t rank)
{
    for (uint32_t i = 0; i < c->nk; i++)
        if (!c->k[i].relay && c->k[i].rank == rank)
            return &c->k[i];
    return NULL;
}

/* STUCK's member lines where every rank of c is a client of this relay (a one-node tree's root):
 * one line per member, where its thread is, and what its other communicators are doing. 0 when
 * some rank lies beneath a child relay (nothing per rank is gathered from there). */
static int member_lines(const struct ncg_relay *r, const struct rcomm *c, uint64_t k, char *b,
                        size_t cap)
{
    char call[192];
    for (uint32_t i = 0; i < c->nk; i++)
        if (c->k[i].relay)
            return 0;
    for (uint32_t q = 0; q < c->nranks; q++)
        if (!client_kid(c, q))
            return 0;
    for (uint32_t q = 0; q < c->nranks; q++) {
        if (q == 16) {
            ncg_addf(b, cap, "... %u more members\n", c->nranks - 16);
            break;
        }
        const struct rkid *x = client_kid(c, q);
        const struct rconn *cc = ncg_rl_conn_get(r, x->conn);
        ncg_addf(b, cap, "rank %u (global %d%s%s): issued %" PRIu64 ", completed %" PRIu64, q,
                 x->grank, cc ? ", " : "", cc ? cc->host : "", x->max, x->dmin);
        if (x->dhi > x->dmin)
            ncg_addf(b, cap, "-%" PRIu64 " (sampled)", x->dhi);
        const struct ncg_wait_ent *w = ncg_rl_dl_wait_at(r, x->conn, c->id, q, k);
        if (w)
            ncg_addf(b, cap, ", thread %u in %s%s%s", w->tid,
                     ncg_call_format(&w->call, call, sizeof call), w->site[0] ? " from " : "",
                     w->site);
        int others = 0;
        for (size_t ci = 0; ci < r->ncomm; ci++) { /* its other comms (same process) */
            const struct rcomm *o = r->comm[ci];
            for (uint32_t j = 0; o != c && j < o->nk; j++) {
                const struct rkid *y = &o->k[j];
                if (y->relay || y->conn != x->conn || y->state != K_ACTIVE)
                    continue;
                ncg_addf(b, cap, "%s comm %016" PRIx64 " issued %" PRIu64 " completed %" PRIu64,
                         others++ ? ";" : "; other comms:", o->id, y->max, y->dmin);
                break;
            }
        }
        ncg_addf(b, cap, "\n");
    }
    return 1;
}

/* coord_hang.c's STUCK over the tree, on aggregates: every rank known and active issued the
 * first slot some rank has not completed ([dmin, dhi] of the minima), it is verified identical
 * (rd.vc), and no completion (sampled; synchronous: nor issue) grew for stuck_warn_s. The
 * member lines of the flat checker (threads, call sites, other comms) are not gathered. */
void ncg_rl_check_stuck(struct ncg_relay *r, struct rcomm *c, uint64_t now_ns)
{
    if (r->p.stuck_warn_s <= 0 && r->p.stuck_abort_s <= 0)
        return;
    struct dfig f = ncg_rl_comm_dfig(c);
    /* Under sampled completion a comm's calls may sit on streams behind another comm's wait
     * for a late rank (its LAG): watched whenever completion lags issue here, and a STUCK waits
     * two intervals and a half after it last held (when that wait ends, the other comm's counts
     * may reach the root before this comm's sampled completions do). */
    uint64_t iv = (uint64_t)r->p.interval_ms * 1000000ull;
    if (f.sampled && f.mx > f.dmin && root_behind_lag(r, c))
        c->behind_ns = now_ns;
    if (f.sampled && c->behind_ns && now_ns - c->behind_ns < 2 * iv + iv / 2)
        return;
    if (f.known < c->nranks || f.active < c->nranks || f.mn == UINT64_MAX)
        return; /* unknown, gone or dead members: other verdicts' business */
    uint64_t k = f.dmin, khi = f.dhi;
    if (f.mn <= khi)
        return; /* someone may not have issued the stalled slot: LAG territory, or idle */
    if (c->rd.vc <= khi)
        return; /* not verified identical (yet) up to there: MISMATCH territory */
    uint64_t last =
        f.sampled || c->dprogress_ns > c->progress_ns ? c->dprogress_ns : c->progress_ns;
    double idle = (double)(now_ns - last) / 1e9;
    int due = ncg_v_due(idle, r->p.stuck_warn_s, r->p.stuck_abort_s, c->stuck_warned == k + 1);
    if (!due)
        return;
    int32_t who[NCG_RELAY_DEAD];
    size_t n = 0;
    uint64_t nat = 0; /* ranks at dmin, exact */
    for (uint32_t i = 0; i < c->nk; i++) {
        const struct rkid *x = &c->k[i];
        if (x->state != K_ACTIVE || (x->relay && !x->active) || x->dmin != k)
            continue;
        nat += x->relay ? x->ndlow : 1;
        if (!x->relay && n < NCG_RELAY_DEAD)
            who[n++] = (int32_t)x->rank;
        for (uint32_t j = 0; x->relay && j < x->ndlow_l && n < NCG_RELAY_DEAD; j++)
            who[n++] = (int32_t)x->dlow[j];
    }
    const struct ncg_rgroup *g = stuck_call(c, k);
    struct ncg_call call = g ? g->call : (struct ncg_call){0};
    call.seq = k;
    static const char tail[] = "each member's thread, call site and other communicators are not "
                               "gathered through the relay tree\n";
    char *lines = malloc(NCG_WIRE_NOTES);
    if (lines) {
        lines[0] = 0;
        if (!member_lines(r, c, k, lines, NCG_WIRE_NOTES))
            snprintf(lines, NCG_WIRE_NOTES, "%s", tail);
    }
    const char *site = g ? g->site : NULL;
    struct ncg_stuck_fig s = {k,
                              khi,
                              idle,
                              due == 2,
                              who,
                              n,
                              nat,
                              nat >= c->nranks,
                              g ? &call : NULL,
                              site,
                              lines ? lines : tail};
    struct ncg_vcomm vc = ncg_rl_vcomm(c);
    struct ncg_verdict *v = ncg_v_stuck(&vc, &s);
    free(lines);
    if (!v || !v->notes)
        ncg_rl_nomem(r);
    if (!v)
        return;
    c->stuck_warned = k + 1;
    ncg_rl_verdict_issue(r, c, v);
}
