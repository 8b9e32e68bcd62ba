/* Figure runs (figruns.h): building, merging, bounding and coding the per-rank figures of a
 * communicator as runs of ranks with equal figures. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "figruns.h"
#include "wire_base.h"
#include "wire_io.h"

void ncg_figset_free(struct ncg_figset *s)
{
    free(s->r);
    s->r = NULL;
    s->n = s->cap = 0;
}

int32_t ncg_figrun_grank(const struct ncg_figrun *x, uint32_t i)
{
    if (x->glo < 0 || i >= x->n)
        return -1;
    int64_t g = (int64_t)x->glo + (int64_t)i * x->gstride;
    return g >= 0 && g <= INT32_MAX ? (int32_t)g : -1;
}

/* The stride b continues a with, or 0 with *ok = 0 when b's global ranks do not continue a's
 * progression (both unknown: continues, stride 0). */
static int32_t continues(const struct ncg_figrun *a, const struct ncg_figrun *b, int *ok)
{
    *ok = 0;
    if (a->glo < 0 || b->glo < 0) {
        *ok = a->glo < 0 && b->glo < 0;
        return 0;
    }
    int64_t d = (int64_t)b->lo - a->lo, s;
    if (a->n == 1) {
        int64_t diff = (int64_t)b->glo - a->glo;
        if (diff % d)
            return 0;
        s = diff / d;
    } else {
        s = a->gstride;
        if ((int64_t)a->glo + d * s != b->glo)
            return 0;
    }
    if (s < INT32_MIN || s > INT32_MAX || (b->n > 1 && b->gstride != s))
        return 0;
    *ok = 1;
    return (int32_t)s;
}

static int same_figs(const struct ncg_figrun *a, const struct ncg_figrun *b)
{
    return a->count == b->count && a->count_hi == b->count_hi && a->done == b->done &&
           a->state == b->state && a->flags == b->flags;
}

/* b joins a when adjacent with equal figures and continuing global ranks: 1 done. */
static int join(struct ncg_figrun *a, const struct ncg_figrun *b)
{
    int ok;
    if ((uint64_t)a->lo + a->n != b->lo || !same_figs(a, b))
        return 0;
    int32_t s = continues(a, b, &ok);
    if (!ok)
        return 0;
    a->gstride = a->glo < 0 ? 0 : s;
    a->n += b->n;
    return 1;
}

static int grow(struct ncg_figset *s, uint32_t want)
{
    if (want <= s->cap)
        return 0;
    uint32_t n = s->cap ? s->cap : 16;
    while (n < want)
        n *= 2;
    struct ncg_figrun *r = realloc(s->r, sizeof *r * n);
    if (!r)
        return -ENOMEM;
    s->r = r;
    s->cap = n;
    return 0;
}

int ncg_figset_add(struct ncg_figset *s, const struct ncg_figrun *x)
{
    if (s->n && join(&s->r[s->n - 1], x))
        return 0;
    if (grow(s, s->n + 1) < 0)
        return -ENOMEM;
    s->r[s->n] = *x;
    if (x->n == 1 || x->glo < 0)
        s->r[s->n].gstride = 0;
    s->n++;
    return 0;
}

int ncg_figset_add_rank(struct ncg_figset *s, uint32_t rank, int64_t count, int64_t done,
                        int32_t grank, uint8_t state)
{
    struct ncg_figrun x = {rank, 1, count, count, done, grank < 0 ? -1 : grank, 0, state, 0};
    return ncg_figset_add(s, &x);
}

int ncg_figset_append(struct ncg_figset *s, const struct ncg_figrun *src, uint32_t n)
{
    if (grow(s, s->n + n) < 0)
        return -ENOMEM;
    if (n) /* src may be NULL then (an empty set's runs) */
        memcpy(s->r + s->n, src, sizeof *src * n);
    s->n += n;
    return 0;
}

