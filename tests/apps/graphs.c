/* graphs: NCCL collectives captured into CUDA graphs and replayed, written against NVIDIA's
 * nccl.h and cuda_runtime_api.h and linked with libcudart.so.13 (runs on tests/fakecuda's CPU
 * runtime and the CPU NCCL, which records captured calls as persistent stream work).
 * Each rank captures graph A = { AllReduce(1024 f32 sum), ReduceScatter(256 f32 sum) } and
 * graph B = the same two calls in the other order, instantiates both, replays A N times on a
 * non-blocking stream, synchronizes every M replays and at the end, and checks the results.
 * Usage (under ncg-launch): graphs [--replays N] [--odd R --at K] [--eager R] [--sync-every M]
 *   --odd R --at K: rank R launches B instead of A at replay K (0-based; the job then hangs:
 *                   the collectives mismatch), after printing "replay_at <unix time>"
 *   --eager R:      rank R issues the two calls of A directly on the stream at every replay
 * Exit 0 ("graphs: rank R: N replays ok" on every rank), 1 on a failed call or wrong data. */
#include <nccl.h>

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "ncg_test.h"

#define AR_COUNT 1024
#define RS_COUNT 256 /* per rank */

static int g_rank, g_world;

#define CUDA_CK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "graphs: rank %d: %s: %s\n", g_rank, #call, cudaGetErrorString(e_));   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

struct bufs {
    float *ar_send, *ar_recv, *rs_send, *rs_recv;
};

static void usage(void)
{
    fprintf(stderr, "usage: graphs [--replays N] [--odd R --at K] [--eager R] [--sync-every M]\n");
    exit(2);
}

__attribute__((noinline)) static void issue_a(const struct bufs *b, ncclComm_t comm, cudaStream_t s)
{
    NCG_CHECK(ncclAllReduce(b->ar_send, b->ar_recv, AR_COUNT, ncclFloat32, ncclSum, comm, s));
    NCG_CHECK(ncclReduceScatter(b->rs_send, b->rs_recv, RS_COUNT, ncclFloat32, ncclSum, comm, s));
}

__attribute__((noinline)) static cudaGraph_t capture_graph_a(const struct bufs *b, ncclComm_t comm,
                                                             cudaStream_t s)
{
    cudaGraph_t g;
    CUDA_CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    issue_a(b, comm, s);
    CUDA_CK(cudaStreamEndCapture(s, &g));
    return g;
}

__attribute__((noinline)) static cudaGraph_t capture_graph_b(const struct bufs *b, ncclComm_t comm,
                                                             cudaStream_t s)
{
    cudaGraph_t g;
    CUDA_CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    NCG_CHECK(ncclReduceScatter(b->rs_send, b->rs_recv, RS_COUNT, ncclFloat32, ncclSum, comm, s));
    NCG_CHECK(ncclAllReduce(b->ar_send, b->ar_recv, AR_COUNT, ncclFloat32, ncclSum, comm, s));
    CUDA_CK(cudaStreamEndCapture(s, &g));
    return g;
}

/* Inputs depend on the rank; the sums over ranks are W(W+1)/2 times a position factor. */
static void fill(struct bufs *b)
{
    for (int i = 0; i < AR_COUNT; i++)
        b->ar_send[i] = (float)((g_rank + 1) * (i % 7 + 1));
    for (int j = 0; j < RS_COUNT * g_world; j++)
        b->rs_send[j] = (float)((g_rank + 1) * (j % 5 + 1));
}

