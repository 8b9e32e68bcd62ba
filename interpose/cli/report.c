/* `ncclguard report DIR`: merges the per-rank JSON reports of a job (docs/report-format.md,
 * version 1) into one account per verdict: the communicator, the calls and the ranks behind
 * each, slot counts, per-rank call sites and actions, and which ranks left no report. A report
 * speaks for the comm ranks it names ("ranks", else "rank"); one written after its process left
 * the communicator ("rank": -1) is matched by its global rank to the members, else by its pid
 * and host to a dump of that process, else shown by pid and host, never as rank -1. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"
#include "json.h"
#include "site.h"
#include "verdict.h"

/* "rank" or "ranks" for a compact list ("3" / "0-2,4"). */
static const char *rk(const char *list)
{
    return strpbrk(list, ",-") ? "ranks" : "rank";
}

static const char usage[] =
    "usage: ncclguard report DIR [--json]\n"
    "  merges DIR/ncclguard-report.*.json (one per process, written on a verdict) into one\n"
    "  account\n"
    "  --json  print a JSON document (format ncclguard-job-report, version 1)\n"
    "exit status: 0 merged (or no report found), 2 usage error, 3 DIR unreadable\n";

#define MAX_REPORT_BYTES (4u << 20)

#define REP_MAX_RANKS 64 /* comm ranks one report (one process) speaks for */

struct rep {
    char file[PATH_MAX];
    struct ncg_json *j;
    int rank;   /* its first comm rank, -1 when unknown (the sort key) */
    int nranks; /* the comm ranks it speaks for, ascending; 0: unknown */
    int ranks[REP_MAX_RANKS];
};

struct group {
    const struct ncg_json *first; /* the report the group's shared fields come from */
    char key[256];
    struct rep **reps;
    int n, cap;
};

/* A report's call site (its whole demangled name) as a terminal line shows it (site.h: the
 * name's detail gives way, never an identifier). Static storage: one at a time. */
static const char *term_site(const char *site)
{
    static char t[NCG_SITE_FULL];
    ncg_site_fit(t, sizeof t, site, NCG_SITE_WIDTH);
    return t;
}

static int ival(const struct ncg_json *o, const char *k, int dflt)
{
    return (int)ncg_cli_json_n(o, k, dflt);
}

/* "AllReduce(count=1, float32, sum, root=0)" from a report's call object. */
static void fmt_jcall(char *buf, size_t len, const struct ncg_json *c)
{
    const struct ncg_json *op = ncg_cli_json_get(c, "op");
    const struct ncg_json *root = ncg_cli_json_get(c, "root");
    const char *func = ncg_cli_json_s(c, "func", "?");
    if (!strcmp(func, "CommSplit")) { /* only the function is compared */
        snprintf(buf, len, "%s()", func);
        return;
    }
    int n = snprintf(buf, len, "%s(count=%.0f, %s", func, ncg_cli_json_n(c, "count", -1),
                     ncg_cli_json_s(c, "dtype", "?"));
    if (n >= 0 && (size_t)n < len && op && op->type == NCG_JSON_STRING)
        n += snprintf(buf + n, len - (size_t)n, ", %s", op->str);
    if (n >= 0 && (size_t)n < len && root && root->type == NCG_JSON_NUMBER)
        n +=
            snprintf(buf + n, len - (size_t)n, ", %s=%.0f",
                     (!strcmp(func, "Send") || !strcmp(func, "Recv")) ? "peer" : "root", root->num);
    if (n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ")");
}

/* By first comm rank; reports without one last, by global rank, then pid. */
static int by_rank(const void *a, const void *b)
{
    const struct rep *x = *(struct rep *const *)a, *y = *(struct rep *const *)b;
    if ((x->rank < 0) != (y->rank < 0))
        return x->rank < 0 ? 1 : -1;
    if (x->rank != y->rank)
        return (x->rank > y->rank) - (x->rank < y->rank);
    int gx = ival(x->j, "global_rank", -1), gy = ival(y->j, "global_rank", -1);
    if (gx != gy)
        return (gx > gy) - (gx < gy);
    return (ival(x->j, "pid", -1) > ival(y->j, "pid", -1)) -
           (ival(x->j, "pid", -1) < ival(y->j, "pid", -1));
}

