/* `ncclguard watch`: a node-side watchdog that needs nothing from the job. Each scan reads the
 * segments and raises an alert, once per event, when a guarded process died without a clean
 * exit, when local members of a communicator issued different calls at one slot, when they
 * stopped progressing with disagreeing slot counts for --stall seconds, or when a verdict was
 * recorded: one alert per verdict for all the processes here that recorded it (a process ended
 * by the verdict's action is not also reported as died). Alerts: a line (or JSON object) on
 * stdout, an optional --exec hook, the exit status. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "json.h"

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

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

#define ALERT_MAXR 256 /* ranks listed in one alert's JSON arrays */
#define SETTLE_SCANS 5 /* a verdict alert waits at most this many scans for more ranks */
#define SETTLE_S 0.2   /* time between scans while a verdict alert waits */

struct alert {
    const char *kind;
    int32_t pid, rank, comm_rank;
    int have_comm;
    uint64_t comm;
    long long slot; /* -1 when not about one slot */
    char segment[PATH_MAX];
    char detail[2048];
    char ranks_txt[256]; /* compact global ranks ("0-15"), "" when unknown */
    int group;           /* 1: a verdict alert for several processes (the fields below) */
    int nprocs, nranks, ncomm_ranks;
    int ranks[ALERT_MAXR], comm_ranks[ALERT_MAXR], pids[ALERT_MAXR];
    char reports[512];
};

/* A verdict seen but not raised yet: it waits until no more processes record it. */
struct pending {
    char key[64];
    int nprocs; /* processes that recorded it at the last scan */
    int scans;
    int present; /* seen in the current scan */
    struct alert a;
    int have_culprit; /* a local mismatch on the comm named its odd rank: the alert's subject */
    int32_t cpid, crank, ccomm_rank;
    char csegment[PATH_MAX];
};

/* A local mismatch held back for a moment: the checker's verdict on the same communicator
 * usually follows within a fraction of a second, and the incident then gets one alert (the
 * verdict, naming the mismatch's odd rank). Raised alone when no verdict comes. */
struct held {
    char key[128];
    uint64_t comm;
    int scans;
    struct alert a;
};

/* The job's throughput (--job): samples of its call total, newest last, over the window. */
#define RATE_SAMPLES 4096
struct rate {
    double floor; /* --min-rate; 0: off */
    double t[RATE_SAMPLES];
    double calls[RATE_SAMPLES];
    int n;
    int alerted;      /* raised for the current incident: re-armed once the rate is back */
    double fail_t0;   /* first failed poll of the current run of failures, 0: none */
    int fail_alerted; /* an unreachable alert was raised for that run */
    int finished;     /* the last answer had no active member */
};

struct watch {
    double stall_s;
    int json;
    const char *exec;
    char host[64];
    char **seen; /* alert keys already raised */
    int nseen, capseen;
    int alerts;
    int hooks_running;
    struct pending *pending;
    int npending, cappending;
    struct held *held;
    int nheld, capheld;
    struct rate rate;
    const char *url;         /* --job */
    double pw_util, pw_idle; /* the power signature's thresholds: percent, fraction of limit */
    int pw_alerted;          /* raised for the current incident; re-armed once none shows it */
};

static int was_seen(const struct watch *w, const char *key)
{
    for (int i = 0; i < w->nseen; i++)
        if (strcmp(w->seen[i], key) == 0)
            return 1;
    return 0;
}

/* Returns 1 the first time `key` is seen. */
/* Appends "; stopped: rank R (pid P), ..." for the members of c whose process is stopped
 * (SIGSTOP, a debugger): the reason a stall or a stuck slot does not move. */
