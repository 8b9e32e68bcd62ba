/* The relay tree's endpoint (status_tree.h), its rendering half: /status (the flat checker's
 * ncclguard-job-status with the tree's keys) and /metrics (the flat checker's families where
 * they mean the same, jobdoc.h, and the tree's own), from the snapshot status_tree.c takes. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "http.h"
#include "jobdoc.h"
#include "relay.h"
#include "status_tree.h"
#include "status_tree_int.h"
#include "verdict.h"

static int is_root(const struct ncg_tree_src *t)
{
    return ncg_relay_get_params(t->r)->root;
}

/* A child relay is healthy while its RSTATs (one per interval) keep coming. */
static int relay_healthy(const struct ncg_tree_src *t, const struct ncg_tree_conn *c)
{
    const struct ncg_relay_params *p = ncg_relay_get_params(t->r);
    double bound = p->heartbeat_timeout_s > 0 ? p->heartbeat_timeout_s / 2 : 5.0;
    return c->v.authed && c->v.heartbeat_age_s < bound;
}

static int behind(const struct ncg_tree_comm *c, const struct ncg_tree_row *m)
{
    return m->v.state == 1 && c->v.issued_min < c->v.issued_max && m->v.issued == c->v.issued_min;
}

static struct ncg_doc_checker checker_of(const struct ncg_relay_params *p)
{
    return (struct ncg_doc_checker){.host = p->host,
                                    .pid = p->pid,
                                    .interval_ms = p->interval_ms,
                                    .embedded = p->embedded,
                                    .global_rank = p->has_global_rank ? p->global_rank : -1,
                                    .heartbeat_timeout_s = p->heartbeat_timeout_s,
                                    .lag_warn_s = p->lag_warn_s,
                                    .lag_abort_s = p->lag_abort_s};
}

/* The lowest of the slowest ranks the view lists (-1: none behind). */
static int32_t slowest_of(const struct ncg_relay_comm_view *v)
{
    int32_t slowest = v->nslow ? (int32_t)v->slow[0] : -1;
    for (uint32_t i = 1; i < v->nslow; i++)
        slowest = (int32_t)v->slow[i] < slowest ? (int32_t)v->slow[i] : slowest;
    return slowest;
}

/* ---------- /status ---------- */

static void status_head(struct ncg_buf *b, const struct ncg_tree_snap *s, double time_unix)
{
    const struct ncg_tree_src *t = s->t;
    struct ncg_doc_checker ck = checker_of(ncg_relay_get_params(t->r));
    ncg_doc_status_head(b, &ck, time_unix);
    unsigned nrel = 0, healthy = 0;
    for (size_t i = 0; i < s->nc; i++)
        if (s->c[i].v.relay) {
            nrel++;
            healthy += (unsigned)relay_healthy(t, &s->c[i]);
        }
    ncg_buf_printf(b,
                   "\"tree\":{\"role\":\"%s\",\"node\":%u,\"nodes\":%u,\"fanout\":%u,"
                   "\"child_relays_expected\":%u,\"child_relays\":%u,\"child_relays_healthy\":%u,"
                   "\"relays\":[",
                   is_root(t) ? "root" : "relay", t->node, t->nnodes, t->fanout, t->children, nrel,
                   healthy);
    int n = 0;
    for (size_t i = 0; i < s->nc; i++) {
        const struct ncg_tree_conn *c = &s->c[i];
        if (!c->v.relay || !c->v.authed)
            continue;
        ncg_buf_printf(b, "%s{\"node\":%u,\"pid\":%u,\"host\":\"", n++ ? "," : "", c->v.node,
                       c->v.pid);
        ncg_buf_esc(b, c->host, NCG_ESC_JSON);
        ncg_buf_printf(b, "\",\"heartbeat_age_s\":%.3f,\"connected_s\":%.3f,\"healthy\":%s}",
                       c->v.heartbeat_age_s, c->v.connected_s,
                       relay_healthy(t, c) ? "true" : "false");
    }
    /* hosts and processes: this relay's own clients (its node's processes) */
    ncg_buf_add(b, "]},\"hosts\":[", 12);
    int nh = 0;
    for (size_t i = 0; i < s->nc; i++) {
        if (s->c[i].v.relay || !s->c[i].v.authed)
            continue;
        size_t j;
        for (j = 0; j < i; j++)
            if (!s->c[j].v.relay && s->c[j].v.authed && !strcmp(s->c[j].host, s->c[i].host))
                break;
        if (j < i)
            continue;
        unsigned k = 0;
        double worst = 0;
        for (j = i; j < s->nc; j++)
            if (!s->c[j].v.relay && s->c[j].v.authed && !strcmp(s->c[j].host, s->c[i].host)) {
                k++;
                worst = s->c[j].v.heartbeat_age_s > worst ? s->c[j].v.heartbeat_age_s : worst;
            }
        ncg_buf_printf(b, "%s{\"host\":\"", nh++ ? "," : "");
        ncg_buf_esc(b, s->c[i].host, NCG_ESC_JSON);
        ncg_buf_printf(b, "\",\"processes\":%u,\"max_heartbeat_age_s\":%.3f}", k, worst);
    }
    ncg_buf_add(b, "],\"processes\":[", 15);
    n = 0;
    for (size_t i = 0; i < s->nc; i++) {
        const struct ncg_tree_conn *c = &s->c[i];
        if (c->v.relay || !c->v.authed)
            continue;
        ncg_buf_printf(b, "%s{\"pid\":%u,\"global_rank\":%d,\"host\":\"", n++ ? "," : "", c->v.pid,
                       c->v.global_rank);
        ncg_buf_esc(b, c->host, NCG_ESC_JSON);
        ncg_buf_printf(b, "\",\"heartbeat_age_s\":%.3f,\"connected_s\":%.3f,\"goodbye\":%s}",
                       c->v.heartbeat_age_s, c->v.connected_s, c->v.bye ? "true" : "false");
    }
}