static int by_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void add_rank(struct rep *r, int v)
{
    for (int k = 0; k < r->nranks; k++)
        if (r->ranks[k] == v)
            return;
    if (r->nranks < REP_MAX_RANKS)
        r->ranks[r->nranks++] = v;
}

static int covers(const struct rep *r, int v)
{
    for (int k = 0; k < r->nranks; k++)
        if (r->ranks[k] == v)
            return 1;
    return 0;
}

/* The global rank of comm rank i: from the first report of g whose comm.members knows it. */
static int member_of(const struct group *g, int i)
{
    for (int k = 0; k < g->n; k++) {
        const struct ncg_json *m =
            ncg_cli_json_get(ncg_cli_json_get(g->reps[k]->j, "comm"), "members");
        if (m && m->type == NCG_JSON_ARRAY && (size_t)i < m->n &&
            m->kids[i]->type == NCG_JSON_NUMBER && m->kids[i]->num >= 0)
            return (int)m->kids[i]->num;
    }
    return -1;
}

/* The comm ranks a dump of the report's process (DIR/ncclguard-dump.<host>.<pid>.json, same
 * pid and host inside) held in the communicator id. */
static void ranks_from_dump(struct rep *r, const char *dir, const char *id, int size)
{
    const char *host = ncg_cli_json_s(r->j, "host", "");
    int pid = ival(r->j, "pid", -1);
    char path[PATH_MAX];
    size_t len = 0, at = 0;
    if (!*host || pid <= 0 || !*id || strchr(host, '/'))
        return;
    snprintf(path, sizeof(path), "%s/ncclguard-dump.%s.%d.json", dir, host, pid);
    char *text = ncg_cli_slurp(path, MAX_REPORT_BYTES, &len);
    struct ncg_json *d = text ? ncg_cli_json_parse(text, len, &at) : NULL;
    free(text);
    const struct ncg_json *comms = ncg_cli_json_get(d, "comms");
    if (d && !strcmp(ncg_cli_json_s(d, "format", ""), "ncclguard-dump") &&
        ival(d, "pid", -1) == pid && !strcmp(ncg_cli_json_s(d, "host", ""), host) && comms &&
        comms->type == NCG_JSON_ARRAY)
        for (size_t k = 0; k < comms->n; k++) {
            int v = ival(comms->kids[k], "rank", -1);
            if (!strcmp(ncg_cli_json_s(comms->kids[k], "id", ""), id) && v >= 0 &&
                (size <= 0 || v < size))
                add_rank(r, v);
        }
    ncg_cli_json_free(d);
}

/* The comm ranks each report of g speaks for: its "ranks" array (a process holding several),
 * else its "rank"; a report of a process that had left the communicator ("rank": -1) by its
 * global rank among the members any report of g lists, else by a dump of its process. */
static void resolve_ranks(struct group *g, const char *dir)
{
    const struct ncg_json *comm = ncg_cli_json_get(g->first, "comm");
    int size = ival(comm, "size", 0);
    const char *id = ncg_cli_json_s(comm, "id", "");
    for (int i = 0; i < g->n; i++) {
        struct rep *r = g->reps[i];
        const struct ncg_json *a = ncg_cli_json_get(r->j, "ranks");
        r->nranks = 0;
        for (size_t k = 0; a && a->type == NCG_JSON_ARRAY && k < a->n; k++)
            if (a->kids[k]->type == NCG_JSON_NUMBER && a->kids[k]->num >= 0 &&
                (size <= 0 || a->kids[k]->num < size))
                add_rank(r, (int)a->kids[k]->num);
        int v = ival(r->j, "rank", -1), gr = ival(r->j, "global_rank", -1);
        if (!r->nranks && v >= 0 && (size <= 0 || v < size))
            add_rank(r, v);
        for (int m = 0, by_global = !r->nranks && gr >= 0; by_global && m < size && m < 4096; m++)
            if (member_of(g, m) == gr)
                add_rank(r, m);
        if (!r->nranks)
            ranks_from_dump(r, dir, id, size);
        qsort(r->ranks, (size_t)r->nranks, sizeof(int), by_int);
        r->rank = r->nranks ? r->ranks[0] : -1;
    }
}

