/* /status (JSON) and /metrics (Prometheus text) from the coordinator's view (metrics.h). One
 * pass copies the view into a snapshot (flat arrays); the renderers then walk it as often as
 * each format needs (Prometheus groups samples by metric family). What the relay tree's
 * renderers write alike (the families, the checker, the counters) is jobdoc.c's. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "http.h"
#include "jobdoc.h"
#include "metrics.h"
#include "verdict.h"

/* ---------- snapshot ---------- */

/* Each view as the coordinator gave it, its borrowed pointers cleared: what they point to is
 * copied alongside (valid during the view callback only). */
struct sconn {
    struct ncg_coord_conn_view v; /* host: NULL */
    char host[64];
};

struct smember {
    struct ncg_coord_member_view v; /* host, wait: NULL */
    char host[64];
    uint8_t has_wait;
    struct ncg_wait_ent wait; /* the call it is blocked in, when has_wait */
};

struct scomm {
    struct ncg_coord_comm_view v; /* verdict, m, slow.host: NULL */
    size_t m0;                    /* first member in snap.mem */
    char slow_host[64];
    /* derived */
    uint32_t active, registered, left, dead;
    uint64_t mn, mx;
    int32_t slowest; /* lowest comm rank at mn while another is ahead, -1 */
    int vkind, vsev;
    int64_t vslot;
    char vtext[1024];
    char vsubject[NCG_WIRE_STR];
    uint32_t vncalls;
    struct ncg_vcall vcalls[NCG_WIRE_MAX_CALLS];
};

struct snap {
    struct sconn *c;
    size_t nc, capc;
    struct scomm *cm;
    size_t ncm, capcm;
    struct smember *mem;
    size_t nmem, capmem;
    int oom;
};

static void snap_conn(void *arg, const struct ncg_coord_conn_view *v)
{
    struct snap *s = arg;
    if (ncg_grow((void **)&s->c, &s->capc, s->nc + 1, sizeof *s->c)) {
        s->oom = 1;
        return;
    }
    struct sconn *c = &s->c[s->nc++];
    c->v = *v;
    c->v.host = NULL;
    snprintf(c->host, sizeof c->host, "%s", v->host);
}

static void snap_comm(void *arg, const struct ncg_coord_comm_view *v)
{
    struct snap *s = arg;
    if (ncg_grow((void **)&s->cm, &s->capcm, s->ncm + 1, sizeof *s->cm) ||
        ncg_grow((void **)&s->mem, &s->capmem, s->nmem + v->nranks, sizeof *s->mem)) {
        s->oom = 1;
        return;
    }
    struct scomm *c = &s->cm[s->ncm++];
    memset(c, 0, sizeof *c);
    c->v = *v;
    c->v.verdict = NULL;
    c->v.m = NULL;
    c->v.slow.host = NULL;
    snprintf(c->slow_host, sizeof c->slow_host, "%s", v->slow.host ? v->slow.host : "");
    c->m0 = s->nmem;
    c->mn = UINT64_MAX;
    c->slowest = -1;
    for (uint32_t i = 0; i < v->nranks; i++) {
        const struct ncg_coord_member_view *a = &v->m[i];
        struct smember *m = &s->mem[s->nmem++];
        m->v = *a;
        m->v.host = NULL;
        m->v.wait = NULL;
        snprintf(m->host, sizeof m->host, "%s", a->host);
        m->has_wait = a->wait != NULL;
        if (a->wait)
            m->wait = *a->wait;
        c->registered += a->state != 0;
        c->left += a->state == 2;
        c->dead += a->state == 3;
        if (a->state == 1) {
            c->active++;
            c->mn = a->count < c->mn ? a->count : c->mn;
            c->mx = a->count > c->mx ? a->count : c->mx;
        }
    }
    if (!c->active)
        c->mn = 0;
    for (uint32_t i = 0; i < v->nranks && c->mn < c->mx; i++)
        if (v->m[i].state == 1 && v->m[i].count == c->mn) {
            c->slowest = (int32_t)i;
            break;
        }
    if (v->verdict) {
        c->vkind = v->verdict->kind;
        c->vsev = v->verdict->severity;
        c->vslot = v->verdict->slot;
        ncg_verdict_summary(v->verdict, c->vtext, sizeof c->vtext);
        snprintf(c->vsubject, sizeof c->vsubject, "%s", v->verdict->subject);
        c->vncalls =
            v->verdict->ncalls < NCG_WIRE_MAX_CALLS ? v->verdict->ncalls : NCG_WIRE_MAX_CALLS;
        memcpy(c->vcalls, v->verdict->calls, sizeof c->vcalls[0] * c->vncalls);
    }
}

