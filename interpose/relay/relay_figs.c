/* The figures gather (relay_int.h's rfigq; docs/checker.md, "Scaling to thousands of ranks"):
 * the root asks its subtree for the per-rank figures of a comm (RFIGQ down), each relay answers
 * once for the ranks beneath it (its clients' figures, those of its ranks that left or died,
 * and its children's answers, merged as runs and bounded: RFIGA up), the root fills a verdict
 * with them before it goes out, or keeps them for a status view. Nothing per rank is held
 * beyond a node relay's own clients and the runs in flight. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "relay_int.h"

#define FIG_ROOT_NS 1000000000ull /* the root's deadline: a subtree that did not answer stays ? */
#define FIG_RELAY_NS 300000000ull /* a relay's, shorter: its answer reaches the root in time */
/* Runs a tree verdict carries down to every rank (coarsened past it; the last gather keeps up
 * to NCG_FIG_VERDICT_RUNS for a status view): its fan-out is the cost. ncg-sim --ranks 16384
 * --per-node 8 --mismatch-rank 7001 (8197 runs gathered): all runs (~16 KB a rank) notified
 * every rank 0.9 s later than main, 64 runs 0.15-0.4 s, 16 runs within 0.03 s of main. */
#define FIG_VERDICT_RUNS 16u

void ncg_rl_figs_free(struct rcomm *c)
{
    ncg_figset_free(&c->fq.acc);
    ncg_figset_free(&c->flast);
    ncg_figset_free(&c->dead);
    ncg_verdict_free(c->pendv);
    c->pendv = NULL;
    c->fq.active = 0;
}

void ncg_rl_figs_dead(struct ncg_relay *r, struct rcomm *c, const struct rkid *k)
{
    int e = 0;
    if (!k->relay && k->state == K_ACTIVE)
        e = ncg_figset_add_rank(&c->dead, k->rank, (int64_t)k->max, (int64_t)k->dmin, k->grank,
                                NCG_FIG_DEAD);
    else if (k->relay && k->active && k->min == k->max) /* its own ranks had that count */
        for (uint32_t j = 0; j < k->nown && !e; j++)
            e = ncg_figset_add_rank(&c->dead, k->own[j], (int64_t)k->min, -1, -1, NCG_FIG_DEAD);
    if (e < 0)
        ncg_rl_nomem(r);
    ncg_figset_normalize(&c->dead);
}

/* c's clients here (active or gone) and its ranks that died, into the gather's runs. */
static int own_figures(struct rcomm *c)
{
    struct ncg_figset *s = &c->fq.acc;
    for (uint32_t i = 0; i < c->nk; i++) {
        const struct rkid *k = &c->k[i];
        if (k->relay || k->rank < c->fq.lo || k->rank > c->fq.hi)
            continue;
        if (ncg_figset_add_rank(s, k->rank, (int64_t)k->max, (int64_t)k->dmin, k->grank,
                                k->state == K_ACTIVE ? NCG_FIG_ACTIVE : NCG_FIG_GONE) < 0)
            return -ENOMEM;
    }
    return ncg_figset_append(s, c->dead.r, c->dead.n);
}

/* v gets the last gather's runs, fitted (coarsened) so that its RVERDICT still fits a relay
 * frame (NCG_FIG_FRAME_BYTES) beside its other fields. */
static void verdict_figs(struct ncg_relay *r, struct rcomm *c, struct ncg_verdict *v)
{
    struct ncg_figset f = {0};
    uint8_t *tmp = malloc(NCG_FIG_FRAME_BYTES);
    long rest = tmp ? ncg_verdict_encode(v, tmp, NCG_FIG_FRAME_BYTES) : -1; /* without runs */
    free(tmp);
    if (rest < 0 || (size_t)rest + 128 + 64 > NCG_FIG_FRAME_BYTES ||
        ncg_figset_append(&f, c->flast.r, c->flast.n) < 0) {
        ncg_rl_event(r, "comm %016" PRIx64 ": the verdict goes out without per-rank figures",
                     c->id);
        return;
    }
    ncg_figset_fit(&f, FIG_VERDICT_RUNS, NCG_FIG_FRAME_BYTES - 128 - (size_t)rest);
    v->figs = f.r; /* v had none: it takes the set's buffer */
    v->nfigs = f.n;
}