/* Who the reports of g with sel[i] set are: "ranks 0-1,3"; a report whose comm rank is unknown
 * as "global rank G" or "pid P on HOST" (with "(comm rank unknown)"). */
static void fmt_who(const struct group *g, const int *sel, char *buf, size_t len)
{
    int v[4096], n = 0, unknown = 0;
    char list[512];
    for (int i = 0; i < g->n; i++)
        for (int k = 0; sel[i] && k < g->reps[i]->nranks && n < 4096; k++)
            v[n++] = g->reps[i]->ranks[k];
    qsort(v, (size_t)n, sizeof(int), by_int);
    int m = 0;
    for (int i = 0; i < n; i++) /* a rank twice (two reports name it) once */
        if (!m || v[m - 1] != v[i])
            v[m++] = v[i];
    ncg_cli_fmt_ranks(list, sizeof(list), v, m);
    size_t o = 0;
    buf[0] = 0;
    if (m)
        o = (size_t)snprintf(buf, len, "%s %s", rk(list), list);
    for (int i = 0; i < g->n && o < len; i++) {
        const struct rep *r = g->reps[i];
        if (!sel[i] || r->nranks)
            continue;
        int gr = ival(r->j, "global_rank", -1);
        const char *sep = o ? (unknown ? ", " : " and ") : "";
        if (gr >= 0)
            o += (size_t)snprintf(buf + o, len - o, "%sglobal rank %d", sep, gr);
        else
            o += (size_t)snprintf(buf + o, len - o, "%spid %d on %s", sep, ival(r->j, "pid", -1),
                                  ncg_cli_json_s(r->j, "host", "?"));
        unknown++;
    }
    if (unknown && o < len)
        snprintf(buf + o, len - o, " (comm rank unknown)");
}

static void add_to(struct group *g, struct rep *r)
{
    if (g->n == g->cap) {
        int nc = g->cap ? g->cap * 2 : 16;
        struct rep **p = realloc(g->reps, sizeof(*p) * (size_t)nc);
        if (!p)
            return;
        g->reps = p;
        g->cap = nc;
    }
    g->reps[g->n++] = r;
}

/* Who of the group's reports (fmt_who) have string field `key` equal to val; marks them used. */
static void ranks_with(const struct group *g, const char *key, const char *val, char *buf,
                       size_t len, int *used)
{
    int *sel = calloc((size_t)g->n + 1, sizeof(int));
    buf[0] = 0;
    if (!sel)
        return;
    for (int i = 0; i < g->n; i++)
        if (!used[i] && strcmp(ncg_cli_json_s(g->reps[i]->j, key, ""), val) == 0)
            sel[i] = used[i] = 1;
    fmt_who(g, sel, buf, len);
    free(sel);
}

/* The "stack" array of a report (frames, innermost first) or NULL when it has none. */
static const struct ncg_json *stack_of(const struct ncg_json *j)
{
    const struct ncg_json *s = ncg_cli_json_get(j, "stack");
    return s && s->type == NCG_JSON_ARRAY && s->n > 0 ? s : NULL;
}

/* A frame's length without its " at file:LINE" (ranks that printed the short diagnostic
 * symbolize their stack without file:line: the same frame). */
static size_t frame_key_len(const char *f)
{
    const char *at = strstr(f, " at ");
    if (!at)
        return strlen(f);
    const char *colon = strrchr(at, ':');
    if (!colon || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1))
        return strlen(f);
    return (size_t)(at - f);
}

static int same_stack(const struct ncg_json *a, const struct ncg_json *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t k = 0; k < a->n; k++) {
        const struct ncg_json *x = a->kids[k], *y = b->kids[k];
        if (x->type != NCG_JSON_STRING || y->type != NCG_JSON_STRING)
            return 0;
        size_t lx = frame_key_len(x->str), ly = frame_key_len(y->str);
        if (lx != ly || strncmp(x->str, y->str, lx))
            return 0;
    }
    return 1;
}

