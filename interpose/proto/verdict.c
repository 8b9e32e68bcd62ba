/* Verdict data and the pure logic around it (verdict.h): names, call comparison and
 * formatting, compact rank lists, grouping calls at a slot, and the verdict's wire payload. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ncclguard/shm.h"
#include "verdict.h"
#include "ncclguard/signal.h"
#include "wire_io.h"

struct ncg_verdict *ncg_verdict_new(uint32_t nranks)
{
    if (nranks > NCG_WIRE_MAX_RANKS)
        return NULL;
    struct ncg_verdict *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->nranks = nranks;
    v->narr = nranks;
    v->slot = -1;
    v->last_agreed = -1;
    v->counts = malloc(sizeof(int64_t) * (nranks ? nranks : 1));
    v->members = malloc(sizeof(int32_t) * (nranks ? nranks : 1));
    if (!v->counts || !v->members) {
        ncg_verdict_free(v);
        return NULL;
    }
    for (uint32_t i = 0; i < nranks; i++) {
        v->counts[i] = -1;
        v->members[i] = -1;
    }
    return v;
}

struct ncg_verdict *ncg_verdict_copy(const struct ncg_verdict *v, uint32_t nranks)
{
    struct ncg_verdict *d = ncg_verdict_new(nranks);
    if (!d)
        return NULL;
    int64_t *counts = d->counts;
    int32_t *members = d->members;
    *d = *v;
    d->nranks = nranks;
    d->narr = nranks;
    d->counts = counts;
    d->members = members;
    d->notes = NULL;
    d->figs = NULL;
    d->nfigs = 0;
    if ((v->notes && ncg_verdict_set_notes(d, v->notes) < 0) ||
        ncg_verdict_set_figs(d, v->figs, v->nfigs) < 0) {
        ncg_verdict_free(d);
        return NULL;
    }
    if (nranks && v->nfigs)
        ncg_figruns_to_arrays(d->figs, d->nfigs, d->counts, d->members, nranks);
    return d;
}

void ncg_verdict_free(struct ncg_verdict *v)
{
    if (!v)
        return;
    free(v->counts);
    free(v->members);
    free(v->notes);
    free(v->figs);
    free(v);
}

int ncg_verdict_set_figs(struct ncg_verdict *v, const struct ncg_figrun *r, uint32_t n)
{
    struct ncg_figrun *c = NULL;
    if (n) {
        if (!(c = malloc(sizeof *c * n)))
            return -ENOMEM;
        memcpy(c, r, sizeof *c * n);
    }
    free(v->figs);
    v->figs = c;
    v->nfigs = n;
    return 0;
}

int ncg_verdict_coarse(const struct ncg_verdict *v)
{
    for (uint32_t i = 0; i < v->nfigs; i++)
        if (v->figs[i].flags & NCG_FIG_COARSE)
            return 1;
    return 0;
}

int ncg_verdict_set_notes(struct ncg_verdict *v, const char *text)
{
    size_t n = strnlen(text, NCG_WIRE_NOTES - 1);
    char *c = malloc(n + 1);
    if (!c)
        return -ENOMEM;
    memcpy(c, text, n);
    c[n] = 0;
    free(v->notes);
    v->notes = c;
    return 0;
}

const char *ncg_verdict_name(unsigned kind)
{
    static const char *n[] = {"NONE", "MISMATCH", "P2P MISMATCH", "RANK DIED",    "RANK EXITED",
                              "LAG",  "STUCK",    "DEADLOCK",     "CHECKER LOST", "SLOW"};
    return kind < NCG_V_KIND_MAX_ ? n[kind] : "?";
}

const char *ncg_verdict_key(unsigned kind)
{
    static const char *n[] = {"NONE", "MISMATCH", "P2P_MISMATCH", "RANK_DIED",    "RANK_EXITED",
                              "LAG",  "STUCK",    "DEADLOCK",     "CHECKER_LOST", "SLOW"};
    return kind < NCG_V_KIND_MAX_ ? n[kind] : "?";
}

const char *ncg_v_func_name(unsigned func)
{
    static const char *n[] = {"?",         "AllReduce",     "Broadcast", "Reduce",
                              "AllGather", "ReduceScatter", "AlltoAll",  "Gather",
                              "Scatter",   "Send",          "Recv",      "CommSplit"};
    return func < NCG_F_COUNT_ ? n[func] : "?";
}

const char *ncg_v_dtype_name(unsigned dtype)
{
    static const char *n[] = {"int8",    "uint8",   "int32",   "uint32",   "int64",   "uint64",
                              "float16", "float32", "float64", "bfloat16", "fp8e4m3", "fp8e5m2"};
    return dtype < 12 ? n[dtype] : "?";
}

const char *ncg_v_redop_name(unsigned redop)
{
    static const char *n[] = {"sum", "prod", "max", "min", "avg"};
    if (redop < 5)
        return n[redop];
    return redop == NCG_REDOP_USER ? "user" : redop == NCG_REDOP_NONE ? "" : "?";
}

int ncg_call_same(const struct ncg_call *a, const struct ncg_call *b)
{
    return a->func == b->func && a->count == b->count && a->dtype == b->dtype &&
           a->redop == b->redop && a->root == b->root;
}

static int rooted(unsigned func)
{
    return func == NCG_F_BROADCAST || func == NCG_F_REDUCE || func == NCG_F_GATHER ||
           func == NCG_F_SCATTER;
}

char *ncg_call_format(const struct ncg_call *c, char *buf, size_t cap)
{
    if (c->func == NCG_F_COMMSPLIT) { /* only the function is compared */
        snprintf(buf, cap, "%s()", ncg_v_func_name(c->func));
        return buf;
    }
    if ((c->func == NCG_F_SEND || c->func == NCG_F_RECV) && ncg_sig_is(c->seq)) {
        /* a one-sided signal's record (include/ncclguard/signal.h) */
        if (c->func == NCG_F_SEND)
            snprintf(buf, cap, "Signal(peer=%d, sigIdx=%d, ctx=%d, signal #%" PRIu64 ")", c->root,
                     ncg_sig_idx_of(c->seq), ncg_sig_ctx_of(c->seq), ncg_sig_k(c->seq) + 1);
        else
            snprintf(buf, cap,
                     "WaitSignal(signals=%" PRIu64 ", peer=%d, sigIdx=%d, ctx=%d, up to #%" PRIu64
                     ")",
                     c->count, c->root, ncg_sig_idx_of(c->seq), ncg_sig_ctx_of(c->seq),
                     ncg_sig_k(c->seq) + 1);
        return buf;
    }
    int n = snprintf(buf, cap, "%s(count=%" PRIu64 ", %s", ncg_v_func_name(c->func), c->count,
                     ncg_v_dtype_name(c->dtype));
    if (n < 0 || (size_t)n >= cap)
        return buf;
    if (c->redop != NCG_REDOP_NONE)
        n += snprintf(buf + n, cap - (size_t)n, ", %s", ncg_v_redop_name(c->redop));
    if ((size_t)n >= cap)
        return buf;
    if (c->func == NCG_F_SEND || c->func == NCG_F_RECV)
        n += snprintf(buf + n, cap - (size_t)n, ", peer=%d", c->root);
    else if (rooted(c->func))
        n += snprintf(buf + n, cap - (size_t)n, ", root=%d", c->root);
    if ((size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, ")");
    return buf;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

void ncg_addf(char *b, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(b);
    if (n + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b + n, cap - n, fmt, ap);
    va_end(ap);
}

char *ncg_ranks_compact(int32_t *ranks, size_t n, char *buf, size_t cap)
{
    size_t len = 0;
    if (cap == 0)
        return buf;
    buf[0] = 0;
    qsort(ranks, n, sizeof *ranks, cmp_i32);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && (ranks[j + 1] == ranks[j] || ranks[j + 1] == ranks[j] + 1))
            j++;
        char item[32];
        if (ranks[j] == ranks[i])
            snprintf(item, sizeof item, "%s%d", len ? "," : "", ranks[i]);
        else
            snprintf(item, sizeof item, "%s%d-%d", len ? "," : "", ranks[i], ranks[j]);
        size_t il = strlen(item);
        if (len + il + 5 > cap) { /* keep room for ",..." */
            if (len + 5 <= cap)
                memcpy(buf + len, ",...", 5);
            return buf;
        }
        memcpy(buf + len, item, il + 1);
        len += il;
        i = j + 1;
    }
    return buf;
}

