/* The job documents' fixed parts (jobdoc.h): the /metrics family tables, each family's samples
 * from the plain figures, and /status's pieces. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "jobdoc.h"
#include "verdict.h"

int ncg_doc_figs_alloc(struct ncg_doc_figs *f, size_t nc, size_t nr)
{
    f->c = calloc(nc ? nc : 1, sizeof *f->c);
    f->r = calloc(nr ? nr : 1, sizeof *f->r);
    if (!f->c || !f->r) {
        ncg_doc_figs_free(f);
        return -ENOMEM;
    }
    return 0;
}

void ncg_doc_figs_free(struct ncg_doc_figs *f)
{
    free(f->c);
    free(f->r);
    f->c = NULL;
    f->r = NULL;
}

/* ---------- /status ---------- */

void ncg_doc_status_head(struct ncg_buf *b, const struct ncg_doc_checker *c, double time_unix)
{
    ncg_buf_printf(b,
                   "{\"format\":\"ncclguard-job-status\",\"version\":%d,\"time_unix\":%.3f,"
                   "\"checker\":{\"host\":\"",
                   NCG_JOB_STATUS_VERSION, time_unix);
    ncg_buf_esc(b, c->host, NCG_ESC_JSON);
    ncg_buf_printf(b,
                   "\",\"pid\":%u,\"embedded\":%s,\"global_rank\":%d,\"interval_ms\":%u,"
                   "\"heartbeat_timeout_s\":%g,\"lag_warn_s\":%g,\"lag_abort_s\":%g},",
                   c->pid, c->embedded ? "true" : "false", c->global_rank, c->interval_ms,
                   c->heartbeat_timeout_s, c->lag_warn_s, c->lag_abort_s);
}

void ncg_doc_status_verdict(struct ncg_buf *b, int kind, int severity, int64_t slot,
                            const char *text, const char *subject)
{
    ncg_buf_printf(
        b, "{\"kind\":%d,\"name\":\"%s\",\"severity\":\"%s\",\"slot\":%" PRId64 ",\"text\":\"",
        kind, ncg_verdict_name((unsigned)kind), severity == NCG_SEV_ERROR ? "error" : "warning",
        slot);
    ncg_buf_esc(b, text, NCG_ESC_JSON);
    ncg_buf_add(b, "\",\"subject\":\"", 13);
    ncg_buf_esc(b, subject, NCG_ESC_JSON);
    ncg_buf_add(b, "\",\"calls\":[", 11);
}

void ncg_doc_status_totals(struct ncg_buf *b, const uint64_t *by_kind, uint64_t queries,
                           uint64_t dropped)
{
    ncg_buf_add(b, "\"verdicts_total\":{", 18);
    for (unsigned k = 1; k < NCG_V_KIND_MAX_; k++)
        ncg_buf_printf(b, "%s\"%s\":%" PRIu64, k > 1 ? "," : "", ncg_verdict_key(k), by_kind[k]);
    ncg_buf_printf(b,
                   "},\"queries_total\":%" PRIu64 ",\"dropped_connections_total\":%" PRIu64 "}\n",
                   queries, dropped);
}

/* ---------- /metrics ---------- */

void ncg_doc_checker_info(struct ncg_buf *b, const struct ncg_doc_checker *c, const char *role,
                          uint32_t node)
{
    ncg_buf_prom_family(b, "ncclguard_checker_info", "gauge",
                        "The checker serving this endpoint (always 1; labels say where it runs).");
    ncg_buf_add(b, "ncclguard_checker_info{host=\"", 29);
    ncg_buf_esc(b, c->host, NCG_ESC_PROM);
    ncg_buf_printf(b, "\",pid=\"%u\",embedded=\"%d\",global_rank=\"%d\"", c->pid, c->embedded,
                   c->global_rank);
    if (role)
        ncg_buf_printf(b, ",role=\"%s\",node=\"%u\"", role, node);
    ncg_buf_add(b, "} 1\n", 4);
}

