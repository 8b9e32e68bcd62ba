/* fakenccl CUDA-aware mode (FAKENCCL_CUDA=1): device buffers are staged through host memory
 * with the process's own CUDA runtime, so a program whose buffers live on a real GPU (PyTorch's
 * ProcessGroupNCCL, several ranks per GPU) can run on the CPU NCCL. Per call (or group): each
 * stream is synchronized, device inputs copied to host (cudaMemcpyAsync on the call's stream,
 * then cudaStreamSynchronize), the engine runs on the host copies, outputs are copied back the
 * same way. Calls are therefore synchronous with respect to the host. The runtime is found at
 * run time (never linked); independent of the asynchronous mode (fn_async.c). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fn_internal.h"

/* CUDA's values (driver_types.h); cudaError_t is an int enum, 0 = cudaSuccess. */
#define CUDA_MEMORY_TYPE_DEVICE 2
#define CUDA_MEMCPY_H2D 1
#define CUDA_MEMCPY_D2H 2

/* cudaPointerAttributes with room to spare: the runtime writes only its own struct's size. */
struct ptr_attrs {
    int type;
    int device;
    void *device_pointer;
    void *host_pointer;
    unsigned char spare[64];
};

typedef int (*attrs_fn)(struct ptr_attrs *, const void *);
typedef int (*memcpy_async_fn)(void *, const void *, size_t, int, cudaStream_t);
typedef int (*sync_fn)(cudaStream_t);
typedef int (*last_error_fn)(void);

static struct {
    attrs_fn attrs;
    memcpy_async_fn copy;
    sync_fn sync;
    last_error_fn last_error;
} g_rt;
static int g_on;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void *sym(void *h, const char *name)
{
    return h ? dlsym(h, name) : dlsym(RTLD_DEFAULT, name);
}

static void resolve(void)
{
    const char *s = getenv("FAKENCCL_CUDA");
    if (!s || strcmp(s, "1") != 0)
        return;
    /* The program's runtime in the global scope, else one loaded RTLD_LOCAL (as under
     * Python): never load a runtime the process does not already have. */
    void *h = NULL;
    if (!dlsym(RTLD_DEFAULT, "cudaPointerGetAttributes")) {
        static const char *const names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
        for (size_t i = 0; !h && i < sizeof names / sizeof names[0]; i++)
            h = dlopen(names[i], RTLD_NOLOAD | RTLD_LAZY);
    }
    g_rt.attrs = (attrs_fn)sym(h, "cudaPointerGetAttributes");
    g_rt.copy = (memcpy_async_fn)sym(h, "cudaMemcpyAsync");
    g_rt.sync = (sync_fn)sym(h, "cudaStreamSynchronize");
    g_rt.last_error = (last_error_fn)sym(h, "cudaGetLastError");
    if (!g_rt.attrs || !g_rt.copy || !g_rt.sync || !g_rt.last_error) {
        fprintf(stderr, "fakenccl: FAKENCCL_CUDA=1 but no CUDA runtime is loaded in this process "
                        "(cudaPointerGetAttributes not found): buffers are used as host memory\n");
        return;
    }
    g_on = 1;
}

int fn_cuda_on(void)
{
    pthread_once(&g_once, resolve);
    return g_on;
}

static int is_device(const void *p)
{
    struct ptr_attrs a;
    memset(&a, 0, sizeof a);
    if (g_rt.attrs(&a, p) != 0) {
        g_rt.last_error(); /* not the application's error: do not leave it behind */
        return 0;
    }
    return a.type == CUDA_MEMORY_TYPE_DEVICE;
}

/* Bytes an op reads from sendbuff and writes to recvbuff on this rank (0: not touched). */
static void op_bytes(const struct fn_op *op, size_t *sb, size_t *rb)
{
    size_t e = fn_dtype_size(op->dtype) * op->count, n = (size_t)op->comm->nranks;
    int root = op->comm->rank == op->root;
    *sb = *rb = 0;
    if (op->kind == FN_OP_SEND || op->kind == FN_OP_PUT) {
        *sb = e;
        return;
    }
    if (op->kind == FN_OP_RECV) {
        *rb = e;
        return;
    }
    if (op->kind == FN_OP_WAITSIG)
        return; /* puts land in host windows (fn_rma.c) */
    switch (op->fn) {
    case FN_ALLREDUCE:
        *sb = *rb = e;
        break;
    case FN_BROADCAST:
        *sb = root ? e : 0;
        *rb = e;
        break;
    case FN_REDUCE:
        *sb = e;
        *rb = root ? e : 0;
        break;
    case FN_ALLGATHER:
        *sb = e;
        *rb = e * n;
        break;
    case FN_REDUCESCATTER:
        *sb = e * n;
        *rb = e;
        break;
    case FN_ALLTOALL:
        *sb = *rb = e * n;
        break;
    case FN_GATHER:
        *sb = e;
        *rb = root ? e * n : 0;
        break;
    case FN_SCATTER:
        *sb = root ? e * n : 0;
        *rb = e;
        break;
    default: /* FN_SPLIT and anything internal: host memory */
        break;
    }
}

/* How one op is staged: a range of the thread's host block at off (len bytes), what is copied
 * into it from the device before the call and back out after, and where the call's buffers lie
 * in it. A send and a recv range that overlap (in-place calls) share one host range, their
 * union, so the engine sees the same aliasing as on the device. */
