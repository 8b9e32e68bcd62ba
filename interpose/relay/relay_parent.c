/* A relay's link to its parent (relay_int.h's state): RHELLO and what was queued while
 * detached when the link comes up, the subtree's figures up each interval (RSTAT: counts,
 * completion, the ranks at the minima, the ranks that left), and the parent's QUERY, RASK,
 * verdicts and RELEASE down. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "relay_int.h"

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

void ncg_rl_send_stats(struct ncg_relay *r, uint64_t now_ns)
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
                const struct rconn *cc = k->conn >= 0 ? ncg_conntab_at(&r->conns, k->conn) : NULL;
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
    for (int i = 0; i < r->conns.n; i++) { /* the new parent has none of their WAITs yet */
        struct rconn *cc = ncg_conntab_at(&r->conns, i);
        cc->wait_sig = 0;
    }
    ncg_rl_send_stats(r, now_ns);
    r->last_stat_ns = now_ns;
    ncg_rl_slow_parent_up(r);
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
        /* its subtree's DONE, ready while detached, or released already (the new parent, that
         * takes it for a late member, waits for nothing here) */
        if (c->rel.state == NCG_REL_READY || c->rel.state == NCG_REL_RELEASED) {
            struct ncg_msg d = {.type = NCG_MSG_DONE, .u.exit.comm_id = c->id};
            r->ops.up(r->ops.arg, &d);
        }
    }
}

void ncg_relay_leaving(struct ncg_relay *r, uint64_t now_ns)
{
    r->now_ns = now_ns;
    if (r->p.root || !r->attached)
        return;
    ncg_rl_send_stats(r, now_ns);
    r->last_stat_ns = now_ns;
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
        ncg_rl_round_begin(r, c, q);
        return;
    }
    if (m->type == NCG_MSG_RASK) {
        ncg_rl_dl_ask(r, now_ns);
        return;
    }
    if (m->type == NCG_MSG_RFIGQ) {
        ncg_rl_on_rfigq(r, &m->u.rfigq, now_ns);
        return;
    }
    if (m->type == NCG_MSG_RVERDICT && m->u.rverdict.v) {
        struct rcomm *c =
            ncg_rl_comm_get(r, m->u.rverdict.v->comm_id, m->u.rverdict.comm_nranks, -1, 0);
        if (!c)
            return;
        if (c->done) {
            r->st.ignored++;
            return;
        }
        r->st.forwarded++;
        if (m->u.rverdict.v->severity == NCG_SEV_WARN) { /* a warning: passed on, not kept */
            ncg_rl_send_verdict(r, c, m->u.rverdict.v, -1);
            return;
        }
        struct ncg_verdict *v = ncg_rl_verdict_dup(r, m->u.rverdict.v);
        if (!v)
            return;
        c->done = 1;
        c->q_active = 0;
        c->last = v;
        ncg_release_begin(&c->rel, UINT64_MAX); /* the root's deadline governs */
        ncg_rl_send_verdict(r, c, v, -1);
        ncg_rl_release_check(r, c);
        return;
    }
    if (m->type == NCG_MSG_RELEASE) { /* down to everyone the verdict went to */
        struct rcomm *c = ncg_rl_comm_find(r, m->u.exit.comm_id);
        if (c)
            ncg_rl_release_down(r, c);
    }
}