long ncg_ranks_walk(const char *list, int32_t *out, size_t cap, int *cut)
{
    long n = 0;
    if (cut)
        *cut = 0;
    if (!list[0])
        return -1;
    for (const char *p = list; *p;) {
        if (!strcmp(p, "...") && p > list) { /* ncg_ranks_compact's ",..." */
            if (cut)
                *cut = 1;
            break;
        }
        if (*p < '0' || *p > '9')
            return -1;
        char *e;
        long a = strtol(p, &e, 10), b = a;
        if (*e == '-') {
            if (e[1] < '0' || e[1] > '9')
                return -1;
            b = strtol(e + 1, &e, 10);
        }
        if (b < a || b > INT32_MAX || (*e && *e != ','))
            return -1;
        for (long r = a; r <= b; r++, n++)
            if ((size_t)n < cap)
                out[n] = (int32_t)r;
        p = *e ? e + 1 : e;
        if (*e && !*p)
            return -1; /* a trailing comma */
    }
    return n;
}

int ncg_ranks_has(const char *list, int32_t r)
{
    for (const char *p = list; *p;) {
        char *e;
        if (*p < '0' || *p > '9')
            return 0;
        long a = strtol(p, &e, 10), b = a;
        if (*e == '-' && e[1] >= '0' && e[1] <= '9')
            b = strtol(e + 1, &e, 10);
        if (r >= a && r <= b)
            return 1;
        if (*e != ',')
            return 0;
        p = e + 1;
    }
    return 0;
}

