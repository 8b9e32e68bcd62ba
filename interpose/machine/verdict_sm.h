/* A verdict's way through one process, its pure steps; agent/apply.c drives them one way:
 * (a) the facts: what this process knows of the verdict (struct ncg_vfacts, gathered by the
 *     agent under its lock, stacks outside it), then nothing goes back to the segment;
 * (b) what to do (ncg_verdict_decide) and the texts (ncg_verdict_render): the report's JSON and
 *     the printed block of each comm rank held here, the one shown first leading;
 * (c) the report written and (d) the action (print, segment, comms failed): agent I/O.
 * No I/O, clock or configuration here: the facts carry what the agent read. What the facts are
 * gathered by (whose stack, with file:line or not) is judge/vshow.h's. */
#ifndef NCG_MACHINE_VERDICT_SM_H
#define NCG_MACHINE_VERDICT_SM_H

#include <stddef.h>
#include <stdint.h>
#include "ncclguard/shm.h"
#include "pyframes.h"
#include "site.h"
#include "verdict.h"
#include "vrender.h"

#define NCG_VERDICT_HELD_MAX 8 /* comm ranks of one comm shown by one process (the report: all) */
#define NCG_VERDICT_STACK_SHOW 16 /* frames of a stack shown */

/* One comm rank of the verdict's communicator held by this process, and what it shows. */
struct ncg_vheld {
    int32_t rank;
    uint32_t tid; /* the thread whose stack is shown (0: none) */
    char mycall[256], what[256];
    char site[NCG_SITE_FULL]; /* with the whole demangled name (the report's; a line fits it) */
    double call_time_unix;    /* < 0 unknown */
    char frame[NCG_VERDICT_STACK_SHOW][256]; /* tid's stack, symbolized, innermost first */
    int nstack;
    const char *stack_why; /* nstack 0 with tid set: why it was not captured */
    int has_py;            /* py holds tid's Python frames */
    struct ncg_pystack py;
};

/* Everything this process knows of a verdict, gathered once (agent/apply.c). */
struct ncg_vfacts {
    struct ncg_vheld held[NCG_VERDICT_HELD_MAX]; /* shown ranks, live comms first */
    int nh;
    int32_t ranks[NCG_SHM_MAX_COMMS]; /* every comm rank of the comm held here (the report) */
    int nr;
    int finished;      /* the application had already finished: its exit status is kept */
    int alone;         /* a RANK EXITED judged here alone (ncg_diag_ctx.alone) */
    int hosts_checker; /* this process hosts the checker (ncg_diag_ctx.hosts_checker) */
    int action;        /* enum ncg_action configured (NCCLGUARD_ACTION) */
    int diag_mode;     /* enum ncg_diag_mode configured (NCCLGUARD_DIAG) */
    int32_t global_rank;
    const char *rank_var;
    uint32_t pid;
    const char *host;
    long time_sec, time_usec; /* the report's wall-clock time */
};

/* What this process does with a verdict. */
struct ncg_vdecision {
    int shown;                 /* 0: a SLOW episode's end: no text, the segment's status alone */
    int must_exit;             /* abort: the process ends (the exit sequence, exit.c) */
    int fail;                  /* fail the verdict's communicators here (NCCLGUARD_ACTION=fail) */
    int exit_status;           /* NCG_EXIT_VERDICT when it ends, else -1 */
    const char *action;        /* the action in the printed block's words */
    const char *report_action; /* the report's word: "abort", "warn", "fail" or "none" */
};

/* What to do with v from its severity, the configured action (enum ncg_action) and whether the
 * application had finished (then nothing is ended or failed: its exit status is kept). Pure; no
 * allocation. */
struct ncg_vdecision ncg_verdict_decide(const struct ncg_verdict *v, int action, int finished);

/* The held rank shown first (with the report): one the verdict is about, else one that prints
 * the full block, else the first. Pure; allocates temporaries. */
int ncg_verdict_first(const struct ncg_verdict *v, const struct ncg_vfacts *f);

/* The context held rank k (-1: none held) renders with; fp: scratch for its frames' pointers,
 * which x->stack points into. Pure; no allocation. */
void ncg_verdict_ctx(const struct ncg_vfacts *f, const struct ncg_vdecision *d, int k,
                     const char *fp[NCG_VERDICT_STACK_SHOW], struct ncg_diag_ctx *x);

/* One printed block; the report's words ("; report: <path>", "; no report written") go at split
 * (NCG_DIAG_NO_SPLIT: nowhere), once the report is written. text NULL: none (no memory). */
struct ncg_vblock {
    char *text;
    size_t len, split;
};

/* The texts of a verdict in this process: the report and a block per held rank, in the order
 * they are printed (the first with the report's note). */
struct ncg_vtexts {
    char *mem;  /* the one allocation holding them all: free(mem) frees them */
    char *json; /* NULL: no memory */
    size_t json_len;
    struct ncg_vblock block[NCG_VERDICT_HELD_MAX];
    int nblock;
};

/* Renders v for this process (f: its facts, d: what it does) into t. Pure; allocates the texts
 * at t->mem (the caller frees it); 0, or -ENOMEM (then no text: json and every block NULL). */
int ncg_verdict_render(const struct ncg_verdict *v, const struct ncg_vfacts *f,
                       const struct ncg_vdecision *d, struct ncg_vtexts *t);

#endif
