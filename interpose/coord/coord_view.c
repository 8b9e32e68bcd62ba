/* The coordinator's read-only view for the status endpoint (coord.h's ncg_coord_view; http.c,
 * metrics.c): its connections and communicators as plain structs, each member's call rate and
 * wait share, the rank a SLOW warning names. */
#include <stdlib.h>
#include "coord_int.h"

const struct ncg_coord_params *ncg_coord_get_params(const struct ncg_coord *co)
{
    return &co->p;
}

static double age_s(uint64_t now_ns, uint64_t t_ns)
{
    return now_ns > t_ns ? (double)(now_ns - t_ns) / 1e9 : 0.0;
}

/* The call member r of comm id is blocked in per its process's latest WAIT: the collective
 * one when there is one, else a p2p one; NULL when none. */
static const struct ncg_wait_ent *view_wait(const struct cconn *cc, uint64_t id, uint32_t r)
{
    const struct ncg_wait_ent *p2p = NULL;
    for (uint32_t j = 0; cc && j < cc->nwaits; j++) {
        const struct ncg_wait_ent *w = &cc->waits[j];
        if (w->comm_id != id || w->rank != r)
            continue;
        if (!w->p2p)
            return w;
        p2p = p2p ? p2p : w;
    }
    return p2p;
}

void ncg_coord_view(struct ncg_coord *co, uint64_t now_ns, const struct ncg_coord_view_ops *ops)
{
    for (int i = 0; i < co->conns.n && ops->conn; i++) {
        const struct cconn *cc = ncg_conntab_at(&co->conns, i);
        if (!cc->h.used)
            continue;
        struct ncg_coord_conn_view v = {i,
                                        cc->h.authed,
                                        cc->bye,
                                        cc->pid,
                                        cc->h.grank,
                                        cc->host,
                                        age_s(now_ns, cc->h.last_rx_ns),
                                        age_s(now_ns, cc->h.since_ns)};
        ops->conn(ops->arg, &v);
    }
    struct ncg_coord_member_view *mv = NULL;
    size_t cap = 0;
    for (size_t ci = 0; ci < co->ncomm && ops->comm; ci++) {
        struct ccomm *c = co->comm[ci];
        if (c->nranks > cap) {
            struct ncg_coord_member_view *n = realloc(mv, sizeof *n * c->nranks);
            if (!n)
                break;
            mv = n;
            cap = c->nranks;
        }
        for (uint32_t i = 0; i < c->nranks; i++) {
            struct cmember *mb = &c->m[i];
            const struct cconn *cc = mb->conn >= 0 ? ncg_co_conn_get(co, mb->conn) : NULL;
            if (mb->state == M_ACTIVE && now_ns >= mb->rate_t0 + 1000000000ull) {
                mb->rate = (double)(mb->count - mb->rate_c0) / age_s(now_ns, mb->rate_t0);
                mb->rate_t0 = now_ns;
                mb->rate_c0 = mb->count;
            } else if (mb->state != M_ACTIVE) {
                mb->rate = 0;
            }
            mv[i] = (struct ncg_coord_member_view){
                .state = mb->state,
                .global_rank = mb->grank,
                .conn = cc ? mb->conn : -1,
                .count = mb->count,
                .progress_age_s = mb->state == M_UNKNOWN ? -1 : age_s(now_ns, mb->progress_ns),
                .heartbeat_age_s = cc ? age_s(now_ns, cc->h.last_rx_ns) : -1,
                .calls_per_s = mb->rate,
                .pid = mb->pid,
                .host = mb->host,
                .done = mb->done,
                .report_age_s = mb->report_ns ? age_s(now_ns, mb->report_ns) : -1,
                .wait = view_wait(cc, c->id, i),
                .wait_share = ncg_co_slow_wait_share(c, i)};
        }
        struct ncg_coord_comm_view v = {.id = c->id,
                                        .nranks = c->nranks,
                                        .verified = c->vc,
                                        .done = c->done,
                                        .lag_warned = c->lag_warned,
                                        .progress_age_s = age_s(now_ns, c->progress_ns),
                                        .verdict = c->last,
                                        .m = mv};
        ncg_co_slow_view(c, now_ns, &v.slow);
        ops->comm(ops->arg, &v);
    }
    free(mv);
}
