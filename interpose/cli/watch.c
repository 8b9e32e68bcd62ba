/* `ncclguard watch`: a node-side watchdog that needs nothing from the job. Each scan reads the
 * segments and raises an alert, once per event, when a guarded process died without a clean
 * exit, when local members of a communicator issued different calls at one slot, when they
 * stopped progressing with disagreeing slot counts for --stall seconds, or when a verdict was
 * recorded. Alerts: a line (or JSON object) on stdout, an optional --exec hook, the exit status. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"

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
    "exit status: 0 no alert, 1 at least one alert, 2 usage error, 3 directory unreadable\n";

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

struct watch {
    double stall_s;
    int json;
    const char *exec;
    char host[64];
    char **seen; /* alert keys already raised */
    int nseen, capseen;
    int alerts;
    int hooks_running;
};

/* Returns 1 the first time `key` is seen. */
static int first_time(struct watch *w, const char *key)
{
    for (int i = 0; i < w->nseen; i++)
        if (strcmp(w->seen[i], key) == 0)
            return 0;
    if (w->nseen == w->capseen) {
        int nc = w->capseen ? w->capseen * 2 : 32;
        char **p = realloc(w->seen, sizeof(char *) * (size_t)nc);
        if (!p)
            return 1;
        w->seen = p;
        w->capseen = nc;
    }
    char *k = strdup(key);
    if (k)
        w->seen[w->nseen++] = k;
    return 1;
}

struct alert {
    const char *kind;
    int32_t pid, rank, comm_rank;
    int have_comm;
    uint64_t comm;
    long long slot; /* -1 when not about one slot */
    const char *segment;
    char detail[1024];
};

static void run_hook(struct watch *w, const struct alert *a, const char *json)
{
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "ncclguard: --exec: fork failed: %s\n", strerror(errno));
        return;
    }
    if (pid > 0) {
        w->hooks_running++;
        return;
    }
    char buf[64];
    setenv("NCCLGUARD_ALERT_KIND", a->kind, 1);
    snprintf(buf, sizeof(buf), "%d", (int)a->pid);
    setenv("NCCLGUARD_ALERT_PID", buf, 1);
    snprintf(buf, sizeof(buf), "%d", (int)a->rank);
    setenv("NCCLGUARD_ALERT_RANK", buf, 1);
    snprintf(buf, sizeof(buf), "%d", (int)a->comm_rank);
    setenv("NCCLGUARD_ALERT_COMM_RANK", buf, 1);
    if (a->have_comm)
        snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)a->comm);
    else
        buf[0] = 0;
    setenv("NCCLGUARD_ALERT_COMM", buf, 1);
    snprintf(buf, sizeof(buf), "%lld", a->slot);
    setenv("NCCLGUARD_ALERT_SLOT", a->slot >= 0 ? buf : "", 1);
    setenv("NCCLGUARD_ALERT_HOST", w->host, 1);
    setenv("NCCLGUARD_ALERT_SEGMENT", a->segment ? a->segment : "", 1);
    setenv("NCCLGUARD_ALERT_DETAIL", a->detail, 1);
    setenv("NCCLGUARD_ALERT_JSON", json, 1);
    execl("/bin/sh", "sh", "-c", w->exec, (char *)NULL);
    _exit(127);
}

