/* How an alert of `ncclguard watch` leaves it: once per event (the keys already raised), as a
 * line or a JSON object (format ncclguard-alert) on stdout, and through the --exec hook, run
 * with sh -c and the alert in NCCLGUARD_ALERT_* variables (reaped between scans). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "watch_int.h"

int ncg_watch_was_seen(const struct ncg_watch *w, const char *key)
{
    for (int i = 0; i < w->nseen; i++)
        if (strcmp(w->seen[i], key) == 0)
            return 1;
    return 0;
}

/* Returns 1 the first time `key` is seen. */
int ncg_watch_first_time(struct ncg_watch *w, const char *key)
{
    if (ncg_watch_was_seen(w, key))
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

void ncg_watch_subject(struct ncg_alert *a, const char *kind, const struct ncg_cli_proc *p,
                       int32_t comm_rank, long long slot)
{
    a->kind = kind;
    a->pid = p->pid;
    a->rank = p->global_rank;
    a->comm_rank = comm_rank;
    a->slot = slot;
    snprintf(a->segment, sizeof(a->segment), "%s", p->path);
}

static void run_hook(struct ncg_watch *w, const struct ncg_alert *a, const char *json)
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

void ncg_watch_emit(struct ncg_watch *w, struct ncg_alert *a)
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
            json_ints(jf, "pids", a->pids, a->nprocs < NCG_ALERT_MAXR ? a->nprocs : NCG_ALERT_MAXR);
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

void ncg_watch_reap_hooks(struct ncg_watch *w, int block)
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