static int snap_take(struct ncg_coord *co, uint64_t now_ns, struct snap *s)
{
    memset(s, 0, sizeof *s);
    struct ncg_coord_view_ops ops = {snap_conn, snap_comm, s};
    ncg_coord_view(co, now_ns, &ops);
    return s->oom ? -ENOMEM : 0;
}

static void snap_free(struct snap *s)
{
    free(s->c);
    free(s->cm);
    free(s->mem);
}

/* What both documents start from: the snapshot and the counters (-ENOMEM: nothing to free). */
static int snap_begin(struct ncg_coord *co, uint64_t now_ns, struct snap *s,
                      struct ncg_coord_stats *st)
{
    if (snap_take(co, now_ns, s) != 0) {
        snap_free(s);
        return -ENOMEM;
    }
    ncg_coord_get_stats(co, st);
    return 0;
}

static const char *mstate(uint8_t st)
{
    static const char *const n[] = {"unregistered", "active", "left", "dead"};
    return st < 4 ? n[st] : "?";
}

static int behind(const struct scomm *c, const struct smember *m)
{
    return m->v.state == 1 && c->mn < c->mx && m->v.count == c->mn;
}

static struct ncg_doc_checker checker_of(const struct ncg_coord_params *p)
{
    return (struct ncg_doc_checker){.host = p->host,
                                    .pid = p->pid,
                                    .interval_ms = p->interval_ms,
                                    .embedded = p->embedded,
                                    .global_rank = p->global_rank,
                                    .heartbeat_timeout_s = p->heartbeat_timeout_s,
                                    .lag_warn_s = p->lag_warn_s,
                                    .lag_abort_s = p->lag_abort_s};
}

/* ---------- /status ---------- */

