/* What a rank does with a verdict: print the diagnostic, write the report, mark the segment,
 * then the configured action (abort: _exit(NCG_EXIT_VERDICT); warn; fail: mark the comms
 * failed and revoke them). Runs on the checker thread. */
#ifndef NCG_ACTION_H
#define NCG_ACTION_H

#include <stdint.h>
#include "diag.h"
#include "verdict.h"

struct ncg_comm;

/* Prints and records v for this process (x: local facts; x->action, exit_status and
 * report_path are filled here), and for the fail action fails comms[0..n). Returns 1 when the
 * process must now end (abort): the caller flushes what it must, then calls ncg_action_exit.
 * Checker thread; allocates; file I/O; comms[] must stay valid during the call. */
int ncg_action_apply(const struct ncg_verdict *v, struct ncg_diag_ctx *x, struct ncg_comm **comms,
                     int n);

/* Prints v's diagnostic for one more comm rank this process holds (x: its facts, with the
 * action and report of the ncg_action_apply call before it). Checker thread; allocates. */
void ncg_action_show(const struct ncg_verdict *v, const struct ncg_diag_ctx *x);
/* The end of a SLOW episode on v's comm: when the segment shows that comm's SLOW warning as
 * this process's verdict (and no error), the process is shown alive again, the episode being
 * over. Checker thread. */
void ncg_action_slow_over(const struct ncg_verdict *v);
/* A LAG or STUCK warning that the segment shows as this process's verdict is over once its comm
 * completes a call here after it: the process is shown alive again (the warning stays in the
 * log and the report). Every interval. Checker thread. */
void ncg_action_tick(void);

/* Ends the process with NCG_EXIT_VERDICT without running atexit handlers. Async-signal-safe. */
__attribute__((noreturn)) void ncg_action_exit(void);

#endif
