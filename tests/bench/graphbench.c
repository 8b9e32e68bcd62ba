/* Per-replay cost driver (make bench-graph): a 1-rank communicator of the null NCCL, a graph of
 * K NCCL calls captured on a stream of the do-nothing runtime (tests/bench/mockcudart.c, linked),
 * then cudaGraphLaunch in batches of BATCH launches timed with CLOCK_MONOTONIC; prints the median
 * and p99 ns per launch. Run by graphbench.sh without the shim, with it and with NCCLGUARD=0.
 *   graphbench K NBATCHES LABEL */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ncclguard/nccl_abi.h"

typedef void *cudaGraph_t, *cudaGraphExec_t;
int cudaStreamBeginCapture(cudaStream_t s, int mode);
int cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
int cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags);
int cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s);

enum { BATCH = 16, WARMUP = 20000 };

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    int k = argc > 1 ? atoi(argv[1]) : 2;
    int nb = argc > 2 ? atoi(argv[2]) : 100000;
    const char *label = argc > 3 ? argv[3] : "run";
    ncclUniqueId id;
    ncclComm_t comm;
    if (k < 1 || nb < 1 || ncclGetUniqueId(&id) != ncclSuccess ||
        ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess)
        return 1;
    cudaStream_t s = (cudaStream_t)0x10; /* the mock runtime takes any handle */
    float a[256], b[256];
    cudaGraph_t g;
    cudaGraphExec_t e;
    if (cudaStreamBeginCapture(s, 0) != 0)
        return 1;
    for (int i = 0; i < k; i++) {
        if (i % 2)
            ncclReduceScatter(a, b, 128, ncclFloat, ncclSum, comm, s);
        else
            ncclAllReduce(a, b, 256, ncclFloat, ncclSum, comm, s);
    }
    if (cudaStreamEndCapture(s, &g) != 0 || cudaGraphInstantiate(&e, g, 0) != 0)
        return 1;
    for (int i = 0; i < WARMUP; i++)
        cudaGraphLaunch(e, s);
    double *ns = malloc((size_t)nb * sizeof *ns);
    if (!ns)
        return 1;
    for (int j = 0; j < nb; j++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < BATCH; i++)
            cudaGraphLaunch(e, s);
        ns[j] = (double)(now_ns() - t0) / BATCH;
    }
    qsort(ns, (size_t)nb, sizeof *ns, cmp);
    printf("%-10s calls=%d median_ns=%.1f p99_ns=%.1f\n", label, k, ns[nb / 2],
           ns[(size_t)(nb * 0.99)]);
    ncclCommDestroy(comm);
    return 0;
}