static void emit(struct watch *w, const struct alert *a)
{
    char *json = NULL;
    size_t jlen = 0;
    FILE *jf = open_memstream(&json, &jlen);
    if (jf) {
        struct timespec rt;
        clock_gettime(CLOCK_REALTIME, &rt);
        fprintf(jf,
                "{\"format\":\"ncclguard-alert\",\"version\":%d,\"kind\":\"%s\",\"time_unix\":%.3f,"
                "\"host\":",
                NCG_ALERT_FORMAT_VERSION, a->kind, (double)rt.tv_sec + rt.tv_nsec / 1e9);
        ncg_cli_json_str(jf, w->host);
        fprintf(jf, ",\"pid\":%d,\"rank\":%d,\"comm_rank\":%d,\"comm\":", (int)a->pid, (int)a->rank,
                (int)a->comm_rank);
        if (a->have_comm)
            fprintf(jf, "\"%016llx\"", (unsigned long long)a->comm);
        else
            fputs("null", jf);
        if (a->slot >= 0)
            fprintf(jf, ",\"slot\":%lld", a->slot);
        else
            fputs(",\"slot\":null", jf);
        fputs(",\"segment\":", jf);
        ncg_cli_json_str(jf, a->segment ? a->segment : "");
        fputs(",\"detail\":", jf);
        ncg_cli_json_str(jf, a->detail);
        fputc('}', jf);
        fclose(jf);
    }
    if (w->json) {
        fputs(json ? json : "{}", stdout);
        fputc('\n', stdout);
    } else {
        printf("ncclguard: ALERT %s host=%s pid=%d rank=%d", a->kind, w->host, (int)a->pid,
               (int)a->rank);
        if (a->have_comm)
            printf(" comm=%016llx", (unsigned long long)a->comm);
        if (a->slot >= 0)
            printf(" slot=%lld", a->slot);
        printf(": %s\n", a->detail);
    }
    fflush(stdout);
    w->alerts++;
    if (w->exec)
        run_hook(w, a, json ? json : "{}");
    free(json);
}

/* The comm of process p with the most slots issued, for context in a died alert. */
static const struct ncg_cli_member *busiest(const struct ncg_snap *s, const struct ncg_cli_proc *p)
{
    const struct ncg_cli_member *b = NULL;
    for (int k = 0; k < p->nmembers; k++) {
        const struct ncg_cli_member *m = &s->members[p->first_member + k];
        if (m->state == NCG_COMM_ACTIVE && (!b || m->coll_seq > b->coll_seq))
            b = m;
    }
    return b;
}

static void scan_procs(struct watch *w, const struct ncg_snap *s)
{
    char key[PATH_MAX + 128];
    for (int i = 0; i < s->nprocs; i++) {
        const struct ncg_cli_proc *p = &s->procs[i];
        struct alert a;
        memset(&a, 0, sizeof(a));
        a.pid = p->pid;
        a.rank = p->global_rank;
        a.comm_rank = -1;
        a.slot = -1;
        a.segment = p->path;
        if (p->live == NCG_LIVE_DEAD) {
            snprintf(key, sizeof(key), "died %s %llu", p->path, (unsigned long long)p->start_ticks);
            if (!first_time(w, key))
                continue;
            a.kind = "died";
            const struct ncg_cli_member *m = busiest(s, p);
            if (m) {
                a.have_comm = 1;
                a.comm = m->comm_id;
                a.comm_rank = m->rank;
                a.slot = (long long)m->coll_seq;
            }
            snprintf(a.detail, sizeof(a.detail),
                     "process ended without a clean exit (%s)%s%s; %d communicator%s, cmdline: %s",
                     p->live_why, p->state == NCG_PROC_VERDICT ? " after a verdict: " : "",
                     p->state == NCG_PROC_VERDICT ? p->verdict_text : "", p->nmembers,
                     p->nmembers == 1 ? "" : "s", p->cmdline);
            emit(w, &a);
        }
        if (p->state == NCG_PROC_VERDICT) {
            snprintf(key, sizeof(key), "verdict %s %llu %u %llx", p->path,
                     (unsigned long long)p->start_ticks, p->verdict_kind,
                     (unsigned long long)p->verdict_comm);
            if (!first_time(w, key))
                continue;
            a.kind = "verdict";
            a.have_comm = 1;
            a.comm = p->verdict_comm;
            a.slot = -1;
            a.comm_rank = -1;
            snprintf(a.detail, sizeof(a.detail), "verdict %s: %s%s%s",
                     ncg_cli_verdict_name(p->verdict_kind), p->verdict_text,
                     p->report_path[0] ? "; report " : "", p->report_path);
            emit(w, &a);
        }
    }
}