static void add_stopped(const struct ncg_snap *s, const struct ncg_view_comm *c, char *d,
                        size_t cap)
{
    size_t o = strlen(d);
    int n = 0;
    for (int i = 0; i < c->nmembers && o + 1 < cap; i++) {
        const struct ncg_cli_member *m = &s->members[c->members[i]];
        const struct ncg_cli_proc *p = &s->procs[m->proc];
        if (p->live != NCG_LIVE_ALIVE || !p->live_why || strcmp(p->live_why, NCG_LIVE_STOPPED))
            continue;
        o += (size_t)snprintf(d + o, cap - o, "%s rank %d (pid %d)",
                              n++ ? "," : "; stopped:", (int)m->rank, (int)p->pid);
    }
    if (n && o + 1 < cap)
        snprintf(d + o, cap - o, ": SIGSTOP or a debugger, it runs nothing until continued");
}

static int first_time(struct watch *w, const char *key)
{
    if (was_seen(w, key))
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
    setenv("NCCLGUARD_ALERT_RANKS", a->ranks_txt, 1);
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
    setenv("NCCLGUARD_ALERT_SEGMENT", a->segment, 1);
    setenv("NCCLGUARD_ALERT_REPORTS", a->reports, 1);
    setenv("NCCLGUARD_ALERT_DETAIL", a->detail, 1);
    setenv("NCCLGUARD_ALERT_JSON", json, 1);
    execl("/bin/sh", "sh", "-c", w->exec, (char *)NULL);
    _exit(127);
}

static void json_ints(FILE *f, const char *name, const int *v, int n)
{
    fprintf(f, ",\"%s\":[", name);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? "," : "", v[i]);
    fputc(']', f);
}

static void emit(struct watch *w, struct alert *a)
{
    if (!a->group && a->rank >= 0 && !a->ranks_txt[0]) {
        snprintf(a->ranks_txt, sizeof(a->ranks_txt), "%d", (int)a->rank);
        a->ranks[0] = a->rank;
        a->nranks = 1;
    }
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
        ncg_cli_json_str(jf, a->segment);
        json_ints(jf, "ranks", a->ranks, a->nranks);
        if (a->group) {
            fprintf(jf, ",\"processes\":%d", a->nprocs);
            json_ints(jf, "comm_ranks", a->comm_ranks, a->ncomm_ranks);
            json_ints(jf, "pids", a->pids, a->nprocs < ALERT_MAXR ? a->nprocs : ALERT_MAXR);
            fputs(",\"reports\":", jf);
            ncg_cli_json_str(jf, a->reports);
        }
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
        /* A process that recorded a verdict and ended was (with the default action) ended by
         * ncclguard: the verdict alert covers it. */
        if (p->live != NCG_LIVE_DEAD || p->state == NCG_PROC_VERDICT)
            continue;
        snprintf(key, sizeof(key), "died %s %llu", p->path, (unsigned long long)p->start_ticks);
        if (!first_time(w, key))
            continue;
        struct alert a;
        memset(&a, 0, sizeof(a));
        a.kind = "died";
        a.pid = p->pid;
        a.rank = p->global_rank;
        a.comm_rank = -1;
        a.slot = -1;
        snprintf(a.segment, sizeof(a.segment), "%s", p->path);
        const struct ncg_cli_member *m = busiest(s, p);
        if (m) {
            a.have_comm = 1;
            a.comm = m->comm_id;
            a.comm_rank = m->rank;
            a.slot = (long long)m->coll_seq;
        }
        snprintf(a.detail, sizeof(a.detail),
                 "process ended without a clean exit (%s); %d communicator%s, cmdline: %s",
                 p->live_why, p->nmembers, p->nmembers == 1 ? "" : "s", p->cmdline);
        emit(w, &a);
    }
}

