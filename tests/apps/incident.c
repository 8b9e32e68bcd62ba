/* incident: the hang of ../../shared/INCIDENT.md in miniature, written as an ordinary NCCL
 * application (builds against NVIDIA's nccl.h with -DNCG_REAL_NCCL_H, or ncclguard's ABI).
 * Each of WORLD_SIZE ranks owns an uneven number of data blocks (rank 3 the fewest, rank 11 the
 * most) and trains until its own blocks run out: per step one ncclReduceScatter (bfloat16
 * gradients, sum) and one ncclAllGather (parameters). Then the epoch-end barrier, an
 * ncclAllReduce(count=1, float32, sum), and a checkpoint. The rank that runs out first waits in
 * the AllReduce while the others wait in a ReduceScatter at the same slot: NCCL hangs forever.
 * `--fix` applies the evenfix (AllReduce MIN of the block counts, int64) and completes.
 * Usage: ncg-launch -n 16 incident [--fix] [--base BLOCKS]. Exit 0 on success, 1 on error. */
#ifdef NCG_REAL_NCCL_H
#include <nccl.h>
#else
#include "ncclguard/nccl_abi.h"
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncg_test.h"

#define BLOCKS_PER_STEP 2
#define SHARD 64 /* elements of the gradient/parameter shard each rank owns */

/* Deterministic uneven block counts: rank 3 gets base, rank 11 base + 8, others in between. */
static int64_t blocks_of(int rank, int64_t base)
{
    if (rank == 3)
        return base;
    if (rank == 11)
        return base + 8;
    return base + 1 + (rank * 5) % 7;
}

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)(u >> 16); /* the values used here are exact in bfloat16 */
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

int main(int argc, char **argv)
{
    int fix = 0;
    int64_t base = 48;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--fix"))
            fix = 1;
        else if (!strcmp(argv[i], "--base") && i + 1 < argc)
            base = atoll(argv[++i]);
        else {
            fprintf(stderr, "usage: incident [--fix] [--base BLOCKS]\n");
            return 2;
        }
    }
    int rank = ncg_test_rank(), world = ncg_test_world();
    ncclUniqueId id;
    if (ncg_test_share_id(&id) != 0)
        return 1;
    ncclComm_t comm;
    NCG_CHECK(ncclCommInitRank(&comm, world, id, rank));

    int64_t blocks = blocks_of(rank, base);
    if (fix) {
        /* evenfix: every rank trains on the global minimum, so all stop at the same step */
        int64_t mine = blocks;
        NCG_CHECK(ncclAllReduce(&mine, &blocks, 1, ncclInt64, ncclMin, comm, ncg_test_stream()));
        NCG_CHECK(ncg_test_sync(comm));
    }

    /* Asynchronous mode (FAKENCCL_ASYNC=1): calls only enqueue on the rank's NCCL stream and
     * the host runs up to WINDOW steps ahead, checking results at the synchronization that
     * ends each window (the loss.item() of a training loop); each step of a window has its own
     * buffers. Synchronous mode: the same code, every call complete when it returns. */
    enum { WINDOW = 4 };
    cudaStream_t st = ncg_test_stream();
    size_t full = (size_t)SHARD * (size_t)world;
    uint16_t *grads = malloc(sizeof(uint16_t) * full * WINDOW);
    uint16_t *gshard = malloc(sizeof(uint16_t) * SHARD * WINDOW);
    uint16_t *params = malloc(sizeof(uint16_t) * full * WINDOW);
    if (!grads || !gshard || !params)
        return 1;
    int step = 0;
    for (int64_t left = blocks; left > 0; left -= BLOCKS_PER_STEP, step++) {
        int w = step % WINDOW;
        uint16_t *gr = grads + (size_t)w * full, *gs = gshard + (size_t)w * SHARD;
        uint16_t *pa = params + (size_t)w * full;
        float g = (float)(step % 4 + 1);
        for (size_t i = 0; i < full; i++)
            gr[i] = to_bf16(g);
        NCG_CHECK(ncclReduceScatter(gr, gs, SHARD, ncclBfloat16, ncclSum, comm, st));
        /* this rank's updated parameter shard, gathered in place into the full parameters */
        for (int i = 0; i < SHARD; i++)
            pa[rank * SHARD + i] = to_bf16((float)(rank + step % 2));
        NCG_CHECK(ncclAllGather(pa + rank * SHARD, pa, SHARD, ncclBfloat16, comm, st));
        if (w != WINDOW - 1 && left > BLOCKS_PER_STEP)
            continue;
        NCG_CHECK(ncg_test_sync(comm));
        for (int s = step - w; s <= step; s++) {
            int k = s % WINDOW;
            float gk = (float)(s % 4 + 1);
            for (int i = 0; i < SHARD; i++)
                if (from_bf16(gshard[(size_t)k * SHARD + i]) != gk * (float)world) {
                    fprintf(stderr, "incident: rank %d step %d: wrong gradient %g (want %g)\n",
                            rank, s, from_bf16(gshard[(size_t)k * SHARD + i]), gk * (float)world);
                    return 1;
                }
            for (int r = 0; r < world; r++)
                if (from_bf16(params[(size_t)k * full + (size_t)r * SHARD]) != (float)(r + s % 2)) {
                    fprintf(stderr, "incident: rank %d step %d: wrong parameter from rank %d\n",
                            rank, s, r);
                    return 1;
                }
        }
        if (rank == 0 && step % 8 == 7)
            printf("incident: rank 0 step %d (%lld blocks left)\n", step,
                   (long long)(left - BLOCKS_PER_STEP > 0 ? left - BLOCKS_PER_STEP : 0));
        fflush(stdout);
    }

    /* epoch end: dist.barrier() before save_checkpoint is an all_reduce */
    float one = 1.0f, sum = 0;
    NCG_CHECK(ncclAllReduce(&one, &sum, 1, ncclFloat32, ncclSum, comm, st));
    NCG_CHECK(ncg_test_sync(comm));
    if (sum != (float)world) {
        fprintf(stderr, "incident: rank %d: barrier sum %g (want %d)\n", rank, sum, world);
        return 1;
    }
    if (rank == 0)
        printf("incident: epoch done after %d steps, checkpoint saved\n", step);
    NCG_CHECK(ncclCommDestroy(comm));
    free(grads);
    free(gshard);
    free(params);
    return 0;
}