void ncg_doc_job_totals(struct ncg_buf *b, size_t ncomms, const uint64_t *by_kind, uint64_t queries)
{
    ncg_buf_prom_family(b, "ncclguard_communicators", "gauge",
                        "Communicators the checker compares.");
    ncg_buf_printf(b, "ncclguard_communicators %zu\n", ncomms);
    ncg_buf_prom_family(b, "ncclguard_verdicts_total", "counter",
                        "Verdicts issued, by kind (LAG: warnings too).");
    for (unsigned k = 1; k < NCG_V_KIND_MAX_; k++)
        ncg_buf_printf(b, "ncclguard_verdicts_total{kind=\"%s\"} %" PRIu64 "\n", ncg_verdict_key(k),
                       by_kind[k]);
    ncg_buf_prom_family(b, "ncclguard_queries_total", "counter", "Comparison rounds started.");
    ncg_buf_printf(b, "ncclguard_queries_total %" PRIu64 "\n", queries);
}

/* A family written the same way for each communicator or each member: its name, type and
 * help, and its figure: the field at `off` of struct ncg_doc_comm or ncg_doc_rank, printed
 * as `fmt` says. */
enum { F_U8, F_U32, F_U64, F_INT, F_SECONDS, F_SHARE }; /* %u, %u, %lu, %d, %.3f, %.4f */
_Static_assert(sizeof(int) == sizeof(int32_t), "F_INT reads an int or an int32_t");
struct family {
    const char *name, *type, *help;
    size_t off;
    int fmt;
};
#define C_(field, fmt) offsetof(struct ncg_doc_comm, field), fmt
#define R_(field, fmt) offsetof(struct ncg_doc_rank, field), fmt

/* In the order written. */
static const struct family comm_families[] = {
    {"ncclguard_comm_ranks", "gauge", "Size of the communicator.", C_(nranks, F_U32)},
    {"ncclguard_comm_active_ranks", "gauge", "Members registered and still active.",
     C_(active, F_U32)},
    {"ncclguard_comm_verified_slots", "gauge", "Slots proven identical on every member.",
     C_(verified, F_U64)},
    {"ncclguard_comm_lag_calls", "gauge",
     "How many calls the slowest active member is behind the fastest.", C_(lag, F_U64)},
    {"ncclguard_comm_slowest_rank", "gauge",
     "Comm rank of the slowest active member while another is ahead (-1: none behind).",
     C_(slowest, F_INT)},
    {"ncclguard_comm_progress_age_seconds", "gauge",
     "Seconds since any member's call count last grew.", C_(progress_age_s, F_SECONDS)},
    {"ncclguard_comm_lag_warning", "gauge", "1 while a LAG warning is outstanding.",
     C_(lag_warned, F_INT)},
    {"ncclguard_comm_issued_min", "gauge", "Fewest calls an active member issued.",
     C_(issued_min, F_U64)},
    {"ncclguard_comm_issued_max", "gauge", "Most calls an active member issued.",
     C_(issued_max, F_U64)},
    {"ncclguard_comm_completed_min", "gauge", "Fewest calls an active member completed.",
     C_(done_min, F_U64)},
    {"ncclguard_comm_completed_age_seconds", "gauge",
     "Seconds since any member's completed count last grew.", C_(done_age_s, F_SECONDS)},
    {"ncclguard_comm_stuck_warning", "gauge", "1 while a STUCK warning is outstanding.",
     C_(stuck_warned, F_INT)},
    {"ncclguard_comm_slow_rank", "gauge", "Comm rank a SLOW warning names now (-1: none).",
     C_(slow_rank, F_INT)},
    {"ncclguard_comm_slow_share", "gauge",
     "Share of the step the others lose waiting for that rank (0: none).", C_(slow_share, F_SHARE)},
};

static const struct family rank_families[] = {
    {"ncclguard_rank_state", "gauge",
     "Member state: 0 not registered yet, 1 active, 2 left (goodbye), 3 dead.", R_(state, F_U8)},
    {"ncclguard_calls_issued_total", "counter",
     "Collective calls the member issued on the communicator, as last reported.",
     R_(issued, F_U64)},
    {"ncclguard_calls_per_second", "gauge",
     "Collective calls per second over the last window of at least one second.",
     R_(rate, F_SECONDS)},
    {"ncclguard_rank_behind_calls", "gauge",
     "How many calls the member is behind the fastest active member.", R_(behind, F_U64)},
    {"ncclguard_rank_progress_age_seconds", "gauge",
     "Seconds since the member's call count last grew.", R_(progress_age_s, F_SECONDS)},
    {"ncclguard_heartbeat_age_seconds", "gauge",
     "Seconds since the member's process last reported (its heartbeat).",
     R_(heartbeat_age_s, F_SECONDS)},
    {"ncclguard_rank_wait_share", "gauge",
     "Share of the step the other members lose waiting for this one (sampled slots).",
     R_(wait_share, F_SHARE)},
};
#undef C_
#undef R_