/* The alert for the processes of g (g->procs[0] has the lowest rank). */
static void verdict_alert(struct alert *a, const struct ncg_snap *s, const struct ncg_vgroup *g)
{
    const struct ncg_cli_proc *p = &s->procs[g->procs[0]];
    memset(a, 0, sizeof(*a));
    a->kind = "verdict";
    a->group = 1;
    a->pid = p->pid;
    a->rank = p->global_rank;
    a->comm_rank = ncg_cli_proc_comm_rank(s, g->procs[0], g->comm);
    a->have_comm = 1;
    a->comm = g->comm;
    a->slot = -1;
    snprintf(a->segment, sizeof(a->segment), "%s", p->path);
    a->nprocs = g->nprocs;
    int *r = calloc((size_t)g->nprocs + 1, sizeof(int));
    if (r) {
        int n = ncg_vgroup_ranks(s, g, 0, r);
        ncg_cli_fmt_ranks(a->ranks_txt, sizeof(a->ranks_txt), r, n);
        a->nranks = n < ALERT_MAXR ? n : ALERT_MAXR;
        memcpy(a->ranks, r, sizeof(int) * (size_t)a->nranks);
        n = ncg_vgroup_ranks(s, g, 1, r);
        a->ncomm_ranks = n < ALERT_MAXR ? n : ALERT_MAXR;
        memcpy(a->comm_ranks, r, sizeof(int) * (size_t)a->ncomm_ranks);
        free(r);
    }
    for (int i = 0; i < g->nprocs && i < ALERT_MAXR; i++)
        a->pids[i] = s->procs[g->procs[i]].pid;
    ncg_vgroup_reports(s, g, a->reports, sizeof(a->reports));
    ncg_vgroup_fmt(a->detail, sizeof(a->detail), s, g);
}

#define HOLD_SCANS 5 /* a mismatch waits at most this many scans for the checker's verdict */

static int verdict_seen(const struct watch *w, uint64_t comm)
{
    char key[64];
    for (unsigned kind = 1; kind < 16; kind++) {
        snprintf(key, sizeof(key), "verdict %016llx %u", (unsigned long long)comm, kind);
        if (was_seen(w, key))
            return 1;
    }
    return 0;
}

static struct pending *pending_for(struct watch *w, uint64_t comm)
{
    char pre[32];
    snprintf(pre, sizeof(pre), "verdict %016llx ", (unsigned long long)comm);
    for (int i = 0; i < w->npending; i++)
        if (strncmp(w->pending[i].key, pre, strlen(pre)) == 0)
            return &w->pending[i];
    return NULL;
}

static void take_culprit(struct pending *pd, const struct alert *m)
{
    pd->have_culprit = 1;
    pd->cpid = m->pid;
    pd->crank = m->rank;
    pd->ccomm_rank = m->comm_rank;
    snprintf(pd->csegment, sizeof(pd->csegment), "%s", m->segment);
}

static void drop_held(struct watch *w, int i)
{
    w->nheld--;
    memmove(&w->held[i], &w->held[i + 1], sizeof(w->held[0]) * (size_t)(w->nheld - i));
}

/* A verdict on comm is about to be raised, or was: a held mismatch on it becomes its culprit. */
static void absorb_held(struct watch *w, struct pending *pd, uint64_t comm)
{
    for (int i = 0; i < w->nheld;)
        if (w->held[i].comm == comm) {
            if (pd && !pd->have_culprit)
                take_culprit(pd, &w->held[i].a);
            drop_held(w, i);
        } else {
            i++;
        }
}

static void hold_mismatch(struct watch *w, const char *key, const struct alert *a)
{
    struct pending *pd = pending_for(w, a->comm);
    if (pd || verdict_seen(w, a->comm)) { /* the verdict is (or was) the incident's alert */
        if (pd && !pd->have_culprit)
            take_culprit(pd, a);
        return;
    }
    if (w->nheld == w->capheld) {
        int nc = w->capheld ? w->capheld * 2 : 4;
        struct held *nh = realloc(w->held, sizeof(*nh) * (size_t)nc);
        if (!nh) {
            emit(w, (struct alert *)a);
            return;
        }
        w->held = nh;
        w->capheld = nc;
    }
    struct held *h = &w->held[w->nheld++];
    memset(h, 0, sizeof(*h));
    snprintf(h->key, sizeof(h->key), "%s", key);
    h->comm = a->comm;
    h->a = *a;
}

