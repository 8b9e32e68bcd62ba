/* The relay's read-only view for the status endpoint (relay.h's ncg_relay_view): per comm its
 * subtree's aggregates (the figures LAG and STUCK use, relay_hang.c's dfig) and slowest ranks,
 * and the ranks of the client processes connected here. Pure reads of the relay's tables. */
#include <stdlib.h>
#include "relay_int.h"

const struct ncg_relay_params *ncg_relay_get_params(const struct ncg_relay *r)
{
    return &r->p;
}

static double age_s(uint64_t now_ns, uint64_t t_ns)
{
    return now_ns > t_ns ? (double)(now_ns - t_ns) / 1e9 : 0.0;
}

/* The ranks at the minimum count mn beneath c (a client kid's own rank, a child relay's low
 * list), as check_lag names them. */
static void slowest(const struct rcomm *c, uint64_t mn, struct ncg_relay_comm_view *v)
{
    for (uint32_t i = 0; i < c->nk; i++) {
        const struct rkid *k = &c->k[i];
        if (k->state != K_ACTIVE || (k->relay && !k->active) || k->min != mn)
            continue;
        if (!k->relay) {
            if (v->nslow < NCG_RELAY_VIEW_SLOW)
                v->slow[v->nslow++] = k->rank;
            else
                v->slow_more = 1;
        }
        for (uint32_t j = 0; k->relay && j < k->nlow; j++)
            if (v->nslow < NCG_RELAY_VIEW_SLOW)
                v->slow[v->nslow++] = k->low[j];
            else
                v->slow_more = 1;
        v->slow_more |= k->relay && k->low_more;
    }
}

static int by_rank(const void *a, const void *b)
{
    const struct ncg_relay_rank_view *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

void ncg_relay_view(const struct ncg_relay *r, uint64_t now_ns,
                    const struct ncg_relay_view_ops *ops)
{
    for (int i = 0; i < r->conns.n && ops->conn; i++) {
        const struct rconn *cc = ncg_conntab_at(&r->conns, i);
        if (!cc->h.used)
            continue;
        struct ncg_relay_conn_view v = {i,
                                        cc->relay,
                                        cc->h.authed,
                                        cc->bye,
                                        cc->pid,
                                        cc->node,
                                        cc->relay ? -1 : cc->h.grank,
                                        cc->host,
                                        age_s(now_ns, cc->h.last_rx_ns),
                                        age_s(now_ns, cc->h.since_ns)};
        ops->conn(ops->arg, &v);
    }
    struct ncg_relay_rank_view *rv = NULL;
    size_t cap = 0;
    for (size_t ci = 0; ci < r->ncomm && ops->comm; ci++) {
        const struct rcomm *c = r->comm[ci];
        struct dfig f = ncg_rl_comm_dfig(c);
        struct ncg_relay_comm_view v = {.id = c->id,
                                        .nranks = c->nranks,
                                        .known = f.known,
                                        .active = f.active,
                                        .left = f.known > f.active ? f.known - f.active : 0,
                                        .verified = c->rd.vc,
                                        .progress_age_s = age_s(now_ns, c->progress_ns),
                                        .done_age_s = age_s(now_ns, c->dprogress_ns),
                                        .done = c->done,
                                        .lag_warned = c->lag_warned,
                                        .stuck_warned = c->stuck_warned != 0,
                                        .verdict = c->last,
                                        .sg_rank = -1,
                                        .sg_grank = -1,
                                        .sg_host = ""};
        const struct ncg_sg *sg = c->slow ? c->slow->sg : NULL;
        if (sg && sg->named >= 0) {
            v.sg_rank = sg->named;
            v.sg_grank = c->slow->named.grank;
            v.sg_pid = c->slow->named.pid;
            v.sg_host = c->slow->named.host;
            v.sg_share = sg->share;
            v.sg_since_s = age_s(now_ns, sg->since_ns);
            v.sg_device = sg->side == NCG_SG_DEVICE;
        }
        if (f.active) {
            v.issued_min = f.mn;
            v.issued_max = f.mx;
            v.done_min = f.dmin;
            v.done_hi = f.dhi;
            if (f.mn < f.mx)
                slowest(c, f.mn, &v);
        }
        uint32_t nclient = 0;
        for (uint32_t i = 0; i < c->nk; i++) {
            v.nrelays += c->k[i].relay;
            nclient += !c->k[i].relay;
        }
        for (uint32_t i = 0; i < c->dead.n; i++) /* its clients' ranks that died here */
            nclient += c->dead.r[i].flags ? 0 : c->dead.r[i].n;
        for (uint32_t i = 0; i < c->dead.n; i++)
            v.dead += c->dead.r[i].n;
        if (nclient > cap) {
            struct ncg_relay_rank_view *n = realloc(rv, sizeof *n * nclient);
            if (n) {
                rv = n;
                cap = nclient;
            }
        }
        for (uint32_t i = 0; i < c->nk && nclient <= cap; i++) {
            const struct rkid *k = &c->k[i];
            if (k->relay)
                continue;
            const struct rconn *cc = k->conn >= 0 ? ncg_rl_conn_get(r, k->conn) : NULL;
            rv[v.nhere++] = (struct ncg_relay_rank_view){
                .rank = k->rank,
                .conn = cc ? k->conn : -1,
                .global_rank = cc ? cc->h.grank : -1,
                .pid = cc ? cc->pid : 0,
                .host = cc ? cc->host : "",
                .state = k->state == K_ACTIVE ? 1 : 2,
                .issued = k->max,
                .done = k->dmin,
                .heartbeat_age_s = cc ? age_s(now_ns, cc->h.last_rx_ns) : -1,
                .wait_share = ncg_sg_wait_share(sg, (int32_t)k->rank)};
            const struct ncg_wait_ent *w =
                r->p.root && k->conn >= 0 ? ncg_rl_dl_wait_of(r, k->conn, c->id, k->rank) : NULL;
            if (w) {
                rv[v.nhere - 1].has_wait = 1;
                rv[v.nhere - 1].wait = *w;
            }
        }
        for (uint32_t i = 0; i < c->dead.n && nclient <= cap; i++) {
            const struct ncg_figrun *d = &c->dead.r[i];
            for (uint32_t j = 0; !d->flags && j < d->n; j++)
                rv[v.nhere++] = (struct ncg_relay_rank_view){
                    .rank = d->lo + j,
                    .conn = -1,
                    .global_rank = d->glo >= 0 ? d->glo + (int32_t)j * d->gstride : -1,
                    .host = "",
                    .state = 3,
                    .issued = d->count >= 0 ? (uint64_t)d->count : 0,
                    .done = d->done >= 0 ? (uint64_t)d->done : 0,
                    .heartbeat_age_s = -1,
                    .wait_share = -1};
        }
        if (v.nhere)
            qsort(rv, v.nhere, sizeof *rv, by_rank);
        v.here = rv;
        ops->comm(ops->arg, &v);
    }
    free(rv);
}
