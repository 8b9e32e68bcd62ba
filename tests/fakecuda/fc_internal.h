/* fakecuda internals: the one runtime lock and what it guards (streams, events, the table of
 * allocations and handles), per-thread state (current device, last error), and the calls the
 * API files share. Compiled against NVIDIA's cuda_runtime_api.h so every type is CUDA's own.
 * Private to tests/fakecuda. */
#ifndef FC_INTERNAL_H
#define FC_INTERNAL_H

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define FC_API __attribute__((visibility("default")))
#define FC_MAX_DEVICES 64
#define FC_DEFAULT_DEVICES 8
#define FC_DEVICE_MEM_BYTES ((size_t)80 << 30) /* totalGlobalMem of every device */
#define FC_PRIO_LEAST 0
#define FC_PRIO_GREATEST (-5)
#define FC_DEVICE_ALIGN 256
#define FC_HOST_ALIGN 4096

enum fc_op_kind {
    FC_OP_HOSTFN,
    FC_OP_MEMCPY,
    FC_OP_MEMSET,
    FC_OP_RECORD,      /* complete an event's record generation */
    FC_OP_WAIT_EVENT,  /* cudaStreamWaitEvent */
    FC_OP_WAIT_STREAM, /* implicit legacy-default-stream synchronization */
};

struct fc_event;
struct fc_stream;
struct fc_capture; /* fc_graph.c */

/* One unit of stream work. Ops naming an event or another stream hold a reference on it. */
struct fc_op {
    struct fc_op *next;
    enum fc_op_kind kind;
    uint64_t seq; /* position on its stream, 1-based */
    union {
        struct {
            cudaHostFn_t fn;
            void *arg;
        } host;
        struct {
            void *dst;
            const void *src;
            size_t n;
        } copy;
        struct {
            void *dst;
            int value;
            size_t n;
        } set;
        struct {
            struct fc_event *ev;
            uint64_t gen;
        } event;
        struct {
            struct fc_stream *s;
            uint64_t seq;
        } stream;
    } u;
};

enum fc_stream_kind { FC_STREAM_USER, FC_STREAM_LEGACY, FC_STREAM_PER_THREAD };

/* A stream: a FIFO of ops run by one worker thread (started at the first op). Freed when the
 * owner (user handle, runtime or thread) let go, the worker left and no op references it. */
struct fc_stream {
    struct fc_stream *next, *prev; /* fc_rt.streams: every stream not yet freed */
    enum fc_stream_kind kind;
    int device;
    unsigned flags;
    int priority;
    int refs;
    int destroyed;
    int worker; /* 1 while its worker thread runs */
    struct fc_op *head, *tail;
    uint64_t enq_seq, done_seq; /* ops enqueued / completed; pending while they differ */
    struct fc_capture *cap;     /* non-NULL while capturing: ops go to its graph (fc_graph.c) */
    pthread_cond_t work_cv;     /* the worker waits for ops here */
    pthread_cond_t done_cv;     /* anyone waiting for done_seq to advance */
};

/* An event: each record bumps record_gen; the RECORD op completing sets done_gen. Complete
 * when done_gen >= record_gen, so a never-recorded event is complete, as in CUDA. */
struct fc_event {
    unsigned flags;
    int refs;
    int device;
    uint64_t record_gen, done_gen;
    struct timespec when; /* completion time of done_gen */
    pthread_cond_t cv;
};

/* Table entry kinds: allocations (a range) and live handles (their own address). */
enum fc_kind {
    FC_KIND_DEVICE_MEM = 1,
    FC_KIND_HOST_MEM,
    FC_KIND_STREAM,
    FC_KIND_EVENT,
    FC_KIND_GRAPH,
    FC_KIND_EXEC,
    FC_KIND_UOBJ,
};

struct fc_entry {
    uintptr_t base;
    size_t size;
    enum fc_kind kind;
    int device;
};

struct fc_runtime {
    pthread_mutex_t lock; /* guards everything below and every stream's and event's fields */
    int ndevices;         /* visible devices, fixed at first use */
    struct fc_stream *streams;
    struct fc_stream *legacy[FC_MAX_DEVICES];
    struct fc_entry *table; /* sorted by base, non-overlapping */
    size_t n_table, cap_table;
    uint64_t epoch; /* bumped in a fork child: per-thread streams of an older epoch are gone */
    uint64_t capture_ids; /* capture sequences begun: the next id is capture_ids + 1 */
};

extern struct fc_runtime fc_rt;

/* Runtime init (once): device count from the environment, fork handlers. Any thread; no
 * lock held. */
void fc_init(void);

/* Records err as this thread's last error (cudaSuccess and cudaErrorNotReady are not
 * recorded, as in CUDA) and returns it. Any thread; no lock needed. */
cudaError_t fc_ret(cudaError_t err);

/* This thread's current device (0 until cudaSetDevice). Any thread. */
int fc_current_device(void);

/* Table of allocations and handles; caller holds fc_rt.lock. insert returns 0 or -ENOMEM;
 * find returns the entry containing p (exact base when exact), of that kind, or NULL. */
int fc_table_insert(uintptr_t base, size_t size, enum fc_kind kind, int device);
struct fc_entry *fc_table_find(uintptr_t p, int exact);
void fc_table_remove(struct fc_entry *e);