static int cmp_run(const void *pa, const void *pb)
{
    const struct ncg_figrun *a = pa, *b = pb;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    int ka = a->state != NCG_FIG_UNKNOWN, kb = b->state != NCG_FIG_UNKNOWN;
    return kb - ka; /* known first; qsort is not stable, equal ones are interchangeable enough */
}

/* Cuts the first k ranks off x. */
static void cut_front(struct ncg_figrun *x, uint32_t k)
{
    x->glo = ncg_figrun_grank(x, k);
    x->lo += k;
    x->n -= k;
    if (x->n == 1 || x->glo < 0)
        x->gstride = 0;
}

void ncg_figset_normalize(struct ncg_figset *s)
{
    if (s->n < 2)
        return;
    qsort(s->r, s->n, sizeof *s->r, cmp_run);
    uint32_t o = 0;
    uint64_t end = 0; /* ranks below are covered */
    for (uint32_t i = 0; i < s->n; i++) {
        struct ncg_figrun x = s->r[i];
        if (o && end > x.lo) {
            if (end >= (uint64_t)x.lo + x.n)
                continue;
            cut_front(&x, (uint32_t)(end - x.lo));
        }
        end = (uint64_t)x.lo + x.n;
        if (o && join(&s->r[o - 1], &x))
            continue;
        s->r[o++] = x;
    }
    s->n = o;
}

void ncg_figset_clip(struct ncg_figset *s, uint32_t lo, uint32_t hi)
{
    uint32_t o = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        struct ncg_figrun x = s->r[i];
        uint64_t last = (uint64_t)x.lo + x.n - 1;
        if (last < lo || x.lo > hi)
            continue;
        if (x.lo < lo)
            cut_front(&x, lo - x.lo);
        if ((uint64_t)x.lo + x.n - 1 > hi)
            x.n = hi - x.lo + 1;
        s->r[o++] = x;
    }
    s->n = o;
}

/* a and b (a before b) as one coarse run covering both and any gap between. */
static struct ncg_figrun merged(const struct ncg_figrun *a, const struct ncg_figrun *b)
{
    struct ncg_figrun m = *a;
    int gap = (uint64_t)a->lo + a->n != b->lo, ok = 0;
    m.n = b->lo + b->n - a->lo;
    m.flags = NCG_FIG_COARSE | ((a->flags | b->flags) & NCG_FIG_PARTIAL);
    if (gap || a->count < 0 || b->count < 0)
        m.flags |= NCG_FIG_PARTIAL;
    if (a->count < 0 || (b->count >= 0 && b->count < a->count))
        m.count = b->count;
    m.count_hi = a->count_hi > b->count_hi ? a->count_hi : b->count_hi;
    if (m.count < 0)
        m.count_hi = -1;
    if (a->done < 0 || (b->done >= 0 && b->done < a->done))
        m.done = b->done;
    if (a->state != b->state)
        m.state = NCG_FIG_UNKNOWN;
    int32_t s = gap ? 0 : continues(a, b, &ok);
    if (!ok || gap || a->glo < 0) {
        m.glo = -1;
        m.gstride = 0;
    } else {
        m.gstride = s;
    }
    return m;
}

