/* Who is shown what of a verdict, from the verdict alone and a process's few flags: which comm
 * ranks print the full block (NCCLGUARD_DIAG), whether the stuck thread's stack is shown, SLOW's
 * figures as data. Pure: no I/O, no configuration (the caller passes its modes). */
#ifndef NCG_VSHOW_H
#define NCG_VSHOW_H

#include <stddef.h>
#include <stdint.h>
#include "verdict.h"

/* Whether comm rank `rank` prints the full block under NCCLGUARD_DIAG=auto: the ranks the
 * verdict is about (v->subject: the minority of a MISMATCH, the pair of a P2P MISMATCH, the
 * lagging ones) and the lowest other member; every rank when the subject is not a rank list.
 * Writes those ranks, compact, into on. Pure; allocates a temporary array; same answer on
 * every member (it reads only the verdict). */
int ncg_diag_full_here(const struct ncg_verdict *v, int32_t rank, char *on, size_t cap);

/* A warning names at most this many ranks whose processes print its full block; past it (a STUCK
 * of every rank, a LAG of thousands) only the lowest one it names does. */
#define NCG_DIAG_WARN_NAMED 8

/* Whether comm rank `rank` of a process prints the full block, under every NCCLGUARD_DIAG mode
 * (diag_mode, enum ncg_diag_mode) and severity: an error verdict as ncg_diag_full_here says under
 * auto and quiet, or everywhere a process judged it alone (alone: a RANK EXITED from its departed
 * checker's counts); a warning on the ranks it names (at most NCG_DIAG_WARN_NAMED, else the
 * lowest) and in the checker's process (hosts_checker), the others printing its headline alone
 * (auto) or nothing (quiet). Writes into on (cap bytes) the comm ranks that print it ("" under
 * full and short). Pure; allocates a temporary array; the same answer on every member but for
 * the checker's process. */
int ncg_full_block(const struct ncg_verdict *v, int diag_mode, int hosts_checker, int alone,
                   int32_t rank, char *on, size_t cap);

/* 1 when comm rank `rank` is one the verdict is about (in v->subject's rank list). Pure;
 * allocates a temporary array. */
int ncg_diag_in_subject(const struct ncg_verdict *v, int32_t rank);

/* SLOW's figures (a straggler) as the report, the segment slot and the dump show them: v->slow
 * (ncg_v_slow's data, not its words), the global rank from v->members when the figures lack it.
 * 0, or -EINVAL when v is not a SLOW. Pure; no allocation. */
int ncg_diag_slow_figs(const struct ncg_verdict *v, struct ncg_vslow *f);

/* Whether a verdict shows the stuck thread's stack under the configured action (enum
 * ncg_action): the certain ones, and a LAG that became an error when the process ends anyway
 * (abort): there the lagging rank's stack answers "where is it?". Pure. */
int ncg_verdict_shows_stack(const struct ncg_verdict *v, int action);

#endif
