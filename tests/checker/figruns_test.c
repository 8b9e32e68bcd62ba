/* Unit tests of the figure runs (interpose/proto/figruns.c): random per-rank arrays round-trip
 * exactly through runs and their encoding under the bound; past it, coarsening keeps every
 * rank's true count within its run's range (and says so); merging children's pieces; edges
 * (one rank, 1<<20 ranks, identity members, strided split comms); the text. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "figruns.h"
#include "wire_base.h"
#include "wire_io.h"

NCG_CHECK_PROGRAM("figruns_test");

static uint8_t wbuf[1u << 22];

/* s encoded and decoded again into d; 0 when it decoded whole. */
static int wire_trip(const struct ncg_figset *s, struct ncg_figset *d, uint32_t nranks)
{
    struct ncg_wbuf w = {wbuf, sizeof wbuf, 0, 0};
    ncg_figruns_put(&w, s->r, s->n);
    if (w.err)
        return -1;
    struct ncg_rbuf r = {wbuf, w.len, 0, 0};
    if (ncg_figruns_get(&r, d, UINT32_MAX, nranks) < 0 || r.pos != w.len)
        return -1;
    return 0;
}

/* Arrays -> runs -> wire -> runs -> arrays: the same arrays. */
static void exact_trip(const int64_t *counts, const int32_t *members, uint32_t n, uint32_t *nruns)
{
    struct ncg_figset s = {0}, d = {0};
    int64_t *c2 = malloc(sizeof *c2 * n);
    int32_t *m2 = malloc(sizeof *m2 * n);
    CHECK(ncg_figset_from_arrays(&s, counts, members, n) == 0);
    CHECK(wire_trip(&s, &d, n) == 0);
    CHECK(d.n == s.n);
    CHECK(ncg_figruns_to_arrays(d.r, d.n, c2, m2, n) == 0);
    CHECK(!memcmp(c2, counts, sizeof *c2 * n));
    CHECK(!memcmp(m2, members, sizeof *m2 * n));
    if (nruns)
        *nruns = s.n;
    free(c2);
    free(m2);
    ncg_figset_free(&s);
    ncg_figset_free(&d);
}

static void test_random_exact(void)
{
    for (int it = 0; it < 300; it++) {
        uint32_t n = 1 + (uint32_t)(rand() % 3000);
        int64_t *c = malloc(sizeof *c * n);
        int32_t *m = malloc(sizeof *m * n);
        int64_t base = rand() % 5 ? 1000 : (int64_t)1 << 40;
        int32_t stride = rand() % 4, g0 = rand() % 50;
        for (uint32_t i = 0; i < n; i++) {
            /* mostly equal counts, some laggards, some unknown; members mostly a progression */
            int v = rand() % 100;
            c[i] = v < 80 ? base : v < 95 ? base - 1 - rand() % 3 : -1;
            int u = rand() % 100;
            m[i] = u < 90 ? g0 + (int32_t)i * stride : u < 95 ? rand() % 100000 : -1;
            if (c[i] < 0 && m[i] < 0 && rand() % 2)
                m[i] = 7;
        }
        exact_trip(c, m, n, NULL);
        free(c);
        free(m);
    }
}

/* Past the bound: at most max runs, every rank's true count within its run's range, a coarse
 * run flagged, an unknown rank never given a count without PARTIAL. */
static void test_coarsen(void)
{
    for (int it = 0; it < 100; it++) {
        uint32_t n = 1000 + (uint32_t)(rand() % 20000), max = 1 + (uint32_t)(rand() % 600);
        int64_t *c = malloc(sizeof *c * n);
        int32_t *m = malloc(sizeof *m * n);
        for (uint32_t i = 0; i < n; i++) {
            c[i] = rand() % 50 ? 5000 + rand() % 7 : -1;
            m[i] = rand() % 3 ? (int32_t)i : (int32_t)(n + (uint32_t)rand() % n);
        }
        struct ncg_figset s = {0}, d = {0};
        CHECK(ncg_figset_from_arrays(&s, c, m, n) == 0);
        ncg_figset_normalize(&s);
        ncg_figset_coarsen(&s, max);
        CHECK(s.n <= max);
        CHECK(wire_trip(&s, &d, n) == 0 && d.n == s.n);
        uint32_t covered = 0, coarse = 0;
        for (uint32_t j = 0; j < d.n; j++) {
            const struct ncg_figrun *x = &d.r[j];
            coarse += (x->flags & NCG_FIG_COARSE) != 0;
            for (uint32_t i = 0; i < x->n; i++) {
                uint32_t k = x->lo + i;
                covered++;
                if (c[k] >= 0)
                    CHECK(x->count >= 0 && x->count <= c[k] && c[k] <= x->count_hi);
                else
                    CHECK(x->count < 0 || (x->flags & NCG_FIG_PARTIAL));
                int32_t g = ncg_figrun_grank(x, i);
                CHECK(g < 0 || g == m[k]); /* a global rank is never made up */
                if (!(x->flags & NCG_FIG_COARSE))
                    CHECK(x->count == c[k]);
            }
        }
        CHECK(covered <= n);
        CHECK(coarse > 0 || s.n <= max);
        free(c);
        free(m);
        ncg_figset_free(&s);
        ncg_figset_free(&d);
    }
}