/* Held mismatches whose verdict did not come: raised alone. all: every one (watch ends). */
static void flush_held(struct watch *w, int all)
{
    for (int i = 0; i < w->nheld;)
        if (all || ++w->held[i].scans >= HOLD_SCANS) {
            struct alert a = w->held[i].a;
            drop_held(w, i);
            emit(w, &a);
        } else {
            i++;
        }
}

static void raise_pending(struct watch *w, int i)
{
    struct pending *pd = &w->pending[i];
    absorb_held(w, pd, pd->a.comm);
    if (pd->have_culprit) { /* the alert is about the odd rank; `ranks` still lists all */
        pd->a.pid = pd->cpid;
        pd->a.rank = pd->crank;
        pd->a.comm_rank = pd->ccomm_rank;
        snprintf(pd->a.segment, sizeof(pd->a.segment), "%s", pd->csegment);
    }
    first_time(w, w->pending[i].key);
    emit(w, &w->pending[i].a);
    w->npending--;
    memmove(&w->pending[i], &w->pending[i + 1], sizeof(w->pending[0]) * (size_t)(w->npending - i));
}

/* One verdict alert per (communicator, kind) for all the processes here that recorded it.
 * Raised once a scan finds no more of them than the scan before (the ranks of a job record a
 * verdict within milliseconds of each other), or after SETTLE_SCANS scans. */
static void scan_verdicts(struct watch *w, const struct ncg_snap *s)
{
    struct ncg_vgroup *g;
    int ng = ncg_vgroups_build(s, 0, &g);
    if (ng < 0)
        return;
    for (int i = 0; i < w->npending; i++)
        w->pending[i].present = 0;
    for (int k = 0; k < ng; k++) {
        char key[64];
        snprintf(key, sizeof(key), "verdict %016llx %u", (unsigned long long)g[k].comm, g[k].kind);
        if (was_seen(w, key))
            continue;
        int i;
        for (i = 0; i < w->npending; i++)
            if (strcmp(w->pending[i].key, key) == 0)
                break;
        if (i == w->npending) {
            if (w->npending == w->cappending) {
                int nc = w->cappending ? w->cappending * 2 : 4;
                struct pending *np = realloc(w->pending, sizeof(*np) * (size_t)nc);
                if (!np)
                    continue;
                w->pending = np;
                w->cappending = nc;
            }
            memset(&w->pending[i], 0, sizeof(w->pending[i]));
            snprintf(w->pending[i].key, sizeof(w->pending[i].key), "%s", key);
            w->pending[i].nprocs = -1;
            w->npending++;
        }
        struct pending *pd = &w->pending[i];
        int settled = g[k].nprocs == pd->nprocs;
        pd->present = 1;
        pd->nprocs = g[k].nprocs;
        pd->scans++;
        verdict_alert(&pd->a, s, &g[k]);
        if (settled || pd->scans >= SETTLE_SCANS)
            pd->present = -1; /* raise below */
    }
    ncg_vgroups_free(g, ng);
    /* Raise the settled ones, and those whose processes are no longer seen (as last seen). */
    for (int i = 0; i < w->npending;)
        if (w->pending[i].present != 1)
            raise_pending(w, i);
        else
            i++;
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
                snprintf(a.segment, sizeof(a.segment), "%s", p->path);
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
                hold_mismatch(w, key, &a);
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
                snprintf(a.segment, sizeof(a.segment), "%s", p->path);
                snprintf(
                    a.detail, sizeof(a.detail),
                    "no call for %.0fs while slot counts disagree (%llu..%llu); behind: rank%s %s",
                    (double)(s->now_ns - c->last_ns) / 1e9, (unsigned long long)c->min_seq,
                    (unsigned long long)c->max_seq, n > 1 ? "s" : "", rk);
                add_stopped(s, c, a.detail, sizeof a.detail);
                emit(w, &a);
            }
        }
        /* Equal counts, the last slot issued everywhere here and completed nowhere: a hang
         * inside NCCL, not a desync (the checker's STUCK; this is the node's own view). */
        uint64_t min_done = UINT64_MAX;
        int first = -1;
        for (int i = 0; i < c->nmembers; i++) {
            const struct ncg_cli_member *m = &s->members[c->members[i]];
            if (m->state != NCG_COMM_ACTIVE)
                continue;
            if (m->coll_done < min_done) {
                min_done = m->coll_done;
                first = c->members[i];
            }
        }
        if (c->nactive >= 2 && c->max_seq == c->min_seq && first >= 0 && min_done < c->min_seq &&
            c->last_ns && c->last_ns <= s->now_ns &&
            (double)(s->now_ns - c->last_ns) / 1e9 >= w->stall_s) {
            snprintf(key, sizeof(key), "stuck %llx %llu", (unsigned long long)c->comm_id,
                     (unsigned long long)min_done);
            if (first_time(w, key)) {
                const struct ncg_cli_proc *p = &s->procs[s->members[first].proc];
                a.kind = "stuck";
                a.pid = p->pid;
                a.rank = p->global_rank;
                a.comm_rank = s->members[first].rank;
                a.slot = (long long)min_done;
                snprintf(a.segment, sizeof(a.segment), "%s", p->path);
                snprintf(a.detail, sizeof(a.detail),
                         "slot %llu issued by all %d ranks here, not completed on rank %d (issued "
                         "%llu, completed %llu) for %.0fs",
                         (unsigned long long)min_done, c->nactive, (int)s->members[first].rank,
                         (unsigned long long)c->min_seq, (unsigned long long)min_done,
                         (double)(s->now_ns - c->last_ns) / 1e9);
                add_stopped(s, c, a.detail, sizeof a.detail);
                emit(w, &a);
            }
        }
    }
}

