/* What both renderers of the job documents write alike (jobdoc.h): the /metrics family tables,
 * each family's samples from the plain figures, and /status's shared pieces. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

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
 * help, which figure (comm_sample's or rank_sample's switch), and for which renderers (a
 * mask of enum ncg_doc_who). */
struct family {
    const char *name, *type, *help;
    int which;
    unsigned who;
};
#define BOTH (NCG_DOC_FLAT | NCG_DOC_TREE)

enum {
    C_RANKS,
    C_ACTIVE,
    C_VERIFIED,
    C_LAG,
    C_SLOWEST,
    C_PROGRESS_AGE,
    C_LAG_WARNING,
    C_ISSUED_MIN,
    C_ISSUED_MAX,
    C_DONE_MIN,
    C_DONE_AGE,
    C_STUCK_WARNING,
    C_SLOW_RANK,
    C_SLOW_SHARE
};
/* In the order written; SLOW's two families are worded for each renderer. */
static const struct family comm_families[] = {
    {"ncclguard_comm_ranks", "gauge", "Size of the communicator.", C_RANKS, BOTH},
    {"ncclguard_comm_active_ranks", "gauge", "Members registered and still active.", C_ACTIVE,
     BOTH},
    {"ncclguard_comm_verified_slots", "gauge", "Slots proven identical on every member.",
     C_VERIFIED, BOTH},
    {"ncclguard_comm_lag_calls", "gauge",
     "How many calls the slowest active member is behind the fastest.", C_LAG, BOTH},
    {"ncclguard_comm_slowest_rank", "gauge",
     "Comm rank of the slowest active member while another is ahead (-1: none behind).", C_SLOWEST,
     BOTH},
    {"ncclguard_comm_progress_age_seconds", "gauge",
     "Seconds since any member's call count last grew.", C_PROGRESS_AGE, BOTH},
    {"ncclguard_comm_lag_warning", "gauge", "1 while a LAG warning is outstanding.", C_LAG_WARNING,
     BOTH},
    {"ncclguard_comm_issued_min", "gauge", "Fewest calls an active member issued.", C_ISSUED_MIN,
     NCG_DOC_TREE},
    {"ncclguard_comm_issued_max", "gauge", "Most calls an active member issued.", C_ISSUED_MAX,
     NCG_DOC_TREE},
    {"ncclguard_comm_completed_min", "gauge", "Fewest calls an active member completed.",
     C_DONE_MIN, NCG_DOC_TREE},
    {"ncclguard_comm_completed_age_seconds", "gauge",
     "Seconds since any member's completed count last grew.", C_DONE_AGE, NCG_DOC_TREE},
    {"ncclguard_comm_stuck_warning", "gauge", "1 while a STUCK warning is outstanding.",
     C_STUCK_WARNING, NCG_DOC_TREE},
    {"ncclguard_comm_slow_rank", "gauge",
     "Comm rank a SLOW warning names: the others wait for it (-1: none).", C_SLOW_RANK,
     NCG_DOC_FLAT},
    {"ncclguard_comm_slow_share", "gauge",
     "Share of the step the others lose waiting for the SLOW rank (0: none named).", C_SLOW_SHARE,
     NCG_DOC_FLAT},
    {"ncclguard_comm_slow_rank", "gauge", "Comm rank a SLOW warning names now (-1: none).",
     C_SLOW_RANK, NCG_DOC_TREE},
    {"ncclguard_comm_slow_share", "gauge",
     "Share of the step the others lose waiting for that rank (0: none).", C_SLOW_SHARE,
     NCG_DOC_TREE},
};

/* One communicator's sample value (after its labels). */
static void comm_sample(struct ncg_buf *b, const struct ncg_doc_comm *c, int which)
{
    switch (which) {
    case C_RANKS:
        ncg_buf_printf(b, "%u\n", c->nranks);
        break;
    case C_ACTIVE:
        ncg_buf_printf(b, "%u\n", c->active);
        break;
    case C_VERIFIED:
        ncg_buf_printf(b, "%" PRIu64 "\n", c->verified);
        break;
    case C_LAG:
        ncg_buf_printf(b, "%" PRIu64 "\n", c->lag);
        break;
    case C_SLOWEST:
        ncg_buf_printf(b, "%d\n", c->slowest);
        break;
    case C_PROGRESS_AGE:
        ncg_buf_printf(b, "%.3f\n", c->progress_age_s);
        break;
    case C_LAG_WARNING:
        ncg_buf_printf(b, "%d\n", c->lag_warned);
        break;
    case C_ISSUED_MIN:
        ncg_buf_printf(b, "%" PRIu64 "\n", c->issued_min);
        break;
    case C_ISSUED_MAX:
        ncg_buf_printf(b, "%" PRIu64 "\n", c->issued_max);
        break;
    case C_DONE_MIN:
        ncg_buf_printf(b, "%" PRIu64 "\n", c->done_min);
        break;
    case C_DONE_AGE:
        ncg_buf_printf(b, "%.3f\n", c->done_age_s);
        break;
    case C_STUCK_WARNING:
        ncg_buf_printf(b, "%d\n", c->stuck_warned);
        break;
    case C_SLOW_RANK:
        ncg_buf_printf(b, "%d\n", c->slow_rank);
        break;
    default: /* C_SLOW_SHARE */
        ncg_buf_printf(b, "%.4f\n", c->slow_rank >= 0 ? c->slow_share : 0.0);
        break;
    }
}

