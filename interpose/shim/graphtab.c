/* Captured NCCL call lists and the pointer map behind graph.c (see graphtab.h). */
#include "graphtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct ncg_glist *glist_new(uint32_t cap)
{
    struct ncg_glist *l = malloc(sizeof *l + (size_t)cap * sizeof l->call[0]);
    if (l) {
        l->refs = 1;
        l->n = 0;
        l->cap = cap;
    }
    return l;
}

int ncg_glist_append(struct ncg_glist **l, const struct ncg_gcall *c)
{
    struct ncg_glist *cur = *l;
    if (!cur || cur->n == cur->cap) {
        uint32_t cap = cur ? cur->cap * 2 : 8;
        if (cap < 8 || cap > (1u << 24))
            return -ENOMEM; /* 16 M calls in one capture: refuse rather than wrap */
        struct ncg_glist *nl = glist_new(cap);
        if (!nl)
            return -ENOMEM;
        if (cur) {
            memcpy(nl->call, cur->call, (size_t)cur->n * sizeof cur->call[0]);
            nl->n = cur->n;
            free(cur);
        }
        cur = nl;
    }
    cur->call[cur->n++] = *c;
    *l = cur;
    return 0;
}

struct ncg_glist *ncg_glist_concat(const struct ncg_glist *a, const struct ncg_glist *b, int *oom)
{
    uint32_t na = a ? a->n : 0, nb = b ? b->n : 0;
    *oom = 0;
    if (na + nb == 0)
        return NULL;
    struct ncg_glist *l = glist_new(na + nb);
    if (!l) {
        *oom = 1;
        return NULL;
    }
    if (na)
        memcpy(l->call, a->call, (size_t)na * sizeof l->call[0]);
    if (nb)
        memcpy(l->call + na, b->call, (size_t)nb * sizeof l->call[0]);
    l->n = na + nb;
    return l;
}

struct ncg_glist *ncg_glist_ref(struct ncg_glist *l)
{
    if (l)
        __atomic_add_fetch(&l->refs, 1, __ATOMIC_RELAXED);
    return l;
}

void ncg_glist_unref(struct ncg_glist *l)
{
    /* acq_rel: the last owner's reads of the calls happen before the free */
    if (l && __atomic_sub_fetch(&l->refs, 1, __ATOMIC_ACQ_REL) == 0)
        free(l);
}

/* Fibonacci hashing of a pointer-sized key onto cap (a power of two) buckets. */
static uint32_t bucket(uintptr_t key, uint32_t cap)
{
    return (uint32_t)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

/* The bucket holding key, or -1. */
static int64_t find(const struct ncg_pmap *m, uintptr_t key)
{
    if (!m->cap || key <= NCG_PMAP_TOMB)
        return -1;
    for (uint32_t i = bucket(key, m->cap), k = 0; k < m->cap; k++, i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key)
            return i;
        if (m->keys[i] == 0)
            return -1;
    }
    return -1;
}

struct ncg_glist *ncg_pmap_get(const struct ncg_pmap *m, uintptr_t key)
{
    int64_t i = find(m, key);
    return i < 0 ? NULL : m->vals[i];
}

struct ncg_glist **ncg_pmap_slot(struct ncg_pmap *m, uintptr_t key)
{
    int64_t i = find(m, key);
    return i < 0 ? NULL : &m->vals[i];
}

/* Rehash into cap buckets (dropping tombstones). 0 / -ENOMEM (m unchanged). */
static int rehash(struct ncg_pmap *m, uint32_t cap)
{
    uintptr_t *keys = calloc(cap, sizeof *keys);
    struct ncg_glist **vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -ENOMEM;
    }
    for (uint32_t j = 0; j < m->cap; j++) {
        if (m->keys[j] <= NCG_PMAP_TOMB)
            continue;
        uint32_t i = bucket(m->keys[j], cap);
        while (keys[i])
            i = (i + 1) & (cap - 1);
        keys[i] = m->keys[j];
        vals[i] = m->vals[j];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    m->used = m->n;
    return 0;
}

int ncg_pmap_put(struct ncg_pmap *m, uintptr_t key, struct ncg_glist *v, struct ncg_glist **old)
{
    *old = NULL;
    if (key <= NCG_PMAP_TOMB)
        return -EINVAL;
    /* keep at most 1/2 of the buckets used (live + tombstones) so probes stay short */
    if ((m->used + 1) * 2 > m->cap) {
        /* after the rehash at most 1/4 live: the same size when tombstones filled it */
        uint32_t cap = m->cap ? m->cap : 16;
        while ((uint64_t)(m->n + 1) * 4 > cap && cap < (1u << 30))
            cap *= 2;
        if (rehash(m, cap) != 0)
            return -ENOMEM;
    }
    uint32_t i = bucket(key, m->cap), tomb = UINT32_MAX;
    for (uint32_t k = 0; k < m->cap; k++, i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) {
            *old = m->vals[i];
            m->vals[i] = v;
            return 0;
        }
        if (m->keys[i] == NCG_PMAP_TOMB && tomb == UINT32_MAX)
            tomb = i;
        if (m->keys[i] == 0)
            break;
    }
    if (tomb != UINT32_MAX)
        i = tomb; /* reuse the first tombstone on the probe path */
    else
        m->used++;
    m->keys[i] = key;
    m->vals[i] = v;
    m->n++;
    return 0;
}

struct ncg_glist *ncg_pmap_del(struct ncg_pmap *m, uintptr_t key)
{
    int64_t i = find(m, key);
    if (i < 0)
        return NULL;
    struct ncg_glist *v = m->vals[i];
    m->keys[i] = NCG_PMAP_TOMB;
    m->vals[i] = NULL;
    m->n--;
    return v;
}

void ncg_pmap_free(struct ncg_pmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
