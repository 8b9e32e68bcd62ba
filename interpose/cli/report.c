/* `ncclguard report DIR`: merges the per-rank JSON reports of a job (docs/report-format.md,
 * version 1) into one account per verdict: the communicator, the calls and the ranks behind
 * each, slot counts, per-rank call sites and actions, and which ranks left no report. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"
#include "json.h"

/* "rank" or "ranks" for a compact list ("3" / "0-2,4"). */
static const char *rk(const char *list)
{
    return strpbrk(list, ",-") ? "ranks" : "rank";
}

static const char usage[] =
    "usage: ncclguard report DIR [--json]\n"
    "  merges DIR/ncclguard-report.*.json (one per rank, written on a verdict) into one account\n"
    "  --json  print a JSON document (format ncclguard-job-report, version 1)\n"
    "exit status: 0 merged (or no report found), 2 usage error, 3 DIR unreadable\n";

#define MAX_REPORT_BYTES (4u << 20)

struct rep {
    char file[PATH_MAX];
    struct ncg_json *j;
    int rank;
};

struct group {
    const struct ncg_json *first; /* the report the group's shared fields come from */
    char key[256];
    struct rep **reps;
    int n, cap;
};

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char *buf = malloc(MAX_REPORT_BYTES + 1);
    if (!buf) {
        fclose(f);
        return NULL;
    }
    *len = fread(buf, 1, MAX_REPORT_BYTES + 1, f);
    fclose(f);
    if (*len > MAX_REPORT_BYTES) {
        free(buf);
        return NULL;
    }
    buf[*len] = 0;
    return buf;
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

static int by_rank(const void *a, const void *b)
{
    const struct rep *x = *(struct rep *const *)a, *y = *(struct rep *const *)b;
    return (x->rank > y->rank) - (x->rank < y->rank);
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

/* Ranks of the group's reports whose string field `key` equals val, compact, into buf. */
static void ranks_with(const struct group *g, const char *key, const char *val, char *buf,
                       size_t len, int *used)
{
    int v[4096], n = 0;
    for (int i = 0; i < g->n && n < 4096; i++) {
        const char *s = ncg_cli_json_s(g->reps[i]->j, key, "");
        if (!used[i] && strcmp(s, val) == 0) {
            v[n++] = g->reps[i]->rank;
            used[i] = 1;
        }
    }
    ncg_cli_fmt_ranks(buf, len, v, n);
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
    int header = 0;
    for (int i = 0; i < g->n; i++) {
        const struct ncg_json *s = stack_of(g->reps[i]->j);
        if (used[i] || !s)
            continue;
        int v[4096], n = 0;
        for (int k = i; k < g->n && n < 4096; k++) {
            const struct ncg_json *t = stack_of(g->reps[k]->j);
            if (!used[k] && t && same_stack(s, t)) {
                v[n++] = g->reps[k]->rank;
                used[k] = 1;
                if (t != s && stack_lines(t) > stack_lines(s))
                    s = t; /* show the copy with the most file:line */
            }
        }
        ncg_cli_fmt_ranks(buf, sizeof(buf), v, n);
        if (!header++)
            printf("  stacks of the stuck threads (innermost first):\n");
        printf("    rank%s %s:\n", n > 1 ? "s" : "", buf);
        for (size_t k = 0; k < s->n; k++)
            printf("      #%zu %s\n", k,
                   s->kids[k]->type == NCG_JSON_STRING ? s->kids[k]->str : "?");
    }
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
        if (g->reps[i]->rank == idx && v >= 0)
            return v;
        if (v > best)
            best = v;
    }
    return best;
}

