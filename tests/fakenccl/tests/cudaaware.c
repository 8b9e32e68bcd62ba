/* cudaaware: fakenccl's CUDA-aware mode (FAKENCCL_CUDA=1) on the CPU CUDA runtime, under
 * ncg-launch. `cudaaware global|local` loads libcudart.so.13 with dlopen, RTLD_GLOBAL (as a C
 * program linked with it) or RTLD_LOCAL (as Python loads it: the fake must find it with
 * RTLD_NOLOAD). Buffers come from cudaMalloc (cudaMemoryTypeDevice); inputs are written by a
 * host function that runs 200 ms late on the call's stream, so a result is right only if the
 * fake waited for the stream before reading. Checked: out-of-place and in-place all-reduce,
 * in-place all-gather and reduce-scatter, broadcast, reduce to a root (NULL recv elsewhere),
 * all-to-all, a group of a send/recv ring and an all-reduce, a host (malloc) send buffer with
 * a device recv buffer, and no CUDA error left behind. `cudaaware nort`: FAKENCCL_CUDA=1 with
 * no runtime loaded says so once, host buffers still work. Prints "cudaaware: MODE ok". */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"

static int g_rank, g_n;
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "cudaaware: rank %d: ", g_rank);                                           \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        exit(1);                                                                                   \
    } while (0)

static struct {
    int (*malloc_)(void **, size_t);
    int (*memcpy_)(void *, const void *, size_t, int);
    int (*stream_create)(cudaStream_t *, unsigned int);
    int (*stream_sync)(cudaStream_t);
    int (*host_func)(cudaStream_t, void (*)(void *), void *);
    int (*last_error)(void);
} rt;

static void load(int global)
{
    void *h = dlopen("libcudart.so.13", RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
    if (!h)
        FAIL("dlopen libcudart.so.13: %s", dlerror());
    *(void **)&rt.malloc_ = dlsym(h, "cudaMalloc");
    *(void **)&rt.memcpy_ = dlsym(h, "cudaMemcpy");
    *(void **)&rt.stream_create = dlsym(h, "cudaStreamCreateWithFlags");
    *(void **)&rt.stream_sync = dlsym(h, "cudaStreamSynchronize");
    *(void **)&rt.host_func = dlsym(h, "cudaLaunchHostFunc");
    *(void **)&rt.last_error = dlsym(h, "cudaGetLastError");
    if (!rt.malloc_ || !rt.memcpy_ || !rt.stream_create || !rt.stream_sync || !rt.host_func ||
        !rt.last_error)
        FAIL("runtime symbols missing");
    if (!global && dlsym(RTLD_DEFAULT, "cudaMalloc"))
        FAIL("RTLD_LOCAL runtime visible globally");
}

static float *dev(size_t n)
{
    void *p = NULL;
    if (rt.malloc_(&p, n * sizeof(float)) != 0)
        FAIL("cudaMalloc");
    return p;
}

/* A "kernel" that writes its input late: fill v[0..n) = base + i after 200 ms. */
struct fill {
    float *v;
    size_t n;
    float base;
};
static void late_fill(void *p)
{
    struct fill *f = p;
    usleep(200 * 1000);
    for (size_t i = 0; i < f->n; i++)
        f->v[i] = f->base + (float)i;
}

static void get(float *host, const float *d, size_t n)
{
    if (rt.memcpy_(host, d, n * sizeof(float), 2 /* D2H */) != 0)
        FAIL("cudaMemcpy D2H");
}

static void want(const float *got, size_t n, float (*f)(size_t), const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != f(i))
            FAIL("%s: element %zu is %g, want %g", what, i, (double)got[i], (double)f(i));
}

