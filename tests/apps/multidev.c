/* multidev: several comm ranks in one process, as NCCL's "multiple devices per thread" example
 * and nccl-tests' -g N do (ncclCommInitRank of each inside one group; each step one group with a
 * call per comm), or every rank in one process (ncclCommInitAll, nccl-tests' threads mode).
 * Usage: multidev MODE [ITERS] (default 40 steps)
 *   ranks    process RANK of WORLD_SIZE holds comm ranks RANK*K .. RANK*K+K-1 of a comm of
 *            WORLD_SIZE*K ranks (K: $MULTIDEV_PER_PROC, default 2)
 *   initall  one process: ncclCommInitAll of K comms
 * $MULTIDEV_ODD=R: at step ITERS/2 comm rank R calls Broadcast where the others AllReduce (a
 * MISMATCH; the step then hangs). Asynchronous mode: calls enqueue on the thread's stream; the
 * host synchronizes every 4 steps. Prints "multidev: done" when every step completed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"

#define MAXK 8

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "ranks") && strcmp(argv[1], "initall"))) {
        fprintf(stderr, "usage: multidev ranks|initall [ITERS]\n");
        return 2;
    }
    int initall = !strcmp(argv[1], "initall");
    int iters = argc > 2 ? atoi(argv[2]) : 40;
    const char *ks = getenv("MULTIDEV_PER_PROC"), *os = getenv("MULTIDEV_ODD");
    int k = ks ? atoi(ks) : 2, odd = os ? atoi(os) : -1;
    if (k < 1 || k > MAXK)
        k = 2;
    int prank = initall ? 0 : ncg_test_rank(), world = initall ? 1 : ncg_test_world();
    int nranks = world * k;
    ncclComm_t comm[MAXK];
    if (initall) {
        NCG_CHECK(ncclCommInitAll(comm, k, NULL));
    } else {
        ncclUniqueId id;
        if (ncg_test_share_id(&id) != 0)
            return 1;
        NCG_CHECK(ncclGroupStart());
        for (int d = 0; d < k; d++)
            NCG_CHECK(ncclCommInitRank(&comm[d], nranks, id, prank * k + d));
        NCG_CHECK(ncclGroupEnd());
    }
    cudaStream_t s = ncg_test_stream();
    float *buf = calloc((size_t)k * 64, sizeof *buf);
    if (!buf)
        return 1;
    for (int it = 0; it < iters; it++) {
        NCG_CHECK(ncclGroupStart());
        for (int d = 0; d < k; d++) {
            float *b = buf + 64 * d;
            if (it == iters / 2 && prank * k + d == odd) {
                printf("multidev: comm rank %d diverges at step %d\n", odd, it);
                fflush(stdout);
                NCG_CHECK(ncclBroadcast(b, b, 64, ncclFloat32, 0, comm[d], s));
            } else {
                NCG_CHECK(ncclAllReduce(b, b, 64, ncclFloat32, ncclSum, comm[d], s));
            }
        }
        NCG_CHECK(ncclGroupEnd());
        if (it % 4 == 3)
            for (int d = 0; d < k; d++)
                NCG_CHECK(ncg_test_sync(comm[d]));
    }
    for (int d = 0; d < k; d++)
        NCG_CHECK(ncg_test_sync(comm[d]));
    for (int d = 0; d < k; d++)
        NCG_CHECK(ncclCommDestroy(comm[d]));
    free(buf);
    printf("multidev: done\n");
    return 0;
}
