/* The relay tree's pure helpers (relay.h): an answer group's rank ranges merged and printed, a
 * slot's groups merged and judged, and the tree's shape (each node's parent). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "relay_int.h"

static int range_cmp(const void *a, const void *b)
{
    const struct ncg_rrange *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

void ncg_rl_ranges_union(struct ncg_rgroup *d, const struct ncg_rgroup *s)
{
    struct ncg_rrange t[2 * NCG_RELAY_RANGES];
    size_t n = 0, m = 0;
    for (uint32_t i = 0; i < d->nrange; i++)
        t[n++] = d->r[i];
    for (uint32_t i = 0; i < s->nrange; i++)
        t[n++] = s->r[i];
    qsort(t, n, sizeof *t, range_cmp);
    for (size_t i = 0; i < n; i++) {
        if (m && (uint64_t)t[m - 1].hi + 1 >= t[i].lo) {
            if (t[i].hi > t[m - 1].hi)
                t[m - 1].hi = t[i].hi;
            continue;
        }
        t[m++] = t[i];
    }
    d->truncated |= s->truncated;
    if (m > NCG_RELAY_RANGES) {
        m = NCG_RELAY_RANGES;
        d->truncated = 1;
    }
    memcpy(d->r, t, sizeof *t * m);
    d->nrange = (uint8_t)m;
}

void ncg_rslot_merge(struct ncg_rslot *s, const struct ncg_rgroup *g)
{
    for (uint32_t i = 0; i < s->ngroups; i++) {
        struct ncg_rgroup *h = &s->g[i];
        if (h->status != g->status || (g->status == NCG_ANS_OK && h->digest != g->digest))
            continue;
        ncg_rl_ranges_union(h, g);
        h->nranks += g->nranks;
        return;
    }
    if (s->ngroups < NCG_RELAY_GROUPS) {
        s->g[s->ngroups++] = *g;
        return;
    }
    s->more = 1;
}

int ncg_rslot_agrees(const struct ncg_rslot *s)
{
    uint32_t ok = 0, n = 0;
    for (uint32_t i = 0; i < s->ngroups; i++) {
        if (s->g[i].status == NCG_ANS_GONE)
            return -1;
        ok++;
        n += s->g[i].nranks;
    }
    if (ok >= 2 || s->more)
        return 0;
    return n >= 2 ? 1 : -1;
}

char *ncg_rgroup_ranks(const struct ncg_rgroup *g, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < g->nrange && len < cap; i++) {
        int w =
            g->r[i].lo == g->r[i].hi
                ? snprintf(buf + len, cap - len, "%s%u", i ? "," : "", g->r[i].lo)
                : snprintf(buf + len, cap - len, "%s%u-%u", i ? "," : "", g->r[i].lo, g->r[i].hi);
        len += w > 0 ? (size_t)w : 0;
    }
    if (g->truncated && len < cap)
        snprintf(buf + len, cap - len, ",... (%u ranks)", g->nranks);
    return buf;
}

uint32_t ncg_relay_parent(uint32_t node, uint32_t nnodes, uint32_t fanout)
{
    uint32_t lo = 0, hi = nnodes;
    if (node == 0 || node >= nnodes || fanout < 1)
        return 0;
    for (;;) {
        uint32_t rest = hi - lo - 1, sz = (rest + fanout - 1) / fanout;
        uint32_t c = lo + 1 + (node - lo - 1) / sz * sz; /* the chunk holding node */
        if (c == node)
            return lo;
        lo = c;
        hi = c + sz < hi ? c + sz : hi;
    }
}