/* A row's count, or null where the gather did not reach its figures. */
static void count_or_null(struct ncg_buf *b, const struct ncg_tree_row *m, uint64_t count)
{
    if (m->unknown)
        ncg_buf_add(b, "null", 4);
    else
        ncg_buf_printf(b, "%" PRIu64, count);
}

static void status_comm(struct ncg_buf *b, const struct ncg_tree_snap *s,
                        const struct ncg_tree_comm *c, int first)
{
    const struct ncg_relay_comm_view *v = &c->v;
    int32_t slowest = slowest_of(v);
    ncg_buf_printf(b,
                   "%s{\"id\":\"%016" PRIx64 "\",\"size\":%u,\"registered\":%u,\"active\":%u,"
                   "\"left\":%u,\"dead\":%u,\"verified_slots\":%" PRIu64 ",\"min_slots\":%" PRIu64
                   ",\"max_slots\":%" PRIu64 ",\"lag_calls\":%" PRIu64 ",\"slowest_rank\":%d,"
                   "\"progress_age_s\":%.3f,\"lag_warning\":%s,\"stuck_warning\":%s,"
                   "\"completed_min\":%" PRIu64 ",\"completed_max\":%" PRIu64
                   ",\"completed_age_s\":%.3f,\"child_relays\":%u,\"slowest_ranks\":[",
                   first ? "" : ",", v->id, v->nranks, v->known, v->active, v->left, v->dead,
                   v->verified, v->issued_min, v->issued_max, v->issued_max - v->issued_min,
                   slowest, v->progress_age_s, v->lag_warned ? "true" : "false",
                   v->stuck_warned ? "true" : "false", v->done_min, v->done_hi, v->done_age_s,
                   v->nrelays);
    for (uint32_t i = 0; i < v->nslow; i++)
        ncg_buf_printf(b, "%s%u", i ? "," : "", v->slow[i]);
    ncg_buf_printf(b, "],\"slowest_more\":%s,\"behind\":[", v->slow_more ? "true" : "false");
    for (uint32_t i = 0; i < v->nslow; i++)
        ncg_buf_printf(b, "%s%u", i ? "," : "", v->slow[i]);
    ncg_buf_add(b, "],\"verdict\":", 12);
    if (c->vkind) {
        ncg_doc_status_verdict(b, c->vkind, c->vsev, c->vslot, c->vtext, c->vsubject);
        for (uint32_t j = 0; j < c->vncalls; j++) {
            ncg_buf_printf(b, "%s{\"ranks\":\"", j ? "," : "");
            ncg_buf_esc(b, c->vcalls[j].ranks, NCG_ESC_JSON);
            ncg_buf_add(b, "\",\"call\":", 9);
            ncg_doc_call(b, &c->vcalls[j].call, 0, c->vcalls[j].site);
            ncg_buf_add(b, "}", 1);
        }
        ncg_buf_add(b, "]}", 2);
    } else {
        ncg_buf_add(b, "null", 4);
    }
    /* SLOW (root): the rank the others wait for, as the warning named it */
    ncg_buf_add(b, ",\"slow\":", 8);
    if (v->sg_rank >= 0) {
        ncg_buf_printf(b, "{\"rank\":%d,\"global_rank\":%d,\"host\":", v->sg_rank, v->sg_grank);
        if (c->sg_host[0]) {
            ncg_buf_add(b, "\"", 1);
            ncg_buf_esc(b, c->sg_host, NCG_ESC_JSON);
            ncg_buf_add(b, "\"", 1);
        } else {
            ncg_buf_add(b, "null", 4);
        }
        ncg_buf_add(b, ",\"pid\":", 7);
        if (v->sg_pid)
            ncg_buf_printf(b, "%u", v->sg_pid);
        else
            ncg_buf_add(b, "null", 4);
        ncg_buf_printf(b, ",\"share\":%.4f,\"since_s\":%.1f,\"side\":\"%s\"}", v->sg_share,
                       v->sg_since_s, v->sg_device ? "gpu" : "host");
    } else {
        ncg_buf_add(b, "null", 4);
    }
    ncg_buf_printf(b, ",\"members_partial\":%s,\"members\":[",
                   c->nrows < v->nranks ? "true" : "false");
    for (size_t i = 0; i < c->nrows; i++) {
        const struct ncg_tree_row *m = &s->row[c->r0 + i];
        static const char *const state[] = {"unknown", "active", "left", "dead"};
        ncg_buf_printf(b,
                       "%s{\"rank\":%u,\"global_rank\":%d,\"state\":\"%s\",\"pid\":%u,"
                       "\"host\":\"",
                       i ? "," : "", m->v.rank, m->v.global_rank,
                       state[m->v.state < 4 ? m->v.state : 0], m->v.pid);
        ncg_buf_esc(b, m->host, NCG_ESC_JSON);
        ncg_buf_add(b, "\",\"slots\":", 10);
        count_or_null(b, m, m->v.issued);
        ncg_buf_add(b, ",\"calls_per_s\":", 15);
        ncg_buf_num_or_null(b, m->rate);
        ncg_buf_add(b, ",\"progress_age_s\":", 18);
        ncg_buf_num_or_null(b, m->age);
        ncg_buf_add(b, ",\"heartbeat_age_s\":", 19);
        ncg_buf_num_or_null(b, m->v.heartbeat_age_s);
        ncg_buf_add(b, ",\"completed\":", 13);
        count_or_null(b, m, m->v.done);
        ncg_buf_add(b, ",\"last_call_age_s\":", 19);
        ncg_buf_num_or_null(b, m->age);
        ncg_buf_add(b, ",\"report_age_s\":", 16);
        ncg_buf_num_or_null(b, m->v.heartbeat_age_s);
        /* last call and wait share: known for the root's own clients (a flat job's every rank),
         * not gathered from beneath child relays */
        ncg_buf_add(b, ",\"last_call\":", 13);
        if (m->v.has_wait)
            ncg_doc_call(b, &m->v.wait.call, m->v.wait.p2p, m->v.wait.site);
        else
            ncg_buf_add(b, "null", 4);
        ncg_buf_add(b, ",\"wait_share\":", 14);
        if (m->v.wait_share < 0)
            ncg_buf_add(b, "null", 4);
        else
            ncg_buf_printf(b, "%.4f", m->v.wait_share);
        ncg_buf_printf(b, ",\"behind\":%s}", behind(c, m) ? "true" : "false");
    }
    ncg_buf_add(b, "]}", 2);
}