/* How many frames of a stack carry a file:line. */
static size_t stack_lines(const struct ncg_json *s)
{
    size_t n = 0;
    for (size_t k = 0; k < s->n; k++)
        n += s->kids[k]->type == NCG_JSON_STRING &&
             frame_key_len(s->kids[k]->str) != strlen(s->kids[k]->str);
    return n;
}

/* Each distinct stack once, with the ranks whose stuck thread showed it. */
static void print_stacks(const struct group *g, int *used)
{
    char buf[512];
    int header = 0, *sel = calloc((size_t)g->n + 1, sizeof(int));
    for (int i = 0; sel && i < g->n; i++) {
        const struct ncg_json *s = stack_of(g->reps[i]->j);
        if (used[i] || !s)
            continue;
        memset(sel, 0, sizeof(int) * (size_t)g->n);
        for (int k = i; k < g->n; k++) {
            const struct ncg_json *t = stack_of(g->reps[k]->j);
            if (!used[k] && t && same_stack(s, t)) {
                sel[k] = used[k] = 1;
                if (t != s && stack_lines(t) > stack_lines(s))
                    s = t; /* show the copy with the most file:line */
            }
        }
        fmt_who(g, sel, buf, sizeof(buf));
        if (!header++)
            printf("  stacks of the stuck threads (innermost first):\n");
        printf("    %s:\n", buf);
        for (size_t k = 0; k < s->n; k++)
            printf("      #%zu %s\n", k,
                   s->kids[k]->type == NCG_JSON_STRING ? s->kids[k]->str : "?");
    }
    free(sel);
}

/* Merged counts: each rank's own report knows its count best; otherwise the largest seen. */
static long long merged_count(const struct group *g, int idx)
{
    long long best = -1;
    for (int i = 0; i < g->n; i++) {
        const struct ncg_json *c = ncg_cli_json_get(g->reps[i]->j, "counts");
        if (!c || c->type != NCG_JSON_ARRAY || (size_t)idx >= c->n ||
            c->kids[idx]->type != NCG_JSON_NUMBER)
            continue;
        long long v = (long long)c->kids[idx]->num;
        if (covers(g->reps[i], idx) && v >= 0)
            return v;
        if (v > best)
            best = v;
    }
    return best;
}

/* The comm ranks no report speaks for, compact; *unknown: reports whose comm rank is unknown
 * (one of them may be from a rank listed). */
static void missing_ranks(const struct group *g, int size, char *buf, size_t len, int *unknown)
{
    int v[4096], n = 0;
    for (int r = 0; r < size && n < 4096; r++) {
        int have = 0;
        for (int i = 0; i < g->n && !have; i++)
            have = covers(g->reps[i], r);
        if (!have)
            v[n++] = r;
    }
    ncg_cli_fmt_ranks(buf, len, v, n);
    *unknown = 0;
    for (int i = 0; i < g->n; i++)
        *unknown += !g->reps[i]->nranks;
}

