/* userguide: the NCCL user guide's examples, built against NVIDIA's nccl.h and
 * cuda_runtime_api.h, linked against the genuine libcudart.so.13 and run on the CPU runtime
 * (fakenccl.mk). The inputs are written by work queued on streams behind a slow host function
 * (a stand-in for a long kernel), so a result is right only if each NCCL call ran after the work
 * queued before it on its stream, in both of fakenccl's modes.
 *   userguide single [NDEV]: example 1 (one process, NDEV devices, default 4): per device
 *     cudaMalloc, cudaMemset of the buffers (legacy stream), a blocking cudaStreamCreate stream,
 *     ncclCommInitAll, a group of int8 sum all-reduces, cudaStreamSynchronize, check = NDEV.
 *   userguide ranks (under ncg-launch): example 3 (one device per process): float inputs
 *     copied in with cudaMemcpyAsync on a non-blocking stream, in-place all-reduce of one
 *     buffer and out-of-place of another, results copied back on the stream, check the sums.
 *   userguide graphs [NDEV]: example 1 captured: each device's stream captured into its own
 *     graph (as nccl-tests -g N -G M), one group of an all-reduce and a send/recv ring over
 *     the NDEV communicators, 5 launches of every graph with new inputs, results checked.
 * Prints "userguide: MODE ok" (ranks: from every rank). */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ncg_test.h"

#define CUDACHECK(call)                                                                            \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "userguide: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,               \
                    cudaGetErrorString(e_));                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define MAX_DEV 8
#define SIZE (256 * 1024)

/* A slow kernel's stand-in: holds its stream 150 ms. */
static void slow(void *arg)
{
    struct timespec ts = {0, 150 * 1000 * 1000};
    (void)arg;
    nanosleep(&ts, NULL);
}

static int single(int ndev)
{
    ncclComm_t comms[MAX_DEV];
    int devs[MAX_DEV];
    char *send[MAX_DEV], *recv[MAX_DEV];
    cudaStream_t s[MAX_DEV];
    char *host = malloc(SIZE);

    for (int i = 0; i < ndev; i++) {
        devs[i] = i;
        CUDACHECK(cudaSetDevice(i));
        CUDACHECK(cudaMalloc((void **)&send[i], SIZE));
        CUDACHECK(cudaMalloc((void **)&recv[i], SIZE));
        CUDACHECK(cudaLaunchHostFunc(NULL, slow, NULL)); /* legacy stream, before the memsets */
        CUDACHECK(cudaMemset(send[i], 1, SIZE));
        CUDACHECK(cudaMemset(recv[i], 0, SIZE));
        CUDACHECK(cudaStreamCreate(&s[i]));
    }
    NCG_CHECK(ncclCommInitAll(comms, ndev, devs));
    NCG_CHECK(ncclGroupStart());
    for (int i = 0; i < ndev; i++)
        NCG_CHECK(ncclAllReduce(send[i], recv[i], SIZE, ncclInt8, ncclSum, comms[i], s[i]));
    NCG_CHECK(ncclGroupEnd());
    for (int i = 0; i < ndev; i++) {
        CUDACHECK(cudaSetDevice(i));
        CUDACHECK(cudaStreamSynchronize(s[i]));
        CUDACHECK(cudaMemcpy(host, recv[i], SIZE, cudaMemcpyDeviceToHost));
        for (int k = 0; k < SIZE; k++)
            if (host[k] != ndev) {
                fprintf(stderr, "userguide: single: device %d byte %d is %d, want %d\n", i, k,
                        host[k], ndev);
                return 1;
            }
    }
    for (int i = 0; i < ndev; i++) {
        CUDACHECK(cudaFree(send[i]));
        CUDACHECK(cudaFree(recv[i]));
        NCG_CHECK(ncclCommDestroy(comms[i]));
    }
    free(host);
    printf("userguide: single ok\n");
    return 0;
}

static int ranks(void)
{
    int rank = ncg_test_rank(), n = ncg_test_world();
    const size_t count = SIZE / sizeof(float);
    float *a, *b, *out, *in = malloc(SIZE), *res = malloc(SIZE), *res2 = malloc(SIZE);
    ncclUniqueId id;
    ncclComm_t comm;
    cudaStream_t s;

    for (size_t k = 0; k < count; k++)
        in[k] = (float)(rank + 1) + (float)(k % 7);
    CUDACHECK(cudaSetDevice(0));
    CUDACHECK(cudaMalloc((void **)&a, SIZE));
    CUDACHECK(cudaMalloc((void **)&b, SIZE));
    CUDACHECK(cudaMalloc((void **)&out, SIZE));
    CUDACHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (ncg_test_share_id(&id) != 0)
        return 1;
    NCG_CHECK(ncclCommInitRank(&comm, n, id, rank));
    CUDACHECK(cudaLaunchHostFunc(s, slow, NULL));
    CUDACHECK(cudaMemcpyAsync(a, in, SIZE, cudaMemcpyHostToDevice, s));
    CUDACHECK(cudaMemsetAsync(b, 0, SIZE, s));
    CUDACHECK(cudaMemcpyAsync(b, in, SIZE / 2, cudaMemcpyHostToDevice, s));
    NCG_CHECK(ncclAllReduce(a, a, count, ncclFloat, ncclSum, comm, s));
    NCG_CHECK(ncclAllReduce(b, out, count, ncclFloat, ncclSum, comm, s));
    CUDACHECK(cudaMemcpyAsync(res, a, SIZE, cudaMemcpyDeviceToHost, s));
    CUDACHECK(cudaMemcpyAsync(res2, out, SIZE, cudaMemcpyDeviceToHost, s));
    CUDACHECK(cudaStreamSynchronize(s));
    for (size_t k = 0; k < count; k++) {
        float want = (float)(n * (n + 1) / 2) + (float)(n * (int)(k % 7));
        float want2 = k < count / 2 ? want : 0.0f;
        if (res[k] != want || res2[k] != want2) {
            fprintf(stderr,
                    "userguide: ranks: rank %d element %zu: in-place %g (want %g), "
                    "out-of-place %g (want %g)\n",
                    rank, k, res[k], want, res2[k], want2);
            return 1;
        }
    }
    NCG_CHECK(ncclCommDestroy(comm));
    CUDACHECK(cudaStreamDestroy(s));
    printf("userguide: ranks ok\n");
    return 0;
}

