/* What a rank does with a verdict, once its texts are rendered and its report written (the
 * last step of its way, agent/apply.c): mark the segment, print the diagnostic, then the
 * decided action (abort: the caller's exit sequence, ncg_action_exit; warn; fail: mark the
 * comms failed and revoke them). Runs on the checker thread. */
#ifndef NCG_ACTION_H
#define NCG_ACTION_H

#include <stdint.h>
#include "verdict.h"
#include "verdict_sm.h"

/* Acts on v as decided (d): the segment shows it (a SLOW's figures in its comm's slots; a SLOW
 * episode's end, d->shown 0: that alone), the first block of t is printed with the report's
 * words (path: the report written, "" none; note: why it is not where configured, ""), and for
 * the fail action the live comms of v's communicator held here are failed. Returns
 * d->must_exit (1: the process must now end: the caller flushes what it must, then calls
 * ncg_action_exit). Checker thread, holding ncg_agent.lk; allocates. */
int ncg_action_apply(const struct ncg_verdict *v, const struct ncg_vdecision *d,
                     const struct ncg_vtexts *t, const char *path, const char *note);

/* Prints one more block (another comm rank this process holds), with the report's words (path,
 * as given to ncg_action_apply). Checker thread; allocates. */
void ncg_action_show(const struct ncg_vblock *b, const char *path);
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