static void verify(const struct bufs *b, int replay)
{
    float tri = (float)(g_world * (g_world + 1) / 2);
    for (int i = 0; i < AR_COUNT; i++)
        if (b->ar_recv[i] != tri * (float)(i % 7 + 1)) {
            fprintf(stderr, "graphs: rank %d: after replay %d: allreduce[%d] = %g, want %g\n",
                    g_rank, replay, i, b->ar_recv[i], tri * (float)(i % 7 + 1));
            exit(1);
        }
    for (int k = 0; k < RS_COUNT; k++) {
        int j = g_rank * RS_COUNT + k;
        if (b->rs_recv[k] != tri * (float)(j % 5 + 1)) {
            fprintf(stderr, "graphs: rank %d: after replay %d: reducescatter[%d] = %g, want %g\n",
                    g_rank, replay, k, b->rs_recv[k], tri * (float)(j % 5 + 1));
            exit(1);
        }
    }
}

static void sync_and_check(cudaStream_t s, ncclComm_t comm, const struct bufs *b, int replay)
{
    ncclResult_t ae = ncclSuccess;
    CUDA_CK(cudaStreamSynchronize(s));
    NCG_CHECK(ncclCommGetAsyncError(comm, &ae));
    NCG_CHECK(ae);
    verify(b, replay);
}

int main(int argc, char **argv)
{
    int replays = 100, odd = -1, at = -1, eager = -1, sync_every = 10;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            usage();
        if (!strcmp(argv[i], "--replays"))
            replays = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--odd"))
            odd = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--at"))
            at = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--eager"))
            eager = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sync-every"))
            sync_every = atoi(argv[++i]);
        else
            usage();
    }
    if (replays < 1 || sync_every < 1 || (odd >= 0) != (at >= 0))
        usage();
    g_rank = ncg_test_rank();
    g_world = ncg_test_world();

    ncclUniqueId id;
    ncclComm_t comm;
    cudaStream_t s;
    struct bufs b;
    if (ncg_test_share_id(&id) != 0)
        return 1;
    NCG_CHECK(ncclCommInitRank(&comm, g_world, id, g_rank));
    CUDA_CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_CK(cudaMalloc((void **)&b.ar_send, AR_COUNT * sizeof(float)));
    CUDA_CK(cudaMalloc((void **)&b.ar_recv, AR_COUNT * sizeof(float)));
    CUDA_CK(cudaMalloc((void **)&b.rs_send, (size_t)RS_COUNT * g_world * sizeof(float)));
    CUDA_CK(cudaMalloc((void **)&b.rs_recv, RS_COUNT * sizeof(float)));
    fill(&b);

    cudaGraph_t ga = capture_graph_a(&b, comm, s), gb = capture_graph_b(&b, comm, s);
    cudaGraphExec_t xa, xb;
    CUDA_CK(cudaGraphInstantiate(&xa, ga, 0));
    CUDA_CK(cudaGraphInstantiate(&xb, gb, 0));

    for (int r = 0; r < replays; r++) {
        if (g_rank == eager) {
            issue_a(&b, comm, s);
        } else if (g_rank == odd && r == at) {
            struct timeval tv;
            gettimeofday(&tv, NULL);
            printf("replay_at %ld.%06ld\n", (long)tv.tv_sec, (long)tv.tv_usec);
            fflush(stdout);
            CUDA_CK(cudaGraphLaunch(xb, s));
        } else {
            CUDA_CK(cudaGraphLaunch(xa, s));
        }
        if ((r + 1) % sync_every == 0)
            sync_and_check(s, comm, &b, r);
    }
    sync_and_check(s, comm, &b, replays - 1);

    /* as NCCL requires: the graphs go before the communicator */
    CUDA_CK(cudaGraphExecDestroy(xa));
    CUDA_CK(cudaGraphExecDestroy(xb));
    CUDA_CK(cudaGraphDestroy(ga));
    CUDA_CK(cudaGraphDestroy(gb));
    NCG_CHECK(ncclCommDestroy(comm));
    CUDA_CK(cudaStreamDestroy(s));
    CUDA_CK(cudaFree(b.ar_send));
    CUDA_CK(cudaFree(b.ar_recv));
    CUDA_CK(cudaFree(b.rs_send));
    CUDA_CK(cudaFree(b.rs_recv));
    printf("graphs: rank %d: %d replays ok\n", g_rank, replays);
    return 0;
}
