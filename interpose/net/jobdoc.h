/* The job documents' fixed parts, apart from the checker's renderer (status_tree_render.c):
 * /status's opening, a verdict and the closing counters; /metrics's checker line, the job's
 * counters and the per-communicator and per-rank families (names, HELP/TYPE lines, sample
 * formats), written from the plain figures below that the renderer fills from its snapshot. */
#ifndef NCG_JOBDOC_H
#define NCG_JOBDOC_H

#include <stddef.h>
#include <stdint.h>
#include "buf.h"

/* /status's format ("ncclguard-job-status"): new keys keep the version (readers ignore unknown
 * keys); renames, removals and changes of meaning bump it. Since 1: members' completed counts,
 * last call and its age, the verdict's subject and calls (docs/cli.md). */
#define NCG_JOB_STATUS_VERSION 1

/* The checker serving the endpoint (its params). */
struct ncg_doc_checker {
    const char *host;
    uint32_t pid, interval_ms;
    int embedded;
    int32_t global_rank; /* -1: not known */
    double heartbeat_timeout_s, lag_warn_s, lag_abort_s;
};

/* One communicator's figures in /metrics. */
struct ncg_doc_comm {
    uint64_t id;
    uint32_t nranks, active;
    uint64_t verified, lag; /* lag: calls the slowest active member is behind the fastest */
    int32_t slowest;        /* comm rank of the slowest while another is ahead, -1 */
    double progress_age_s;
    int lag_warned;
    int32_t slow_rank; /* the rank a SLOW warning names, -1 none */
    double slow_share; /* 0 when none is named */
    int verdict;       /* the error verdict's kind (enum ncg_verdict_kind), 0 none */
    uint64_t issued_min, issued_max, done_min;
    double done_age_s;
    int stuck_warned;
};

/* One member of a communicator in /metrics. The ages and the share: < 0, not known (no
 * sample of that family). */
struct ncg_doc_rank {
    uint64_t comm;
    uint32_t rank, pid;
    int32_t global_rank;
    const char *host;
    uint8_t state; /* 0 not registered yet (no rank_info line), 1 active, 2 left, 3 dead */
    uint64_t issued, behind;
    double rate, progress_age_s, heartbeat_age_s;
    double wait_share; /* -1: not known (a rank beneath a child relay) */
};

/* A /metrics render's figures: c[nc] and r[nr], zeroed; free with ncg_doc_figs_free. 0, or
 * -ENOMEM (nothing to free). The renderer's thread; allocates. */
struct ncg_doc_figs {
    struct ncg_doc_comm *c;
    struct ncg_doc_rank *r;
};
int ncg_doc_figs_alloc(struct ncg_doc_figs *f, size_t nc, size_t nr);
void ncg_doc_figs_free(struct ncg_doc_figs *f);

/* All below: the renderer's thread; never block; append to b (its oom flag says when an
 * allocation failed). */

/* /status's opening through the "checker" object and its trailing comma. */
void ncg_doc_status_head(struct ncg_buf *b, const struct ncg_doc_checker *c, double time_unix);
/* A verdict object of /status up to its "calls" array, open: the caller writes the calls and
 * "]}". severity: enum ncg_severity. */
void ncg_doc_status_verdict(struct ncg_buf *b, int kind, int severity, int64_t slot,
                            const char *text, const char *subject);
/* /status's closing counters: "verdicts_total":{...},"queries_total":Q,
 * "dropped_connections_total":D} and the newline. by_kind: [NCG_V_KIND_MAX_]. */
/* {"kind":"coll","func":"AllReduce",...,"site":"..."}: a call as /status writes it. */
struct ncg_call;
void ncg_doc_call(struct ncg_buf *b, const struct ncg_call *c, int p2p, const char *site);
void ncg_doc_status_totals(struct ncg_buf *b, const uint64_t *by_kind, uint64_t queries,
                           uint64_t dropped);

/* ncclguard_checker_info; role (NULL: none) and node add the tree's labels. */
void ncg_doc_checker_info(struct ncg_buf *b, const struct ncg_doc_checker *c, const char *role,
                          uint32_t node);
/* The job's counters: ncclguard_communicators, _verdicts_total by kind, _queries_total. */
void ncg_doc_job_totals(struct ncg_buf *b, size_t ncomms, const uint64_t *by_kind,
                        uint64_t queries);
/* The per-communicator families, then ncclguard_comm_verdict: c[n]. */
void ncg_doc_comm_families(struct ncg_buf *b, const struct ncg_doc_comm *c, size_t n);
/* ncclguard_rank_info, then the per-member families: r[n], grouped by communicator. */
void ncg_doc_rank_families(struct ncg_buf *b, const struct ncg_doc_rank *r, size_t n);

#endif