struct stage {
    size_t off, len;
    const char *in_dev; /* device input copied to off + in_off (NULL: none) */
    size_t in_len, in_off;
    char *out_dev; /* device output copied from off + out_off (NULL: none) */
    size_t out_len, out_off;
    long send_off, recv_off; /* -1: that buffer is not staged (host memory or unused) */
};

static __thread char *t_block;
static __thread size_t t_block_cap;
static __thread struct stage *t_st;
static __thread int t_st_cap;

static int reserve(size_t bytes, int nops)
{
    if (bytes > t_block_cap) {
        char *b = realloc(t_block, bytes);
        if (!b)
            return -1;
        t_block = b;
        t_block_cap = bytes;
    }
    if (nops > t_st_cap) {
        struct stage *s = realloc(t_st, (size_t)nops * sizeof *s);
        if (!s)
            return -1;
        t_st = s;
        t_st_cap = nops;
    }
    return 0;
}

static size_t round64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

/* Plan op's staging (st->off is the caller's). */
static void plan(const struct fn_op *op, struct stage *st)
{
    memset(st, 0, sizeof *st);
    st->send_off = st->recv_off = -1;
    size_t sb = 0, rb = 0;
    if (op->kind != FN_OP_JOIN)
        op_bytes(op, &sb, &rb);
    const char *s = sb && is_device(op->sendbuff) ? op->sendbuff : NULL;
    char *r = rb && is_device(op->recvbuff) ? op->recvbuff : NULL;
    if (s && r && s < r + rb && r < s + sb) { /* overlapping: one range, their union */
        const char *lo = s < r ? s : r, *hi = s + sb > r + rb ? s + sb : r + rb;
        *st = (struct stage){.len = (size_t)(hi - lo),
                             .in_dev = lo,
                             .in_len = (size_t)(hi - lo),
                             .out_dev = r,
                             .out_len = rb,
                             .out_off = (size_t)(r - lo),
                             .send_off = s - lo,
                             .recv_off = r - lo};
        return;
    }
    if (s) {
        st->in_dev = s;
        st->in_len = sb;
        st->send_off = 0;
        st->len = round64(sb);
    }
    if (r) { /* every call writes all of its recv range: nothing to copy in */
        st->out_dev = r;
        st->out_len = rb;
        st->out_off = st->len;
        st->recv_off = (long)st->len;
        st->len += rb;
    }
}

static int seen_stream(const struct fn_op *ops, int i)
{
    for (int k = 0; k < i; k++)
        if (ops[k].stream == ops[i].stream)
            return 1;
    return 0;
}

/* Synchronize every distinct stream of ops. 0 / -1. */
static int sync_streams(const struct fn_op *ops, int nops)
{
    for (int i = 0; i < nops; i++)
        if (ops[i].kind != FN_OP_JOIN && !seen_stream(ops, i) && g_rt.sync(ops[i].stream) != 0)
            return -1;
    return 0;
}

ncclResult_t fn_cuda_run(const struct fn_op *ops_in, int nops)
{
    struct fn_op local[1];
    struct fn_op *ops = nops == 1 ? local : malloc((size_t)nops * sizeof *ops);
    if (!ops || reserve(0, nops) != 0) {
        if (ops != local)
            free(ops);
        return ncclSystemError;
    }
    memcpy(ops, ops_in, (size_t)nops * sizeof *ops);
    size_t total = 0;
    int staged = 0;
    for (int i = 0; i < nops; i++) {
        plan(&ops[i], &t_st[i]);
        t_st[i].off = total;
        total += round64(t_st[i].len);
        staged += t_st[i].len > 0;
    }
    ncclResult_t r = ncclSuccess;
    /* Earlier work on the calls' streams produced the inputs: wait for it. */
    if (sync_streams(ops, nops) != 0)
        goto cuda_error;
    if (staged) {
        if (reserve(total, nops) != 0) {
            r = ncclSystemError;
            goto out;
        }
        for (int i = 0; i < nops; i++) {
            struct stage *st = &t_st[i];
            char *h = t_block + st->off;
            if (st->send_off >= 0)
                ops[i].sendbuff = h + st->send_off;
            if (st->recv_off >= 0)
                ops[i].recvbuff = h + st->recv_off;
            if (st->in_dev && g_rt.copy(h + st->in_off, st->in_dev, st->in_len, CUDA_MEMCPY_D2H,
                                        ops[i].stream) != 0)
                goto cuda_error;
        }
        if (sync_streams(ops, nops) != 0)
            goto cuda_error;
    }
    r = fn_run(ops, nops);
    if (r != ncclSuccess || !staged)
        goto out;
    for (int i = 0; i < nops; i++) {
        struct stage *st = &t_st[i];
        if (st->out_dev && g_rt.copy(st->out_dev, t_block + st->off + st->out_off, st->out_len,
                                     CUDA_MEMCPY_H2D, ops[i].stream) != 0)
            goto cuda_error;
    }
    /* The host block is reused by the next call: the copies must have read it. */
    if (sync_streams(ops, nops) != 0)
        goto cuda_error;
    goto out;
cuda_error:
    g_rt.last_error();
    fn_set_last_error("FAKENCCL_CUDA: a CUDA copy or stream synchronization failed");
    r = ncclUnhandledCudaError;
out:
    if (ops != local)
        free(ops);
    return r;
}