int32_t ncg_verdict_grank(const struct ncg_verdict *v, uint32_t r)
{
    if (v->members && r < v->narr && r < v->nranks && v->members[r] >= 0)
        return v->members[r];
    for (uint32_t k = 0; k < v->nfigs; k++) {
        const struct ncg_figrun *f = &v->figs[k];
        if (r >= f->lo && r - f->lo < f->n)
            return f->glo >= 0 ? f->glo + (int32_t)(r - f->lo) * f->gstride : -1;
    }
    return -1;
}

static const char *plural(const char *list);

/* 1 when some rank of the compact list has a known global rank other than its comm rank. */
static int named_differs(const struct ncg_verdict *v, const char *list)
{
    int32_t r[64];
    long n = ncg_ranks_walk(list, r, 64, NULL);
    for (long i = 0; i < n; i++) {
        if (i == 64) { /* past the buffer: walk again from there */
            int32_t *all = malloc(sizeof *all * (size_t)n);
            int d = 0;
            if (all) {
                ncg_ranks_walk(list, all, (size_t)n, NULL);
                for (long k = i; k < n && !d; k++) {
                    int32_t g = ncg_verdict_grank(v, (uint32_t)all[k]);
                    d = g >= 0 && g != all[k];
                }
            }
            free(all);
            return d;
        }
        int32_t g = ncg_verdict_grank(v, (uint32_t)r[i]);
        if (g >= 0 && g != r[i])
            return 1;
    }
    return 0;
}

/* ncg_ranks_named's words; global: name the global ranks even when each equals its comm rank
 * (another set of the same headline differs). */
static char *ranks_named_as(const struct ncg_verdict *v, const char *list, int global, char *buf,
                            size_t cap)
{
    int cut = 0;
    long n = ncg_ranks_walk(list, NULL, 0, &cut);
    int32_t *r = n > 0 && (global || named_differs(v, list)) ? malloc(sizeof *r * (size_t)n) : NULL;
    if (!r) {
        snprintf(buf, cap, "%s %s", plural(list), list);
        return buf;
    }
    size_t nk = 0, unknown = 0;
    ncg_ranks_walk(list, r, (size_t)n, NULL);
    for (long i = 0; i < n; i++) { /* r becomes the known global ranks */
        int32_t g = ncg_verdict_grank(v, (uint32_t)r[i]);
        if (g >= 0)
            r[nk++] = g;
        else
            unknown++;
    }
    if (!nk) { /* no global rank known (members that left, named by the SHUTDOWN): comm ranks */
        snprintf(buf, cap, "comm %s %s", plural(list), list);
        free(r);
        return buf;
    }
    char g[NCG_WIRE_STR];
    ncg_ranks_compact(r, nk, g, sizeof g);
    if (unknown && !strstr(g, "..."))
        ncg_addf(g, sizeof g, "%s?", nk ? "," : "");
    if (cut && !strstr(g, "..."))
        ncg_addf(g, sizeof g, ",...");
    snprintf(buf, cap, "global %s %s (comm %s %s)", n > 1 || cut ? "ranks" : "rank", g,
             plural(list), list);
    free(r);
    return buf;
}

