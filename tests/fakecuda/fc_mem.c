/* fakecuda memory: "device" and pinned host memory are aligned host allocations, tracked in
 * one sorted table (with the live stream and event handles) so pointer attributes and handle
 * checks are lookups; copies and sets, synchronous and in stream order. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fc_internal.h"

#define FC_HOST_ALLOC_FLAGS                                                                        \
    (cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined)

/* Index of the first entry with base > p. */
static size_t upper_bound(uintptr_t p)
{
    size_t lo = 0, hi = fc_rt.n_table;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fc_rt.table[mid].base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int fc_table_insert(uintptr_t base, size_t size, enum fc_kind kind, int device)
{
    size_t i;

    if (fc_rt.n_table == fc_rt.cap_table) {
        size_t cap = fc_rt.cap_table ? 2 * fc_rt.cap_table : 64;
        struct fc_entry *t = realloc(fc_rt.table, cap * sizeof(*t));
        if (!t)
            return -ENOMEM;
        fc_rt.table = t;
        fc_rt.cap_table = cap;
    }
    i = upper_bound(base);
    memmove(&fc_rt.table[i + 1], &fc_rt.table[i], (fc_rt.n_table - i) * sizeof(*fc_rt.table));
    fc_rt.table[i] = (struct fc_entry){.base = base, .size = size, .kind = kind, .device = device};
    fc_rt.n_table++;
    return 0;
}

struct fc_entry *fc_table_find(uintptr_t p, int exact)
{
    size_t i = upper_bound(p);
    struct fc_entry *e;

    if (i == 0)
        return NULL;
    e = &fc_rt.table[i - 1];
    if (exact ? e->base != p : p - e->base >= e->size)
        return NULL;
    return e;
}

void fc_table_remove(struct fc_entry *e)
{
    size_t i = (size_t)(e - fc_rt.table);

    memmove(e, e + 1, (fc_rt.n_table - i - 1) * sizeof(*e));
    fc_rt.n_table--;
}

static cudaError_t alloc(void **ptr, size_t size, enum fc_kind kind, size_t align)
{
    void *p = NULL;
    int rc;

    if (!ptr)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    if (fc_rt.ndevices == 0)
        return fc_ret(cudaErrorNoDevice);
    if (size == 0) {
        *ptr = NULL;
        return cudaSuccess;
    }
    if (posix_memalign(&p, align, size) != 0)
        return fc_ret(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&fc_rt.lock);
    rc = fc_table_insert((uintptr_t)p, size, kind, fc_current_device());
    pthread_mutex_unlock(&fc_rt.lock);
    if (rc != 0) {
        free(p);
        return fc_ret(cudaErrorMemoryAllocation);
    }
    *ptr = p;
    return cudaSuccess;
}

/* Like CUDA, freeing first waits for the work already queued (which may still use it). */
static cudaError_t release(void *ptr, enum fc_kind kind)
{
    struct fc_entry *e;
    cudaError_t err = cudaSuccess;

    fc_init();
    if (!ptr)
        return cudaSuccess; /* cudaFree(0): the classic context init, a no-op */
    if (fc_in_worker())
        return fc_ret(cudaErrorNotPermitted);
    pthread_mutex_lock(&fc_rt.lock);
    e = fc_table_find((uintptr_t)ptr, 1);
    if (!e || e->kind != kind) {
        err = cudaErrorInvalidValue;
    } else {
        err = fc_sync_streams_locked(-1);
        e = fc_table_find((uintptr_t)ptr, 1); /* the table may have moved while waiting */
        if (e && e->kind == kind) {
            fc_table_remove(e);
            free(ptr);
        } else {
            err = cudaErrorInvalidValue; /* freed by another thread meanwhile */
        }
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

FC_API cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    return alloc(devPtr, size, FC_KIND_DEVICE_MEM, FC_DEVICE_ALIGN);
}

FC_API cudaError_t cudaFree(void *devPtr)
{
    return release(devPtr, FC_KIND_DEVICE_MEM);
}

FC_API cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    if (flags & ~(unsigned)FC_HOST_ALLOC_FLAGS)
        return fc_ret(cudaErrorInvalidValue);
    return alloc(pHost, size, FC_KIND_HOST_MEM, FC_HOST_ALIGN);
}

FC_API cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    return cudaHostAlloc(ptr, size, cudaHostAllocDefault);
}

FC_API cudaError_t cudaFreeHost(void *ptr)
{
    return release(ptr, FC_KIND_HOST_MEM);
}

/* Total is the properties' totalGlobalMem; free is that less the current device's live
 * cudaMalloc memory (the host's own limit is not modelled). */
FC_API cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    size_t used = 0, i;
    int device = fc_current_device();

    if (!free_bytes || !total)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    if (fc_rt.ndevices == 0)
        return fc_ret(cudaErrorNoDevice);
    pthread_mutex_lock(&fc_rt.lock);
    for (i = 0; i < fc_rt.n_table; i++)
        if (fc_rt.table[i].kind == FC_KIND_DEVICE_MEM && fc_rt.table[i].device == device)
            used += fc_rt.table[i].size;
    pthread_mutex_unlock(&fc_rt.lock);
    *total = FC_DEVICE_MEM_BYTES;
    *free_bytes = used < *total ? *total - used : 0;
    return cudaSuccess;
}