/* The job's call total: per communicator its fastest member's count (slots the communicator
 * went through), summed. 1 in *alive when some member is still active. */
static double job_calls(const struct ncg_snap *s, const struct ncg_view *v, int *alive)
{
    double total = 0;
    *alive = 0;
    for (int k = 0; k < v->ncomms; k++) {
        uint64_t mx = 0;
        for (int i = 0; i < v->comms[k].nmembers; i++) {
            const struct ncg_cli_member *m = &s->members[v->comms[k].members[i]];
            mx = m->coll_seq > mx ? m->coll_seq : mx;
            *alive |= m->state == NCG_COMM_ACTIVE;
        }
        total += (double)mx;
    }
    return total;
}

static double now_s(void)
{
    return (double)ncg_cli_mono_ns() / 1e9;
}

/* An alert about the whole job (--job): no process, rank or slot; the endpoint's URL. */
static void job_alert(struct watch *w, const char *kind, const char *detail)
{
    struct alert a;
    memset(&a, 0, sizeof(a));
    a.kind = kind;
    a.pid = -1;
    a.rank = -1;
    a.comm_rank = -1;
    a.slot = -1;
    snprintf(a.segment, sizeof(a.segment), "%s", w->url);
    snprintf(a.detail, sizeof(a.detail), "%s", detail);
    emit(w, &a);
}

/* One sample (a failed poll repeats the last total: no progress seen). Raises the throughput
 * alert once when, over a full --stall window, the job made fewer than --min-rate calls per
 * second while alive; the rate back above the floor re-arms it. */
