/* Removing the segments of processes that are gone (pid absent, zombie, or reused: the start
 * time differs), explicitly (`ncclguard clean`) or implicitly from status/watch. A segment whose
 * process is alive is never removed; unlinking never disturbs a mapping still in use anyway. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

static const char usage[] =
    "usage: ncclguard clean [--dry-run] [--grace SECS] [--dir DIR] [--match TEXT] [--quiet]\n"
    "  removes segments whose process is gone (pid absent, zombie, or reused)\n"
    "  --dry-run     print what would be removed, remove nothing\n"
    "  --grace SECS  keep segments active within SECS seconds (default 5; guards against\n"
    "                reading pids from another pid namespace)\n"
    "  --dir DIR     where the segments are (default /dev/shm)\n"
    "  --match TEXT  only processes whose command line contains TEXT\n"
    "  --quiet       print only the summary line (and errors), not one line per removal\n"
    "exit status: 0 done, 2 usage error, 3 directory unreadable or a removal failed\n";

static int comm_has_live_member(const struct ncg_snap *s, uint64_t comm_id)
{
    for (int m = 0; m < s->nmembers; m++)
        if (s->members[m].comm_id == comm_id && ncg_view_member_active(s, m))
            return 1;
    return 0;
}

static int remove_one(const char *path, const char *why, int dry_run, int quiet, int *failed)
{
    if (dry_run) {
        if (!quiet)
            printf("ncclguard: would remove %s (%s)\n", path, why);
        return 1;
    }
    if (unlink(path) < 0) {
        if (errno == ENOENT)
            return 0; /* its process or another cleaner removed it meanwhile */
        if (!quiet)
            fprintf(stderr, "ncclguard: cannot remove %s: %s\n", path, strerror(errno));
        (*failed)++;
        return 0;
    }
    if (!quiet)
        printf("ncclguard: removed %s (%s)\n", path, why);
    return 1;
}

static int clean_impl(const struct ncg_snap *s, double grace_s, int dry_run, int implicit,
                      int quiet, int *failed)
{
    int n = 0;
    for (int i = 0; i < s->nprocs; i++) {
        const struct ncg_cli_proc *p = &s->procs[i];
        if (p->live != NCG_LIVE_DEAD && p->live != NCG_LIVE_EXITED)
            continue;
        /* Re-check now: the snapshot may be seconds old (status --watch). */
        const char *why;
        if (p->live == NCG_LIVE_DEAD &&
            ncg_cli_pid_live(p->pid, p->start_ticks, &why) != NCG_LIVE_DEAD)
            continue;
        if (p->live == NCG_LIVE_EXITED &&
            ncg_cli_pid_live(p->pid, p->start_ticks, &why) != NCG_LIVE_DEAD)
            continue; /* exited cleanly, its atexit is about to unlink it */
        double idle = p->activity_ns && p->activity_ns < s->now_ns
                          ? (double)(s->now_ns - p->activity_ns) / 1e9
                          : 0;
        if (p->activity_ns && idle < grace_s)
            continue;
        if (implicit) {
            int keep = 0;
            for (int k = 0; k < p->nmembers && !keep; k++)
                keep = comm_has_live_member(s, s->members[p->first_member + k].comm_id);
            if (keep)
                continue;
        }
        char reason[96];
        snprintf(reason, sizeof(reason), "pid %d %s", (int)p->pid,
                 p->live == NCG_LIVE_EXITED    ? "exited"
                 : ncg_cli_ended_by_verdict(p) ? "ended after a verdict"
                                               : p->live_why);
        n += remove_one(p->path, reason, dry_run, quiet, failed);
    }
    if (implicit)
        return n;
    /* Unusable files named like our segments (old layout, never initialised): only by the pid
     * in their name, which must be gone. */
    for (int i = 0; i < s->nskips; i++) {
        const struct ncg_cli_skip *k = &s->skips[i];
        const char *why;
        if (k->pid <= 0 || ncg_cli_pid_live(k->pid, 0, &why) != NCG_LIVE_DEAD)
            continue;
        char reason[160];
        snprintf(reason, sizeof(reason), "pid %d %s; %s", (int)k->pid, why, k->why);
        n += remove_one(k->path, reason, dry_run, quiet, failed);
    }
    return n;
}

int ncg_cli_clean_dead(const struct ncg_snap *s, double grace_s, int dry_run, int implicit,
                       int quiet)
{
    int failed = 0;
    return clean_impl(s, grace_s, dry_run, implicit, quiet, &failed);
}

int ncg_cmd_clean(int argc, char **argv)
{
    struct ncg_scan_opts o = {NULL, NULL};
    int dry = 0, quiet = 0;
    double grace = 5;
    int err = 0;
    for (int i = 1; i < argc; i++) {
        const char *val;
        int r;
        if (ncg_cli_help(argv[i], usage))
            return NCG_CLI_OK;
        if (strcmp(argv[i], "--dry-run") == 0 || strcmp(argv[i], "-n") == 0) {
            dry = 1;
        } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
            quiet = 1;
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--grace", &val)) != 0) {
            if (r < 0 || ncg_cli_parse_secs(val, &grace) < 0)
                return ncg_cli_usage_error(usage, "clean: --grace needs a number of seconds");
        } else if ((err = ncg_cli_scan_last(argc, argv, &i, &o, "clean", usage)) != 0) {
            return err;
        }
    }
    struct ncg_snap s;
    if (ncg_cli_snap_take(&s, &o) < 0)
        return NCG_CLI_ERROR;
    int failed = 0;
    int n = clean_impl(&s, grace, dry, 0, quiet, &failed);
    if (!quiet)
        printf("ncclguard: %s %d segment%s, %d kept\n", dry ? "would remove" : "removed", n,
               n == 1 ? "" : "s", s.nprocs + s.nskips - n);
    ncg_snap_free(&s);
    return failed ? NCG_CLI_ERROR : NCG_CLI_OK;
}
