/* The relay tree's endpoint (status_tree.h), its rendering half: /status (the flat checker's
 * ncclguard-job-status with the tree's keys) and /metrics, from the snapshot status_tree.c
 * takes. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "http.h"
#include "metrics.h" /* NCG_JOB_STATUS_VERSION */
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

/* ---------- /status ---------- */

static void status_head(struct ncg_buf *b, const struct ncg_tree_snap *s, double time_unix)
{
    const struct ncg_tree_src *t = s->t;
    const struct ncg_relay_params *p = ncg_relay_get_params(t->r);
    ncg_buf_printf(b,
                   "{\"format\":\"ncclguard-job-status\",\"version\":%d,\"time_unix\":%.3f,"
                   "\"checker\":{\"host\":\"",
                   NCG_JOB_STATUS_VERSION, time_unix);
    ncg_buf_esc(b, p->host, NCG_ESC_JSON);
    ncg_buf_printf(b,
                   "\",\"pid\":%u,\"embedded\":%s,\"global_rank\":%d,\"interval_ms\":%u,"
                   "\"heartbeat_timeout_s\":%g,\"lag_warn_s\":%g,\"lag_abort_s\":%g},",
                   p->pid, p->embedded ? "true" : "false", p->has_global_rank ? p->global_rank : -1,
                   p->interval_ms, p->heartbeat_timeout_s, p->lag_warn_s, p->lag_abort_s);
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

static void status_comm(struct ncg_buf *b, const struct ncg_tree_snap *s,
                        const struct ncg_tree_comm *c, int first)
{
    const struct ncg_relay_comm_view *v = &c->v;
    int32_t slowest = v->nslow ? (int32_t)v->slow[0] : -1;
    for (uint32_t i = 1; i < v->nslow; i++)
        slowest = (int32_t)v->slow[i] < slowest ? (int32_t)v->slow[i] : slowest;
    ncg_buf_printf(b,
                   "%s{\"id\":\"%016" PRIx64 "\",\"size\":%u,\"registered\":%u,\"active\":%u,"
                   "\"left\":%u,\"dead\":0,\"verified_slots\":%" PRIu64 ",\"min_slots\":%" PRIu64
                   ",\"max_slots\":%" PRIu64 ",\"lag_calls\":%" PRIu64 ",\"slowest_rank\":%d,"
                   "\"progress_age_s\":%.3f,\"lag_warning\":%s,\"stuck_warning\":%s,"
                   "\"completed_min\":%" PRIu64 ",\"completed_max\":%" PRIu64
                   ",\"completed_age_s\":%.3f,\"child_relays\":%u,\"slowest_ranks\":[",
                   first ? "" : ",", v->id, v->nranks, v->known, v->active, v->left, v->verified,
                   v->issued_min, v->issued_max, v->issued_max - v->issued_min, slowest,
                   v->progress_age_s, v->lag_warned ? "true" : "false",
                   v->stuck_warned ? "true" : "false", v->done_min, v->done_hi, v->done_age_s,
                   v->nrelays);
    for (uint32_t i = 0; i < v->nslow; i++)
        ncg_buf_printf(b, "%s%u", i ? "," : "", v->slow[i]);
    ncg_buf_printf(b, "],\"slowest_more\":%s,\"behind\":[", v->slow_more ? "true" : "false");
    for (uint32_t i = 0; i < v->nslow; i++)
        ncg_buf_printf(b, "%s%u", i ? "," : "", v->slow[i]);
    ncg_buf_add(b, "],\"verdict\":", 12);
    if (c->vkind) {
        ncg_buf_printf(
            b, "{\"kind\":%d,\"name\":\"%s\",\"severity\":\"%s\",\"slot\":%" PRId64 ",\"text\":\"",
            c->vkind, ncg_verdict_name((unsigned)c->vkind),
            c->vsev == NCG_SEV_ERROR ? "error" : "warning", c->vslot);
        ncg_buf_esc(b, c->vtext, NCG_ESC_JSON);
        ncg_buf_add(b, "\",\"subject\":\"", 13);
        ncg_buf_esc(b, c->vsubject, NCG_ESC_JSON);
        ncg_buf_add(b, "\",\"calls\":[]}", 13);
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
                       v->sg_since_s, v->sg_device ? "device" : "host");
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
        if (m->unknown)
            ncg_buf_add(b, "null", 4);
        else
            ncg_buf_printf(b, "%" PRIu64, m->v.issued);
        ncg_buf_add(b, ",\"calls_per_s\":", 15);
        ncg_buf_num_or_null(b, m->rate);
        ncg_buf_add(b, ",\"progress_age_s\":", 18);
        ncg_buf_num_or_null(b, m->age);
        ncg_buf_add(b, ",\"heartbeat_age_s\":", 19);
        ncg_buf_num_or_null(b, m->v.heartbeat_age_s);
        ncg_buf_add(b, ",\"completed\":", 13);
        if (m->unknown)
            ncg_buf_add(b, "null", 4);
        else
            ncg_buf_printf(b, "%" PRIu64, m->v.done);
        ncg_buf_add(b, ",\"last_call_age_s\":", 19);
        ncg_buf_num_or_null(b, m->age);
        ncg_buf_add(b, ",\"report_age_s\":", 16);
        ncg_buf_num_or_null(b, m->v.heartbeat_age_s);
        /* per-rank wait share: not gathered through the tree (the root decides on aggregates) */
        ncg_buf_printf(b, ",\"last_call\":null,\"wait_share\":null,\"behind\":%s}",
                       behind(c, m) ? "true" : "false");
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
    ncg_buf_add(b, "],\"verdicts_total\":{", 20);
    for (unsigned k = 1; k < NCG_V_KIND_MAX_; k++)
        ncg_buf_printf(b, "%s\"%s\":%" PRIu64, k > 1 ? "," : "", ncg_verdict_key(k), st.by_kind[k]);
    ncg_buf_printf(b, "},\"queries_total\":%" PRIu64 ",\"dropped_connections_total\":0}\n",
                   st.rounds);
    ncg_tree_snap_free(&s);
    return b->oom ? -ENOMEM : 0;
}

/* ---------- /metrics ---------- */

enum {
    F_RANKS,
    F_ACTIVE,
    F_VERIFIED,
    F_LAG,
    F_SLOWEST,
    F_PROGRESS_AGE,
    F_LAG_WARNING,
    F_ISSUED_MIN,
    F_ISSUED_MAX,
    F_DONE_MIN,
    F_DONE_AGE,
    F_STUCK_WARNING,
    F_SLOW_RANK,
    F_SLOW_SHARE
};
static const struct {
    const char *name, *help;
    int which;
} comm_families[] = {
    {"ncclguard_comm_ranks", "Size of the communicator.", F_RANKS},
    {"ncclguard_comm_active_ranks", "Members registered and still active.", F_ACTIVE},
    {"ncclguard_comm_verified_slots", "Slots proven identical on every member.", F_VERIFIED},
    {"ncclguard_comm_lag_calls", "How many calls the slowest active member is behind the fastest.",
     F_LAG},
    {"ncclguard_comm_slowest_rank",
     "Comm rank of the slowest active member while another is ahead (-1: none behind).", F_SLOWEST},
    {"ncclguard_comm_progress_age_seconds", "Seconds since any member's call count last grew.",
     F_PROGRESS_AGE},
    {"ncclguard_comm_lag_warning", "1 while a LAG warning is outstanding.", F_LAG_WARNING},
    {"ncclguard_comm_issued_min", "Fewest calls an active member issued.", F_ISSUED_MIN},
    {"ncclguard_comm_issued_max", "Most calls an active member issued.", F_ISSUED_MAX},
    {"ncclguard_comm_completed_min", "Fewest calls an active member completed.", F_DONE_MIN},
    {"ncclguard_comm_completed_age_seconds",
     "Seconds since any member's completed count last grew.", F_DONE_AGE},
    {"ncclguard_comm_stuck_warning", "1 while a STUCK warning is outstanding.", F_STUCK_WARNING},
    {"ncclguard_comm_slow_rank", "Comm rank a SLOW warning names now (-1: none).", F_SLOW_RANK},
    {"ncclguard_comm_slow_share",
     "Share of the step the others lose waiting for that rank (0: none).", F_SLOW_SHARE},
};

static void comm_sample(struct ncg_buf *b, const struct ncg_tree_comm *c, int which)
{
    const struct ncg_relay_comm_view *v = &c->v;
    int32_t slowest = v->nslow ? (int32_t)v->slow[0] : -1;
    for (uint32_t i = 1; i < v->nslow; i++)
        slowest = (int32_t)v->slow[i] < slowest ? (int32_t)v->slow[i] : slowest;
    switch (which) {
    case F_RANKS:
        ncg_buf_printf(b, "%u\n", v->nranks);
        break;
    case F_ACTIVE:
        ncg_buf_printf(b, "%u\n", v->active);
        break;
    case F_VERIFIED:
        ncg_buf_printf(b, "%" PRIu64 "\n", v->verified);
        break;
    case F_LAG:
        ncg_buf_printf(b, "%" PRIu64 "\n", v->issued_max - v->issued_min);
        break;
    case F_SLOWEST:
        ncg_buf_printf(b, "%d\n", slowest);
        break;
    case F_PROGRESS_AGE:
        ncg_buf_printf(b, "%.3f\n", v->progress_age_s);
        break;
    case F_LAG_WARNING:
        ncg_buf_printf(b, "%d\n", v->lag_warned);
        break;
    case F_ISSUED_MIN:
        ncg_buf_printf(b, "%" PRIu64 "\n", v->issued_min);
        break;
    case F_ISSUED_MAX:
        ncg_buf_printf(b, "%" PRIu64 "\n", v->issued_max);
        break;
    case F_DONE_MIN:
        ncg_buf_printf(b, "%" PRIu64 "\n", v->done_min);
        break;
    case F_DONE_AGE:
        ncg_buf_printf(b, "%.3f\n", v->done_age_s);
        break;
    case F_SLOW_RANK:
        ncg_buf_printf(b, "%d\n", v->sg_rank);
        break;
    case F_SLOW_SHARE:
        ncg_buf_printf(b, "%.4f\n", v->sg_rank >= 0 ? v->sg_share : 0.0);
        break;
    default:
        ncg_buf_printf(b, "%d\n", v->stuck_warned);
        break;
    }
}

/* The flat checker's per-member families (metrics.c), for the rows: this relay's own ranks. */
static const struct {
    const char *name, *type, *help;
    int which;
} rank_families[] = {
    {"ncclguard_rank_state", "gauge",
     "Member state: 0 not registered yet, 1 active, 2 left (goodbye), 3 dead.", 5},
    {"ncclguard_calls_issued_total", "counter",
     "Collective calls the member issued on the communicator, as last reported.", 0},
    {"ncclguard_calls_per_second", "gauge",
     "Collective calls per second over the last window of at least one second.", 1},
    {"ncclguard_rank_behind_calls", "gauge",
     "How many calls the member is behind the fastest active member.", 4},
    {"ncclguard_rank_progress_age_seconds", "gauge",
     "Seconds since the member's call count last grew.", 3},
    {"ncclguard_heartbeat_age_seconds", "gauge",
     "Seconds since the member's process last reported (its heartbeat).", 2},
};

static void rank_family(struct ncg_buf *b, const struct ncg_tree_snap *s, const char *name,
                        int which)
{
    for (size_t ci = 0; ci < s->ncm; ci++) {
        const struct ncg_tree_comm *c = &s->cm[ci];
        for (size_t i = 0; i < c->nrows; i++) {
            const struct ncg_tree_row *m = &s->row[c->r0 + i];
            if (which == 2 && m->v.heartbeat_age_s < 0)
                continue;
            ncg_buf_printf(b, "%s{comm=\"%016" PRIx64 "\",rank=\"%u\"} ", name, c->v.id, m->v.rank);
            switch (which) {
            case 0:
                ncg_buf_printf(b, "%" PRIu64 "\n", m->v.issued);
                break;
            case 1:
                ncg_buf_printf(b, "%.3f\n", m->rate);
                break;
            case 2:
                ncg_buf_printf(b, "%.3f\n", m->v.heartbeat_age_s);
                break;
            case 3:
                ncg_buf_printf(b, "%.3f\n", m->age);
                break;
            case 4:
                ncg_buf_printf(b, "%" PRIu64 "\n",
                               m->v.state == 1 && c->v.issued_max > m->v.issued
                                   ? c->v.issued_max - m->v.issued
                                   : 0);
                break;
            default:
                ncg_buf_printf(b, "%u\n", m->v.state);
                break;
            }
        }
    }
}

int ncg_tree_metrics_render(struct ncg_tree_src *t, uint64_t now_ns, struct ncg_buf *b)
{
    struct ncg_tree_snap s;
    if (ncg_tree_snap_take(t, NULL, now_ns, 0, &s) != 0)
        return -ENOMEM;
    const struct ncg_relay_params *p = ncg_relay_get_params(t->r);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(t->r, &st);
    int root = is_root(t);
    unsigned procs = 0, nrel = 0, healthy = 0;
    for (size_t i = 0; i < s.nc; i++) {
        procs += !s.c[i].v.relay && s.c[i].v.authed;
        nrel += s.c[i].v.relay && s.c[i].v.authed;
        healthy += s.c[i].v.relay && relay_healthy(t, &s.c[i]);
    }
    ncg_buf_prom_family(b, "ncclguard_checker_info", "gauge",
                        "The checker serving this endpoint (always 1; labels say where it runs).");
    ncg_buf_add(b, "ncclguard_checker_info{host=\"", 29);
    ncg_buf_esc(b, p->host, NCG_ESC_PROM);
    ncg_buf_printf(
        b, "\",pid=\"%u\",embedded=\"%d\",global_rank=\"%d\",role=\"%s\",node=\"%u\"} 1\n", p->pid,
        p->embedded, p->has_global_rank ? p->global_rank : -1, root ? "root" : "relay", t->node);
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
        ncg_buf_prom_family(b, "ncclguard_communicators", "gauge",
                            "Communicators the checker compares.");
        ncg_buf_printf(b, "ncclguard_communicators %zu\n", s.ncm);
        ncg_buf_prom_family(b, "ncclguard_verdicts_total", "counter",
                            "Verdicts issued, by kind (LAG: warnings too).");
        for (unsigned k = 1; k < NCG_V_KIND_MAX_; k++)
            ncg_buf_printf(b, "ncclguard_verdicts_total{kind=\"%s\"} %" PRIu64 "\n",
                           ncg_verdict_key(k), st.by_kind[k]);
        ncg_buf_prom_family(b, "ncclguard_queries_total", "counter", "Comparison rounds started.");
        ncg_buf_printf(b, "ncclguard_queries_total %" PRIu64 "\n", st.rounds);
        for (size_t k = 0; k < sizeof comm_families / sizeof comm_families[0]; k++) {
            ncg_buf_prom_family(b, comm_families[k].name, "gauge", comm_families[k].help);
            for (size_t ci = 0; ci < s.ncm; ci++) {
                ncg_buf_printf(b, "%s{comm=\"%016" PRIx64 "\"} ", comm_families[k].name,
                               s.cm[ci].v.id);
                comm_sample(b, &s.cm[ci], comm_families[k].which);
            }
        }
        ncg_buf_prom_family(b, "ncclguard_comm_verdict", "gauge",
                            "1 for the error verdict that ended checking of a communicator.");
        for (size_t ci = 0; ci < s.ncm; ci++)
            if (s.cm[ci].vkind && s.cm[ci].vsev == NCG_SEV_ERROR)
                ncg_buf_printf(b, "ncclguard_comm_verdict{comm=\"%016" PRIx64 "\",kind=\"%s\"} 1\n",
                               s.cm[ci].v.id, ncg_verdict_key((unsigned)s.cm[ci].vkind));
    }
    ncg_buf_prom_family(b, "ncclguard_rank_info", "gauge",
                        "A member of a communicator: its global rank, host and pid (always 1).");
    for (size_t ci = 0; ci < s.ncm; ci++) {
        const struct ncg_tree_comm *c = &s.cm[ci];
        for (size_t i = 0; i < c->nrows; i++) {
            const struct ncg_tree_row *m = &s.row[c->r0 + i];
            ncg_buf_printf(b,
                           "ncclguard_rank_info{comm=\"%016" PRIx64
                           "\",rank=\"%u\",global_rank=\"%d\",host=\"",
                           c->v.id, m->v.rank, m->v.global_rank);
            ncg_buf_esc(b, m->host, NCG_ESC_PROM);
            ncg_buf_printf(b, "\",pid=\"%u\"} 1\n", m->v.pid);
        }
    }
    for (size_t k = 0; k < sizeof rank_families / sizeof rank_families[0]; k++) {
        ncg_buf_prom_family(b, rank_families[k].name, rank_families[k].type, rank_families[k].help);
        rank_family(b, &s, rank_families[k].name, rank_families[k].which);
    }
    ncg_tree_snap_free(&s);
    return b->oom ? -ENOMEM : 0;
}
