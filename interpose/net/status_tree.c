/* The relay tree's endpoint (status_tree.h), its source half: the per-rank rate windows, and
 * the snapshot of a relay's view that the renderers (status_tree_render.c) walk, taken in one
 * pass: its connections, each comm's aggregates, the rows of its own ranks or, at the root, of
 * the figures gather (rows_of: the one place rows come from, with the gather's not-ready). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figruns.h"
#include "http.h"
#include "relay.h"
#include "relayhost.h"
#include "status_tree.h"
#include "status_tree_int.h"
#include "verdict.h"

/* ---------- per-rank rates (calls per second over a window of at least one second) ---------- */

struct ncg_tree_rate {
    uint64_t comm;
    uint32_t rank;
    uint64_t t0, c0, seen_ns;
    double rate;            /* calls per second over its last window; -1 before the first */
    uint64_t last, grew_ns; /* the count last seen, and when it was seen to grow */
};

#define RATE_FORGET_NS 60000000000ull /* a row not seen for a minute is dropped */

/* The rank's rate: over the last window of at least 1 s between renders (0 before); in *age
 * the seconds since its count was seen to grow (a row seen first: since its comm's count last
 * grew, comm_age: a bound the relay knows). */
static double rate_of(struct ncg_tree_src *t, uint64_t comm, uint32_t rank, uint64_t count,
                      int active, uint64_t now, double comm_age, double *age)
{
    struct ncg_tree_rate *e = NULL;
    for (size_t i = 0; i < t->nrt; i++)
        if (t->rt[i].comm == comm && t->rt[i].rank == rank) {
            e = &t->rt[i];
            break;
        }
    if (!e) {
        if (t->nrt == t->caprt) {
            size_t n = t->caprt ? t->caprt * 2 : 32;
            struct ncg_tree_rate *q = realloc(t->rt, sizeof *q * n);
            if (!q) {
                *age = -1; /* out of memory: no rate and no age known (no line for it) */
                return 0;
            }
            t->rt = q;
            t->caprt = n;
        }
        e = &t->rt[t->nrt++];
        uint64_t back = (uint64_t)(comm_age * 1e9);
        /* rate -1 until its first window of a second: not known, no sample (a 0 would read as
         * a job that stopped training: NcclguardThroughputFloor) */
        *e = (struct ncg_tree_rate){comm, rank, now,   count,
                                    now,  -1,   count, now > back ? now - back : 0};
    }
    e->seen_ns = now;
    if (count != e->last) {
        e->last = count;
        e->grew_ns = now;
    }
    *age = (double)(now - e->grew_ns) / 1e9;
    if (!active) {
        e->rate = 0;
    } else if (now >= e->t0 + 1000000000ull && count >= e->c0) {
        e->rate = (double)(count - e->c0) / ((double)(now - e->t0) / 1e9);
        e->t0 = now;
        e->c0 = count;
    }
    return e->rate;
}

static void rate_sweep(struct ncg_tree_src *t, uint64_t now)
{
    for (size_t i = 0; i < t->nrt;)
        if (now - t->rt[i].seen_ns > RATE_FORGET_NS)
            t->rt[i] = t->rt[--t->nrt];
        else
            i++;
}

/* ---------- snapshot ---------- */

static void snap_conn(void *arg, const struct ncg_relay_conn_view *v)
{
    struct ncg_tree_snap *s = arg;
    if (ncg_grow((void **)&s->c, &s->capc, s->nc + 1, sizeof *s->c)) {
        s->oom = 1;
        return;
    }
    struct ncg_tree_conn *c = &s->c[s->nc++];
    c->v = *v;
    c->v.host = NULL;
    snprintf(c->host, sizeof c->host, "%s", v->host);
}

/* A new zeroed row at the end of the snapshot's rows; NULL out of memory (s->oom set). */
static struct ncg_tree_row *row_add(struct ncg_tree_snap *s)
{
    if (ncg_grow((void **)&s->row, &s->caprow, s->nrow + 1, sizeof *s->row)) {
        s->oom = 1;
        return NULL;
    }
    struct ncg_tree_row *m = &s->row[s->nrow++];
    memset(m, 0, sizeof *m);
    return m;
}