static void rate_sample(struct watch *w, double total, int alive, const char *why)
{
    struct rate *r = &w->rate;
    double t = now_s();
    if (r->n == RATE_SAMPLES) {
        memmove(r->t, r->t + 1, sizeof(r->t[0]) * (RATE_SAMPLES - 1));
        memmove(r->calls, r->calls + 1, sizeof(r->calls[0]) * (RATE_SAMPLES - 1));
        r->n--;
    }
    if (total < 0) /* failed poll */
        total = r->n ? r->calls[r->n - 1] : 0;
    r->t[r->n] = t;
    r->calls[r->n] = total;
    r->n++;
    int i = 0; /* oldest sample still inside the window (keep one at or before its start) */
    while (i + 1 < r->n && r->t[i + 1] <= t - w->stall_s)
        i++;
    if (i) {
        memmove(r->t, r->t + i, sizeof(r->t[0]) * (size_t)(r->n - i));
        memmove(r->calls, r->calls + i, sizeof(r->calls[0]) * (size_t)(r->n - i));
        r->n -= i;
    }
    if (r->floor <= 0 || !alive)
        return;
    double span = t - r->t[0];
    if (span < w->stall_s)
        return; /* not watched for a full window yet */
    double rate = (total - r->calls[0]) / span;
    if (rate >= r->floor) {
        r->alerted = 0;
        return;
    }
    if (r->alerted)
        return;
    r->alerted = 1;
    char d[sizeof(((struct alert *)0)->detail)];
    snprintf(d, sizeof(d),
             "the job made %.2f calls/s over the last %.0fs, below the floor of %g calls/s%s%s",
             rate, span, r->floor, why ? "; " : "", why ? why : "");
    job_alert(w, "rate", d);
}

/* A failed poll of the endpoint (the first poll failing ends watch before this). Refused:
 * nothing listens any more, the checker's process exited (the job ended, or rank 0 did):
 * watch ends. Else (no answer, a timeout: a frozen job, or its checker) the silence feeds the
 * throughput floor; without one, one "unreachable" alert per run of failures that lasts
 * --stall seconds. Returns -1 to end watch. */
static int poll_failed(struct watch *w, int rc, const char *err)
{
    struct rate *r = &w->rate;
    double t = now_s();
    if (!r->fail_t0)
        r->fail_t0 = t;
    if (rc == -ECONNREFUSED) {
        fprintf(stderr, "ncclguard: the job ended%s: %s\n",
                r->finished ? " (every rank had left)" : " (or its checker's process did)", err);
        return -1;
    }
    rate_sample(w, -1, 1, err);
    if (r->fail_alerted || r->alerted || t - r->fail_t0 < w->stall_s)
        return 0;
    r->fail_alerted = 1;
    char d[sizeof(((struct alert *)0)->detail)];
    snprintf(d, sizeof(d), "the status endpoint did not answer for %.0fs: %s", t - r->fail_t0, err);
    job_alert(w, "unreachable", d);
    return 0;
}

/* A poll of --job: 0 with the snapshot, 1 after a failure (handled) or on the first answer after
 * failures (not judged), -1 to stop with an error
 * printed (first poll, 401, not a /status), -2 to stop: the job ended. */
static int job_poll(struct watch *w, const struct ncg_job_src *j, int first, struct ncg_snap *s)
{
    struct ncg_json *doc;
    char err[1024];
    int rc = ncg_job_fetch(j, NCG_JOB_TIMEOUT_S, &doc, NULL, err, sizeof err);
    if (rc != 0 && (first || rc == -EACCES || rc == -EBADMSG)) {
        fprintf(stderr, "ncclguard: %s\n", err);
        return -1;
    }
    if (rc != 0)
        return poll_failed(w, rc, err) < 0 ? -2 : 1;
    if (first) {
        snprintf(w->host, sizeof(w->host), "%s",
                 ncg_cli_json_s(ncg_cli_json_get(doc, "checker"), "host", w->host));
    }
    rc = ncg_job_snap(doc, j->url, s);
    ncg_cli_json_free(doc);
    if (rc != 0) {
        fprintf(stderr, "ncclguard: out of memory\n");
        return -1;
    }
    int recovered = w->rate.fail_t0 != 0;
    w->rate.fail_t0 = 0;
    w->rate.fail_alerted = 0;
    /* The first answer after the checker was unreachable (its process stopped, like the rest
     * of the job) describes the job as it was when it froze, ages grown since: judged, it
     * would read as a stall of every call in flight. The next poll judges fresh counts. */
    if (recovered) {
        ncg_snap_free(s);
        return 1;
    }
    return 0;
}

