/* Verdicts and faults on their way through the tree (relay_int.h's state): the root issues a
 * verdict and keeps it for late members, every relay passes it down (a plain VERDICT to real
 * clients), and the exit release (release.h) follows it: DONE up once a subtree is done,
 * RELEASE down. Below the root, ranks that died go up as RFAULTs (queued while detached). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "relay_int.h"

/* The tree's verdict as a client expects it: per-rank arrays (from its runs: the gather's). */
static struct ncg_verdict *client_verdict(struct ncg_relay *r, const struct rcomm *c,
                                          const struct ncg_verdict *tv)
{
    struct ncg_verdict *v = ncg_verdict_copy(tv, c->nranks);
    return v ? v : ncg_rl_nomem(r);
}

void ncg_rl_release_down(struct ncg_relay *r, struct rcomm *c)
{
    struct ncg_msg m = {.type = NCG_MSG_RELEASE, .u.exit.comm_id = c->id};
    for (uint32_t i = 0; i < c->rel.n; i++)
#ifdef NCG_SIM_BREAK_ONE_RELEASE /* tests/dsim/t_dsim_broken.sh: the first one is lost */
        if (i > 0 && ncg_rl_conn_get(r, c->rel.conn[i]))
#else
        if (ncg_rl_conn_get(r, c->rel.conn[i]))
#endif
            r->ops.send(r->ops.arg, c->rel.conn[i], &m);
    for (uint32_t i = 0; i < c->nk && !c->rel_late; i++) { /* (late: released before) */
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
    c->rel_late = 0;
}

void ncg_rl_release_check(struct ncg_relay *r, struct rcomm *c)
{
#ifndef NCG_SIM_BREAK_EXIT_RELEASE /* tests/dsim/t_dsim_broken.sh: released at once */
    if (!ncg_release_due(&c->rel, r->now_ns))
        return;
#else
    if (c->rel.state != NCG_REL_WAITING)
        return;
#endif
    if (r->p.root || c->rel_late) {
        int first;
        uint32_t left = ncg_release_pending(&c->rel, &first);
        if (left)
            ncg_rl_event(r,
                         "exit release of comm %016" PRIx64 " after %.1f s without the DONE of %u "
                         "connection%s",
                         c->id, r->p.exit_wait_s, left, left > 1 ? "s" : "");
        ncg_rl_release_down(r, c);
        return;
    }
    c->rel.state = NCG_REL_READY;
    if (r->attached) {
        struct ncg_msg m = {.type = NCG_MSG_DONE, .u.exit.comm_id = c->id};
        r->ops.up(r->ops.arg, &m);
    }
}

/* The error verdict went to conn: waited for. The others released already, conn registered
 * late: the release reopens for it (and later ones), its DONE awaited within exit_wait_s from
 * now, here (below the root too: the parent has released), then RELEASE to them alone. */
static void release_add(struct ncg_relay *r, struct rcomm *c, int conn)
{
    const struct rconn *cc = ncg_rl_conn_get(r, conn);
    if (c->rel.state == NCG_REL_WAITING && cc && cc->relay && ncg_release_adopt(&c->rel, conn))
        return; /* a subtree that reattached here: still waited for, as before */
    if (c->rel.state == NCG_REL_RELEASED) {
        ncg_release_begin(&c->rel, r->now_ns + (uint64_t)(r->p.exit_wait_s * 1e9));
        c->rel_late = 1;
    }
    if (c->rel.state != NCG_REL_NONE && ncg_release_add(&c->rel, conn) < 0) {
        ncg_rl_nomem(r);
    }
}

void ncg_rl_release_mark(struct ncg_relay *r, int conn, uint64_t comm_id, int gone, int relay)
{
    for (size_t ci = 0; ci < r->ncomm; ci++)
        if (ncg_release_note(&r->comm[ci]->rel, r->comm[ci]->id, conn, comm_id, gone, relay))
            ncg_rl_release_check(r, r->comm[ci]);
}

int ncg_relay_releases_waiting(const struct ncg_relay *r)
{
    int n = 0;
    for (size_t ci = 0; ci < r->ncomm; ci++)
        n += r->comm[ci]->rel.state == NCG_REL_WAITING;
    return n;
}

void ncg_rl_send_verdict(struct ncg_relay *r, struct rcomm *c, struct ncg_verdict *v, int conn)
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

struct ncg_verdict *ncg_rl_verdict_dup(struct ncg_relay *r, const struct ncg_verdict *v)
{
    struct ncg_verdict *d = ncg_verdict_copy(v, 0);
    return d ? d : ncg_rl_nomem(r);
}

void ncg_rl_verdict_send_now(struct ncg_relay *r, struct rcomm *c, struct ncg_verdict *v)
{
    if (r->nomem) { /* judged from incomplete state: the host stops the checker instead */
        ncg_verdict_free(v);
        return;
    }
    if (v->severity == NCG_SEV_WARN) { /* sent, not kept: the checking goes on */
        ncg_rl_send_verdict(r, c, v, -1);
        ncg_verdict_free(v);
        return;
    }
    c->done = 1;
    c->q_active = 0;
    ncg_verdict_free(c->last);
    c->last = v;
    ncg_release_begin(&c->rel, r->now_ns + (uint64_t)(r->p.exit_wait_s * 1e9));
    ncg_rl_send_verdict(r, c, v, -1);
    ncg_rl_release_check(r, c); /* nobody to wait for beneath */
}

/* The root's verdict on c (takes v): decided now (its event line, and for an error no more
 * checking), sent once the figures gather fills its per-rank figures (relay_figs.c), then kept
 * for late members and sent down the whole tree. */
uint64_t ncg_rl_stale_ns(const struct ncg_relay *r)
{
    uint64_t limit = 5ull * r->p.interval_ms * 1000000ull;
    return limit < 1000000000ull ? 1000000000ull : limit;
}

/* Notes in v which of this relay's own client ranks of c stopped reporting five intervals and
 * 1 s ago (their counts are their last word); ranks beneath child relays are not known here. */
static void note_stale_counts(const struct ncg_relay *r, const struct rcomm *c,
                              struct ncg_verdict *v)
{
    uint64_t now = r->now_ns, limit = ncg_rl_stale_ns(r), oldest = 0;
    int32_t *who = malloc(sizeof *who * (c->nk ? c->nk : 1));
    size_t n = 0;
    if (!who)
        return;
    for (uint32_t i = 0; i < c->nk; i++) {
        const struct rkid *k = &c->k[i];
        const struct rconn *cc = k->relay ? NULL : ncg_rl_conn_get(r, k->conn);
        if (k->state != K_ACTIVE || !cc || !cc->h.last_rx_ns || now <= cc->h.last_rx_ns ||
            now - cc->h.last_rx_ns <= limit)
            continue;
        who[n++] = (int32_t)k->rank;
        if (now - cc->h.last_rx_ns > oldest)
            oldest = now - cc->h.last_rx_ns;
    }
    ncg_v_note_stale(v, who, n, oldest);
    free(who);
}

void ncg_rl_verdict_issue(struct ncg_relay *r, struct rcomm *c, struct ncg_verdict *v)
{
    char sum[512];
    if (!v) { /* its constructor (verdicts.h) ran out of memory */
        ncg_rl_nomem(r);
        return;
    }
    if (r->nomem) { /* judged from incomplete state: the host stops the checker instead */
        ncg_verdict_free(v);
        return;
    }
    note_stale_counts(r, c, v);
    if (ncg_v_counted(v)) {
        v->nranks = c->nranks; /* the headline's "(N ranks)"; the summary reads no per-rank array */
        ncg_verdict_summary(v, sum, sizeof sum);
        v->nranks = 0;
        ncg_rl_event(r, "%s %s", v->severity == NCG_SEV_WARN ? "warning:" : "verdict:", sum);
        r->st.verdicts++;
        r->st.by_kind[v->kind < NCG_V_KIND_MAX_ ? v->kind : 0]++;
    }
    if (v->severity == NCG_SEV_ERROR) {
        c->done = 1;
        c->q_active = 0;
    }
    ncg_rl_figs_verdict(r, c, v);
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
    ncg_rl_refuse(r, &c->pend_full,
                  "comm %016" PRIx64 ": more than %u faults while detached from the parent; later "
                  "ones merged into the last",
                  c->id, NCG_RELAY_PEND);
}

void ncg_rl_fault(struct ncg_relay *r, struct rcomm *c, const uint32_t *ranks, uint32_t n,
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
        ncg_rl_verdict_issue(r, c, ncg_v_rank_died(&vc, tmp, n, detail));
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