/* Row m from a rank of this relay's own clients (o, of comm v). */
static void row_here(struct ncg_tree_snap *s, const struct ncg_relay_comm_view *v,
                     const struct ncg_relay_rank_view *o, struct ncg_tree_row *m)
{
    m->v = *o;
    m->v.host = NULL;
    snprintf(m->host, sizeof m->host, "%s", o->host);
    m->rate =
        rate_of(s->t, v->id, o->rank, o->issued, o->state == 1, s->now, v->progress_age_s, &m->age);
}

/* Rows the root lists for a comm without ?ranks= (larger comms: aggregates only, rows on
 * request), and at most per request; how old a gather may be to be served. */
#define TREE_ROWS_MAX 4096u
#define TREE_FIGS_FRESH_NS 1000000000ull

/* Root, a comm whose ranks are not all its own clients': the range whose rows come from the
 * figures gather (relay.h), or 0 when none is wanted (a comm too large without ?ranks=). */
static int gather_range(const struct ncg_tree_snap *s, const struct ncg_relay_comm_view *v,
                        uint32_t *lo, uint32_t *hi)
{
    if (!s->gather || !ncg_relay_get_params(s->t->r)->root || v->nhere >= v->nranks ||
        v->nranks == 0)
        return 0;
    if (s->q && s->q->has_ranks) {
        if (s->q->lo >= v->nranks)
            return 0;
        *lo = s->q->lo;
        *hi = s->q->hi < v->nranks ? s->q->hi : v->nranks - 1;
    } else if (v->nranks <= TREE_ROWS_MAX) {
        *lo = 0;
        *hi = v->nranks - 1;
    } else {
        return 0;
    }
    if (*hi - *lo >= TREE_ROWS_MAX)
        *hi = *lo + TREE_ROWS_MAX - 1;
    return 1;
}

/* The rows lo..hi of comm v from the root's latest gather, when it covers them and is fresh:
 * 0 (rows added), NCG_HTTP_NOT_READY (a gather was started or is in flight: the endpoint
 * renders again), or -1 (none to be had: the comm is gone; own rows instead). A rank of this
 * relay's own clients keeps its richer row (pid, host, rate). */
static int rows_gathered(struct ncg_tree_snap *s, const struct ncg_relay_comm_view *v, uint32_t lo,
                         uint32_t hi)
{
    const struct ncg_figrun *run;
    uint32_t n, flo, fhi;
    uint64_t at;
    int have = ncg_relay_figs_last(s->t->r, v->id, &run, &n, &flo, &fhi, &at) == 0;
    if (!have || flo > lo || fhi < hi || at + TREE_FIGS_FRESH_NS < s->now) {
        int rc = ncg_relay_figs_request(s->t->r, v->id, lo, hi, s->now);
        return rc == 0 || rc == -EBUSY ? NCG_HTTP_NOT_READY : -1;
    }
    uint32_t h = 0; /* v->here is by comm rank */
    for (uint32_t i = 0; i < n; i++) {
        const struct ncg_figrun *f = &run[i];
        uint32_t a = f->lo > lo ? f->lo : lo, e = f->lo + f->n - 1;
        e = e < hi ? e : hi;
        for (uint32_t k = a; k <= e && k >= a; k++) {
            while (h < v->nhere && v->here[h].rank < k)
                h++;
            struct ncg_tree_row *m = row_add(s);
            if (!m)
                return 0;
            if (h < v->nhere && v->here[h].rank == k) {
                row_here(s, v, &v->here[h], m);
                continue;
            }
            m->v.rank = k;
            m->v.global_rank = f->glo >= 0 ? f->glo + (int32_t)(k - f->lo) * f->gstride : -1;
            m->v.state = f->state; /* enum ncg_fig_state: 1 active, 2 left, 3 dead, 0 unknown */
            m->v.issued = f->count >= 0 ? (uint64_t)f->count : 0;
            m->v.done = f->done >= 0 ? (uint64_t)f->done : 0;
            m->unknown = f->count < 0;
            m->v.heartbeat_age_s = -1;
            m->rate = -1; /* not tracked per rank at the root */
            m->age = -1;
            m->v.wait_share = -1; /* nor the wait share: the root decides on aggregates */
        }
    }
    return 0;
}

/* The rows of comm c for the snapshot, in comm-rank order, within the query's range: at the
 * root, from the figures gather for a comm with ranks beyond its own clients; else the ranks
 * of this relay's own clients (the one place rows come from). */