char *ncg_ranks_named(const struct ncg_verdict *v, const char *list, char *buf, size_t cap)
{
    return ranks_named_as(v, list, 0, buf, cap);
}

/* Two rank sets of one headline, named alike: the global ranks for both when either needs
 * them. */
static void ranks_named2(const struct ncg_verdict *v, const char *l1, const char *l2, char *b1,
                         char *b2, size_t cap)
{
    int g = named_differs(v, l1) || named_differs(v, l2);
    ranks_named_as(v, l1, g, b1, cap);
    ranks_named_as(v, l2, g, b2, cap);
}

uint32_t ncg_counts_take(const int64_t *counts, uint32_t n, uint32_t i, uint8_t *done, int32_t *idx)
{
    uint32_t k = 0;
    if (done[i])
        return 0;
    for (uint32_t j = i; j < n; j++)
        if (!done[j] && counts[j] == counts[i]) {
            done[j] = 1;
            idx[k++] = (int32_t)j;
        }
    return k;
}

char *ncg_counts_compact(const int64_t *counts, uint32_t n, char *buf, size_t cap)
{
    size_t len = 0;
    if (cap == 0)
        return buf;
    buf[0] = 0;
    int32_t *idx = malloc(sizeof(int32_t) * (n ? n : 1));
    uint8_t *done = calloc(n ? n : 1, 1);
    if (!idx || !done)
        goto out;
    for (uint32_t i = 0; i < n; i++) {
        size_t k = ncg_counts_take(counts, n, i, done, idx);
        if (!k)
            continue;
        char val[24], list[NCG_WIRE_STR];
        if (counts[i] < 0) /* a member whose figures did not reach this verdict */
            snprintf(val, sizeof val, "not gathered");
        else
            snprintf(val, sizeof val, "%" PRId64, counts[i]);
        ncg_ranks_compact(idx, k, list, sizeof list);
        int w = snprintf(buf + len, cap - len, "%s%s on %s", len ? "; " : "", val, list);
        if (w < 0 || (size_t)w >= cap - len) {
            buf[len] = 0;
            break;
        }
        len += (size_t)w;
    }
out:
    free(idx);
    free(done);
    return buf;
}