static int min_member(const struct ncg_snap *s, const struct ncg_view_call *c)
{
    int best = c->members[0];
    for (int i = 1; i < c->nmembers && i < 64; i++)
        if (s->members[c->members[i]].rank < s->members[best].rank)
            best = c->members[i];
    return best;
}

static void scan_comms(struct watch *w, const struct ncg_snap *s, const struct ncg_view *v)
{
    char key[128];
    for (int k = 0; k < v->ncomms; k++) {
        const struct ncg_view_comm *c = &v->comms[k];
        struct alert a;
        memset(&a, 0, sizeof(a));
        a.have_comm = 1;
        a.comm = c->comm_id;
        if (c->mismatch) {
            snprintf(key, sizeof(key), "mismatch %llx %llu", (unsigned long long)c->comm_id,
                     (unsigned long long)c->mismatch_slot);
            if (first_time(w, key)) {
                /* Name the minority call's lowest rank: usually the odd one out. */
                int minority = 0;
                for (int j = 1; j < c->ncalls; j++)
                    if (c->calls[j].nmembers < c->calls[minority].nmembers)
                        minority = j;
                int m = c->ncalls ? min_member(s, &c->calls[minority]) : c->members[0];
                const struct ncg_cli_proc *p = &s->procs[s->members[m].proc];
                a.kind = "mismatch";
                a.pid = p->pid;
                a.rank = p->global_rank;
                a.comm_rank = s->members[m].rank;
                a.slot = (long long)c->mismatch_slot;
                a.segment = p->path;
                size_t o = (size_t)snprintf(
                    a.detail, sizeof(a.detail),
                    "different calls at one slot%s:", c->mismatch == 2 ? " (digests differ)" : "");
                for (int j = 0; j < c->ncalls && o < sizeof(a.detail); j++) {
                    char call[128], rk[128];
                    int r[64], n = 0;
                    for (int q = 0; q < c->calls[j].nmembers && q < 64; q++)
                        r[n++] = s->members[c->calls[j].members[q]].rank;
                    for (int x = 1; x < n; x++)
                        for (int y = x; y > 0 && r[y - 1] > r[y]; y--) {
                            int t = r[y];
                            r[y] = r[y - 1];
                            r[y - 1] = t;
                        }
                    ncg_cli_fmt_ranks(rk, sizeof(rk), r, n);
                    ncg_cli_fmt_call(call, sizeof(call), &c->calls[j].rec);
                    o += (size_t)snprintf(a.detail + o, sizeof(a.detail) - o, "%s %s on rank%s %s",
                                          j ? ";" : "", call, n > 1 ? "s" : "", rk);
                }
                emit(w, &a);
            }
        }
        if (c->nactive >= 2 && c->max_seq > c->min_seq && c->last_ns && c->last_ns <= s->now_ns &&
            (double)(s->now_ns - c->last_ns) / 1e9 >= w->stall_s) {
            snprintf(key, sizeof(key), "stall %llx %llu %llu", (unsigned long long)c->comm_id,
                     (unsigned long long)c->min_seq, (unsigned long long)c->max_seq);
            if (first_time(w, key)) {
                int idx[64], n = 0, ranks[64];
                for (int i = 0; i < c->nmembers && n < 64; i++)
                    if (ncg_view_is_behind(s, c, c->members[i])) {
                        idx[n] = c->members[i];
                        ranks[n] = s->members[idx[n]].rank;
                        n++;
                    }
                char rk[128];
                ncg_cli_fmt_ranks(rk, sizeof(rk), ranks, n);
                const struct ncg_cli_proc *p = &s->procs[s->members[idx[0]].proc];
                a.kind = "stall";
                a.pid = p->pid;
                a.rank = p->global_rank;
                a.comm_rank = s->members[idx[0]].rank;
                a.slot = (long long)c->min_seq;
                a.segment = p->path;
                snprintf(
                    a.detail, sizeof(a.detail),
                    "no call for %.0fs while slot counts disagree (%llu..%llu); behind: rank%s %s",
                    (double)(s->now_ns - c->last_ns) / 1e9, (unsigned long long)c->min_seq,
                    (unsigned long long)c->max_seq, n > 1 ? "s" : "", rk);
                emit(w, &a);
            }
        }
    }
}