int ncg_tree_status_render(struct ncg_tree_src *t, const struct ncg_http_query *q, uint64_t now_ns,
                           double time_unix, struct ncg_buf *b)
{
    struct ncg_tree_snap s;
    int rc = ncg_tree_snap_take(t, q, now_ns, 1, &s);
    if (rc != 0) /* NCG_HTTP_NOT_READY: the root's rows wait for a figures gather */
        return rc;
    struct ncg_relay_stats st;
    ncg_relay_get_stats(t->r, &st);
    status_head(b, &s, time_unix);
    ncg_buf_add(b, "],\"communicators\":[", 19);
    for (size_t ci = 0; ci < s.ncm; ci++)
        status_comm(b, &s, &s.cm[ci], ci == 0);
    ncg_buf_add(b, "],", 2);
    ncg_doc_status_totals(b, st.by_kind, st.rounds, st.dropped);
    ncg_tree_snap_free(&s);
    return b->oom ? -ENOMEM : 0;
}

/* ---------- /metrics ---------- */

/* The figures jobdoc.h writes, from the snapshot: f->c[s->ncm], f->r[s->nrow]. */
static int doc_figures(const struct ncg_tree_snap *s, struct ncg_doc_figs *f)
{
    if (ncg_doc_figs_alloc(f, s->ncm, s->nrow) != 0)
        return -ENOMEM;
    size_t n = 0;
    for (size_t ci = 0; ci < s->ncm; ci++) {
        const struct ncg_tree_comm *c = &s->cm[ci];
        const struct ncg_relay_comm_view *v = &c->v;
        f->c[ci] =
            (struct ncg_doc_comm){.id = v->id,
                                  .nranks = v->nranks,
                                  .active = v->active,
                                  .verified = v->verified,
                                  .lag = v->issued_max - v->issued_min,
                                  .slowest = slowest_of(v),
                                  .progress_age_s = v->progress_age_s,
                                  .lag_warned = v->lag_warned,
                                  .slow_rank = v->sg_rank,
                                  .slow_share = v->sg_rank >= 0 ? v->sg_share : 0.0,
                                  .verdict = c->vkind && c->vsev == NCG_SEV_ERROR ? c->vkind : 0,
                                  .issued_min = v->issued_min,
                                  .issued_max = v->issued_max,
                                  .done_min = v->done_min,
                                  .done_age_s = v->done_age_s,
                                  .stuck_warned = v->stuck_warned};
        for (size_t i = 0; i < c->nrows; i++) {
            const struct ncg_tree_row *m = &s->row[c->r0 + i];
            f->r[n++] =
                (struct ncg_doc_rank){.comm = v->id,
                                      .rank = m->v.rank,
                                      .pid = m->v.pid,
                                      .global_rank = m->v.global_rank,
                                      .host = m->host,
                                      .state = m->v.state,
                                      .issued = m->v.issued,
                                      .behind = m->v.state == 1 && v->issued_max > m->v.issued
                                                    ? v->issued_max - m->v.issued
                                                    : 0,
                                      .rate = m->rate,
                                      .progress_age_s = m->age,
                                      .heartbeat_age_s = m->v.heartbeat_age_s,
                                      .wait_share = m->v.wait_share};
        }
    }
    return 0;
}

