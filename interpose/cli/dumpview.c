/* The second half of `ncclguard report DIR` (text): the dumps in DIR (ncclguard-dump.*.json,
 * written by `ncclguard dump` or NCCLGUARD_DUMP_ON_WARN=1) grouped per communicator by what each
 * rank's latest call was and where its thread is (Python frames, else native), identical groups
 * once with their ranks in compact form, the odd ones out (smallest groups) first, and a line per
 * communicator whose SLOW warning they hold; and the Python frames of the verdict reports,
 * grouped the same way. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "json.h"

#define MAX_DUMP_BYTES (16u << 20)

struct entry {
    char comm[32];
    int nranks, rank, grank;
    char call[256];
    char *where; /* frames joined by '\n' */
    char tail[600];
};

struct grp {
    const struct entry *first;
    int ranks[4096], granks[4096], n;
};

static char *join(const struct ncg_json *a)
{
    size_t n = 1;
    for (size_t i = 0; a && a->type == NCG_JSON_ARRAY && i < a->n; i++)
        if (a->kids[i]->type == NCG_JSON_STRING)
            n += strlen(a->kids[i]->str) + 1;
    char *s = calloc(1, n);
    for (size_t i = 0; s && a && a->type == NCG_JSON_ARRAY && i < a->n; i++)
        if (a->kids[i]->type == NCG_JSON_STRING) {
            strcat(s, a->kids[i]->str);
            strcat(s, "\n");
        }
    return s;
}

/* Python frames of a verdict report as "file:line in fn\n..." (source of the innermost in tail). */
static char *py_join(const struct ncg_json *py, char *tail, size_t cap)
{
    const struct ncg_json *fr = ncg_cli_json_get(py, "frames");
    size_t n = 1;
    tail[0] = 0;
    for (size_t i = 0; fr && fr->type == NCG_JSON_ARRAY && i < fr->n; i++)
        n += strlen(ncg_cli_json_s(fr->kids[i], "file", "")) +
             strlen(ncg_cli_json_s(fr->kids[i], "function", "")) + 32;
    char *s = calloc(1, n);
    for (size_t i = 0; s && fr && fr->type == NCG_JSON_ARRAY && i < fr->n; i++) {
        const struct ncg_json *f = fr->kids[i];
        size_t l = strlen(s);
        snprintf(s + l, n - l, "%s:%.0f in %s\n", ncg_cli_json_s(f, "file", "?"),
                 ncg_cli_json_n(f, "line", -1), ncg_cli_json_s(f, "function", "?"));
        if (i == 0)
            snprintf(tail, cap, "%s", ncg_cli_json_s(f, "source", ""));
    }
    return s;
}

static int by_size(const void *a, const void *b)
{
    const struct grp *x = a, *y = b;
    int c = strcmp(x->first->comm, y->first->comm);
    if (c)
        return c;
    return (x->n > y->n) - (x->n < y->n);
}