static void reap_hooks(struct watch *w, int block)
{
    while (w->hooks_running > 0) {
        pid_t r = waitpid(-1, NULL, block ? 0 : WNOHANG);
        if (r > 0)
            w->hooks_running--;
        else if (r < 0 && errno == EINTR)
            continue;
        else
            break;
    }
}

int ncg_cmd_watch(int argc, char **argv)
{
    struct ncg_scan_opts o = {NULL, NULL};
    struct watch w;
    memset(&w, 0, sizeof(w));
    w.stall_s = 60;
    double interval = 1;
    int once = 0, exit_on_alert = 0, clean = 1;
    int err = 0;
    for (int i = 1; i < argc; i++) {
        const char *val;
        int r;
        if (ncg_cli_is_help(argv[i])) {
            fputs(usage, stdout);
            return NCG_CLI_OK;
        } else if (strcmp(argv[i], "--json") == 0) {
            w.json = 1;
        } else if (strcmp(argv[i], "--once") == 0) {
            once = 1;
        } else if (strcmp(argv[i], "--exit-on-alert") == 0) {
            exit_on_alert = 1;
        } else if (strcmp(argv[i], "--no-clean") == 0) {
            clean = 0;
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--stall", &val)) != 0) {
            if (r < 0 || ncg_cli_parse_secs(val, &w.stall_s) < 0)
                return ncg_cli_usage_error(usage, "watch: --stall needs a number of seconds");
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--interval", &val)) != 0) {
            if (r < 0 || ncg_cli_parse_secs(val, &interval) < 0 || interval < 0.05)
                return ncg_cli_usage_error(usage, "watch: --interval needs seconds >= 0.05");
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--exec", &val)) != 0) {
            if (r < 0 || !*val)
                return ncg_cli_usage_error(usage, "watch: --exec needs a command");
            w.exec = val;
        } else if (ncg_cli_scan_opt(argc, argv, &i, &o, "watch", usage, &err)) {
            if (err)
                return err;
        } else {
            return ncg_cli_usage_error(usage, "watch: unexpected argument '%s'", argv[i]);
        }
    }
    gethostname(w.host, sizeof(w.host) - 1);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int rc = NCG_CLI_OK;
    while (!stop_flag) {
        struct ncg_snap s;
        struct ncg_view v;
        int e = ncg_snap_take(&s, &o);
        if (e < 0) {
            fprintf(stderr, "ncclguard: cannot read %s: %s\n", o.dir ? o.dir : "/dev/shm",
                    strerror(-e));
            rc = NCG_CLI_ERROR;
            break;
        }
        if (ncg_view_build(&s, &v) == 0) {
            scan_procs(&w, &s);
            scan_comms(&w, &s, &v);
            ncg_view_free(&v);
        }
        if (clean)
            ncg_cli_clean_dead(&s, 3600, 0, 1, 1);
        ncg_snap_free(&s);
        reap_hooks(&w, 0);
        if (once || (exit_on_alert && w.alerts))
            break;
        struct timespec ts = {(time_t)interval,
                              (long)((interval - (double)(time_t)interval) * 1e9)};
        nanosleep(&ts, NULL);
    }
    reap_hooks(&w, 1); /* let the hooks of the last alerts finish before we report */
    for (int i = 0; i < w.nseen; i++)
        free(w.seen[i]);
    free(w.seen);
    if (rc != NCG_CLI_OK)
        return rc;
    return w.alerts ? NCG_CLI_ALERT : NCG_CLI_OK;
}