int ncg_status_render(struct ncg_coord *co, uint64_t now_ns, double time_unix, struct ncg_buf *b)
{
    struct snap s;
    struct ncg_coord_stats st;
    if (snap_begin(co, now_ns, &s, &st) != 0)
        return -ENOMEM;
    struct ncg_doc_checker ck = checker_of(ncg_coord_get_params(co));
    ncg_doc_status_head(b, &ck, time_unix);
    /* hosts: the registered processes grouped by host name, in order of first appearance */
    ncg_buf_add(b, "\"hosts\":[", 9);
    int nh = 0;
    for (size_t i = 0; i < s.nc; i++) {
        if (!s.c[i].v.authed)
            continue;
        size_t j;
        for (j = 0; j < i; j++)
            if (s.c[j].v.authed && !strcmp(s.c[j].host, s.c[i].host))
                break;
        if (j < i)
            continue;
        unsigned n = 0;
        double worst = 0;
        for (j = i; j < s.nc; j++)
            if (s.c[j].v.authed && !strcmp(s.c[j].host, s.c[i].host)) {
                n++;
                worst = s.c[j].v.heartbeat_age_s > worst ? s.c[j].v.heartbeat_age_s : worst;
            }
        ncg_buf_printf(b, "%s{\"host\":\"", nh++ ? "," : "");
        ncg_buf_esc(b, s.c[i].host, NCG_ESC_JSON);
        ncg_buf_printf(b, "\",\"processes\":%u,\"max_heartbeat_age_s\":%.3f}", n, worst);
    }
    ncg_buf_add(b, "],\"processes\":[", 15);
    int np = 0;
    for (size_t i = 0; i < s.nc; i++) {
        const struct sconn *c = &s.c[i];
        if (!c->v.authed)
            continue;
        ncg_buf_printf(b, "%s{\"pid\":%u,\"global_rank\":%d,\"host\":\"", np++ ? "," : "", c->v.pid,
                       c->v.global_rank);
        ncg_buf_esc(b, c->host, NCG_ESC_JSON);
        ncg_buf_printf(b, "\",\"heartbeat_age_s\":%.3f,\"connected_s\":%.3f,\"goodbye\":%s}",
                       c->v.heartbeat_age_s, c->v.connected_s, c->v.bye ? "true" : "false");
    }
    ncg_buf_add(b, "],\"communicators\":[", 19);
    for (size_t ci = 0; ci < s.ncm; ci++) {
        const struct scomm *c = &s.cm[ci];
        ncg_buf_printf(b,
                       "%s{\"id\":\"%016" PRIx64 "\",\"size\":%u,\"registered\":%u,\"active\":%u,"
                       "\"left\":%u,\"dead\":%u,\"verified_slots\":%" PRIu64
                       ",\"min_slots\":%" PRIu64 ",\"max_slots\":%" PRIu64 ",\"lag_calls\":%" PRIu64
                       ",\"slowest_rank\":%d,\"progress_age_s\":%.3f,\"lag_warning\":%s,"
                       "\"behind\":[",
                       ci ? "," : "", c->v.id, c->v.nranks, c->registered, c->active, c->left,
                       c->dead, c->v.verified, c->mn, c->mx, c->mx - c->mn, c->slowest,
                       c->v.progress_age_s, c->v.lag_warned ? "true" : "false");
        int nb = 0;
        for (uint32_t i = 0; i < c->v.nranks; i++)
            if (behind(c, &s.mem[c->m0 + i]))
                ncg_buf_printf(b, "%s%u", nb++ ? "," : "", i);
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
        ncg_buf_add(b, ",\"slow\":", 8);
        if (c->v.slow.rank >= 0) {
            const struct ncg_coord_slow_view *w = &c->v.slow;
            ncg_buf_printf(b, "{\"rank\":%d,\"global_rank\":%d,\"host\":\"", w->rank,
                           w->global_rank);
            ncg_buf_esc(b, c->slow_host, NCG_ESC_JSON);
            ncg_buf_printf(b, "\",\"pid\":%u,\"share\":%.4f,\"since_s\":%.3f,\"side\":\"%s\"}",
                           w->pid, w->share, w->since_s, w->device ? "gpu" : "host");
        } else {
            ncg_buf_add(b, "null", 4);
        }
        ncg_buf_add(b, ",\"members\":[", 12);
        for (uint32_t i = 0; i < c->v.nranks; i++) {
            const struct smember *m = &s.mem[c->m0 + i];
            ncg_buf_printf(b,
                           "%s{\"rank\":%u,\"global_rank\":%d,\"state\":\"%s\",\"pid\":%u,"
                           "\"host\":\"",
                           i ? "," : "", i, m->v.global_rank, mstate(m->v.state), m->v.pid);
            ncg_buf_esc(b, m->host, NCG_ESC_JSON);
            ncg_buf_printf(b, "\",\"slots\":%" PRIu64 ",\"calls_per_s\":%.2f,\"progress_age_s\":",
                           m->v.count, m->v.calls_per_s);
            ncg_buf_num_or_null(b, m->v.progress_age_s);
            ncg_buf_add(b, ",\"heartbeat_age_s\":", 19);
            ncg_buf_num_or_null(b, m->v.heartbeat_age_s);
            ncg_buf_printf(b, ",\"completed\":%" PRIu64 ",\"last_call_age_s\":", m->v.done);
            ncg_buf_num_or_null(b, m->v.progress_age_s);
            ncg_buf_add(b, ",\"report_age_s\":", 16);
            ncg_buf_num_or_null(b, m->v.report_age_s);
            ncg_buf_add(b, ",\"last_call\":", 13);
            if (m->has_wait)
                ncg_doc_call(b, &m->wait.call, m->wait.p2p, m->wait.site);
            else
                ncg_buf_add(b, "null", 4);
            ncg_buf_printf(b, ",\"behind\":%s,\"wait_share\":", behind(c, m) ? "true" : "false");
            if (m->v.wait_share < 0)
                ncg_buf_add(b, "null", 4);
            else
                ncg_buf_printf(b, "%.4f", m->v.wait_share);
            ncg_buf_add(b, "}", 1);
        }
        ncg_buf_add(b, "]}", 2);
    }
    ncg_buf_add(b, "],", 2);
    ncg_doc_status_totals(b, st.by_kind, st.queries, st.dropped);
    snap_free(&s);
    return b->oom ? -ENOMEM : 0;
}

