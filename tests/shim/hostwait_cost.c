/* The interposed host-wait functions (interpose/shim/hostwait.c) through the real
 * libncclguard.so, in a process with one communicator (the null NCCL, so the shim is active):
 * results equal the runtime's (idle, busy and bad handles), and the cost of cudaEventQuery of
 * a completed event and of cudaStreamSynchronize of an idle stream, through the dynamic linker
 * (the preloaded shim) and straight into the runtime (dlsym of its handle), rounds of 1,000
 * calls interleaved, median ns per call. t_hostwait.sh runs it guarded and with NCCLGUARD=0. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fc_test.h"
#include "ncclguard/nccl_abi.h"

enum { CALLS = 1000 };

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

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    ncclUniqueId id;
    ncclComm_t comm;
    if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess)
        return 1;
    void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(rt);
    cudaError_t (*r_equery)(void *) = (cudaError_t(*)(void *))dlsym(rt, "cudaEventQuery");
    cudaError_t (*r_squery)(void *) = (cudaError_t(*)(void *))dlsym(rt, "cudaStreamQuery");
    cudaError_t (*r_ssync)(void *) = (cudaError_t(*)(void *))dlsym(rt, "cudaStreamSynchronize");
    cudaError_t (*r_esync)(void *) = (cudaError_t(*)(void *))dlsym(rt, "cudaEventSynchronize");
    REQUIRE(r_equery && r_squery && r_ssync && r_esync);

    cudaStream_t idle, busy;
    cudaEvent_t ev, pending;
    struct gate g = GATE_INIT;
    CK(cudaStreamCreateWithFlags(&idle, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&busy, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&pending, cudaEventDisableTiming));
    CK(cudaLaunchHostFunc(busy, gate_wait, &g));
    gate_entered(&g);
    CK(cudaEventRecord(pending, busy));
    CK(cudaEventRecord(ev, idle));
    CK(cudaStreamSynchronize(idle));
    void *bad = (void *)(uintptr_t)0xbad0;
    int same = cudaEventQuery(ev) == r_equery(ev) && r_equery(ev) == 0 &&
               cudaEventQuery(pending) == r_equery(pending) && r_equery(pending) == 600 &&
               cudaEventQuery(bad) == r_equery(bad) && r_equery(bad) == 400 &&
               cudaStreamQuery(busy) == r_squery(busy) && r_squery(busy) == 600 &&
               cudaStreamQuery(bad) == r_squery(bad) && r_squery(bad) == 400 &&
               cudaStreamSynchronize(idle) == r_ssync(idle) && r_ssync(idle) == 0 &&
               cudaStreamSynchronize(bad) == r_ssync(bad) && r_ssync(bad) == 400 &&
               cudaEventSynchronize(bad) == r_esync(bad) && r_esync(bad) == 400 &&
               cudaEventSynchronize(ev) == 0;
    cudaGetLastError();
    gate_open(&g);
    CK(cudaStreamSynchronize(busy));

    double *q = calloc((size_t)rounds, sizeof *q), *rq = calloc((size_t)rounds, sizeof *rq);
    double *s = calloc((size_t)rounds, sizeof *s), *rs = calloc((size_t)rounds, sizeof *rs);
    REQUIRE(q && rq && s && rs);
    for (int k = -rounds / 10; k < rounds; k++) { /* the first tenth warms up */
        uint64_t t0 = now_ns();
        for (int i = 0; i < CALLS; i++)
            cudaEventQuery(ev);
        uint64_t t1 = now_ns();
        for (int i = 0; i < CALLS; i++)
            r_equery(ev);
        uint64_t t2 = now_ns();
        for (int i = 0; i < CALLS; i++)
            cudaStreamSynchronize(idle);
        uint64_t t3 = now_ns();
        for (int i = 0; i < CALLS; i++)
            r_ssync(idle);
        uint64_t t4 = now_ns();
        if (k < 0)
            continue;
        q[k] = (double)(t1 - t0) / CALLS;
        rq[k] = (double)(t2 - t1) / CALLS;
        s[k] = (double)(t3 - t2) / CALLS;
        rs[k] = (double)(t4 - t3) / CALLS;
    }
    printf("hostwait_cost: %s cudaEventQuery %.1f ns (runtime %.1f), cudaStreamSynchronize %.1f "
           "ns (runtime %.1f), median of %d x %d calls\n",
           argc > 2 ? argv[2] : "run", median(q, rounds), median(rq, rounds), median(s, rounds),
           median(rs, rounds), rounds, CALLS);
    ncclCommDestroy(comm);
    printf("hostwait_cost: results %s\n", same ? "same" : "DIFFER");
    return same ? 0 : 1;
}