uint32_t ncg_group_calls(struct ncg_verdict *v, const struct ncg_call *calls, const uint8_t *valid,
                         const char *const *sites, uint32_t n)
{
    int32_t *grp = malloc(sizeof(int32_t) * (n ? n : 1)); /* group index per rank, -1 none */
    int32_t *idx = malloc(sizeof(int32_t) * (n ? n : 1));
    uint32_t ng = 0, size[NCG_WIRE_MAX_CALLS] = {0}, first[NCG_WIRE_MAX_CALLS] = {0};
    v->ncalls = 0;
    v->subject[0] = 0;
    if (!grp || !idx)
        goto out;
    for (uint32_t i = 0; i < n; i++) {
        grp[i] = -1;
        if (!valid[i])
            continue;
        uint32_t g;
        for (g = 0; g < ng; g++)
            if (ncg_call_same(&calls[first[g]], &calls[i]))
                break;
        if (g == ng) {
            if (ng == NCG_WIRE_MAX_CALLS)
                continue; /* more distinct calls than we show: the rest stay unlisted */
            first[ng++] = i;
        }
        grp[i] = (int32_t)g;
        size[g]++;
    }
    /* Order groups by size, largest first (stable), so the odd one out reads last. */
    uint32_t order[NCG_WIRE_MAX_CALLS];
    for (uint32_t g = 0; g < ng; g++)
        order[g] = g;
    for (uint32_t a = 1; a < ng; a++)
        for (uint32_t b = a; b > 0 && size[order[b]] > size[order[b - 1]]; b--) {
            uint32_t t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    for (uint32_t o = 0; o < ng; o++) {
        uint32_t g = order[o], k = 0;
        struct ncg_vcall *vc = &v->calls[o];
        vc->call = calls[first[g]];
        vc->site[0] = 0;
        for (uint32_t i = 0; i < n; i++)
            if (grp[i] == (int32_t)g) {
                if (!vc->site[0] && sites && sites[i])
                    snprintf(vc->site, sizeof vc->site, "%s", sites[i]);
                idx[k++] = (int32_t)i;
            }
        ncg_ranks_compact(idx, k, vc->ranks, sizeof vc->ranks);
    }
    v->ncalls = ng;
    if (ng > 1) {
        uint32_t k = 0;
        for (uint32_t i = 0; i < n; i++)
            if (valid[i] && grp[i] != (int32_t)order[0])
                idx[k++] = (int32_t)i;
        ncg_ranks_compact(idx, k, v->subject, sizeof v->subject);
    }
out:
    free(grp);
    free(idx);
    return v->ncalls;
}

/* "rank" or "ranks" for a compact list; text (no list) reads "rank <text>". */
static const char *plural(const char *list)
{
    int cut;
    long n = ncg_ranks_walk(list, NULL, 0, &cut);
    return n > 1 || (n == 1 && cut) ? "ranks" : "rank";
}

/* Whether the RANK EXITED's subject names several ranks (the verb and pronoun agree with it):
 * a list of more than one, or words that say "and the ranks that left before it". */
static int exited_many(const struct ncg_verdict *v)
{
    return !strcmp(plural(v->subject), "ranks") || strstr(v->subject, " and the ranks ");
}

/* RANK EXITED's other side: the members that issued calls past the leavers' count (v->slot), as
 * a compact list into buf ("" when none is known: the counts are not here); for a wait on a
 * member that left (counts agree), the waiting rank. No allocation. */
static char *exited_issuers(const struct ncg_verdict *v, char *buf, size_t cap)
{
    size_t len = 0;
    int32_t lo = -1, hi = -1;
    buf[0] = 0;
    for (uint32_t i = 0; v->counts && v->slot >= 0 && i <= v->nranks && i <= v->narr; i++) {
        int in = i < v->nranks && i < v->narr && v->counts[i] > v->slot &&
                 !ncg_ranks_has(v->subject, (int32_t)i);
        if (in && hi == (int32_t)i - 1 && lo >= 0) {
            hi = (int32_t)i;
            continue;
        }
        if (lo >= 0) { /* a run ends */
            char item[32];
            int w = lo == hi ? snprintf(item, sizeof item, "%s%d", len ? "," : "", lo)
                             : snprintf(item, sizeof item, "%s%d-%d", len ? "," : "", lo, hi);
            if (len + (size_t)w + 5 > cap) {
                if (len + 5 <= cap)
                    memcpy(buf + len, ",...", 5);
                return buf;
            }
            memcpy(buf + len, item, (size_t)w + 1);
            len += (size_t)w;
        }
        lo = hi = in ? (int32_t)i : -1;
    }
    if (!buf[0] && v->ncalls && ncg_ranks_walk(v->calls[0].ranks, NULL, 0, NULL) > 0)
        snprintf(buf, cap, "%s", v->calls[0].ranks);
    return buf;
}

void ncg_stuck_words(struct ncg_verdict *v, uint64_t k, uint64_t khi, double idle, int none_done,
                     int plural, char *notes, size_t cap)
{
    char range[96] = "";
    if (khi > k)
        snprintf(range, sizeof range,
                 " (or a later one up to slot %" PRIu64 ": completion is sampled by CUDA events)",
                 khi);
    if (none_done)
        snprintf(v->detail, sizeof v->detail, "completed on none for %.1f s%s", idle, range);
    else
        snprintf(v->detail, sizeof v->detail, "not completed on %s %.200s for %.1f s%s",
                 plural ? "ranks" : "rank", v->subject, idle, range);
    if (!cap)
        return;
    notes[0] = 0;
    ncg_addf(notes, cap,
             "a hang inside NCCL (a dead link, a failed device, a peer stuck elsewhere), not a "
             "desync: slot %" PRIu64 " is the same call on every rank\n",
             k);
    if (khi > k)
        ncg_addf(notes, cap,
                 "completion is sampled by CUDA events (asynchronous NCCL): the stalled slot is "
                 "one of %" PRIu64 "-%" PRIu64 ", identical on every rank up to there\n",
                 k, khi);
    if (k)
        ncg_addf(notes, cap, "last slot completed on every rank: %s%" PRIu64 "\n",
                 khi > k ? "at least " : "", k - 1);
    else
        ncg_addf(notes, cap, "last slot completed on every rank: none%s\n",
                 khi > k ? " known" : "");
}

char *ncg_verdict_summary(const struct ncg_verdict *v, char *buf, size_t cap)
{
    char a[160], b[160], na[NCG_WIRE_STR + 64], nb[NCG_WIRE_STR + 64];
    int n = snprintf(buf, cap, "%s on comm %016" PRIx64 " (%u ranks)", ncg_verdict_name(v->kind),
                     v->comm_id, v->nranks);
    if (n < 0 || (size_t)n >= cap)
        return buf;
    size_t len = (size_t)n, left = cap - len;
    switch (v->kind) {
    case NCG_V_MISMATCH:
        if (v->ncalls >= 2)
            ranks_named2(v, v->calls[v->ncalls - 1].ranks, v->calls[0].ranks, na, nb, sizeof na);
        if (v->ncalls >= 2)
            snprintf(buf + len, left, ": slot %" PRId64 ": %s on %s vs %s on %s", v->slot,
                     ncg_call_format(&v->calls[v->ncalls - 1].call, a, sizeof a), na,
                     ncg_call_format(&v->calls[0].call, b, sizeof b), nb);
        else
            snprintf(buf + len, left, ": slot %" PRId64, v->slot);
        break;
    case NCG_V_P2P_MISMATCH:
        if (v->ncalls >= 2)
            ranks_named2(v, v->calls[0].ranks, v->calls[1].ranks, na, nb, sizeof na);
        if (v->ncalls >= 2)
            snprintf(buf + len, left, ": %s on %s vs %s on %s",
                     ncg_call_format(&v->calls[0].call, a, sizeof a), na,
                     ncg_call_format(&v->calls[1].call, b, sizeof b), nb);
        break;
    case NCG_V_RANK_DIED:
        snprintf(buf + len, left, ": %s died%s%s", ncg_ranks_named(v, v->subject, na, sizeof na),
                 v->detail[0] ? ": " : "", v->detail);
        break;
    case NCG_V_RANK_EXITED: {
        int many = exited_many(v);
        const char *how =
            !strncmp(v->detail, NCG_EXITED_ABORT, strlen(NCG_EXITED_ABORT)) ? NCG_EXITED_ABORT
            : !strncmp(v->detail, NCG_EXITED_VERDICT, strlen(NCG_EXITED_VERDICT))
                ? (many ? "were ended by ncclguard's abort" : "was ended by ncclguard's abort")
                : "exited";
        char who[NCG_WIRE_STR];
        exited_issuers(v, who, sizeof who);
        ranks_named2(v, v->subject, who, na, nb, sizeof na);
        snprintf(buf + len, left, ": %s %s while %s issued calls %s will never match", na, how,
                 who[0] ? nb : "others", many ? "they" : "it");
        break;
    }
    case NCG_V_CHECKER_LOST:
        snprintf(buf + len, left, ": %s%s%s", v->subject, v->detail[0] ? ": " : "", v->detail);
        break;
    case NCG_V_LAG:
        snprintf(buf + len, left, ": %s behind, nobody progressed%s%s",
                 ncg_ranks_named(v, v->subject, na, sizeof na), v->detail[0] ? ": " : "",
                 v->detail);
        break;
    case NCG_V_STUCK: {
        /* the detail names the stalled ranks as ncg_stuck_words wrote them: named here instead */
        const char *d = v->detail;
        snprintf(nb, sizeof nb, "not completed on ranks %s ", v->subject);
        if (strncmp(d, nb, strlen(nb)))
            snprintf(nb, sizeof nb, "not completed on rank %s ", v->subject);
        if (!strncmp(d, nb, strlen(nb))) {
            d += strlen(nb);
            snprintf(nb, sizeof nb, "not completed on %s ",
                     ncg_ranks_named(v, v->subject, na, sizeof na));
        } else {
            nb[0] = 0;
        }
        snprintf(buf + len, left, ": slot %" PRId64 "%s%s issued identically by all %u ranks, %s%s",
                 v->slot, v->ncalls ? " " : "", /* no call: the relay tree's root, no records */
                 v->ncalls ? ncg_call_format(&v->calls[0].call, a, sizeof a) : "", v->nranks, nb,
                 d);
        break;
    }
    case NCG_V_DEADLOCK: /* its detail names the cycle's global ranks (deadlock.c) */
        snprintf(buf + len, left, ": %s", v->detail);
        break;
    case NCG_V_SLOW:
        snprintf(buf + len, left, ": %s is the one the others wait for: %s",
                 ncg_ranks_named(v, v->subject, na, sizeof na), v->detail);
        break;
    default:
        break;
    }
    return buf;
}

size_t ncg_verdict_wire_size(const struct ncg_verdict *v)
{
    return 64 + (size_t)v->ncalls * (40 + NCG_WIRE_STR + NCG_WIRE_SITE) + 2 * NCG_WIRE_STR +
           (size_t)(v->nranks ? v->nranks : v->nfigs) * 48 + 16 + 2 + NCG_WIRE_NOTES +
           (v->kind == NCG_V_SLOW ? 30 + NCG_VSLOW_HOST : 0);
}

int ncg_vslow_ok(const struct ncg_vslow *s, uint32_t nranks)
{
    return s->rank >= 0 && (uint32_t)s->rank < (nranks ? nranks : NCG_WIRE_MAX_RANKS) &&
           s->global_rank >= -1 && s->device <= 1 && s->ended <= 1 && s->share >= 0 &&
           s->share <= 1 && isfinite(s->since_s) && s->since_s >= 0 &&
           memchr(s->host, 0, sizeof s->host);
}

/* v11: a SLOW verdict's figures, after its notes; the doubles as their IEEE-754 bits; v12: the
 * side's byte also holds the episode's end (bit 1). */
static void slow_put(struct ncg_wbuf *w, const struct ncg_vslow *s)
{
    uint64_t share, since;
    memcpy(&share, &s->share, sizeof share);
    memcpy(&since, &s->since_s, sizeof since);
    ncg_put32(w, (uint32_t)s->rank);
    ncg_put32(w, (uint32_t)s->global_rank);
    ncg_put32(w, s->pid);
    ncg_put8(w, (uint8_t)(s->device | s->ended << 1));
    ncg_put64(w, share);
    ncg_put64(w, since);
    ncg_wire_put_str(w, s->host, sizeof s->host);
}

static void slow_get(struct ncg_rbuf *r, struct ncg_vslow *s)
{
    s->rank = (int32_t)ncg_get32(r);
    s->global_rank = (int32_t)ncg_get32(r);
    s->pid = ncg_get32(r);
    uint8_t fl = ncg_get8(r);
    s->device = fl & 1u;
    s->ended = fl >> 1; /* above 1: refused by ncg_vslow_ok */
    uint64_t share = ncg_get64(r), since = ncg_get64(r);
    memcpy(&s->share, &share, sizeof share);
    memcpy(&s->since_s, &since, sizeof since);
    ncg_wire_get_str(r, s->host, sizeof s->host);
}

long ncg_verdict_encode(const struct ncg_verdict *v, uint8_t *p, size_t cap)
{
    struct ncg_wbuf w = {p, cap, 0, 0};
    if (v->ncalls > NCG_WIRE_MAX_CALLS || v->nranks > NCG_WIRE_MAX_RANKS ||
        (v->kind == NCG_V_SLOW && !ncg_vslow_ok(&v->slow, v->nranks)))
        return -EINVAL;
    ncg_put8(&w, v->kind);
    ncg_put8(&w, v->severity);
    ncg_put64(&w, v->comm_id);
    ncg_put32(&w, v->nranks);
    ncg_put64(&w, (uint64_t)v->slot);
    ncg_put64(&w, (uint64_t)v->last_agreed);
    ncg_put8(&w, (uint8_t)v->ncalls);
    for (uint32_t i = 0; i < v->ncalls; i++) {
        ncg_wire_put_call(&w, &v->calls[i].call);
        ncg_wire_put_str(&w, v->calls[i].ranks, sizeof v->calls[i].ranks);
        ncg_wire_put_str(&w, v->calls[i].site, sizeof v->calls[i].site);
    }
    ncg_wire_put_str(&w, v->subject, sizeof v->subject);
    ncg_wire_put_str(&w, v->detail, sizeof v->detail);
    if (v->nranks) { /* v9: the arrays as runs */
        struct ncg_figset s = {0};
        if (ncg_figset_from_arrays(&s, v->counts, v->members, v->nranks) < 0)
            return -ENOMEM;
        ncg_figset_coarsen(&s, NCG_FIG_VERDICT_RUNS);
        ncg_figruns_put(&w, s.r, s.n);
        ncg_figset_free(&s);
    } else {
        ncg_figruns_put(&w, v->figs, v->nfigs);
    }
    size_t nn = v->notes ? strnlen(v->notes, NCG_WIRE_NOTES - 1) : 0; /* v2: notes */
    ncg_put16(&w, (uint16_t)nn);
    ncg_putb(&w, v->notes ? v->notes : "", nn);
    if (v->kind == NCG_V_SLOW)
        slow_put(&w, &v->slow);
    return w.err ? -ENOSPC : (long)w.len;
}

struct ncg_verdict *ncg_verdict_decode(const uint8_t *p, size_t len)
{
    struct ncg_rbuf r = {p, len, 0, 0};
    uint8_t kind = ncg_get8(&r), sev = ncg_get8(&r);
    uint64_t comm = ncg_get64(&r);
    uint32_t nranks = ncg_get32(&r);
    if (r.err || kind == 0 || kind >= NCG_V_KIND_MAX_ || sev > NCG_SEV_ERROR ||
        nranks > NCG_WIRE_MAX_RANKS)
        return NULL;
    struct ncg_verdict *v = ncg_verdict_new(nranks);
    if (!v)
        return NULL;
    v->kind = kind;
    v->severity = sev;
    v->comm_id = comm;
    v->slot = (int64_t)ncg_get64(&r);
    v->last_agreed = (int64_t)ncg_get64(&r);
    v->ncalls = ncg_get8(&r);
    if (v->ncalls > NCG_WIRE_MAX_CALLS)
        goto bad;
    for (uint32_t i = 0; i < v->ncalls && !r.err; i++) {
        ncg_wire_get_call(&r, &v->calls[i].call);
        ncg_wire_get_str(&r, v->calls[i].ranks, sizeof v->calls[i].ranks);
        ncg_wire_get_str(&r, v->calls[i].site, sizeof v->calls[i].site);
    }
    ncg_wire_get_str(&r, v->subject, sizeof v->subject);
    ncg_wire_get_str(&r, v->detail, sizeof v->detail);
    struct ncg_figset s = {0};
    int fr = ncg_figruns_get(&r, &s, NCG_FIG_VERDICT_RUNS, nranks ? nranks : NCG_WIRE_MAX_RANKS);
    if (fr == 0 && nranks && ncg_figruns_to_arrays(s.r, s.n, v->counts, v->members, nranks) == 0)
        s.n = 0; /* exact: the arrays say it all */
    if (fr == 0 && s.n) {
        v->figs = s.r;
        v->nfigs = s.n;
        s.r = NULL;
    }
    ncg_figset_free(&s);
    if (fr < 0)
        goto bad;
    size_t nn = ncg_get16(&r);
    if (r.err || nn >= NCG_WIRE_NOTES || nn > ncg_rleft(&r))
        goto bad;
    if (nn) {
        if (!(v->notes = malloc(nn + 1)))
            goto bad;
        ncg_getb(&r, v->notes, nn);
        v->notes[nn] = 0;
        if (memchr(v->notes, 0, nn))
            goto bad;
    }
    if (kind == NCG_V_SLOW) {
        slow_get(&r, &v->slow);
        if (!r.err && !ncg_vslow_ok(&v->slow, nranks))
            goto bad;
    }
    if (r.err || r.pos != r.cap)
        goto bad;
    return v;
bad:
    ncg_verdict_free(v);
    return NULL;
}