/* Waits for the current device's work, then frees its cudaMalloc memory (CUDA destroys the
 * whole context; streams, events and pinned host memory stay valid here). */
FC_API cudaError_t cudaDeviceReset(void)
{
    int device = fc_current_device();
    cudaError_t err = cudaDeviceSynchronize();
    size_t i, n = 0;

    if (err != cudaSuccess)
        return err;
    pthread_mutex_lock(&fc_rt.lock);
    for (i = 0; i < fc_rt.n_table; i++) {
        struct fc_entry *e = &fc_rt.table[i];
        if (e->kind == FC_KIND_DEVICE_MEM && e->device == device)
            free((void *)e->base);
        else
            fc_rt.table[n++] = *e;
    }
    fc_rt.n_table = n;
    pthread_mutex_unlock(&fc_rt.lock);
    return cudaSuccess;
}

FC_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
                                            const void *ptr)
{
    struct fc_entry *e;

    if (!attributes)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    memset(attributes, 0, sizeof(*attributes));
    pthread_mutex_lock(&fc_rt.lock);
    e = fc_table_find((uintptr_t)ptr, 0);
    if (e && e->kind == FC_KIND_DEVICE_MEM) {
        attributes->type = cudaMemoryTypeDevice;
        attributes->device = e->device;
        attributes->devicePointer = (void *)ptr;
    } else if (e && e->kind == FC_KIND_HOST_MEM) {
        attributes->type = cudaMemoryTypeHost;
        attributes->device = e->device;
        attributes->devicePointer = (void *)ptr;
        attributes->hostPointer = (void *)ptr;
    } else {
        attributes->type = cudaMemoryTypeUnregistered;
        attributes->device = -2;
        attributes->hostPointer = (void *)ptr;
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return cudaSuccess;
}

static cudaError_t copy_args(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    if ((unsigned)kind > cudaMemcpyDefault)
        return cudaErrorInvalidMemcpyDirection;
    if (count && (!dst || !src))
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

static cudaError_t memcpy_async(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                cudaStream_t stream, int ptds, int wait)
{
    cudaError_t err = copy_args(dst, src, count, kind);
    struct fc_stream *s;
    struct fc_op *op;
    uint64_t seq;

    if (err != cudaSuccess || count == 0)
        return fc_ret(err);
    if (wait && fc_in_worker())
        return fc_ret(cudaErrorNotPermitted);
    op = fc_op_new(FC_OP_MEMCPY);
    if (!op)
        return fc_ret(cudaErrorMemoryAllocation);
    op->u.copy.dst = dst;
    op->u.copy.src = src;
    op->u.copy.n = count;
    /* a synchronous call names its op (and a capturing stream refuses it) */
    err = fc_enqueue(stream, ptds, op, wait ? &s : NULL, wait ? &seq : NULL);
    if (err == cudaSuccess && wait)
        fc_wait_seq(s, seq);
    return fc_ret(err);
}

/* wait: 1 always, 0 never, -1 unless dst is device memory (cudaMemset's rule). */
static cudaError_t memset_async(void *dst, int value, size_t count, cudaStream_t stream, int ptds,
                                int wait)
{
    cudaError_t err = cudaSuccess;
    struct fc_entry *e;
    struct fc_stream *s;
    struct fc_op *op;
    uint64_t seq;

    if (count && !dst)
        return fc_ret(cudaErrorInvalidValue);
    if (count == 0)
        return cudaSuccess;
    fc_init();
    if (wait < 0) {
        pthread_mutex_lock(&fc_rt.lock);
        e = fc_table_find((uintptr_t)dst, 0);
        wait = !(e && e->kind == FC_KIND_DEVICE_MEM);
        pthread_mutex_unlock(&fc_rt.lock);
    }
    if (wait && fc_in_worker())
        return fc_ret(cudaErrorNotPermitted);
    op = fc_op_new(FC_OP_MEMSET);
    if (!op)
        return fc_ret(cudaErrorMemoryAllocation);
    op->u.set.dst = dst;
    op->u.set.value = value;
    op->u.set.n = count;
    /* a synchronous call names its op (and a capturing stream refuses it) */
    err = fc_enqueue(stream, ptds, op, wait ? &s : NULL, wait ? &seq : NULL);
    if (err == cudaSuccess && wait)
        fc_wait_seq(s, seq);
    return fc_ret(err);
}

FC_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return memcpy_async(dst, src, count, kind, NULL, 0, 1);
}

FC_API cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
                                   enum cudaMemcpyKind kind)
{
    return memcpy_async(dst, src, count, kind, NULL, 1, 1);
}

FC_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                   enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return memcpy_async(dst, src, count, kind, stream, 0, 0);
}

FC_API cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                        enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return memcpy_async(dst, src, count, kind, stream, 1, 0);
}

FC_API cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    return memset_async(devPtr, value, count, NULL, 0, -1);
}

FC_API cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
    return memset_async(devPtr, value, count, NULL, 1, -1);
}

FC_API cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return memset_async(devPtr, value, count, stream, 0, 0);
}

FC_API cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return memset_async(devPtr, value, count, stream, 1, 0);
}
