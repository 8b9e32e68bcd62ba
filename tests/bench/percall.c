/* Per-call cost driver: T threads, each on its own communicator of the null NCCL, issue
 * ncclAllReduce in batches of BATCH calls, timing each batch with CLOCK_MONOTONIC; prints the
 * median and p99 of ns per call over all batches. Run by percall.sh three ways (no shim, shim,
 * shim with NCCLGUARD=0) in one go; the difference is the shim's cost per call. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ncclguard/nccl_abi.h"

enum { BATCH = 16, WARMUP = 20000 };
static int nbatches;
static pthread_barrier_t start;

struct th {
    ncclComm_t comm;
    double *ns; /* per-call ns of each batch */
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *run(void *arg)
{
    struct th *t = arg;
    float a[4] = {0}, b[4];
    for (int i = 0; i < WARMUP; i++)
        ncclAllReduce(a, b, 4, ncclFloat, ncclSum, t->comm, NULL);
    pthread_barrier_wait(&start);
    for (int k = 0; k < nbatches; k++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < BATCH; i++)
            ncclAllReduce(a, b, 4, ncclFloat, ncclSum, t->comm, NULL);
        t->ns[k] = (double)(now_ns() - t0) / BATCH;
    }
    return NULL;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    int nt = argc > 1 ? atoi(argv[1]) : 1;
    nbatches = argc > 2 ? atoi(argv[2]) : 100000;
    const char *label = argc > 3 ? argv[3] : "run";
    struct th *ts = calloc((size_t)nt, sizeof *ts);
    pthread_t *tid = calloc((size_t)nt, sizeof *tid);
    pthread_barrier_init(&start, NULL, (unsigned)nt);
    for (int i = 0; i < nt; i++) {
        ncclUniqueId id;
        ncclGetUniqueId(&id);
        if (ncclCommInitRank(&ts[i].comm, 1, id, 0) != ncclSuccess)
            return 1;
        ts[i].ns = malloc((size_t)nbatches * sizeof(double));
    }
    for (int i = 0; i < nt; i++)
        pthread_create(&tid[i], NULL, run, &ts[i]);
    for (int i = 0; i < nt; i++)
        pthread_join(tid[i], NULL);
    size_t n = (size_t)nt * (size_t)nbatches;
    double *all = malloc(n * sizeof *all);
    for (int i = 0; i < nt; i++)
        memcpy(all + (size_t)i * nbatches, ts[i].ns, (size_t)nbatches * sizeof(double));
    qsort(all, n, sizeof *all, cmp);
    printf("%-10s threads=%d median_ns=%.1f p99_ns=%.1f\n", label, nt, all[n / 2],
           all[(size_t)(n * 0.99)]);
    for (int i = 0; i < nt; i++)
        ncclCommDestroy(ts[i].comm);
    return 0;
}
