/* Unit test of interpose/shim/graphtab.c: captured call lists (growth, concat, references) and the
 * pointer map (put/replace/get/del, tombstones reused, growth past thousands of keys, keys 0
 * and 1 refused), checked against a plain array model. Exit 0 on success. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "graphtab.h"

static int failures;
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "graphtab_test: %s:%d: %s\n", __FILE__, __LINE__, #cond);              \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static struct ncg_gcall call(uint32_t i)
{
    return (struct ncg_gcall){.comm = (void *)(uintptr_t)(0x1000 + i % 3),
                              .pc = (void *)(uintptr_t)i,
                              .count = 1000 + i,
                              .root_or_peer = (int32_t)i % 5 - 1,
                              .op = 0,
                              .func = i % 7,
                              .dtype = 7,
                              .p2p = (uint8_t)(i % 2),
                              .in_group = 0};
}

static void lists(void)
{
    struct ncg_glist *l = NULL;
    for (uint32_t i = 0; i < 1000; i++) {
        struct ncg_gcall c = call(i);
        CHECK(ncg_glist_append(&l, &c) == 0);
    }
    CHECK(l && l->n == 1000 && l->refs == 1 && l->cap >= 1000);
    for (uint32_t i = 0; l && i < l->n; i++)
        CHECK(l->call[i].count == 1000 + i && l->call[i].pc == (void *)(uintptr_t)i);
    struct ncg_glist *b = NULL;
    struct ncg_gcall c = call(5000);
    CHECK(ncg_glist_append(&b, &c) == 0);
    int oom = 1;
    struct ncg_glist *ab = ncg_glist_concat(l, b, &oom);
    CHECK(!oom && ab && ab->n == 1001 && ab->refs == 1);
    CHECK(ab && ab->call[0].count == 1000 && ab->call[1000].count == 6000);
    CHECK(ncg_glist_concat(NULL, NULL, &oom) == NULL && !oom);
    struct ncg_glist *only = ncg_glist_concat(NULL, b, &oom);
    CHECK(only && only->n == 1 && only != b);
    CHECK(ncg_glist_ref(ab) == ab && ab->refs == 2);
    ncg_glist_unref(ab);
    CHECK(ab->refs == 1);
    ncg_glist_unref(ab);
    ncg_glist_unref(only);
    ncg_glist_unref(b);
    ncg_glist_unref(l);
    ncg_glist_unref(NULL);
    CHECK(ncg_glist_ref(NULL) == NULL);
}

/* A distinct list per key, so that values can be told apart. */
static struct ncg_glist *tagged(uint32_t tag)
{
    struct ncg_glist *l = NULL;
    struct ncg_gcall c = call(tag);
    return ncg_glist_append(&l, &c) == 0 ? l : NULL;
}

#define NKEYS 5000
static void map(void)
{
    struct ncg_pmap m = {0};
    static struct ncg_glist *model[NKEYS];
    struct ncg_glist *old = (void *)1;
    CHECK(ncg_pmap_get(&m, 42) == NULL && ncg_pmap_del(&m, 42) == NULL && !ncg_pmap_slot(&m, 42));
    CHECK(ncg_pmap_put(&m, 0, NULL, &old) == -EINVAL && old == NULL);
    CHECK(ncg_pmap_put(&m, NCG_PMAP_TOMB, NULL, &old) == -EINVAL);
    /* keys like pointers: multiples of 16, plus a few odd ones */
    for (uint32_t i = 0; i < NKEYS; i++) {
        uintptr_t k = 0x7f0000000000ull + (uintptr_t)i * 16 + (i % 7 == 0 ? 3 : 0);
        model[i] = tagged(i);
        CHECK(ncg_pmap_put(&m, k, model[i], &old) == 0 && old == NULL);
    }
    CHECK(m.n == NKEYS && m.used * 2 <= m.cap);
    for (uint32_t i = 0; i < NKEYS; i++) {
        uintptr_t k = 0x7f0000000000ull + (uintptr_t)i * 16 + (i % 7 == 0 ? 3 : 0);
        CHECK(ncg_pmap_get(&m, k) == model[i]);
    }
    /* replace returns the old value; delete every other key; the rest stay reachable through
     * the tombstones */
    for (uint32_t i = 0; i < NKEYS; i++) {
        uintptr_t k = 0x7f0000000000ull + (uintptr_t)i * 16 + (i % 7 == 0 ? 3 : 0);
        if (i % 2) {
            CHECK(ncg_pmap_del(&m, k) == model[i]);
            ncg_glist_unref(model[i]);
            model[i] = NULL;
            CHECK(ncg_pmap_del(&m, k) == NULL);
        } else if (i % 4 == 0) {
            struct ncg_glist *nv = tagged(i + 100000);
            CHECK(ncg_pmap_put(&m, k, nv, &old) == 0 && old == model[i]);
            ncg_glist_unref(old);
            model[i] = nv;
        }
    }
    CHECK(m.n == NKEYS / 2);
    for (uint32_t i = 0; i < NKEYS; i++) {
        uintptr_t k = 0x7f0000000000ull + (uintptr_t)i * 16 + (i % 7 == 0 ? 3 : 0);
        CHECK(ncg_pmap_get(&m, k) == model[i]);
        struct ncg_glist **slot = ncg_pmap_slot(&m, k);
        CHECK(model[i] ? slot && *slot == model[i] : slot == NULL);
    }
    /* churn: insert/delete many more keys than the table holds; tombstones must not fill it */
    uint32_t cap_before = m.cap;
    for (uint32_t r = 0; r < 20 * NKEYS; r++) {
        uintptr_t k = 0x100000000ull + (uintptr_t)r * 64;
        struct ncg_glist *v = tagged(r);
        CHECK(ncg_pmap_put(&m, k, v, &old) == 0 && old == NULL);
        CHECK(ncg_pmap_del(&m, k) == v);
        ncg_glist_unref(v);
    }
    CHECK(m.n == NKEYS / 2 && m.used * 2 <= m.cap && m.cap <= cap_before * 2);
    for (uint32_t i = 0; i < NKEYS; i++) {
        uintptr_t k = 0x7f0000000000ull + (uintptr_t)i * 16 + (i % 7 == 0 ? 3 : 0);
        CHECK(ncg_pmap_get(&m, k) == model[i]);
        ncg_glist_unref(ncg_pmap_del(&m, k));
    }
    CHECK(m.n == 0);
    ncg_pmap_free(&m);
    CHECK(m.cap == 0 && ncg_pmap_get(&m, 0x7f0000000000ull) == NULL);
}

int main(void)
{
    lists();
    map();
    if (failures)
        return 1;
    printf("graphtab ok\n");
    return 0;
}