static void test_edges(void)
{
    char t[512];
    /* one rank */
    int64_t c1 = 42;
    int32_t m1 = 9;
    uint32_t nr;
    exact_trip(&c1, &m1, 1, &nr);
    CHECK(nr == 1);
    /* 1<<20 ranks, identity members, equal counts: one run, a few bytes */
    uint32_t n = 1u << 20;
    int64_t *c = malloc(sizeof *c * n);
    int32_t *m = malloc(sizeof *m * n);
    for (uint32_t i = 0; i < n; i++) {
        c[i] = 101;
        m[i] = (int32_t)i;
    }
    exact_trip(c, m, n, &nr);
    CHECK(nr == 1);
    struct ncg_figset s = {0};
    CHECK(ncg_figset_from_arrays(&s, c, m, n) == 0);
    struct ncg_wbuf w = {wbuf, sizeof wbuf, 0, 0};
    ncg_figruns_put(&w, s.r, s.n);
    CHECK(w.len < 24);
    CHECK(!strcmp(ncg_figruns_counts_text(s.r, s.n, n, t, sizeof t), "101 on 0-1048575"));
    /* the last rank lags: two runs */
    c[n - 1] = 100;
    exact_trip(c, m, n, &nr);
    CHECK(nr == 2);
    /* strided split comm: comm rank i is global 2i+1 */
    for (uint32_t i = 0; i < 4096; i++)
        m[i] = 2 * (int32_t)i + 1;
    exact_trip(c, m, 4096, &nr);
    CHECK(nr == 1);
    /* descending members (stride -1) */
    for (uint32_t i = 0; i < 64; i++)
        m[i] = 1000 - (int32_t)i;
    exact_trip(c, m, 64, &nr);
    CHECK(nr == 1);
    /* a count near the top of int64 */
    c[0] = INT64_MAX - 1;
    exact_trip(c, m, 3, NULL);
    free(c);
    free(m);
    ncg_figset_free(&s);
}