/* Device state (fc_device.c). The fork handlers reset the stream state (fc_stream.c). */
void fc_set_current_device(int device);
void fc_fork_prepare(void);
void fc_fork_parent(void);
void fc_fork_child(void);

/* Streams (fc_stream.c). fc_resolve_locked maps a handle to its stream: NULL is the legacy
 * stream, or this thread's per-thread stream when ptds (the _ptsz/_ptds entry points); the
 * legacy and per-thread streams are created on first use. Caller holds fc_rt.lock; NULL and
 * *err set when the handle is not a live stream. */
struct fc_stream *fc_resolve_locked(cudaStream_t h, int ptds, cudaError_t *err);

/* Allocates a zeroed op (NULL when out of memory). Any thread, no lock needed. */
struct fc_op *fc_op_new(enum fc_op_kind kind);

/* Releases op and the references it holds. Caller holds fc_rt.lock. */
void fc_op_release_locked(struct fc_op *op);

/* Drops a reference of s (the last frees it). Caller holds fc_rt.lock. */
void fc_stream_unref_locked(struct fc_stream *s);

/* Appends op to s after the implicit legacy-stream dependencies, starting s's worker when
 * needed. Takes ownership of op (released on failure). Caller holds fc_rt.lock; never waits. */
cudaError_t fc_enqueue_locked(struct fc_stream *s, struct fc_op *op);

/* A capturing stream (s->cap) takes op into its capture's graph instead: see fc_graph.c.
 * fc_enqueue_now_locked queues it even then (work that must run, not be recorded). */
cudaError_t fc_enqueue_now_locked(struct fc_stream *s, struct fc_op *op);

/* Resolves h and enqueues op (owned, as above); *s_out / *seq_out (optional) name the op for
 * fc_wait_seq, and when asked for, a capturing stream refuses the op (a synchronous call:
 * cudaErrorStreamCaptureUnsupported, the capture invalidated). Any thread; takes fc_rt.lock. */
cudaError_t fc_enqueue(cudaStream_t h, int ptds, struct fc_op *op, struct fc_stream **s_out,
                       uint64_t *seq_out);

/* Waits until s completed op seq. s must stay alive (the caller's default stream). Any thread
 * but s's worker; blocks; takes fc_rt.lock. */
void fc_wait_seq(struct fc_stream *s, uint64_t seq);

/* Waits for the work enqueued before the call on every stream (device < 0) or on one
 * device's streams. Caller holds fc_rt.lock (released while waiting); blocks; allocates. */
cudaError_t fc_sync_streams_locked(int device);

/* 1 on a stream worker thread (inside a host function): calls that would wait there return
 * cudaErrorNotPermitted instead of deadlocking. Any thread. */
int fc_in_worker(void);

/* Events (fc_event.c): drops a reference; caller holds fc_rt.lock. */
void fc_event_unref_locked(struct fc_event *ev);

/* Stream capture (fc_graph.c). append: op (owned) joins s's capture graph, or is released
 * with cudaErrorStreamCaptureInvalidated / cudaErrorMemoryAllocation. refuse: a synchronizing
 * call met s capturing: invalidates the capture, returns cudaErrorStreamCaptureUnsupported.
 * Caller holds fc_rt.lock; never waits. */
cudaError_t fc_capture_append_locked(struct fc_stream *s, struct fc_op *op);
cudaError_t fc_capture_refuse_locked(struct fc_stream *s);
/* s is destroyed while capturing: the capture ends, its graph is destroyed. Caller holds
 * fc_rt.lock; returns the user objects that reached zero, for fc_uobjs_destroy once the
 * caller unlocked (destructors run without the lock). */
struct fc_uobj;
struct fc_uobj *fc_capture_drop_locked(struct fc_stream *s);
void fc_uobjs_destroy(struct fc_uobj *dead);

/* The per-thread-default-stream entry points: what cuda_runtime_api.h names the calls when
 * a program is built with CUDA_API_PER_THREAD_DEFAULT_STREAM (NULL = cudaStreamPerThread). */
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count);
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                 cudaStream_t stream);
cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int *flags);
cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int *priority);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
                                          unsigned int flags);
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData);
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph);
cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *pStatus);
cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream,
                                          enum cudaStreamCaptureStatus *captureStatus_out,
                                          unsigned long long *id_out, cudaGraph_t *graph_out,
                                          const cudaGraphNode_t **dependencies_out,
                                          const cudaGraphEdgeData **edgeData_out,
                                          size_t *numDependencies_out);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);
cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);
cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                cudaGraphInstantiateParams *instantiateParams);

cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                  size_t sharedMem, cudaStream_t stream);

/* What nvcc's generated host code calls (crt/host_runtime.h, crt/device_functions.h: C++
 * headers, so declared here), in fc_kernel.c: module and kernel registration (before main, from
 * the program's constructors; unregistration from its atexit handler) and <<<>>> launches. Any
 * thread; none blocks; registration allocates (aborts when out of memory). */
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaUnregisterFatBinary(void **fatCubinHandle);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize);
void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                       const char *deviceName, int ext, size_t size, int constant, int global);
char __cudaInitModule(void **fatCubinHandle);
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                       void *stream);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                               size_t sharedMem, cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream);

#endif