static void print_group_text(const struct group *g)
{
    const struct ncg_json *f = g->first;
    const struct ncg_json *comm = ncg_cli_json_get(f, "comm");
    int size = ival(comm, "size", 0);
    char buf[512];
    int sev_error = 0;
    for (int i = 0; i < g->n; i++)
        sev_error |= strcmp(ncg_cli_json_s(g->reps[i]->j, "severity", ""), "error") == 0;
    printf("\nncclguard: %s (%s) on comm %s (size %d)", ncg_cli_json_s(f, "verdict", "?"),
           sev_error ? "error" : "warning", ncg_cli_json_s(comm, "id", "?"), size);
    if (ival(f, "slot", -1) >= 0)
        printf(" at slot %d", ival(f, "slot", -1));
    if (ival(f, "last_agreed_slot", -1) >= 0)
        printf(", last agreed slot %d", ival(f, "last_agreed_slot", -1));
    printf("\n  summary: %s\n", ncg_cli_json_s(f, "summary", ""));
    if (*ncg_cli_json_s(f, "subject_ranks", ""))
        printf("  about ranks: %s\n", ncg_cli_json_s(f, "subject_ranks", ""));
    const struct ncg_json *calls = ncg_cli_json_get(f, "calls");
    for (int i = 0; i < g->n; i++) { /* the report with the most calls describes them best */
        const struct ncg_json *c = ncg_cli_json_get(g->reps[i]->j, "calls");
        if (c && c->type == NCG_JSON_ARRAY && (!calls || c->n > calls->n))
            calls = c;
    }
    if (calls && calls->type == NCG_JSON_ARRAY && calls->n) {
        printf("  calls:\n");
        for (size_t k = 0; k < calls->n; k++) {
            const struct ncg_json *c = calls->kids[k];
            fmt_jcall(buf, sizeof(buf), c);
            printf("    %-48s on %s %s", buf, rk(ncg_cli_json_s(c, "ranks", "?")),
                   ncg_cli_json_s(c, "ranks", "?"));
            const char *gr = ncg_cli_json_s(c, "global_ranks", "");
            if (*gr && strcmp(gr, ncg_cli_json_s(c, "ranks", "")) != 0)
                printf(" (global %s)", gr);
            if (*ncg_cli_json_s(c, "call_site", ""))
                printf("  from %s", term_site(ncg_cli_json_s(c, "call_site", "")));
            printf("\n");
        }
    }
    if (size > 0 && size <= 4096) {
        /* Slot counts grouped: "1235 on ranks 0-2,4-15; 1234 on rank 3". */
        int64_t *cnt = malloc(sizeof(int64_t) * (size_t)size);
        uint8_t *done = calloc((size_t)size, 1);
        int32_t *v = malloc(sizeof(int32_t) * (size_t)size);
        if (cnt && done && v) {
            for (int r = 0; r < size; r++)
                cnt[r] = merged_count(g, r);
            printf("  slot counts:");
            const char *sep = " ";
            for (int r = 0; r < size; r++) {
                int n = (int)ncg_counts_take(cnt, (uint32_t)size, (uint32_t)r, done, v);
                if (!n)
                    continue;
                ncg_cli_fmt_ranks(buf, sizeof(buf), v, n);
                if (cnt[r] >= 0)
                    printf("%s%lld on rank%s %s", sep, (long long)cnt[r], n > 1 ? "s" : "", buf);
                else
                    printf("%sunknown on rank%s %s", sep, n > 1 ? "s" : "", buf);
                sep = "; ";
            }
            printf("\n");
        }
        free(cnt);
        free(done);
        free(v);
    }
    int *used = calloc((size_t)g->n + 1, sizeof(int));
    if (used) {
        printf("  call sites:\n");
        for (int i = 0; i < g->n; i++) {
            if (used[i])
                continue;
            const char *site = ncg_cli_json_s(g->reps[i]->j, "call_site", "");
            ranks_with(g, "call_site", site, buf, sizeof(buf), used);
            printf("    %-48s %s\n", *site ? term_site(site) : "(unknown)", buf);
        }
        memset(used, 0, sizeof(int) * (size_t)g->n);
        print_stacks(g, used);
        memset(used, 0, sizeof(int) * (size_t)g->n);
        printf("  actions:");
        const char *sep = " ";
        for (int i = 0; i < g->n; i++) {
            if (used[i])
                continue;
            const char *act = ncg_cli_json_s(g->reps[i]->j, "action", "?");
            ranks_with(g, "action", act, buf, sizeof(buf), used);
            printf("%s%s on %s", sep, act, buf);
            sep = "; ";
        }
        printf("\n");
        free(used);
    }
    int *all = malloc(sizeof(int) * ((size_t)g->n + 1)), unknown = 0;
    for (int i = 0; all && i < g->n; i++)
        all[i] = 1;
    if (all)
        fmt_who(g, all, buf, sizeof(buf));
    free(all);
    /* a report is one process's: it speaks for every comm rank that process held */
    printf("  reports from %d process%s: %s", g->n, g->n == 1 ? "" : "es", buf);
    if (size > 0 && size <= 4096) {
        missing_ranks(g, size, buf, sizeof(buf), &unknown);
        if (buf[0] && unknown) /* one of those may be from a rank listed */
            printf("; no report names %s %s (%d without a comm rank)", rk(buf), buf, unknown);
        else if (buf[0])
            printf("; no report from %s %s", rk(buf), buf);
        else
            printf(" (all %d rank%s)", size, size == 1 ? "" : "s");
    }
    printf("\n");
    if (*ncg_cli_json_s(f, "detail", ""))
        printf("  detail: %s\n", ncg_cli_json_s(f, "detail", ""));
}