/* ---------- /metrics ---------- */

/* The figures jobdoc.h writes, from the snapshot: f->c[s->ncm], f->r[s->nmem]. */
static int doc_figures(const struct snap *s, struct ncg_doc_figs *f)
{
    if (ncg_doc_figs_alloc(f, s->ncm, s->nmem) != 0)
        return -ENOMEM;
    size_t n = 0;
    for (size_t ci = 0; ci < s->ncm; ci++) {
        const struct scomm *c = &s->cm[ci];
        f->c[ci] = (struct ncg_doc_comm){.id = c->v.id,
                                         .nranks = c->v.nranks,
                                         .active = c->active,
                                         .verified = c->v.verified,
                                         .lag = c->mx - c->mn,
                                         .slowest = c->slowest,
                                         .progress_age_s = c->v.progress_age_s,
                                         .lag_warned = c->v.lag_warned,
                                         .slow_rank = c->v.slow.rank,
                                         .slow_share = c->v.slow.share,
                                         .verdict = c->vkind};
        for (uint32_t i = 0; i < c->v.nranks; i++) {
            const struct smember *m = &s->mem[c->m0 + i];
            f->r[n++] = (struct ncg_doc_rank){.comm = c->v.id,
                                              .rank = i,
                                              .pid = m->v.pid,
                                              .global_rank = m->v.global_rank,
                                              .host = m->host,
                                              .state = m->v.state,
                                              .issued = m->v.count,
                                              .behind = m->v.state == 1 ? c->mx - m->v.count : 0,
                                              .rate = m->v.calls_per_s,
                                              .progress_age_s = m->v.progress_age_s,
                                              .heartbeat_age_s = m->v.heartbeat_age_s,
                                              .wait_share = m->v.wait_share};
        }
    }
    return 0;
}

int ncg_metrics_render(struct ncg_coord *co, uint64_t now_ns, struct ncg_buf *b)
{
    struct snap s;
    struct ncg_coord_stats st;
    if (snap_begin(co, now_ns, &s, &st) != 0)
        return -ENOMEM;
    struct ncg_doc_figs f;
    if (doc_figures(&s, &f) != 0) {
        snap_free(&s);
        return -ENOMEM;
    }
    unsigned authed = 0;
    for (size_t i = 0; i < s.nc; i++)
        authed += s.c[i].v.authed;

    struct ncg_doc_checker ck = checker_of(ncg_coord_get_params(co));
    ncg_doc_checker_info(b, &ck, NULL, 0);
    ncg_buf_prom_family(b, "ncclguard_processes", "gauge",
                        "Processes registered with the checker.");
    ncg_buf_printf(b, "ncclguard_processes %u\n", authed);
    ncg_doc_job_totals(b, s.ncm, st.by_kind, st.queries);
    ncg_buf_prom_family(b, "ncclguard_dropped_connections_total", "counter",
                        "Side-channel connections dropped (bad token, protocol misuse, silence).");
    ncg_buf_printf(b, "ncclguard_dropped_connections_total %" PRIu64 "\n", st.dropped);
    ncg_doc_comm_families(b, f.c, s.ncm, NCG_DOC_FLAT);
    ncg_doc_rank_families(b, f.r, s.nmem, NCG_DOC_FLAT);
    ncg_doc_figs_free(&f);
    snap_free(&s);
    return b->oom ? -ENOMEM : 0;
}

static int coord_status(void *arg, const struct ncg_http_query *q, uint64_t now_ns,
                        double time_unix, struct ncg_buf *out)
{
    (void)q;
    return ncg_status_render(arg, now_ns, time_unix, out);
}

static int coord_metrics(void *arg, uint64_t now_ns, struct ncg_buf *out)
{
    return ncg_metrics_render(arg, now_ns, out);
}

void ncg_coord_http_source(struct ncg_coord *co, struct ncg_http_source *src)
{
    *src = (struct ncg_http_source){coord_status, coord_metrics, co, 0};
}