/* Expected values, for rank r's input base r * 1000. */
static float sum_base(void)
{
    return 1000.0f * (float)(g_n * (g_n - 1) / 2);
}
static float f_allreduce(size_t i)
{
    return sum_base() + (float)g_n * (float)i;
}
static size_t g_chunk;
static float f_gather(size_t i) /* allgather of rank r's chunk: r*1000 + (i % chunk) */
{
    return 1000.0f * (float)(i / g_chunk) + (float)(i % g_chunk);
}
static float f_rs(size_t i) /* reduce-scatter of inputs r*1000 + j: my chunk */
{
    return sum_base() + (float)g_n * (float)((size_t)g_rank * g_chunk + i);
}
static float f_bcast(size_t i) /* root 1's input */
{
    return 1000.0f * (float)(g_n > 1 ? 1 : 0) + (float)i;
}
static float f_a2a(size_t i) /* block j came from rank j: j*1000 + me*chunk + (i % chunk) */
{
    return 1000.0f * (float)(i / g_chunk) + (float)((size_t)g_rank * g_chunk + i % g_chunk);
}
static float f_ring(size_t i) /* from the left neighbour */
{
    return 1000.0f * (float)((g_rank + g_n - 1) % g_n) + (float)i;
}
static float f_hostsend(size_t i)
{
    return (float)(g_n * 7) + 0.0f * (float)i;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "global";
    g_rank = ncg_test_rank();
    g_n = ncg_test_world();
    ncclUniqueId id;
    ncclComm_t c;
    if (!strcmp(mode, "nort")) {
        if (ncg_test_share_id(&id) != 0)
            FAIL("id");
        NCG_CHECK(ncclCommInitRank(&c, g_n, id, g_rank));
        float v[4] = {1, 2, 3, 4};
        NCG_CHECK(ncclAllReduce(v, v, 4, ncclFloat32, ncclSum, c, NULL));
        if (v[3] != 4.0f * (float)g_n)
            FAIL("host all-reduce without a runtime");
        NCG_CHECK(ncclCommDestroy(c));
        printf("cudaaware: nort ok\n");
        return 0;
    }
    load(!strcmp(mode, "global"));
    cudaStream_t s;
    if (rt.stream_create(&s, 1 /* cudaStreamNonBlocking */) != 0)
        FAIL("stream");
    if (ncg_test_share_id(&id) != 0)
        FAIL("id");
    NCG_CHECK(ncclCommInitRank(&c, g_n, id, g_rank));
    const size_t N = 1024, C = 64;
    g_chunk = C;
    size_t big = N > C * (size_t)g_n ? N : C * (size_t)g_n;
    float *a = dev(big), *b = dev(big), *host = malloc(big * sizeof(float));
    struct fill fa = {a, N, 1000.0f * (float)g_rank};

    /* out of place, input written late on the stream */
    rt.host_func(s, late_fill, &fa);
    NCG_CHECK(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, c, s));
    get(host, b, N);
    want(host, N, f_allreduce, "all-reduce (out of place, late input)");
    /* in place */
    rt.host_func(s, late_fill, &fa);
    NCG_CHECK(ncclAllReduce(a, a, N, ncclFloat32, ncclSum, c, s));
    get(host, a, N);
    want(host, N, f_allreduce, "all-reduce (in place)");
    /* in-place all-gather: my chunk at a + rank * C */
    struct fill fg = {a + (size_t)g_rank * C, C, 1000.0f * (float)g_rank};
    rt.host_func(s, late_fill, &fg);
    NCG_CHECK(ncclAllGather(a + (size_t)g_rank * C, a, C, ncclFloat32, c, s));
    get(host, a, C * (size_t)g_n);
    want(host, C * (size_t)g_n, f_gather, "all-gather (in place)");
    /* in-place reduce-scatter: the result lands at a + rank * C */
    struct fill fr = {a, C * (size_t)g_n, 1000.0f * (float)g_rank};
    rt.host_func(s, late_fill, &fr);
    NCG_CHECK(ncclReduceScatter(a, a + (size_t)g_rank * C, C, ncclFloat32, ncclSum, c, s));
    get(host, a + (size_t)g_rank * C, C);
    want(host, C, f_rs, "reduce-scatter (in place)");
    /* broadcast from rank 1 (or 0 alone) */
    int root = g_n > 1 ? 1 : 0;
    rt.host_func(s, late_fill, &fa);
    NCG_CHECK(ncclBroadcast(a, b, N, ncclFloat32, root, c, s));
    get(host, b, N);
    want(host, N, f_bcast, "broadcast");
    /* reduce to rank 0; the others pass a NULL recv buffer */
    rt.host_func(s, late_fill, &fa);
    NCG_CHECK(ncclReduce(a, g_rank == 0 ? b : NULL, N, ncclFloat32, ncclSum, 0, c, s));
    if (g_rank == 0) {
        get(host, b, N);
        want(host, N, f_allreduce, "reduce");
    }
    /* all-to-all */
    rt.host_func(s, late_fill, &fr);
    NCG_CHECK(ncclAlltoAll(a, b, C, ncclFloat32, c, s));
    get(host, b, C * (size_t)g_n);
    want(host, C * (size_t)g_n, f_a2a, "all-to-all");
    /* a group: send/recv ring plus an all-reduce */
    rt.host_func(s, late_fill, &fa);
    NCG_CHECK(ncclGroupStart());
    NCG_CHECK(ncclSend(a, N, ncclFloat32, (g_rank + 1) % g_n, c, s));
    NCG_CHECK(ncclRecv(b, N, ncclFloat32, (g_rank + g_n - 1) % g_n, c, s));
    NCG_CHECK(ncclGroupEnd());
    get(host, b, N);
    want(host, N, f_ring, "send/recv ring (group)");
    /* a host send buffer, a device recv buffer */
    for (size_t i = 0; i < 8; i++)
        host[i] = 7.0f;
    NCG_CHECK(ncclAllReduce(host, b, 8, ncclFloat32, ncclSum, c, s));
    get(host, b, 8);
    want(host, 8, f_hostsend, "host send, device recv");
    if (rt.stream_sync(s) != 0 || rt.last_error() != 0)
        FAIL("a CUDA error was left behind");
    NCG_CHECK(ncclCommDestroy(c));
    printf("cudaaware: %s ok\n", mode);
    return 0;
}