static void json_str_or_null(const struct ncg_json *o, const char *k)
{
    const struct ncg_json *v = ncg_cli_json_get(o, k);
    if (v && v->type == NCG_JSON_STRING)
        ncg_cli_json_str(stdout, v->str);
    else
        fputs("null", stdout);
}

static void json_num_or_null(const struct ncg_json *o, const char *k)
{
    const struct ncg_json *v = ncg_cli_json_get(o, k);
    if (v && v->type == NCG_JSON_NUMBER)
        printf("%.17g", v->num);
    else
        fputs("null", stdout);
}

static void print_group_json(const struct group *g)
{
    const struct ncg_json *f = g->first;
    const struct ncg_json *comm = ncg_cli_json_get(f, "comm");
    int size = ival(comm, "size", 0);
    int sev_error = 0;
    for (int i = 0; i < g->n; i++)
        sev_error |= strcmp(ncg_cli_json_s(g->reps[i]->j, "severity", ""), "error") == 0;
    fputs("{\"verdict\":", stdout);
    json_str_or_null(f, "verdict");
    printf(",\"severity\":\"%s\",\"comm\":{\"id\":", sev_error ? "error" : "warning");
    json_str_or_null(comm, "id");
    printf(",\"size\":%d},\"slot\":%d,\"last_agreed_slot\":%d,\"summary\":", size,
           ival(f, "slot", -1), ival(f, "last_agreed_slot", -1));
    json_str_or_null(f, "summary");
    fputs(",\"subject_ranks\":", stdout);
    json_str_or_null(f, "subject_ranks");
    fputs(",\"calls\":[", stdout);
    const struct ncg_json *calls = ncg_cli_json_get(f, "calls");
    for (int i = 0; i < g->n; i++) {
        const struct ncg_json *c = ncg_cli_json_get(g->reps[i]->j, "calls");
        if (c && c->type == NCG_JSON_ARRAY && (!calls || c->n > calls->n))
            calls = c;
    }
    for (size_t k = 0; calls && calls->type == NCG_JSON_ARRAY && k < calls->n; k++) {
        const struct ncg_json *c = calls->kids[k];
        char buf[256];
        fmt_jcall(buf, sizeof(buf), c);
        printf("%s{\"call\":", k ? "," : "");
        ncg_cli_json_str(stdout, buf);
        fputs(",\"func\":", stdout);
        json_str_or_null(c, "func");
        fputs(",\"count\":", stdout);
        json_num_or_null(c, "count");
        fputs(",\"dtype\":", stdout);
        json_str_or_null(c, "dtype");
        fputs(",\"op\":", stdout);
        json_str_or_null(c, "op");
        fputs(",\"root\":", stdout);
        json_num_or_null(c, "root");
        fputs(",\"ranks\":", stdout);
        json_str_or_null(c, "ranks");
        fputs(",\"global_ranks\":", stdout);
        json_str_or_null(c, "global_ranks");
        fputs(",\"call_site\":", stdout);
        json_str_or_null(c, "call_site");
        fputc('}', stdout);
    }
    fputs("],\"counts\":[", stdout);
    for (int r = 0; r < size && r < 4096; r++)
        printf("%s%lld", r ? "," : "", merged_count(g, r));
    fputs("],\"ranks\":[", stdout);
    for (int i = 0; i < g->n; i++) {
        const struct ncg_json *j = g->reps[i]->j;
        const struct rep *r = g->reps[i];
        if (r->rank >= 0)
            printf("%s{\"rank\":%d,\"comm_ranks\":[", i ? "," : "", r->rank);
        else
            printf("%s{\"rank\":null,\"comm_ranks\":[", i ? "," : "");
        for (int k = 0; k < r->nranks; k++)
            printf("%s%d", k ? "," : "", r->ranks[k]);
        printf("],\"global_rank\":%d,\"host\":", ival(j, "global_rank", -1));
        json_str_or_null(j, "host");
        printf(",\"pid\":%d,\"action\":", ival(j, "pid", -1));
        json_str_or_null(j, "action");
        fputs(",\"exit_status\":", stdout);
        json_num_or_null(j, "exit_status");
        fputs(",\"severity\":", stdout);
        json_str_or_null(j, "severity");
        fputs(",\"call_site\":", stdout);
        json_str_or_null(j, "call_site");
        fputs(",\"stack\":[", stdout);
        const struct ncg_json *st = stack_of(j);
        for (size_t k = 0; st && k < st->n; k++) {
            if (k)
                fputc(',', stdout);
            ncg_cli_json_str(stdout, st->kids[k]->type == NCG_JSON_STRING ? st->kids[k]->str : "?");
        }
        fputc(']', stdout);
        fputs(",\"time_unix\":", stdout);
        json_num_or_null(j, "time_unix");
        fputs(",\"file\":", stdout);
        ncg_cli_json_str(stdout, g->reps[i]->file);
        fputc('}', stdout);
    }
    char buf[512] = "";
    int unknown = 0;
    if (size > 0 && size <= 4096)
        missing_ranks(g, size, buf, sizeof(buf), &unknown);
    fputs("],\"missing_ranks\":", stdout);
    ncg_cli_json_str(stdout, buf);
    int held = 0; /* comm ranks the reports speak for: a process may hold several */
    for (int r = 0; size > 0 && size <= 4096 && r < size; r++)
        for (int i = 0; i < g->n; i++)
            if (covers(g->reps[i], r)) {
                held++;
                break;
            }
    printf(",\"reports_without_comm_rank\":%d,\"processes\":%d,\"ranks_reported\":%d,\"detail\":",
           unknown, g->n, held);
    json_str_or_null(f, "detail");
    fputc('}', stdout);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_report_name(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return strncmp(e->d_name, "ncclguard-report.", 17) == 0 && n > 22 &&
           strcmp(e->d_name + n - 5, ".json") == 0 && !strstr(e->d_name, ".tmp.");
}

/* Reads and parses r->file into r->j: NULL, or why it is not a report of ours. */
static const char *read_report(struct rep *r)
{
    size_t len = 0, at = 0;
    char *text = ncg_cli_slurp(r->file, MAX_REPORT_BYTES, &len);
    r->j = text ? ncg_cli_json_parse(text, len, &at) : NULL;
    free(text);
    if (!text && !r->j)
        return "unreadable or too large";
    if (!r->j)
        return "malformed JSON";
    if (strcmp(ncg_cli_json_s(r->j, "format", ""), "ncclguard-report") != 0)
        return "not an ncclguard report";
    if (ncg_cli_json_n(r->j, "version", 0) != 1)
        return "report format version not 1";
    return NULL;
}

#define NCG_SKIPPED_KEPT 256
struct skipped {
    char *file;
    const char *why;
};

/* --json: the merged document (format ncclguard-job-report). */
static void print_merged_json(const char *dir, int nreps, const struct skipped *bad, int nbad,
                              struct group *groups, int ngroups)
{
    printf("{\"format\":\"ncclguard-job-report\",\"version\":%d,\"dir\":",
           NCG_REPORT_MERGE_FORMAT_VERSION);
    ncg_cli_json_str(stdout, dir);
    printf(",\"reports\":%d,\"skipped\":%d,\"skipped_files\":[", nreps, nbad);
    for (int i = 0; i < nbad && i < NCG_SKIPPED_KEPT; i++) {
        printf("%s{\"file\":", i ? "," : "");
        ncg_cli_json_str(stdout, bad[i].file ? bad[i].file : "");
        printf(",\"reason\":");
        ncg_cli_json_str(stdout, bad[i].why);
        printf("}");
    }
    printf("],\"verdicts\":[");
    for (int g = 0; g < ngroups; g++) {
        if (g)
            fputc(',', stdout);
        print_group_json(&groups[g]);
    }
    fputs("]}\n", stdout);
}

int ncg_cmd_report(int argc, char **argv)
{
    const char *dir = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (ncg_cli_help(argv[i], usage))
            return NCG_CLI_OK;
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return ncg_cli_usage_error(usage, "report: unknown option '%s'", argv[i]);
        } else if (!dir) {
            dir = argv[i];
        } else {
            return ncg_cli_usage_error(usage, "report: unexpected argument '%s'", argv[i]);
        }
    }
    if (!dir)
        return ncg_cli_usage_error(usage, "report: missing DIR");
    struct dirent **names;
    int nn = scandir(dir, &names, is_report_name, by_name);
    if (nn < 0) {
        fprintf(stderr, "ncclguard: report: cannot read %s: %s\n", dir, strerror(errno));
        return NCG_CLI_ERROR;
    }
    struct rep *reps = calloc((size_t)nn + 1, sizeof(*reps));
    struct group *groups = calloc((size_t)nn + 1, sizeof(*groups));
    int nreps = 0, ngroups = 0, nbad = 0;
    struct skipped bad[NCG_SKIPPED_KEPT] = {{0}}; /* the first skipped files, for --json */
    if (!reps || !groups) {
        fprintf(stderr, "ncclguard: out of memory\n");
        return NCG_CLI_ERROR;
    }
    for (int i = 0; i < nn; i++) {
        struct rep *r = &reps[nreps];
        snprintf(r->file, sizeof(r->file), "%s/%s", dir, names[i]->d_name);
        free(names[i]);
        const char *why = read_report(r);
        if (why) {
            fprintf(stderr, "ncclguard: report: skipped %s: %s\n", r->file, why);
            ncg_cli_json_free(r->j);
            if (nbad < NCG_SKIPPED_KEPT) {
                bad[nbad].file = strdup(r->file);
                bad[nbad].why = why;
            }
            nbad++;
            continue;
        }
        const struct ncg_json *comm = ncg_cli_json_get(r->j, "comm");
        char key[256];
        snprintf(key, sizeof(key), "%s|%s|%d", ncg_cli_json_s(r->j, "verdict", ""),
                 ncg_cli_json_s(comm, "id", ""), ival(r->j, "slot", -1));
        int g;
        for (g = 0; g < ngroups; g++)
            if (strcmp(groups[g].key, key) == 0)
                break;
        if (g == ngroups) {
            ngroups++;
            snprintf(groups[g].key, sizeof(groups[g].key), "%s", key);
            groups[g].first = r->j;
        }
        add_to(&groups[g], r);
        nreps++;
    }
    free(names);
    for (int g = 0; g < ngroups; g++) {
        resolve_ranks(&groups[g], dir);
        qsort(groups[g].reps, (size_t)groups[g].n, sizeof(struct rep *), by_rank);
    }
    if (json) {
        print_merged_json(dir, nreps, bad, nbad, groups, ngroups);
    } else {
        printf("ncclguard: report of %s: %d report%s (one per process), %d verdict%s", dir, nreps,
               nreps == 1 ? "" : "s", ngroups, ngroups == 1 ? "" : "s");
        if (nbad)
            printf(", %d file%s skipped", nbad, nbad == 1 ? "" : "s");
        printf("\n");
        for (int g = 0; g < ngroups; g++)
            print_group_text(&groups[g]);
        ncg_report_dumps(dir); /* dumps and Python frames (dumpview.c) */
    }
    for (int i = 0; i < nbad && i < NCG_SKIPPED_KEPT; i++)
        free(bad[i].file);
    for (int g = 0; g < ngroups; g++)
        free(groups[g].reps);
    for (int i = 0; i < nreps; i++)
        ncg_cli_json_free(reps[i].j);
    free(groups);
    free(reps);
    return NCG_CLI_OK;
}