/* The gather is over: its runs go up, or become c's last gather (and the verdict waiting for
 * them goes out). */
static void finish(struct ncg_relay *r, struct rcomm *c)
{
    struct rfigq *q = &c->fq;
    q->active = 0;
    for (uint32_t i = 0; i < c->nk; i++)
        c->k[i].fwait = 0;
    ncg_figset_normalize(&q->acc);
    ncg_figset_clip(&q->acc, q->lo, q->hi);
    if (q->up) {
        ncg_figset_fit(&q->acc, NCG_FIG_MAX_RUNS, NCG_FIG_FRAME_BYTES - 64);
        struct ncg_msg m = {.type = NCG_MSG_RFIGA};
        struct ncg_msg_rfiga *a = malloc(sizeof *a);
        if (!a) {
            ncg_rl_nomem(r);
            return;
        }
        *a = (struct ncg_msg_rfiga){c->id, c->nranks, q->qid, q->acc.n, {{0}}};
        if (q->acc.n) /* an empty set has no array */
            memcpy(a->r, q->acc.r, sizeof *a->r * q->acc.n);
        m.u.rfiga = a;
        if (r->attached)
            r->ops.up(r->ops.arg, &m);
        free(a);
        q->acc.n = 0;
        return;
    }
    ncg_figset_coarsen(&q->acc, NCG_FIG_VERDICT_RUNS);
    struct ncg_figset t = c->flast; /* the new one becomes the last; the old one's buffer is
                                       reused by the next gather */
    c->flast = q->acc;
    q->acc = t;
    q->acc.n = 0;
    c->flo = q->lo;
    c->fhi = q->hi;
    c->flast_ns = r->now_ns ? r->now_ns : 1;
    struct ncg_verdict *v = c->pendv;
    if (!v)
        return;
    c->pendv = NULL;
    verdict_figs(r, c, v);
    ncg_rl_verdict_send_now(r, c, v);
}

void ncg_rl_figs_check(struct ncg_relay *r, struct rcomm *c, uint64_t now_ns)
{
    if (!c->fq.active)
        return;
    uint32_t waiting = 0;
    for (uint32_t i = 0; i < c->nk; i++)
        waiting += c->k[i].relay && c->k[i].fwait && ncg_rl_conn_get(r, c->k[i].conn);
    if (waiting && now_ns >= c->fq.deadline_ns)
        ncg_rl_event(r,
                     "figures of comm %016" PRIx64 ": %u child relay%s did not answer in time; "
                     "the ranks beneath %s unknown",
                     c->id, waiting, waiting > 1 ? "s" : "", waiting > 1 ? "them are" : "it are");
    if (!waiting || now_ns >= c->fq.deadline_ns)
        finish(r, c);
}

void ncg_rl_figs_begin(struct ncg_relay *r, struct rcomm *c, uint32_t qid, uint32_t lo, uint32_t hi,
                       int up, uint64_t now_ns)
{
    if (c->fq.active)
        finish(r, c); /* answered with what it has: one gather at a time */
    struct rfigq *q = &c->fq;
    q->active = 1;
    q->up = (uint8_t)up;
    q->qid = qid;
    q->lo = lo;
    q->hi = hi;
    q->deadline_ns = now_ns + (up ? FIG_RELAY_NS : FIG_ROOT_NS);
    q->acc.n = 0;
    if (own_figures(c) < 0)
        ncg_rl_nomem(r);
    struct ncg_msg m = {.type = NCG_MSG_RFIGQ};
    m.u.rfigq = (struct ncg_msg_rfigq){c->id, c->nranks, qid, lo, hi};
    for (uint32_t i = 0; i < c->nk; i++) {
        struct rkid *k = &c->k[i];
        if (!k->relay || !ncg_rl_conn_get(r, k->conn))
            continue;
        k->fwait = 1;
        r->ops.send(r->ops.arg, k->conn, &m);
    }
    ncg_rl_figs_check(r, c, now_ns);
}