static void print_groups(struct entry *e, int ne, const char *what)
{
    struct grp *g = calloc((size_t)ne + 1, sizeof *g);
    int ng = 0;
    char buf[1024];
    if (!g)
        return;
    for (int i = 0; i < ne; i++) {
        int k;
        for (k = 0; k < ng; k++)
            if (!strcmp(g[k].first->comm, e[i].comm) && !strcmp(g[k].first->call, e[i].call) &&
                !strcmp(g[k].first->where, e[i].where))
                break;
        if (k == ng)
            g[ng++].first = &e[i];
        if (g[k].n < 4096) {
            g[k].granks[g[k].n] = e[i].grank;
            g[k].ranks[g[k].n++] = e[i].rank;
        }
    }
    qsort(g, (size_t)ng, sizeof *g, by_size);
    const char *comm = "";
    for (int k = 0; k < ng; k++) {
        const struct entry *f = g[k].first;
        int tot = 0;
        for (int j = 0; j < ng; j++)
            tot += !strcmp(g[j].first->comm, f->comm) ? g[j].n : 0;
        if (strcmp(comm, f->comm)) {
            comm = f->comm;
            int nd = 0;
            for (int j = 0; j < ng; j++)
                nd += !strcmp(g[j].first->comm, comm);
            printf("ncclguard: %s, comm %s (%d ranks): %d distinct, odd ones first\n", what, comm,
                   f->nranks, nd);
        }
        ncg_cli_sort_ints(g[k].ranks, g[k].n); /* for the compact form */
        ncg_cli_fmt_ranks(buf, sizeof buf, g[k].ranks, g[k].n);
        printf("ncclguard:   %s %s (%d of %d)%s%s\n", g[k].n > 1 ? "ranks" : "rank", buf, g[k].n,
               tot, f->call[0] ? ": " : "", f->call);
        int line = 0;
        for (const char *p = f->where; *p && line < 12; line++) {
            const char *q = strchr(p, '\n');
            int len = q ? (int)(q - p) : (int)strlen(p);
            printf("ncclguard:       %.*s\n", len, p);
            if (line == 0 && f->tail[0])
                printf("ncclguard:           %s\n", f->tail);
            p = q ? q + 1 : p + len;
        }
        if (!f->where[0])
            printf("ncclguard:       (no stack)\n");
    }
    free(g);
}

static int is_name(const struct dirent *d, const char *prefix)
{
    size_t n = strlen(d->d_name), pl = strlen(prefix);
    return strncmp(d->d_name, prefix, pl) == 0 && n > pl + 5 &&
           !strcmp(d->d_name + n - 5, ".json") && !strstr(d->d_name, ".tmp.");
}
static int is_dump(const struct dirent *d)
{
    return is_name(d, "ncclguard-dump.");
}
static int is_report(const struct dirent *d)
{
    return is_name(d, "ncclguard-report.");
}

/* A zeroed entry appended to *e (grown as needed), for rank `rank` (global grank) of the
 * communicator `comm` of nranks ranks. */
static struct entry *add_entry(struct entry **e, int *ne, int *cap, const char *comm, int nranks,
                               int rank, int grank)
{
    if (*ne == *cap)
        *e = realloc(*e, sizeof **e * (size_t)(*cap = *cap ? *cap * 2 : 64));
    struct entry *x = &(*e)[(*ne)++];
    memset(x, 0, sizeof *x);
    snprintf(x->comm, sizeof x->comm, "%s", comm);
    x->nranks = nranks;
    x->rank = rank;
    x->grank = grank;
    return x;
}

/* A comm's SLOW as the dumps show it: the latest warning (the newest episode: least since_s,
 * as the dumps are taken within seconds of each other) and how many dumps hold one. */
struct slow_seen {
    char comm[32];
    struct ncg_snap_slow w;
    int n;
};
#define MAX_SLOW_COMMS 64

static void slow_note(struct slow_seen *sl, int *n, const char *comm, const struct ncg_json *o)
{
    if (!o || o->type != NCG_JSON_OBJECT)
        return;
    int k = 0;
    while (k < *n && strcmp(sl[k].comm, comm))
        k++;
    if (k == MAX_SLOW_COMMS)
        return;
    double since = ncg_cli_json_n(o, "since_s", 0);
    if (k == *n) {
        memset(&sl[k], 0, sizeof sl[k]);
        snprintf(sl[k].comm, sizeof sl[k].comm, "%s", comm);
        (*n)++;
    } else if (since >= sl[k].w.since_s) {
        sl[k].n++;
        return;
    }
    sl[k].n++;
    sl[k].w = (struct ncg_snap_slow){.rank = (int32_t)ncg_cli_json_n(o, "rank", -1),
                                     .global_rank = (int32_t)ncg_cli_json_n(o, "global_rank", -1),
                                     .pid = (uint32_t)ncg_cli_json_n(o, "pid", 0),
                                     .share = ncg_cli_json_n(o, "share", 0),
                                     .since_s = since,
                                     .device = !strcmp(ncg_cli_json_s(o, "side", ""), "gpu"),
                                     .member = -1};
}