static int graphs(int ndev)
{
    const size_t count = 1024;
    ncclComm_t comms[MAX_DEV];
    int devs[MAX_DEV] = {0};
    float *send[MAX_DEV], *recv[MAX_DEV], *ring[MAX_DEV];
    cudaStream_t s[MAX_DEV];
    cudaGraph_t g[MAX_DEV];
    cudaGraphExec_t ge[MAX_DEV];
    float *host = malloc(count * sizeof(float)), *host2 = malloc(count * sizeof(float));

    for (int i = 0; i < ndev; i++) {
        devs[i] = i;
        CUDACHECK(cudaSetDevice(i));
        CUDACHECK(cudaMalloc((void **)&send[i], count * sizeof(float)));
        CUDACHECK(cudaMalloc((void **)&recv[i], count * sizeof(float)));
        CUDACHECK(cudaMalloc((void **)&ring[i], count * sizeof(float)));
        CUDACHECK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    }
    NCG_CHECK(ncclCommInitAll(comms, ndev, devs));
    for (int i = 0; i < ndev; i++)
        CUDACHECK(cudaStreamBeginCapture(s[i], cudaStreamCaptureModeThreadLocal));
    NCG_CHECK(ncclGroupStart());
    for (int i = 0; i < ndev; i++) {
        NCG_CHECK(ncclAllReduce(send[i], recv[i], count, ncclFloat, ncclSum, comms[i], s[i]));
        NCG_CHECK(ncclSend(send[i], count, ncclFloat, (i + 1) % ndev, comms[i], s[i]));
        NCG_CHECK(ncclRecv(ring[i], count, ncclFloat, (i + ndev - 1) % ndev, comms[i], s[i]));
    }
    NCG_CHECK(ncclGroupEnd());
    for (int i = 0; i < ndev; i++) {
        CUDACHECK(cudaStreamEndCapture(s[i], &g[i]));
        CUDACHECK(cudaGraphInstantiate(&ge[i], g[i], 0));
    }
    for (int it = 0; it < 5; it++) {
        for (int i = 0; i < ndev; i++) {
            for (size_t k = 0; k < count; k++)
                host[k] = (float)(100 * it + 10 * i) + (float)(k % 5);
            CUDACHECK(cudaMemcpy(send[i], host, count * sizeof(float), cudaMemcpyHostToDevice));
        }
        for (int i = 0; i < ndev; i++)
            CUDACHECK(cudaGraphLaunch(ge[i], s[i]));
        for (int i = 0; i < ndev; i++)
            CUDACHECK(cudaStreamSynchronize(s[i]));
        for (int i = 0; i < ndev; i++) {
            int from = (i + ndev - 1) % ndev;
            CUDACHECK(cudaMemcpy(host, recv[i], count * sizeof(float), cudaMemcpyDeviceToHost));
            CUDACHECK(cudaMemcpy(host2, ring[i], count * sizeof(float), cudaMemcpyDeviceToHost));
            for (size_t k = 0; k < count; k++) {
                float want = (float)(ndev * 100 * it + 10 * ndev * (ndev - 1) / 2) +
                             (float)(ndev * (int)(k % 5));
                float want2 = (float)(100 * it + 10 * from) + (float)(k % 5);
                if (host[k] != want || host2[k] != want2) {
                    fprintf(stderr,
                            "userguide: graphs: launch %d device %d element %zu: all-reduce %g "
                            "(want %g), ring %g (want %g)\n",
                            it, i, k, host[k], want, host2[k], want2);
                    return 1;
                }
            }
        }
    }
    for (int i = 0; i < ndev; i++) {
        CUDACHECK(cudaGraphExecDestroy(ge[i]));
        CUDACHECK(cudaGraphDestroy(g[i]));
        NCG_CHECK(ncclCommDestroy(comms[i]));
    }
    free(host);
    free(host2);
    printf("userguide: graphs ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "single") || !strcmp(argv[1], "graphs"))) {
        int ndev = argc >= 3 ? atoi(argv[2]) : 4;
        if (ndev < 1 || ndev > MAX_DEV) {
            fprintf(stderr, "userguide: %s: 1..%d devices\n", argv[1], MAX_DEV);
            return 2;
        }
        return argv[1][0] == 's' ? single(ndev) : graphs(ndev);
    }
    if (argc >= 2 && !strcmp(argv[1], "ranks"))
        return ranks();
    fprintf(stderr, "usage: userguide single [NDEV] | graphs [NDEV] | ranks\n");
    return 2;
}
