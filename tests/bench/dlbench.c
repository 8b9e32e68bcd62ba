/* make bench-deadlock: the cost of one DEADLOCK check (deadlock.h's ncg_dl_find, both graphs)
 * in a hang where every waiting process is blocked in the same collective slot and one rank
 * in another comm's (the inversion), for W waiting processes in a comm of N ranks: the
 * checker runs it twice an interval while calls wait. Prints the median of R runs per size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "deadlock.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run(uint32_t nw, uint32_t nr, int streams, int reps)
{
    struct ncg_dl_proc *p = calloc(nw, sizeof *p);
    struct ncg_wait_ent *w = calloc(2 * (size_t)nw, sizeof *w);
    struct ncg_dl_member *ma = calloc(nr, sizeof *ma), *mb = calloc(nr, sizeof *mb);
    struct ncg_dl_cycle *f = malloc(sizeof *f);
    char *notes = malloc(NCG_WIRE_NOTES);
    double t[32];
    int found = 0;
    for (uint32_t i = 0; i < nw; i++) {
        int odd = i == 13 % nw; /* rank 13 takes B first */
        uint32_t k = streams ? 2 : 1;
        for (uint32_t q = 0; q < k; q++)
            w[2 * i + q] = (struct ncg_wait_ent){.comm_id = (q == 1) != odd ? 0xb0 : 0xa0,
                                                 .rank = i,
                                                 .tid = 1000 + i,
                                                 .queued = (uint8_t)streams,
                                                 .stream = (uint8_t)streams,
                                                 .order = streams ? q + 1 : 0,
                                                 .call = {20, 8, -1, 1, 7, 0}};
        p[i] = (struct ncg_dl_proc){i, "h", &w[2 * i], k};
        ma[i] = mb[i] = (struct ncg_dl_member){1, i, 1000 + i, (int32_t)i, 21, 20};
    }
    struct ncg_dl_comm c[2] = {{0xa0, nr, ma, 0, NULL}, {0xb0, nr, mb, 0, NULL}};
    for (int r = 0; r < reps; r++) {
        double a = now_ms();
        found = ncg_dl_find(p, nw, c, 2, streams, f, notes);
        t[r] = now_ms() - a;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    printf("DEADLOCK check, %-7s %5u waiting of %5u ranks: median %8.3f ms, worst %8.3f ms "
           "(%d runs; cycle %s)\n",
           streams ? "streams" : "threads", nw, nr, t[reps / 2], t[reps - 1], reps,
           found == 1 ? "found" : "NOT found");
    free(p);
    free(w);
    free(ma);
    free(mb);
    free(f);
    free(notes);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 9;
    if (reps < 1 || reps > 32)
        reps = 9;
    static const uint32_t sizes[][2] = {{64, 64}, {1024, 1024}, {4096, 16384}, {16384, 16384}};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
            run(sizes[i][0], sizes[i][1], s, reps);
    return 0;
}