/* f's figure in the plain struct at p: -1 when it is one in seconds or a share below 0 (for
 * a member: not known, no sample of that family). */
static double figure_d(const struct family *f, const void *p)
{
    double d = -1;
    if (f->fmt == F_SECONDS || f->fmt == F_SHARE)
        memcpy(&d, (const char *)p + f->off, sizeof d);
    return d;
}

/* The value of f's figure in the plain struct at p, and the newline. */
static void sample(struct ncg_buf *b, const struct family *f, const void *p)
{
    const char *x = (const char *)p + f->off;
    uint32_t u;
    uint64_t v;
    int32_t d;
    switch (f->fmt) {
    case F_U8:
        ncg_buf_printf(b, "%u\n", *(const uint8_t *)x);
        break;
    case F_U32:
        memcpy(&u, x, sizeof u);
        ncg_buf_printf(b, "%u\n", u);
        break;
    case F_U64:
        memcpy(&v, x, sizeof v);
        ncg_buf_printf(b, "%" PRIu64 "\n", v);
        break;
    case F_INT:
        memcpy(&d, x, sizeof d);
        ncg_buf_printf(b, "%d\n", d);
        break;
    default:
        ncg_buf_printf(b, f->fmt == F_SHARE ? "%.4f\n" : "%.3f\n", figure_d(f, p));
        break;
    }
}

void ncg_doc_comm_families(struct ncg_buf *b, const struct ncg_doc_comm *c, size_t n)
{
    for (size_t k = 0; k < sizeof comm_families / sizeof comm_families[0]; k++) {
        const struct family *f = &comm_families[k];
        ncg_buf_prom_family(b, f->name, f->type, f->help);
        for (size_t i = 0; i < n; i++) {
            ncg_buf_printf(b, "%s{comm=\"%016" PRIx64 "\"} ", f->name, c[i].id);
            sample(b, f, &c[i]);
        }
    }
    ncg_buf_prom_family(b, "ncclguard_comm_verdict", "gauge",
                        "1 for the error verdict that ended checking of a communicator.");
    for (size_t i = 0; i < n; i++)
        if (c[i].verdict)
            ncg_buf_printf(b, "ncclguard_comm_verdict{comm=\"%016" PRIx64 "\",kind=\"%s\"} 1\n",
                           c[i].id, ncg_verdict_key((unsigned)c[i].verdict));
}

void ncg_doc_rank_families(struct ncg_buf *b, const struct ncg_doc_rank *r, size_t n)
{
    ncg_buf_prom_family(b, "ncclguard_rank_info", "gauge",
                        "A member of a communicator: its global rank, host and pid (always 1).");
    for (size_t i = 0; i < n; i++) {
        if (!r[i].state)
            continue;
        ncg_buf_printf(
            b, "ncclguard_rank_info{comm=\"%016" PRIx64 "\",rank=\"%u\",global_rank=\"%d\",host=\"",
            r[i].comm, r[i].rank, r[i].global_rank);
        ncg_buf_esc(b, r[i].host, NCG_ESC_PROM);
        ncg_buf_printf(b, "\",pid=\"%u\"} 1\n", r[i].pid);
    }
    for (size_t k = 0; k < sizeof rank_families / sizeof rank_families[0]; k++) {
        const struct family *f = &rank_families[k];
        int fig_d = f->fmt == F_SECONDS || f->fmt == F_SHARE;
        ncg_buf_prom_family(b, f->name, f->type, f->help);
        for (size_t i = 0; i < n; i++) {
            if (fig_d && figure_d(f, &r[i]) < 0)
                continue;
            ncg_buf_printf(b, "%s{comm=\"%016" PRIx64 "\",rank=\"%u\"} ", f->name, r[i].comm,
                           r[i].rank);
            sample(b, f, &r[i]);
        }
    }
}

void ncg_doc_call(struct ncg_buf *b, const struct ncg_call *c, int p2p, const char *site)
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
