/* The options of `ncclguard watch`: its usage text, their parsing and checks, and opening
 * --job. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "watch_int.h"

static const char usage[] =
    "usage: ncclguard watch [--stall SECS] [--interval SECS] [--json] [--exec CMD] [--once]\n"
    "                       [--exit-on-alert] [--dir DIR] [--match TEXT] [--no-clean]\n"
    "  --stall SECS     alert when local ranks of a communicator disagree on their slot counts\n"
    "                   and none made a call for SECS seconds (default 60)\n"
    "  --interval SECS  time between scans (default 1)\n"
    "  --json           one JSON object per alert (format ncclguard-alert, version 1)\n"
    "  --exec CMD       run CMD with sh -c for each alert; details in NCCLGUARD_ALERT_* variables\n"
    "  --once           scan once and exit\n"
    "  --exit-on-alert  exit after the first scan that raised an alert\n"
    "  --dir DIR        where the segments are (default /dev/shm)\n"
    "  --match TEXT     only processes whose command line contains TEXT\n"
    "  --no-clean       do not remove segments of processes gone for over an hour\n"
    "  --power-util PCT, --power-idle FRAC  with NVML: alert on the power signature, a GPU\n"
    "                   at >= PCT% utilization (default 90) and <= FRAC of its power limit\n"
    "                   (default 0.25) while its rank made no NCCL call for --stall seconds\n"
    "       ncclguard watch --job URL|FILE [--token T] [--min-rate CALLS_PER_S] [--stall SECS]\n"
    "                       [--interval SECS] [--json] [--exec CMD] [--once] [--exit-on-alert]\n"
    "  --job URL|FILE   the whole job through its checker's status endpoint (http://HOST:PORT,\n"
    "                   or the job file ncclguard-job.<host>.<pid>.json it wrote)\n"
    "  --token T        the endpoint's bearer token (default: $NCCLGUARD_TOKEN, the job file's)\n"
    "  --min-rate R     the throughput floor: alert when the job made fewer than R calls per\n"
    "                   second over the last --stall seconds while it is alive\n"
    "exit status: 0 no alert, 1 at least one alert, 2 usage error, 3 directory unreadable, or\n"
    "(--job) the endpoint unreachable, 401 or not a /status at the first poll\n";

int ncg_watch_args(int argc, char **argv, struct ncg_watch *w, struct ncg_watch_opts *o)
{
    memset(w, 0, sizeof(*w));
    memset(o, 0, sizeof(*o));
    w->stall_s = 60;
    w->pw_util = 90;
    w->pw_idle = 0.25;
    o->interval = 1;
    o->clean = 1;
    int err = 0;
    const char *token = NULL;
    for (int i = 1; i < argc; i++) {
        const char *val;
        int r;
        if (ncg_cli_help(argv[i], usage))
            return NCG_CLI_OK;
        if (strcmp(argv[i], "--json") == 0) {
            w->json = 1;
        } else if (strcmp(argv[i], "--once") == 0) {
            o->once = 1;
        } else if (strcmp(argv[i], "--exit-on-alert") == 0) {
            o->exit_on_alert = 1;
        } else if (strcmp(argv[i], "--no-clean") == 0) {
            o->clean = 0;
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--stall", &val)) != 0) {
            if (r < 0 || ncg_cli_parse_secs(val, &w->stall_s) < 0)
                return ncg_cli_usage_error(usage, "watch: --stall needs a number of seconds");
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--interval", &val)) != 0) {
            if (r < 0 || ncg_cli_parse_secs(val, &o->interval) < 0 || o->interval < 0.05)
                return ncg_cli_usage_error(usage, "watch: --interval needs seconds >= 0.05");
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--exec", &val)) != 0) {
            if (r < 0 || !*val)
                return ncg_cli_usage_error(usage, "watch: --exec needs a command");
            w->exec = val;
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--power-util", &val)) != 0) {
            char *end;
            w->pw_util = r > 0 ? strtod(val, &end) : -1;
            if (r < 0 || end == val || *end || w->pw_util < 0 || w->pw_util > 100)
                return ncg_cli_usage_error(usage, "watch: --power-util needs a percentage");
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--power-idle", &val)) != 0) {
            char *end;
            w->pw_idle = r > 0 ? strtod(val, &end) : -1;
            if (r < 0 || end == val || *end || w->pw_idle < 0 || w->pw_idle > 1)
                return ncg_cli_usage_error(usage, "watch: --power-idle needs a fraction 0..1");
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--job", &o->job)) != 0) {
            if (r < 0 || !*o->job)
                return ncg_cli_usage_error(usage, "watch: --job needs a URL or a job file");
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--token", &token)) != 0) {
            if (r < 0)
                return ncg_cli_usage_error(usage, "watch: --token needs a value");
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--min-rate", &val)) != 0) {
            char *end;
            w->rate.floor = r > 0 ? strtod(val, &end) : 0;
            if (r < 0 || end == val || *end || !(w->rate.floor > 0))
                return ncg_cli_usage_error(usage, "watch: --min-rate needs calls per second > 0");
        } else if ((err = ncg_cli_scan_last(argc, argv, &i, &o->scan, "watch", usage)) != 0) {
            return err;
        }
    }
    if ((token || w->rate.floor > 0) && !o->job)
        return ncg_cli_usage_error(usage, "watch: --token and --min-rate go with --job");
    if ((err = ncg_cli_job_open(o->job, token, &o->scan, "watch", usage, &o->src)) != 0)
        return err;
    if (o->job)
        w->url = o->src.url;
    return -1;
}
