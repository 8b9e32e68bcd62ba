/* `ncclguard watch`: a node-side watchdog that needs nothing from the job. Each scan reads the
 * segments and raises an alert, once per event, when a guarded process died without a clean
 * exit, when local members of a communicator issued different calls at one slot, when they
 * stopped progressing with disagreeing slot counts for --stall seconds, when a SLOW warning
 * names a rank the others wait for (once per episode), or when a verdict was recorded: one
 * alert per verdict for all the processes here that recorded it (a process ended by the
 * verdict's action is not also reported as died). Alerts: a line (or JSON object) on
 * stdout, an optional --exec hook, the exit status. This file: the loop of scans; the rest in
 * watch_*.c (watch_int.h). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "watch_int.h"

int ncg_cmd_watch(int argc, char **argv)
{
    struct ncg_watch w;
    struct ncg_watch_opts o;
    int rc = ncg_watch_args(argc, argv, &w, &o);
    if (rc >= 0)
        return rc;
    gethostname(w.host, sizeof(w.host) - 1);
    ncg_cli_catch_stop();
    rc = NCG_CLI_OK;
    for (int first = 1; !ncg_cli_stop; first = 0) {
        struct ncg_snap s;
        struct ncg_view v;
        if (o.job) {
            int e = ncg_watch_job_poll(&w, &o.src, first, &s);
            if (e < 0) {
                rc = e == -1 ? NCG_CLI_ERROR : NCG_CLI_OK;
                break;
            }
            if (e > 0)
                goto next;
        } else {
            if (ncg_cli_snap_take(&s, &o.scan) < 0) {
                rc = NCG_CLI_ERROR;
                break;
            }
        }
        char why[200];
        if (!o.job)
            s.gpus = ncg_nvml_fill(&s, why, sizeof why);
        if (ncg_view_build(&s, &v) == 0) {
            if (s.gpus)
                ncg_watch_scan_power(&w, &s);
            ncg_watch_scan_procs(&w, &s);
            ncg_watch_scan_comms(&w, &s,
                                 &v); /* before the verdicts: a mismatch names their culprit */
            ncg_watch_scan_verdicts(&w, &s);
            ncg_watch_scan_slow(&w, &s);
            ncg_watch_flush_held(&w, 0);
            if (o.job)
                ncg_watch_job_rate(&w, &s, &v);
            ncg_view_free(&v);
        }
        if (o.clean && !o.job)
            ncg_cli_clean_dead(&s, 3600, 0, 1, 1);
        ncg_snap_free(&s);
    next:
        ncg_watch_reap_hooks(&w, 0);
        /* A verdict alert waiting for more ranks gets one more, quick, scan. */
        if ((o.once || (o.exit_on_alert && w.alerts)) && !w.npending && !w.nheld)
            break;
        double next =
            (w.npending || w.nheld) && o.interval > NCG_SETTLE_S ? NCG_SETTLE_S : o.interval;
        struct timespec ts = {(time_t)next, (long)((next - (double)(time_t)next) * 1e9)};
        nanosleep(&ts, NULL);
    }
    while (w.npending) /* interrupted while a verdict alert waited: raise it as it is */
        ncg_watch_raise_pending(&w, 0);
    ncg_watch_flush_held(&w, 1);
    ncg_watch_reap_hooks(&w, 1); /* let the hooks of the last alerts finish before we report */
    for (int i = 0; i < w.nseen; i++)
        free(w.seen[i]);
    free(w.seen);
    free(w.pending);
    free(w.held);
    free(w.slow);
    if (rc != NCG_CLI_OK)
        return rc;
    return w.alerts ? NCG_CLI_ALERT : NCG_CLI_OK;
}