static void missing_ranks(const struct group *g, int size, char *buf, size_t len)
{
    int v[4096], n = 0;
    for (int r = 0; r < size && n < 4096; r++) {
        int have = 0;
        for (int i = 0; i < g->n && !have; i++)
            have = g->reps[i]->rank == r;
        if (!have)
            v[n++] = r;
    }
    ncg_cli_fmt_ranks(buf, len, v, n);
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
                printf("  from %s", ncg_cli_json_s(c, "call_site", ""));
            printf("\n");
        }
    }
    if (size > 0 && size <= 4096) {
        /* Slot counts grouped: "1235 on ranks 0-2,4-15; 1234 on rank 3". */
        long long *cnt = malloc(sizeof(long long) * (size_t)size);
        char *done = calloc((size_t)size, 1);
        int *v = malloc(sizeof(int) * (size_t)size);
        if (cnt && done && v) {
            for (int r = 0; r < size; r++)
                cnt[r] = merged_count(g, r);
            printf("  slot counts:");
            const char *sep = " ";
            for (int r = 0; r < size; r++) {
                if (done[r])
                    continue;
                int n = 0;
                for (int q = r; q < size; q++)
                    if (!done[q] && cnt[q] == cnt[r]) {
                        v[n++] = q;
                        done[q] = 1;
                    }
                ncg_cli_fmt_ranks(buf, sizeof(buf), v, n);
                if (cnt[r] >= 0)
                    printf("%s%lld on rank%s %s", sep, cnt[r], n > 1 ? "s" : "", buf);
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
            printf("    %-48s %s %s\n", *site ? site : "(unknown)", rk(buf), buf);
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
            printf("%s%s on %s %s", sep, act, rk(buf), buf);
            sep = "; ";
        }
        printf("\n");
        free(used);
    }
    int v[4096], n = 0;
    for (int i = 0; i < g->n && n < 4096; i++)
        v[n++] = g->reps[i]->rank;
    ncg_cli_fmt_ranks(buf, sizeof(buf), v, n);
    printf("  reports from %s %s", rk(buf), buf);
    if (size > 0 && size <= 4096) {
        missing_ranks(g, size, buf, sizeof(buf));
        if (buf[0])
            printf("; no report from %s %s", rk(buf), buf);
        else
            printf(" (every rank)");
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
        printf("%s{\"rank\":%d,\"global_rank\":%d,\"host\":", i ? "," : "", g->reps[i]->rank,
               ival(j, "global_rank", -1));
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
    if (size > 0 && size <= 4096)
        missing_ranks(g, size, buf, sizeof(buf));
    fputs("],\"missing_ranks\":", stdout);
    ncg_cli_json_str(stdout, buf);
    fputs(",\"detail\":", stdout);
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

int ncg_cmd_report(int argc, char **argv)
{
    const char *dir = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (ncg_cli_is_help(argv[i])) {
            fputs(usage, stdout);
            return NCG_CLI_OK;
        } else if (strcmp(argv[i], "--json") == 0) {
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
    struct {
        char *file;
        const char *why;
    } bad[256] = {{0}}; /* the first skipped files, for --json */
    if (!reps || !groups) {
        fprintf(stderr, "ncclguard: out of memory\n");
        return NCG_CLI_ERROR;
    }
    for (int i = 0; i < nn; i++) {
        struct rep *r = &reps[nreps];
        snprintf(r->file, sizeof(r->file), "%s/%s", dir, names[i]->d_name);
        free(names[i]);
        size_t len = 0, at = 0;
        char *text = slurp(r->file, &len);
        r->j = text ? ncg_cli_json_parse(text, len, &at) : NULL;
        free(text);
        const char *why = NULL;
        if (!text && !r->j)
            why = "unreadable or too large";
        else if (!r->j)
            why = "malformed JSON";
        else if (strcmp(ncg_cli_json_s(r->j, "format", ""), "ncclguard-report") != 0)
            why = "not an ncclguard report";
        else if (ncg_cli_json_n(r->j, "version", 0) != 1)
            why = "report format version not 1";
        if (why) {
            fprintf(stderr, "ncclguard: report: skipped %s: %s\n", r->file, why);
            ncg_cli_json_free(r->j);
            if (nbad < (int)(sizeof(bad) / sizeof(bad[0]))) {
                bad[nbad].file = strdup(r->file);
                bad[nbad].why = why;
            }
            nbad++;
            continue;
        }
        r->rank = ival(r->j, "rank", -1);
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
    for (int g = 0; g < ngroups; g++)
        qsort(groups[g].reps, (size_t)groups[g].n, sizeof(struct rep *), by_rank);
    if (json) {
        printf("{\"format\":\"ncclguard-job-report\",\"version\":%d,\"dir\":",
               NCG_REPORT_MERGE_FORMAT_VERSION);
        ncg_cli_json_str(stdout, dir);
        printf(",\"reports\":%d,\"skipped\":%d,\"skipped_files\":[", nreps, nbad);
        for (int i = 0; i < nbad && i < (int)(sizeof(bad) / sizeof(bad[0])); i++) {
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
    } else {
        printf("ncclguard: report of %s: %d rank report%s, %d verdict%s", dir, nreps,
               nreps == 1 ? "" : "s", ngroups, ngroups == 1 ? "" : "s");
        if (nbad)
            printf(", %d file%s skipped", nbad, nbad == 1 ? "" : "s");
        printf("\n");
        for (int g = 0; g < ngroups; g++)
            print_group_text(&groups[g]);
        ncg_report_dumps(dir); /* dumps and Python frames (dumpview.c) */
    }
    for (int i = 0; i < nbad && i < (int)(sizeof(bad) / sizeof(bad[0])); i++)
        free(bad[i].file);
    for (int g = 0; g < ngroups; g++)
        free(groups[g].reps);
    for (int i = 0; i < nreps; i++)
        ncg_cli_json_free(reps[i].j);
    free(groups);
    free(reps);
    return NCG_CLI_OK;
}