int ncg_tree_metrics_render(struct ncg_tree_src *t, uint64_t now_ns, struct ncg_buf *b)
{
    struct ncg_tree_snap s;
    if (ncg_tree_snap_take(t, NULL, now_ns, 0, &s) != 0)
        return -ENOMEM;
    struct ncg_doc_figs f;
    if (doc_figures(&s, &f) != 0) {
        ncg_tree_snap_free(&s);
        return -ENOMEM;
    }
    struct ncg_relay_stats st;
    ncg_relay_get_stats(t->r, &st);
    int root = is_root(t);
    unsigned procs = 0, nrel = 0, healthy = 0;
    for (size_t i = 0; i < s.nc; i++) {
        procs += !s.c[i].v.relay && s.c[i].v.authed;
        nrel += s.c[i].v.relay && s.c[i].v.authed;
        healthy += s.c[i].v.relay && relay_healthy(t, &s.c[i]);
    }
    struct ncg_doc_checker ck = checker_of(ncg_relay_get_params(t->r));
    ncg_doc_checker_info(b, &ck, root ? "root" : "relay", t->node);
    ncg_buf_prom_family(b, "ncclguard_processes", "gauge",
                        "Processes registered with this relay (its node's processes).");
    ncg_buf_printf(b, "ncclguard_processes %u\n", procs);
    ncg_buf_prom_family(b, "ncclguard_relays", "gauge", "Child relays connected to this relay.");
    ncg_buf_printf(b, "ncclguard_relays %u\n", nrel);
    ncg_buf_prom_family(b, "ncclguard_relays_healthy", "gauge",
                        "Child relays connected whose figures arrive in time.");
    ncg_buf_printf(b, "ncclguard_relays_healthy %u\n", healthy);
    ncg_buf_prom_family(b, "ncclguard_relays_expected", "gauge",
                        "Child relays the tree's shape gives this node.");
    ncg_buf_printf(b, "ncclguard_relays_expected %u\n", t->children);
    ncg_buf_prom_family(b, "ncclguard_relay_heartbeat_age_seconds", "gauge",
                        "Seconds since a child relay last sent its figures.");
    for (size_t i = 0; i < s.nc; i++)
        if (s.c[i].v.relay && s.c[i].v.authed)
            ncg_buf_printf(b, "ncclguard_relay_heartbeat_age_seconds{node=\"%u\"} %.3f\n",
                           s.c[i].v.node, s.c[i].v.heartbeat_age_s);
    if (root) { /* the job-level families: at the root only (no duplicate series) */
        ncg_doc_job_totals(b, s.ncm, st.by_kind, st.rounds);
        ncg_doc_comm_families(b, f.c, s.ncm);
    }
    /* the rows: this relay's own ranks */
    ncg_doc_rank_families(b, f.r, s.nrow);
    ncg_doc_figs_free(&f);
    ncg_tree_snap_free(&s);
    return b->oom ? -ENOMEM : 0;
}