void ncg_doc_comm_families(struct ncg_buf *b, const struct ncg_doc_comm *c, size_t n,
                           enum ncg_doc_who who)
{
    for (size_t k = 0; k < sizeof comm_families / sizeof comm_families[0]; k++) {
        const struct family *f = &comm_families[k];
        if (!(f->who & who))
            continue;
        ncg_buf_prom_family(b, f->name, f->type, f->help);
        for (size_t i = 0; i < n; i++) {
            ncg_buf_printf(b, "%s{comm=\"%016" PRIx64 "\"} ", f->name, c[i].id);
            comm_sample(b, &c[i], f->which);
        }
    }
    ncg_buf_prom_family(b, "ncclguard_comm_verdict", "gauge",
                        "1 for the error verdict that ended checking of a communicator.");
    for (size_t i = 0; i < n; i++)
        if (c[i].verdict)
            ncg_buf_printf(b, "ncclguard_comm_verdict{comm=\"%016" PRIx64 "\",kind=\"%s\"} 1\n",
                           c[i].id, ncg_verdict_key((unsigned)c[i].verdict));
}

enum { R_ISSUED, R_RATE, R_HEARTBEAT, R_PROGRESS_AGE, R_BEHIND, R_STATE, R_WAIT_SHARE };
static const struct family rank_families[] = {
    {"ncclguard_rank_state", "gauge",
     "Member state: 0 not registered yet, 1 active, 2 left (goodbye), 3 dead.", R_STATE, BOTH},
    {"ncclguard_calls_issued_total", "counter",
     "Collective calls the member issued on the communicator, as last reported.", R_ISSUED, BOTH},
    {"ncclguard_calls_per_second", "gauge",
     "Collective calls per second over the last window of at least one second.", R_RATE, BOTH},
    {"ncclguard_rank_behind_calls", "gauge",
     "How many calls the member is behind the fastest active member.", R_BEHIND, BOTH},
    {"ncclguard_rank_progress_age_seconds", "gauge",
     "Seconds since the member's call count last grew.", R_PROGRESS_AGE, BOTH},
    {"ncclguard_heartbeat_age_seconds", "gauge",
     "Seconds since the member's process last reported (its heartbeat).", R_HEARTBEAT, BOTH},
    {"ncclguard_rank_wait_share", "gauge",
     "Share of the step the other members lose waiting for this one (sampled slots).", R_WAIT_SHARE,
     BOTH},
};

/* One member's sample line of a rank_families entry; none for a figure not known. */
static void rank_sample(struct ncg_buf *b, const struct ncg_doc_rank *r, const char *name,
                        int which)
{
    if ((which == R_HEARTBEAT && r->heartbeat_age_s < 0) ||
        (which == R_PROGRESS_AGE && r->progress_age_s < 0) ||
        (which == R_WAIT_SHARE && r->wait_share < 0) || (which == R_RATE && r->rate < 0))
        return;
    ncg_buf_printf(b, "%s{comm=\"%016" PRIx64 "\",rank=\"%u\"} ", name, r->comm, r->rank);
    switch (which) {
    case R_ISSUED:
        ncg_buf_printf(b, "%" PRIu64 "\n", r->issued);
        break;
    case R_RATE:
        ncg_buf_printf(b, "%.3f\n", r->rate);
        break;
    case R_HEARTBEAT:
        ncg_buf_printf(b, "%.3f\n", r->heartbeat_age_s);
        break;
    case R_PROGRESS_AGE:
        ncg_buf_printf(b, "%.3f\n", r->progress_age_s);
        break;
    case R_BEHIND:
        ncg_buf_printf(b, "%" PRIu64 "\n", r->behind);
        break;
    case R_WAIT_SHARE:
        ncg_buf_printf(b, "%.4f\n", r->wait_share);
        break;
    default: /* R_STATE */
        ncg_buf_printf(b, "%u\n", r->state);
        break;
    }
}

void ncg_doc_rank_families(struct ncg_buf *b, const struct ncg_doc_rank *r, size_t n,
                           enum ncg_doc_who who)
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
        if (!(f->who & who))
            continue;
        ncg_buf_prom_family(b, f->name, f->type, f->help);
        for (size_t i = 0; i < n; i++)
            rank_sample(b, &r[i], f->name, f->which);
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
