/* A verdict as the user sees it: the multi-line stderr diagnostic (every line starts with
 * "ncclguard: ") and the JSON report (docs/report-format.md), rendered from plain facts (what
 * this process adds: struct ncg_diag_ctx). Pure: no I/O, no clock, no configuration; the agent
 * writes the report (agent/diag.h) and prints the block (agent/action.c). */
#ifndef NCG_MACHINE_VRENDER_H
#define NCG_MACHINE_VRENDER_H

#include <stddef.h>
#include <stdint.h>
#include "pyframes.h"
#include "verdict.h"
#include "vshow.h"

/* What this rank adds to the coordinator's verdict. */
struct ncg_diag_ctx {
    int32_t rank;        /* this process's rank in the verdict's comm, -1 if none */
    int32_t global_rank; /* from the launcher's variables (config.h), or -1 */
    uint32_t pid;
    const char *host;
    const char *my_call;     /* this rank's call at the slot (or its latest), formatted; "" */
    const char *my_site;     /* where it was called from, symbolized; "" */
    const char *action;      /* "abort", "warn", "fail", or "none" for a warning verdict */
    int exit_status;         /* NCG_EXIT_VERDICT for abort, else -1 */
    const char *report_path; /* "" when the report could not be written */
    double call_time_unix;   /* wall-clock time this rank issued my_call, < 0 unknown */
    /* The stack of the thread that issued this rank's latest call, captured at verdict time
     * (error verdicts, NCCLGUARD_STACKS=1): symbolized frames, innermost first. */
    uint32_t stack_tid;       /* 0: no stack */
    const char *stack_what;   /* what that thread issued, e.g. "slot 7 AllReduce(...)" */
    const char *const *stack; /* nstack frames */
    int nstack;
    const char *rank_var; /* the variable global_rank came from ("RANK", "SLURM_PROCID", ...) */
    int diag_mode;        /* enum ncg_diag_mode (config.h): who prints the full block */
    /* The Python frames of that same thread (pyframes.h), NULL when not Python. */
    const struct ncg_pystack *py;
    const char *stack_why; /* nstack == 0 with stack_tid set: why it was not captured */
    /* Every comm rank of the verdict's communicator this process holds (several ranks in one
     * process: NCCL's one-thread-many-devices pattern, ncclCommInitAll); nheld 0: just rank. */
    const int32_t *held;
    int nheld;
    int finished; /* the application had already finished (its clean exit under way): an error
                     verdict is shown and reported, its exit status kept (ncg_action_apply) */
    int alone;    /* a RANK EXITED this process judged alone from its departed checker's counts:
                     the ranks it names are gone, so its full block is the one printed */
    int hosts_checker; /* this process hosts the checker (or the relay tree's root): a warning's
                          full block is printed here (NCCLGUARD_DIAG=auto, quiet) */
    long time_sec, time_usec; /* the report's wall-clock time (when it is written) */
};

/* ncg_full_block (judge/vshow.h) for comm rank `rank` of this process, x giving its mode and
 * flags. Pure; allocates a temporary array. */
int ncg_diag_full_for(const struct ncg_verdict *v, const struct ncg_diag_ctx *x, int32_t rank,
                      char *on, size_t cap);

/* Renders the diagnostic into buf (NUL-terminated, truncated to cap). Pure; returns length. */
size_t ncg_diag_render(const struct ncg_verdict *v, const struct ncg_diag_ctx *x, char *buf,
                       size_t cap);

/* ncg_diag_render without the words on the report (x->report_path unread: the report is written
 * after the text is rendered): *split gets where "; report: <path>" (or "; no report written")
 * goes, NCG_DIAG_NO_SPLIT when the block has no action line. Pure; returns the length, or the
 * length it would need (>= cap; the text is then cut like ncg_diag_render's). */
#define NCG_DIAG_NO_SPLIT ((size_t)-1)
size_t ncg_diag_render_split(const struct ncg_verdict *v, const struct ncg_diag_ctx *x, char *buf,
                             size_t cap, size_t *split);

/* Renders the JSON report (one line + newline) into buf. Pure; returns the length, or the
 * length it would need (>= cap) when buf is too small. */
size_t ncg_diag_json(const struct ncg_verdict *v, const struct ncg_diag_ctx *x, char *buf,
                     size_t cap);

/* One Python frame as reports and dumps write it, {"file":..,"line":..,"function":..,"source":..},
 * into buf (NUL-terminated; NCG_PYFRAME_JSON_MAX bytes always hold it: each byte escaped is at
 * most 6). Pure; returns the length, or the length it would need (>= cap). */
#define NCG_PYFRAME_JSON_MAX (6 * sizeof(struct ncg_pyframe) + 64)
size_t ncg_diag_json_pyframe(const struct ncg_pyframe *f, char *buf, size_t cap);

/* "<dir>/ncclguard-report.<host>.<pid>.json" into path. Pure. */
void ncg_diag_report_path(const char *dir, const char *host, uint32_t pid, char *path, size_t cap);

#endif