int ncg_report_dumps(const char *dir)
{
    static struct slow_seen sl[MAX_SLOW_COMMS];
    int nsl = 0;
    struct dirent **names;
    struct entry *e = NULL;
    int ne = 0, cap = 0, ndumps = 0;
    for (int pass = 0; pass < 2; pass++) {
        int nn = scandir(dir, &names, pass ? is_dump : is_report, alphasort);
        if (nn < 0)
            continue;
        ne = 0;
        for (int i = 0; i < nn; i++) {
            char path[PATH_MAX];
            size_t len = 0, at = 0;
            snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
            free(names[i]);
            char *text = ncg_cli_slurp(path, MAX_DUMP_BYTES, &len);
            struct ncg_json *j = text ? ncg_cli_json_parse(text, len, &at) : NULL;
            free(text);
            if (!j)
                continue;
            const char *fmt = ncg_cli_json_s(j, "format", "");
            int grank = (int)ncg_cli_json_n(j, "global_rank", -1);
            if (pass == 0 && !strcmp(fmt, "ncclguard-report")) {
                const struct ncg_json *py = ncg_cli_json_get(j, "python_stack");
                const struct ncg_json *comm = ncg_cli_json_get(j, "comm");
                if (py && py->type == NCG_JSON_OBJECT) {
                    struct entry *x = add_entry(&e, &ne, &cap, ncg_cli_json_s(comm, "id", "?"),
                                                (int)ncg_cli_json_n(comm, "size", 0),
                                                (int)ncg_cli_json_n(j, "rank", -1), grank);
                    x->where = py_join(py, x->tail, sizeof x->tail);
                }
            } else if (pass == 1 && !strcmp(fmt, "ncclguard-dump")) {
                ndumps++;
                const struct ncg_json *cs = ncg_cli_json_get(j, "comms");
                for (size_t c = 0; cs && cs->type == NCG_JSON_ARRAY && c < cs->n; c++) {
                    const struct ncg_json *cm = cs->kids[c], *l = ncg_cli_json_get(cm, "latest");
                    struct entry *x = add_entry(&e, &ne, &cap, ncg_cli_json_s(cm, "id", "?"),
                                                (int)ncg_cli_json_n(cm, "nranks", 0),
                                                (int)ncg_cli_json_n(cm, "rank", -1), grank);
                    snprintf(x->call, sizeof x->call, "%.0f calls issued, latest %s",
                             ncg_cli_json_n(cm, "calls_issued", 0),
                             l && l->type == NCG_JSON_OBJECT ? ncg_cli_json_s(l, "call", "?")
                                                             : "none");
                    /* The count is part of what makes a rank odd: equal counts group. */
                    x->where = join(l ? ncg_cli_json_get(l, "where") : NULL);
                    slow_note(sl, &nsl, ncg_cli_json_s(cm, "id", "?"),
                              ncg_cli_json_get(cm, "slow"));
                }
            }
            ncg_cli_json_free(j);
        }
        free(names);
        if (ne && e)
            print_groups(e, ne,
                         pass ? "dumps: latest call and where its thread is"
                              : "python stacks of the stuck threads in the reports");
        for (int i = 0; i < ne; i++)
            free(e[i].where);
        for (int k = 0; pass == 1 && k < nsl; k++) {
            char line[512];
            ncg_cli_fmt_slow(line, sizeof line, &sl[k].w);
            printf("ncclguard: dumps: SLOW on comm %s: %s (the latest SLOW warning in %d dump%s)\n",
                   sl[k].comm, line, sl[k].n, sl[k].n == 1 ? "" : "s");
        }
        if (pass == 1 && ndumps)
            printf("ncclguard: %d dump%s in %s\n", ndumps, ndumps == 1 ? "" : "s", dir);
    }
    free(e);
    return ndumps;
}