/* Pieces from children, out of order and overlapping: sorted, known wins, coalesced. */
static void test_merge_and_text(void)
{
    struct ncg_figset s = {0};
    char t[512];
    for (uint32_t i = 12; i < 16; i++)
        CHECK(ncg_figset_add_rank(&s, i, 101, 101, (int32_t)i, NCG_FIG_ACTIVE) == 0);
    CHECK(s.n == 1);
    for (uint32_t i = 0; i < 8; i++)
        CHECK(ncg_figset_add_rank(&s, i, i == 5 ? 100 : 101, 101, (int32_t)i, NCG_FIG_ACTIVE) == 0);
    /* rank 5 again, stale and unknown state: the known one stays */
    CHECK(ncg_figset_add_rank(&s, 5, 7, -1, -1, NCG_FIG_UNKNOWN) == 0);
    ncg_figset_normalize(&s);
    CHECK(s.n == 4); /* 0-4, 5, 6-7, 12-15 (8-11 unknown) */
    CHECK(!strcmp(ncg_figruns_counts_text(s.r, s.n, 16, t, sizeof t),
                  "101 on 0-4,6-7,12-15; 100 on 5; not gathered on 8-11"));
    int64_t c[16];
    int32_t m[16];
    CHECK(ncg_figruns_to_arrays(s.r, s.n, c, m, 16) == 0);
    CHECK(c[5] == 100 && c[8] == -1 && m[13] == 13 && m[9] == -1);
    for (uint32_t i = 8; i < 12; i++) /* the missing subtree answers late */
        CHECK(ncg_figset_add_rank(&s, i, 101, 101, (int32_t)i, NCG_FIG_ACTIVE) == 0);
    ncg_figset_normalize(&s);
    CHECK(s.n == 3);
    CHECK(!strcmp(ncg_figruns_counts_text(s.r, s.n, 16, t, sizeof t), "101 on 0-4,6-15; 100 on 5"));
    ncg_figset_clip(&s, 3, 9);
    CHECK(s.n == 3 && s.r[0].lo == 3 && s.r[0].n == 2 && s.r[2].lo == 6 && s.r[2].n == 4);
    CHECK(ncg_figrun_grank(&s.r[2], 3) == 9);
    /* coarsened: a range, printed as one */
    s.n = 0;
    for (uint32_t i = 0; i < 4096; i++)
        CHECK(ncg_figset_add_rank(&s, i, 1230 + i % 6, -1, (int32_t)i, NCG_FIG_ACTIVE) == 0);
    ncg_figset_coarsen(&s, 1);
    CHECK(s.n == 1 && (s.r[0].flags & NCG_FIG_COARSE) && !(s.r[0].flags & NCG_FIG_PARTIAL));
    CHECK(!strcmp(ncg_figruns_counts_text(s.r, s.n, 4096, t, sizeof t), "1230-1235 on 0-4095"));
    CHECK(ncg_figrun_grank(&s.r[0], 4095) == -1 || ncg_figrun_grank(&s.r[0], 4095) == 4095);
    ncg_figset_free(&s);
}

/* Fitted to a byte budget: the encoding fits, every true count still within its run's range. */
static void test_fit(void)
{
    struct ncg_figset s = {0};
    int64_t c[8192];
    for (uint32_t i = 0; i < 8192; i++) {
        c[i] = ((int64_t)1 << 40) + rand() % 1000;
        CHECK(ncg_figset_add_rank(&s, i, c[i], c[i] - 1, (int32_t)i * 3, NCG_FIG_ACTIVE) == 0);
    }
    ncg_figset_fit(&s, 512, 4000);
    CHECK(s.n <= 512 && s.n > 1 && ncg_figruns_size(s.r, s.n) <= 4000);
    struct ncg_wbuf w = {wbuf, sizeof wbuf, 0, 0};
    ncg_figruns_put(&w, s.r, s.n);
    CHECK(w.len == ncg_figruns_size(s.r, s.n));
    for (uint32_t j = 0; j < s.n; j++)
        for (uint32_t i = 0; i < s.r[j].n; i++)
            CHECK(s.r[j].count <= c[s.r[j].lo + i] && c[s.r[j].lo + i] <= s.r[j].count_hi);
    ncg_figset_free(&s);
}

/* Bad encodings are refused: a run past nranks, an unknown state, runs overlapping. */
static void test_bad(void)
{
    struct ncg_figset s = {0};
    uint8_t b[64];
    struct ncg_wbuf w = {b, sizeof b, 0, 0};
    struct ncg_figrun x = {10, 10, 5, 5, -1, -1, 0, NCG_FIG_ACTIVE, 0};
    ncg_figruns_put(&w, &x, 1);
    struct ncg_rbuf r = {b, w.len, 0, 0};
    CHECK(ncg_figruns_get(&r, &s, 16, 19) < 0); /* ranks 10..19 in 19 ranks */
    r = (struct ncg_rbuf){b, w.len, 0, 0};
    CHECK(ncg_figruns_get(&r, &s, 16, 20) == 0 && s.n == 1);
    r = (struct ncg_rbuf){b, w.len, 0, 0};
    CHECK(ncg_figruns_get(&r, &s, 0, 20) < 0); /* more runs than allowed */
    for (size_t cut = 0; cut < w.len; cut++) {
        r = (struct ncg_rbuf){b, cut, 0, 0};
        CHECK(ncg_figruns_get(&r, &s, 16, 20) < 0);
    }
    b[3] = 0x07; /* state 7 */
    r = (struct ncg_rbuf){b, w.len, 0, 0};
    CHECK(ncg_figruns_get(&r, &s, 16, 20) < 0);
    ncg_figset_free(&s);
}

int main(void)
{
    srand(4242);
    test_random_exact();
    test_coarsen();
    test_edges();
    test_merge_and_text();
    test_fit();
    test_bad();
    return ncg_check_done();
}