static uint64_t merge_cost(const struct ncg_figrun *a, const struct ncg_figrun *b)
{
    struct ncg_figrun m = merged(a, b);
    uint64_t c = m.count < 0 ? 0 : (uint64_t)(m.count_hi - m.count);
    if (c > (1ull << 60))
        c = 1ull << 60;
    if ((m.flags & NCG_FIG_PARTIAL) && !((a->flags | b->flags) & NCG_FIG_PARTIAL))
        c += 1ull << 61; /* hiding an unknown: the last resort */
    return c;
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

void ncg_figset_coarsen(struct ncg_figset *s, uint32_t max)
{
    if (!max)
        max = 1;
    while (s->n > max) {
        /* One pass: each run merges at most once, with its right neighbour when the merge
         * costs (widens the count range) no more than a threshold: the cost of a sample's
         * excess/n quantile, so about the excess merges happen per pass (no allocation). */
        uint32_t excess = s->n - max, np = s->n - 1;
        uint64_t sample[257];
        uint32_t ns = np < 257 ? np : 257;
        for (uint32_t i = 0; i < ns; i++) {
            uint32_t j = (uint32_t)((uint64_t)i * np / ns);
            sample[i] = merge_cost(&s->r[j], &s->r[j + 1]);
        }
        qsort(sample, ns, sizeof *sample, cmp_u64);
        uint64_t k = (uint64_t)excess * ns / np;
        uint64_t thr = sample[k < ns ? k : ns - 1];
        uint32_t o = 0, merges = 0;
        for (uint32_t i = 0; i < s->n;) {
            if (i + 1 < s->n && merges < excess && merge_cost(&s->r[i], &s->r[i + 1]) <= thr) {
                s->r[o++] = merged(&s->r[i], &s->r[i + 1]);
                merges++;
                i += 2;
            } else {
                s->r[o++] = s->r[i++];
            }
        }
        s->n = o;
    }
}

int ncg_figset_from_arrays(struct ncg_figset *s, const int64_t *counts, const int32_t *members,
                           uint32_t nranks)
{
    s->n = 0;
    for (uint32_t i = 0; i < nranks; i++) {
        int32_t g = members ? members[i] : -1;
        int64_t c = counts[i] < 0 ? -1 : counts[i];
        if (c < 0 && g < 0)
            continue;
        if (ncg_figset_add_rank(s, i, c, -1, g, NCG_FIG_UNKNOWN) < 0)
            return -ENOMEM;
    }
    return 0;
}

int ncg_figruns_to_arrays(const struct ncg_figrun *r, uint32_t n, int64_t *counts, int32_t *members,
                          uint32_t nranks)
{
    int coarse = 0;
    for (uint32_t i = 0; i < nranks; i++) {
        if (counts)
            counts[i] = -1;
        if (members)
            members[i] = -1;
    }
    for (uint32_t j = 0; j < n; j++) {
        coarse |= (r[j].flags & NCG_FIG_COARSE) != 0;
        for (uint32_t i = 0; i < r[j].n && (uint64_t)r[j].lo + i < nranks; i++) {
            if (counts)
                counts[r[j].lo + i] = r[j].flags & NCG_FIG_COARSE ? -1 : r[j].count;
            if (members)
                members[r[j].lo + i] = ncg_figrun_grank(&r[j], i);
        }
    }
    return coarse;
}

/* ---- text ---- */

struct rtext {
    char *b;
    size_t cap, len;
    int full;
    uint64_t open_lo, open_hi; /* the range being written, not yet flushed */
    int open, items;
};

static void rt_puts(struct rtext *t, const char *s)
{
    size_t l = strlen(s);
    if (t->full || t->len + l + 5 > t->cap) { /* room kept for ",..." */
        if (!t->full && t->len + 5 <= t->cap) {
            memcpy(t->b + t->len, ",...", 5);
            t->len += 4;
        }
        t->full = 1;
        return;
    }
    memcpy(t->b + t->len, s, l + 1);
    t->len += l;
}

static void rt_flush(struct rtext *t)
{
    char item[48];
    if (!t->open)
        return;
    if (t->open_lo == t->open_hi)
        snprintf(item, sizeof item, "%s%" PRIu64, t->items ? "," : "", t->open_lo);
    else
        snprintf(item, sizeof item, "%s%" PRIu64 "-%" PRIu64, t->items ? "," : "", t->open_lo,
                 t->open_hi);
    rt_puts(t, item);
    t->items++;
    t->open = 0;
}

static void rt_range(struct rtext *t, uint64_t lo, uint64_t hi)
{
    if (t->open && t->open_hi + 1 == lo) {
        t->open_hi = hi;
        return;
    }
    rt_flush(t);
    t->open = 1;
    t->open_lo = lo;
    t->open_hi = hi;
}

/* The group key of a run: equal keys print as one "value on ranks" item. */
static int same_key(const struct ncg_figrun *a, const struct ncg_figrun *b)
{
    int ua = a->count < 0, ub = b->count < 0;
    if (ua || ub)
        return ua && ub;
    return a->count == b->count && a->count_hi == b->count_hi &&
           (a->flags & (NCG_FIG_COARSE | NCG_FIG_PARTIAL)) ==
               (b->flags & (NCG_FIG_COARSE | NCG_FIG_PARTIAL));
}

char *ncg_figruns_counts_text(const struct ncg_figrun *r, uint32_t n, uint32_t nranks, char *buf,
                              size_t cap)
{
    struct rtext t = {buf, cap, 0, 0, 0, 0, 0, 0};
    if (!cap)
        return buf;
    buf[0] = 0;
    uint8_t *done = calloc(n ? n : 1, 1);
    if (!done)
        return buf;
    /* unknown: ranks no run covers, and runs of unknown count; placed by the first such rank */
    uint64_t first_unknown = UINT64_MAX, end = 0;
    for (uint32_t j = 0; j <= n && first_unknown == UINT64_MAX; j++) {
        uint64_t lo = j < n ? r[j].lo : nranks;
        if (lo > end)
            first_unknown = end;
        else if (j < n && r[j].count < 0)
            first_unknown = r[j].lo;
        if (j < n)
            end = (uint64_t)r[j].lo + r[j].n;
    }
    int unknown_done = 0;
    for (uint32_t j = 0; j <= n && !t.full; j++) {
        int unk = !unknown_done && first_unknown != UINT64_MAX &&
                  (j == n || (uint64_t)r[j].lo + r[j].n > first_unknown);
        if (!unk && (j == n || done[j] || r[j].count < 0))
            continue;
        char val[64];
        if (unk)
            snprintf(val, sizeof val, "not gathered");
        else if (r[j].flags & NCG_FIG_COARSE)
            snprintf(val, sizeof val, "%" PRId64 "-%" PRId64 "%s", r[j].count, r[j].count_hi,
                     r[j].flags & NCG_FIG_PARTIAL ? " or ?" : "");
        else
            snprintf(val, sizeof val, "%" PRId64, r[j].count);
        char head[80];
        snprintf(head, sizeof head, "%s%s on ", t.len ? "; " : "", val);
        rt_puts(&t, head);
        t.items = 0;
        if (unk) {
            unknown_done = 1;
            uint64_t e = 0;
            for (uint32_t i = 0; i <= n; i++) {
                uint64_t lo = i < n ? r[i].lo : nranks;
                if (lo > e)
                    rt_range(&t, e, lo - 1);
                if (i < n && r[i].count < 0)
                    rt_range(&t, r[i].lo, (uint64_t)r[i].lo + r[i].n - 1);
                if (i < n)
                    e = (uint64_t)r[i].lo + r[i].n;
            }
            rt_flush(&t);
            j--; /* the run at j is still to print */
            continue;
        }
        for (uint32_t i = j; i < n && !t.full; i++)
            if (!done[i] && r[i].count >= 0 && same_key(&r[i], &r[j])) {
                done[i] = 1;
                rt_range(&t, r[i].lo, (uint64_t)r[i].lo + r[i].n - 1);
            }
        rt_flush(&t);
    }
    free(done);
    return buf;
}

/* ---- wire ---- */

static size_t vlen(uint64_t v)
{
    size_t n = 1;
    while (v >>= 7)
        n++;
    return n;
}

size_t ncg_figruns_size(const struct ncg_figrun *r, uint32_t n)
{
    size_t len = vlen(n);
    uint64_t end = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct ncg_figrun *x = &r[i];
        len += vlen(x->lo - end) + vlen(x->n - 1) + 1 + vlen((uint64_t)(x->count + 1)) +
               vlen((uint64_t)(x->done + 1)) + vlen((uint64_t)((int64_t)x->glo + 1));
        if (x->flags & NCG_FIG_COARSE)
            len += vlen((uint64_t)(x->count_hi - x->count));
        if (x->glo >= 0 && x->n > 1)
            len += vlen(((uint64_t)(int64_t)x->gstride << 1) ^ (uint64_t)(x->gstride >> 31));
        end = (uint64_t)x->lo + x->n;
    }
    return len;
}