/* The incident's power signature (NVML, this host): a rank whose GPU is busy (utilization >=
 * --power-util) at near-idle board power (<= --power-idle of its enforced limit) while it made
 * no NCCL call for --stall seconds: kernels spinning on a peer that never comes. One alert for
 * all the ranks showing it; re-armed when none does. */
static void scan_power(struct watch *w, const struct ncg_snap *s)
{
    int ranks[ALERT_MAXR], n = 0, first = -1;
    char buses[512] = "";
    double quiet = 0;
    for (int i = 0; i < s->nprocs; i++) {
        const struct ncg_cli_proc *p = &s->procs[i];
        if (!p->gpu_ok || p->gpu_limit_w <= 0 || p->gpu_util < w->pw_util ||
            p->gpu_power_w > w->pw_idle * p->gpu_limit_w ||
            (p->live != NCG_LIVE_ALIVE && p->live != NCG_LIVE_VERDICT))
            continue;
        uint64_t last = 0;
        int active = 0;
        for (int k = 0; k < p->nmembers; k++) {
            const struct ncg_cli_member *m = &s->members[p->first_member + k];
            active |= m->state == NCG_COMM_ACTIVE;
            last = m->last_ns > last ? m->last_ns : last;
        }
        double idle = last && last <= s->now_ns ? (double)(s->now_ns - last) / 1e9 : 0;
        if (!active || idle < w->stall_s)
            continue;
        if (first < 0)
            first = i, quiet = idle;
        if (n < ALERT_MAXR)
            ranks[n++] = p->global_rank;
        size_t o = strlen(buses);
        snprintf(buses + o, sizeof(buses) - o, "%s%s %u%% %.0f/%.0fW", o ? ", " : "", p->bus_id,
                 p->gpu_util, p->gpu_power_w, p->gpu_limit_w);
    }
    if (first < 0) {
        w->pw_alerted = 0;
        return;
    }
    if (w->pw_alerted)
        return;
    w->pw_alerted = 1;
    const struct ncg_cli_proc *p = &s->procs[first];
    struct alert a;
    memset(&a, 0, sizeof(a));
    a.kind = "power";
    a.pid = p->pid;
    a.rank = p->global_rank;
    a.comm_rank = p->nmembers ? s->members[p->first_member].rank : -1;
    a.slot = -1;
    snprintf(a.segment, sizeof(a.segment), "%s", p->path);
    for (int x = 1; x < n; x++) /* sorted for the compact list */
        for (int y = x; y > 0 && ranks[y - 1] > ranks[y]; y--) {
            int t = ranks[y];
            ranks[y] = ranks[y - 1];
            ranks[y - 1] = t;
        }
    memcpy(a.ranks, ranks, sizeof(int) * (size_t)n);
    a.nranks = n;
    ncg_cli_fmt_ranks(a.ranks_txt, sizeof(a.ranks_txt), ranks, n);
    snprintf(a.detail, sizeof(a.detail),
             "GPU busy at idle power with no NCCL call for %.0fs on rank%s %s (utilization >= "
             "%.0f%%, power <= %.0f%% of the limit): %s",
             quiet, n > 1 ? "s" : "", a.ranks_txt, w->pw_util, w->pw_idle * 100, buses);
    emit(w, &a);
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
    w.pw_util = 90;
    w.pw_idle = 0.25;
    double interval = 1;
    int once = 0, exit_on_alert = 0, clean = 1;
    int err = 0;
    const char *job = NULL, *token = NULL;
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
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--power-util", &val)) != 0) {
            char *end;
            w.pw_util = r > 0 ? strtod(val, &end) : -1;
            if (r < 0 || end == val || *end || w.pw_util < 0 || w.pw_util > 100)
                return ncg_cli_usage_error(usage, "watch: --power-util needs a percentage");
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--power-idle", &val)) != 0) {
            char *end;
            w.pw_idle = r > 0 ? strtod(val, &end) : -1;
            if (r < 0 || end == val || *end || w.pw_idle < 0 || w.pw_idle > 1)
                return ncg_cli_usage_error(usage, "watch: --power-idle needs a fraction 0..1");
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--job", &job)) != 0) {
            if (r < 0 || !*job)
                return ncg_cli_usage_error(usage, "watch: --job needs a URL or a job file");
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--token", &token)) != 0) {
            if (r < 0)
                return ncg_cli_usage_error(usage, "watch: --token needs a value");
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--min-rate", &val)) != 0) {
            char *end;
            w.rate.floor = r > 0 ? strtod(val, &end) : 0;
            if (r < 0 || end == val || *end || !(w.rate.floor > 0))
                return ncg_cli_usage_error(usage, "watch: --min-rate needs calls per second > 0");
        } else if (ncg_cli_scan_opt(argc, argv, &i, &o, "watch", usage, &err)) {
            if (err)
                return err;
        } else {
            return ncg_cli_usage_error(usage, "watch: unexpected argument '%s'", argv[i]);
        }
    }
    if ((token || w.rate.floor > 0) && !job)
        return ncg_cli_usage_error(usage, "watch: --token and --min-rate go with --job");
    if (job && (o.dir || o.match))
        return ncg_cli_usage_error(usage, "watch: --job reads no segments (--dir, --match)");
    struct ncg_job_src src;
    char jerr[1024];
    if (job && ncg_job_open(job, token, &src, jerr, sizeof jerr) != 0) {
        fprintf(stderr, "ncclguard: %s\n", jerr);
        return NCG_CLI_ERROR;
    }
    if (job)
        w.url = src.url;
    gethostname(w.host, sizeof(w.host) - 1);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int rc = NCG_CLI_OK;
    for (int first = 1; !stop_flag; first = 0) {
        struct ncg_snap s;
        struct ncg_view v;
        if (job) {
            int e = job_poll(&w, &src, first, &s);
            if (e < 0) {
                rc = e == -1 ? NCG_CLI_ERROR : NCG_CLI_OK;
                break;
            }
            if (e > 0)
                goto next;
        } else {
            int e = ncg_snap_take(&s, &o);
            if (e < 0) {
                fprintf(stderr, "ncclguard: cannot read %s: %s\n", o.dir ? o.dir : "/dev/shm",
                        strerror(-e));
                rc = NCG_CLI_ERROR;
                break;
            }
        }
        char why[200];
        if (!job)
            s.gpus = ncg_nvml_fill(&s, why, sizeof why);
        if (ncg_view_build(&s, &v) == 0) {
            if (s.gpus)
                scan_power(&w, &s);
            scan_procs(&w, &s);
            scan_comms(&w, &s, &v); /* before the verdicts: a mismatch names their culprit */
            scan_verdicts(&w, &s);
            flush_held(&w, 0);
            if (job) {
                int alive;
                double total = job_calls(&s, &v, &alive);
                w.rate.finished = !alive;
                rate_sample(&w, total, alive, NULL);
            }
            ncg_view_free(&v);
        }
        if (clean && !job)
            ncg_cli_clean_dead(&s, 3600, 0, 1, 1);
        ncg_snap_free(&s);
    next:
        reap_hooks(&w, 0);
        /* A verdict alert waiting for more ranks gets one more, quick, scan. */
        if ((once || (exit_on_alert && w.alerts)) && !w.npending && !w.nheld)
            break;
        double next = (w.npending || w.nheld) && interval > SETTLE_S ? SETTLE_S : interval;
        struct timespec ts = {(time_t)next, (long)((next - (double)(time_t)next) * 1e9)};
        nanosleep(&ts, NULL);
    }
    while (w.npending) /* interrupted while a verdict alert waited: raise it as it is */
        raise_pending(&w, 0);
    flush_held(&w, 1);
    reap_hooks(&w, 1); /* let the hooks of the last alerts finish before we report */
    for (int i = 0; i < w.nseen; i++)
        free(w.seen[i]);
    free(w.seen);
    free(w.pending);
    free(w.held);
    if (rc != NCG_CLI_OK)
        return rc;
    return w.alerts ? NCG_CLI_ALERT : NCG_CLI_OK;
}
