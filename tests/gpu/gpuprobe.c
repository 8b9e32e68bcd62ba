/* gpuprobe: the C program of scripts/gpu-check.sh, written against NVIDIA's nccl.h and
 * cuda_runtime_api.h, linked with libnccl.so.2 and libcudart.so.13 (the genuine ones on the
 * device machine; the CPU stand-ins of tests/fakenccl and tests/fakecuda in its dry run).
 *   gpuprobe enqueue N   one rank, a unique id from ncclGetUniqueId (is its tail stamped by
 *                        ncclguard?) accepted by ncclCommInitRank, then N ncclAllReduce launches
 *                        on a stream over device memory: host time per enqueue, then the wait
 *   gpuprobe mismatch    under ncg-launch (RANK, WORLD_SIZE, NCG_ID_FILE): 20 healthy
 *                        all-reduces, then the last rank issues a different count and every
 *                        rank waits in cudaStreamSynchronize (a hang, unless ncclGuard ends it)
 * Prints key=value lines and "gpuprobe: ok"; exit 1 on a failed call. */
#include <nccl.h>

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CK_CUDA(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "gpuprobe: %s: %s\n", #call, cudaGetErrorString(e_));                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CK_NCCL(call)                                                                              \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != ncclSuccess) {                                                                   \
            fprintf(stderr, "gpuprobe: %s: %s (%s)\n", #call, ncclGetErrorString(r_),              \
                    ncclGetLastError(NULL));                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int env_int(const char *name, int dflt)
{
    const char *s = getenv(name);
    return s && *s ? atoi(s) : dflt;
}

/* Bytes 40..127 of the id: zero from NCCL, "NCGD"... when ncclguard stamped them. */
static void print_tail(const ncclUniqueId *id)
{
    int nz = 0;
    for (int i = 40; i < NCCL_UNIQUE_ID_BYTES; i++)
        nz += id->internal[i] != 0;
    printf("idtail_nonzero=%d\nidtail_tag=%d\n", nz, memcmp(id->internal + 40, "NCGD", 4) == 0);
}

static int enqueue(int n)
{
    ncclUniqueId id;
    CK_NCCL(ncclGetUniqueId(&id));
    print_tail(&id);
    int v = 0;
    CK_NCCL(ncclGetVersion(&v));
    printf("nccl_version=%d\n", v);
    CK_CUDA(cudaSetDevice(0));
    cudaStream_t s;
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const size_t cnt = 1024;
    float *buf, host[1024];
    CK_CUDA(cudaMalloc((void **)&buf, cnt * sizeof(float)));
    for (size_t i = 0; i < cnt; i++)
        host[i] = (float)i;
    CK_CUDA(cudaMemcpy(buf, host, sizeof host, cudaMemcpyHostToDevice));
    ncclComm_t c;
    ncclResult_t r = ncclCommInitRank(&c, 1, id, 0);
    printf("initrank_rc=%d\n", (int)r);
    if (r != ncclSuccess) {
        fprintf(stderr, "gpuprobe: ncclCommInitRank: %s (%s)\n", ncclGetErrorString(r),
                ncclGetLastError(NULL));
        return 1;
    }
    for (int i = 0; i < 100; i++) /* warm-up: connections, first-call costs */
        CK_NCCL(ncclAllReduce(buf, buf, cnt, ncclFloat32, ncclSum, c, s));
    CK_CUDA(cudaStreamSynchronize(s));
    double t0 = now_s();
    for (int i = 0; i < n; i++)
        CK_NCCL(ncclAllReduce(buf, buf, cnt, ncclFloat32, ncclSum, c, s));
    double t1 = now_s();
    CK_CUDA(cudaStreamSynchronize(s));
    double t2 = now_s();
    CK_CUDA(cudaMemcpy(host, buf, sizeof host, cudaMemcpyDeviceToHost));
    if (host[0] != 0.0f || host[cnt - 1] != (float)(cnt - 1)) {
        fprintf(stderr, "gpuprobe: wrong 1-rank all-reduce result %g\n", (double)host[cnt - 1]);
        return 1;
    }
    printf("calls=%d\nenqueue_ns_per_call=%.1f\nwait_ms=%.3f\n", n, (t1 - t0) * 1e9 / n,
           (t2 - t1) * 1e3);
    CK_NCCL(ncclCommDestroy(c));
    printf("gpuprobe: ok\n");
    return 0;
}

/* The id through a file: rank 0 writes it (tmp + rename), the others poll for it. */
static void share_id(ncclUniqueId *id, int rank)
{
    const char *path = getenv("NCG_ID_FILE");
    if (!path) {
        fprintf(stderr, "gpuprobe: NCG_ID_FILE unset (run under ncg-launch)\n");
        exit(1);
    }
    if (rank == 0) {
        char tmp[4096];
        CK_NCCL(ncclGetUniqueId(id));
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "wb");
        if (!f || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, path) != 0) {
            perror("gpuprobe: id file");
            exit(1);
        }
        return;
    }
    for (int i = 0; i < 6000; i++) {
        FILE *f = fopen(path, "rb");
        if (f) {
            size_t got = fread(id, sizeof *id, 1, f);
            fclose(f);
            if (got == 1)
                return;
        }
        usleep(10000);
    }
    fprintf(stderr, "gpuprobe: no id in %s after 60 s\n", path);
    exit(1);
}

static int mismatch(void)
{
    int rank = env_int("RANK", 0), world = env_int("WORLD_SIZE", 1);
    CK_CUDA(cudaSetDevice(0)); /* every rank on the one GPU */
    cudaStream_t s;
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float *buf;
    CK_CUDA(cudaMalloc((void **)&buf, 256 * sizeof(float)));
    CK_CUDA(cudaMemset(buf, 0, 256 * sizeof(float)));
    ncclUniqueId id;
    share_id(&id, rank);
    ncclComm_t c;
    CK_NCCL(ncclCommInitRank(&c, world, id, rank));
    for (int i = 0; i < 20; i++)
        CK_NCCL(ncclAllReduce(buf, buf, 256, ncclFloat32, ncclSum, c, s));
    CK_CUDA(cudaStreamSynchronize(s));
    size_t cnt = rank == world - 1 ? 1 : 256;
    printf("gpuprobe: rank %d issues AllReduce(count=%zu)\n", rank, cnt);
    fflush(stdout);
    CK_NCCL(ncclAllReduce(buf, buf, cnt, ncclFloat32, ncclSum, c, s));
    CK_CUDA(cudaStreamSynchronize(s));
    printf("gpuprobe: rank %d: the mismatched call completed\n", rank);
    return 3;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "enqueue"))
        return enqueue(atoi(argv[2]) > 0 ? atoi(argv[2]) : 10000);
    if (argc >= 2 && !strcmp(argv[1], "mismatch"))
        return mismatch();
    fprintf(stderr, "usage: gpuprobe enqueue N | gpuprobe mismatch\n");
    return 2;
}