void ncg_figset_fit(struct ncg_figset *s, uint32_t max, size_t bytes)
{
    ncg_figset_coarsen(s, max);
    while (s->n > 1 && ncg_figruns_size(s->r, s->n) > bytes)
        ncg_figset_coarsen(s, s->n / 2);
}

void ncg_figruns_put(struct ncg_wbuf *w, const struct ncg_figrun *r, uint32_t n)
{
    uint64_t end = 0;
    ncg_putv(w, n);
    for (uint32_t i = 0; i < n; i++) {
        const struct ncg_figrun *x = &r[i];
        ncg_putv(w, x->lo - end); /* sorted, disjoint: the gap since the last run */
        ncg_putv(w, x->n - 1);
        ncg_put8(w, (uint8_t)(x->state | x->flags << 4));
        ncg_putv(w, (uint64_t)(x->count + 1));
        if (x->flags & NCG_FIG_COARSE)
            ncg_putv(w, (uint64_t)(x->count_hi - x->count));
        ncg_putv(w, (uint64_t)(x->done + 1));
        ncg_putv(w, (uint64_t)((int64_t)x->glo + 1));
        if (x->glo >= 0 && x->n > 1) /* zigzag */
            ncg_putv(w, ((uint64_t)(int64_t)x->gstride << 1) ^ (uint64_t)(x->gstride >> 31));
        end = (uint64_t)x->lo + x->n;
    }
}