static void rows_of(struct ncg_tree_snap *s, const struct ncg_relay_comm_view *v,
                    struct ncg_tree_comm *c)
{
    c->r0 = s->nrow;
    uint32_t lo, hi;
    if (gather_range(s, v, &lo, &hi)) {
        int rc = rows_gathered(s, v, lo, hi);
        if (rc == 0) {
            c->nrows = s->nrow - c->r0;
            return;
        }
        if (rc == NCG_HTTP_NOT_READY)
            s->pending = 1;
    }
    for (uint32_t i = 0; i < v->nhere; i++) {
        const struct ncg_relay_rank_view *a = &v->here[i];
        if (s->q && s->q->has_ranks && (a->rank < s->q->lo || a->rank > s->q->hi))
            continue;
        struct ncg_tree_row *m = row_add(s);
        if (!m)
            return;
        row_here(s, v, a, m);
    }
    c->nrows = s->nrow - c->r0;
}

static void snap_comm(void *arg, const struct ncg_relay_comm_view *v)
{
    struct ncg_tree_snap *s = arg;
    if (s->q && s->q->has_comm && v->id != s->q->comm)
        return;
    if (ncg_grow((void **)&s->cm, &s->capcm, s->ncm + 1, sizeof *s->cm)) {
        s->oom = 1;
        return;
    }
    struct ncg_tree_comm *c = &s->cm[s->ncm++];
    memset(c, 0, sizeof *c);
    c->v = *v;
    c->v.verdict = NULL;
    c->v.here = NULL;
    snprintf(c->sg_host, sizeof c->sg_host, "%s", v->sg_host ? v->sg_host : "");
    c->v.sg_host = NULL;
    if (v->verdict) {
        c->vkind = v->verdict->kind;
        c->vsev = v->verdict->severity;
        c->vslot = v->verdict->slot;
        struct ncg_verdict tmp = *v->verdict;
        tmp.nranks = v->nranks; /* the headline's "(N ranks)" */
        ncg_verdict_summary(&tmp, c->vtext, sizeof c->vtext);
        snprintf(c->vsubject, sizeof c->vsubject, "%s", v->verdict->subject);
        c->vncalls =
            v->verdict->ncalls < NCG_WIRE_MAX_CALLS ? v->verdict->ncalls : NCG_WIRE_MAX_CALLS;
        memcpy(c->vcalls, v->verdict->calls, sizeof *c->vcalls * c->vncalls);
    }
    rows_of(s, v, c);
}

int ncg_tree_snap_take(struct ncg_tree_src *t, const struct ncg_http_query *q, uint64_t now,
                       int gather, struct ncg_tree_snap *s)
{
    memset(s, 0, sizeof *s);
    s->t = t;
    s->gather = gather;
    s->q = q;
    s->now = now;
    struct ncg_relay_view_ops ops = {snap_conn, snap_comm, s};
    ncg_relay_view(t->r, now, &ops);
    rate_sweep(t, now);
    int rc = s->oom ? -ENOMEM : s->pending ? NCG_HTTP_NOT_READY : 0;
    if (rc)
        ncg_tree_snap_free(s);
    return rc;
}

void ncg_tree_snap_free(struct ncg_tree_snap *s)
{
    free(s->c);
    free(s->cm);
    free(s->row);
}

/* ---------- the source ---------- */

static int src_status(void *arg, const struct ncg_http_query *q, uint64_t now_ns, double time_unix,
                      struct ncg_buf *out)
{
    return ncg_tree_status_render(arg, q, now_ns, time_unix, out);
}

static int src_metrics(void *arg, uint64_t now_ns, struct ncg_buf *out)
{
    return ncg_tree_metrics_render(arg, now_ns, out);
}

void ncg_tree_src_init(struct ncg_tree_src *t, struct ncg_relay *r, uint32_t node,
                       uint32_t root_node, uint32_t nnodes, uint32_t fanout,
                       struct ncg_http_source *src)
{
    memset(t, 0, sizeof *t);
    t->r = r;
    t->node = node;
    t->nnodes = nnodes;
    t->fanout = fanout;
    for (uint32_t n = 0; n < nnodes; n++) /* once: O(nodes) */
        t->children += n != node && ncg_rhost_parent(n, root_node, nnodes, fanout) == node;
    *src = (struct ncg_http_source){src_status, src_metrics, t, 1};
}

void ncg_tree_src_free(struct ncg_tree_src *t)
{
    free(t->rt);
    t->rt = NULL;
    t->nrt = t->caprt = 0;
}