void ncg_rl_on_rfigq(struct ncg_relay *r, const struct ncg_msg_rfigq *q, uint64_t now_ns)
{
    struct rcomm *c = ncg_rl_comm_find(r, q->comm_id);
    if (c && c->nranks == q->nranks) {
        ncg_rl_figs_begin(r, c, q->qid, q->lo, q->hi, 1, now_ns);
        return;
    }
    /* nothing of it beneath: an empty answer at once */
    struct ncg_msg m = {.type = NCG_MSG_RFIGA};
    struct ncg_msg_rfiga *none = malloc(sizeof *none);
    if (!none) {
        ncg_rl_nomem(r);
        return;
    }
    none->comm_id = q->comm_id;
    none->nranks = q->nranks;
    none->qid = q->qid;
    none->n = 0;
    m.u.rfiga = none;
    r->ops.up(r->ops.arg, &m);
    free(none);
}

void ncg_rl_on_rfiga(struct ncg_relay *r, int conn, const struct ncg_msg_rfiga *a)
{
    struct rcomm *c = ncg_rl_comm_find(r, a->comm_id);
    if (!c || !c->fq.active || c->fq.qid != a->qid || c->nranks != a->nranks)
        return; /* late: that gather is over */
    struct rkid *k = ncg_rl_kid_find(c, conn, 1, 0);
    if (!k || !k->fwait)
        return;
    k->fwait = 0;
    if (ncg_figset_append(&c->fq.acc, a->r, a->n) < 0) {
        ncg_rl_nomem(r);
        return;
    }
    if (c->fq.acc.n > 4 * NCG_FIG_VERDICT_RUNS) { /* bounded while children answer */
        ncg_figset_normalize(&c->fq.acc);
        ncg_figset_coarsen(&c->fq.acc, NCG_FIG_VERDICT_RUNS);
    }
    ncg_rl_figs_check(r, c, r->now_ns);
}

void ncg_rl_figs_verdict(struct ncg_relay *r, struct rcomm *c, struct ncg_verdict *v)
{
    if (c->pendv) /* the one waiting goes first, with the figures known by now */
        finish(r, c);
    c->pendv = v;
    ncg_rl_figs_begin(r, c, r->next_qid++, 0, c->nranks - 1, 0, r->now_ns);
}

int ncg_relay_figs_request(struct ncg_relay *r, uint64_t comm_id, uint32_t lo, uint32_t hi,
                           uint64_t now_ns)
{
    struct rcomm *c = ncg_rl_comm_find(r, comm_id);
    if (!c)
        return -ENOENT;
    if (lo > hi || hi >= c->nranks)
        return -EINVAL;
    if (c->fq.active)
        return -EBUSY;
    r->now_ns = now_ns;
    ncg_rl_figs_begin(r, c, r->next_qid++, lo, hi, 0, now_ns);
    return 0;
}

int ncg_relay_figs_last(const struct ncg_relay *r, uint64_t comm_id, const struct ncg_figrun **runs,
                        uint32_t *n, uint32_t *lo, uint32_t *hi, uint64_t *at_ns)
{
    for (size_t i = 0; i < r->ncomm; i++) {
        const struct rcomm *c = r->comm[i];
        if (c->id != comm_id || !c->flast_ns)
            continue;
        *runs = c->flast.r;
        *n = c->flast.n;
        *lo = c->flo;
        *hi = c->fhi;
        *at_ns = c->flast_ns;
        return 0;
    }
    return -ENOENT;
}