int ncg_figruns_get(struct ncg_rbuf *rb, struct ncg_figset *s, uint32_t max, uint32_t nranks)
{
    s->n = 0;
    uint64_t n = ncg_getv(rb, max), end = 0;
    if (rb->err || n > ncg_rleft(rb) / 6) /* a run takes 6 bytes at least */
        goto bad;
    if (grow(s, (uint32_t)n) < 0)
        return -ENOMEM;
    for (uint64_t i = 0; i < n; i++) {
        struct ncg_figrun x = {0};
        uint64_t lo = end + ncg_getv(rb, nranks), len = ncg_getv(rb, nranks) + 1;
        uint8_t sf = ncg_get8(rb);
        x.state = sf & 0xf;
        x.flags = sf >> 4;
        x.count = (int64_t)ncg_getv(rb, INT64_MAX) - 1;
        x.count_hi = x.count;
        if (x.flags & NCG_FIG_COARSE)
            x.count_hi = x.count + (int64_t)ncg_getv(rb, (uint64_t)(INT64_MAX - x.count - 1));
        x.done = (int64_t)ncg_getv(rb, INT64_MAX) - 1;
        x.glo = (int32_t)((int64_t)ncg_getv(rb, (uint64_t)INT32_MAX + 1) - 1);
        if (x.glo >= 0 && len > 1) {
            uint64_t z = ncg_getv(rb, UINT32_MAX);
            x.gstride = (int32_t)(int64_t)((z >> 1) ^ (~(z & 1) + 1));
        }
        if (rb->err || lo + len > nranks || x.state > NCG_FIG_DEAD ||
            x.flags > (NCG_FIG_COARSE | NCG_FIG_PARTIAL) || (x.flags == NCG_FIG_PARTIAL) ||
            (x.count < 0 && x.count_hi != x.count))
            goto bad;
        x.lo = (uint32_t)lo;
        x.n = (uint32_t)len;
        if (x.glo >= 0 && ncg_figrun_grank(&x, x.n - 1) < 0)
            goto bad; /* the progression leaves the global ranks */
        s->r[s->n++] = x;
        end = lo + len;
    }
    return 0;
bad:
    rb->err = 1;
    s->n = 0;
    return -1;
}
