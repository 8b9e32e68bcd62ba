/* /status (JSON) and /metrics (Prometheus text) from the coordinator's view (metrics.h). One
 * pass copies the view into a snapshot (flat arrays); the renderers then walk it as often as
 * each format needs (Prometheus groups samples by metric family). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "http.h"
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

/* ---------- /status ---------- */

/* {"kind":"coll","func":"AllReduce",...,"site":"..."}: a call as /status writes it. */
static void json_call(struct ncg_buf *b, const struct ncg_call *c, int p2p, const char *site)
{
    ncg_buf_printf(b,
                   "{\"kind\":\"%s\",\"func\":\"%s\",\"count\":%" PRIu64
                   ",\"dtype\":\"%s\",\"redop\":\"%s\",\"root_or_peer\":%d,\"seq\":%" PRIu64
                   ",\"site\":\"",
                   p2p ? "p2p" : "coll", ncg_v_func_name(c->func), c->count,
                   ncg_v_dtype_name(c->dtype), ncg_v_redop_name(c->redop), c->root, c->seq);
    ncg_buf_esc(b, site, NCG_ESC_JSON);
    ncg_buf_add(b, "\"}", 2);
}

int ncg_status_render(struct ncg_coord *co, uint64_t now_ns, double time_unix, struct ncg_buf *b)
{
    struct snap s;
    struct ncg_coord_stats st;
    if (snap_begin(co, now_ns, &s, &st) != 0)
        return -ENOMEM;
    const struct ncg_coord_params *p = ncg_coord_get_params(co);
    ncg_buf_printf(b,
                   "{\"format\":\"ncclguard-job-status\",\"version\":%d,\"time_unix\":%.3f,"
                   "\"checker\":{\"host\":\"",
                   NCG_JOB_STATUS_VERSION, time_unix);
    ncg_buf_esc(b, p->host, NCG_ESC_JSON);
    ncg_buf_printf(b,
                   "\",\"pid\":%u,\"embedded\":%s,\"global_rank\":%d,\"interval_ms\":%u,"
                   "\"heartbeat_timeout_s\":%g,\"lag_warn_s\":%g,\"lag_abort_s\":%g},",
                   p->pid, p->embedded ? "true" : "false", p->global_rank, p->interval_ms,
                   p->heartbeat_timeout_s, p->lag_warn_s, p->lag_abort_s);
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
            ncg_buf_printf(b,
                           "{\"kind\":%d,\"name\":\"%s\",\"severity\":\"%s\",\"slot\":%" PRId64
                           ",\"text\":\"",
                           c->vkind, ncg_verdict_name((unsigned)c->vkind),
                           c->vsev == NCG_SEV_ERROR ? "error" : "warning", c->vslot);
            ncg_buf_esc(b, c->vtext, NCG_ESC_JSON);
            ncg_buf_add(b, "\",\"subject\":\"", 13);
            ncg_buf_esc(b, c->vsubject, NCG_ESC_JSON);
            ncg_buf_add(b, "\",\"calls\":[", 11);
            for (uint32_t j = 0; j < c->vncalls; j++) {
                ncg_buf_printf(b, "%s{\"ranks\":\"", j ? "," : "");
                ncg_buf_esc(b, c->vcalls[j].ranks, NCG_ESC_JSON);
                ncg_buf_add(b, "\",\"call\":", 9);
                json_call(b, &c->vcalls[j].call, 0, c->vcalls[j].site);
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
                json_call(b, &m->wait.call, m->wait.p2p, m->wait.site);
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
    ncg_buf_add(b, "],\"verdicts_total\":{", 20);
    for (unsigned k = 1; k < NCG_V_KIND_MAX_; k++)
        ncg_buf_printf(b, "%s\"%s\":%" PRIu64, k > 1 ? "," : "", ncg_verdict_key(k), st.by_kind[k]);
    ncg_buf_printf(b,
                   "},\"queries_total\":%" PRIu64 ",\"dropped_connections_total\":%" PRIu64 "}\n",
                   st.queries, st.dropped);
    snap_free(&s);
    return b->oom ? -ENOMEM : 0;
}

/* ---------- /metrics ---------- */

/* The families written the same way for each communicator, or each member: from these tables
 * (name, type, help, and which figure: comm_sample's and member_family's `which`). */
struct family_def {
    const char *name, *type, *help;
    int which;
};
enum {
    C_RANKS,
    C_ACTIVE,
    C_VERIFIED,
    C_LAG,
    C_SLOWEST,
    C_PROGRESS_AGE,
    C_LAG_WARNING,
    C_SLOW_RANK,
    C_SLOW_SHARE
};
static const struct family_def comm_families[] = {
    {"ncclguard_comm_ranks", "gauge", "Size of the communicator.", C_RANKS},
    {"ncclguard_comm_active_ranks", "gauge", "Members registered and still active.", C_ACTIVE},
    {"ncclguard_comm_verified_slots", "gauge", "Slots proven identical on every member.",
     C_VERIFIED},
    {"ncclguard_comm_lag_calls", "gauge",
     "How many calls the slowest active member is behind the fastest.", C_LAG},
    {"ncclguard_comm_slowest_rank", "gauge",
     "Comm rank of the slowest active member while another is ahead (-1: none behind).", C_SLOWEST},
    {"ncclguard_comm_progress_age_seconds", "gauge",
     "Seconds since any member's call count last grew.", C_PROGRESS_AGE},
    {"ncclguard_comm_lag_warning", "gauge", "1 while a LAG warning is outstanding.", C_LAG_WARNING},
    {"ncclguard_comm_slow_rank", "gauge",
     "Comm rank a SLOW warning names: the others wait for it (-1: none).", C_SLOW_RANK},
    {"ncclguard_comm_slow_share", "gauge",
     "Share of the step the others lose waiting for the SLOW rank (0: none named).", C_SLOW_SHARE},
};
static const struct family_def member_families[] = {
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
    {"ncclguard_rank_wait_share", "gauge",
     "Share of the step the other members lose waiting for this one (sampled slots).", 6},
};

/* One communicator's sample value (after its labels) of a comm_families entry. */
static void comm_sample(struct ncg_buf *b, const struct scomm *c, int which)
{
    switch (which) {
    case C_RANKS:
        ncg_buf_printf(b, "%u\n", c->v.nranks);
        break;
    case C_ACTIVE:
        ncg_buf_printf(b, "%u\n", c->active);
        break;
    case C_VERIFIED:
        ncg_buf_printf(b, "%" PRIu64 "\n", c->v.verified);
        break;
    case C_LAG:
        ncg_buf_printf(b, "%" PRIu64 "\n", c->mx - c->mn);
        break;
    case C_SLOWEST:
        ncg_buf_printf(b, "%d\n", c->slowest);
        break;
    case C_PROGRESS_AGE:
        ncg_buf_printf(b, "%.3f\n", c->v.progress_age_s);
        break;
    case C_SLOW_RANK:
        ncg_buf_printf(b, "%d\n", c->v.slow.rank);
        break;
    case C_SLOW_SHARE:
        ncg_buf_printf(b, "%.4f\n", c->v.slow.rank >= 0 ? c->v.slow.share : 0.0);
        break;
    default:
        ncg_buf_printf(b, "%d\n", c->v.lag_warned);
        break;
    }
}

/* Per member sample lines of one family: which = 0 calls, 1 rate, 2 heartbeat, 3 progress
 * age, 4 behind (calls), 5 state, 6 wait share (members without a sample yet: no line). */
static void member_family(struct ncg_buf *b, const struct snap *s, const char *name, int which)
{
    for (size_t ci = 0; ci < s->ncm; ci++) {
        const struct scomm *c = &s->cm[ci];
        for (uint32_t i = 0; i < c->v.nranks; i++) {
            const struct smember *m = &s->mem[c->m0 + i];
            if ((which == 2 && m->v.heartbeat_age_s < 0) ||
                (which == 3 && m->v.progress_age_s < 0) || (which == 6 && m->v.wait_share < 0))
                continue;
            ncg_buf_printf(b, "%s{comm=\"%016" PRIx64 "\",rank=\"%u\"} ", name, c->v.id, i);
            switch (which) {
            case 0:
                ncg_buf_printf(b, "%" PRIu64 "\n", m->v.count);
                break;
            case 1:
                ncg_buf_printf(b, "%.3f\n", m->v.calls_per_s);
                break;
            case 2:
                ncg_buf_printf(b, "%.3f\n", m->v.heartbeat_age_s);
                break;
            case 3:
                ncg_buf_printf(b, "%.3f\n", m->v.progress_age_s);
                break;
            case 4:
                ncg_buf_printf(b, "%" PRIu64 "\n", m->v.state == 1 ? c->mx - m->v.count : 0);
                break;
            case 6:
                ncg_buf_printf(b, "%.4f\n", m->v.wait_share);
                break;
            default:
                ncg_buf_printf(b, "%u\n", m->v.state);
                break;
            }
        }
    }
}

int ncg_metrics_render(struct ncg_coord *co, uint64_t now_ns, struct ncg_buf *b)
{
    struct snap s;
    struct ncg_coord_stats st;
    if (snap_begin(co, now_ns, &s, &st) != 0)
        return -ENOMEM;
    const struct ncg_coord_params *p = ncg_coord_get_params(co);
    unsigned authed = 0;
    for (size_t i = 0; i < s.nc; i++)
        authed += s.c[i].v.authed;

    ncg_buf_prom_family(b, "ncclguard_checker_info", "gauge",
                        "The checker serving this endpoint (always 1; labels say where it runs).");
    ncg_buf_add(b, "ncclguard_checker_info{host=\"", 29);
    ncg_buf_esc(b, p->host, NCG_ESC_PROM);
    ncg_buf_printf(b, "\",pid=\"%u\",embedded=\"%d\",global_rank=\"%d\"} 1\n", p->pid, p->embedded,
                   p->global_rank);
    ncg_buf_prom_family(b, "ncclguard_processes", "gauge",
                        "Processes registered with the checker.");
    ncg_buf_printf(b, "ncclguard_processes %u\n", authed);
    ncg_buf_prom_family(b, "ncclguard_communicators", "gauge",
                        "Communicators the checker compares.");
    ncg_buf_printf(b, "ncclguard_communicators %zu\n", s.ncm);
    ncg_buf_prom_family(b, "ncclguard_verdicts_total", "counter",
                        "Verdicts issued, by kind (LAG: warnings too).");
    for (unsigned k = 1; k < NCG_V_KIND_MAX_; k++)
        ncg_buf_printf(b, "ncclguard_verdicts_total{kind=\"%s\"} %" PRIu64 "\n", ncg_verdict_key(k),
                       st.by_kind[k]);
    ncg_buf_prom_family(b, "ncclguard_queries_total", "counter", "Comparison rounds started.");
    ncg_buf_printf(b, "ncclguard_queries_total %" PRIu64 "\n", st.queries);
    ncg_buf_prom_family(b, "ncclguard_dropped_connections_total", "counter",
                        "Side-channel connections dropped (bad token, protocol misuse, silence).");
    ncg_buf_printf(b, "ncclguard_dropped_connections_total %" PRIu64 "\n", st.dropped);

    for (size_t k = 0; k < sizeof comm_families / sizeof comm_families[0]; k++) {
        const struct family_def *f = &comm_families[k];
        ncg_buf_prom_family(b, f->name, f->type, f->help);
        for (size_t ci = 0; ci < s.ncm; ci++) {
            ncg_buf_printf(b, "%s{comm=\"%016" PRIx64 "\"} ", f->name, s.cm[ci].v.id);
            comm_sample(b, &s.cm[ci], f->which);
        }
    }
    ncg_buf_prom_family(b, "ncclguard_comm_verdict", "gauge",
                        "1 for the error verdict that ended checking of a communicator.");
    for (size_t ci = 0; ci < s.ncm; ci++)
        if (s.cm[ci].vkind)
            ncg_buf_printf(b, "ncclguard_comm_verdict{comm=\"%016" PRIx64 "\",kind=\"%s\"} 1\n",
                           s.cm[ci].v.id, ncg_verdict_key((unsigned)s.cm[ci].vkind));

    ncg_buf_prom_family(b, "ncclguard_rank_info", "gauge",
                        "A member of a communicator: its global rank, host and pid (always 1).");
    for (size_t ci = 0; ci < s.ncm; ci++) {
        const struct scomm *c = &s.cm[ci];
        for (uint32_t i = 0; i < c->v.nranks; i++) {
            const struct smember *m = &s.mem[c->m0 + i];
            if (!m->v.state)
                continue;
            ncg_buf_printf(b,
                           "ncclguard_rank_info{comm=\"%016" PRIx64
                           "\",rank=\"%u\",global_rank=\"%d\",host=\"",
                           c->v.id, i, m->v.global_rank);
            ncg_buf_esc(b, m->host, NCG_ESC_PROM);
            ncg_buf_printf(b, "\",pid=\"%u\"} 1\n", m->v.pid);
        }
    }
    for (size_t k = 0; k < sizeof member_families / sizeof member_families[0]; k++) {
        const struct family_def *f = &member_families[k];
        ncg_buf_prom_family(b, f->name, f->type, f->help);
        member_family(b, &s, f->name, f->which);
    }
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
