/* fakenccl asynchronous mode (FAKENCCL_ASYNC=1): collectives, p2p calls and a group's end
 * enqueue their work on the caller's cudaStream_t through the process's CUDA runtime
 * (cudaLaunchHostFunc; on this machine the CPU runtime of tests/fakecuda) and return at once,
 * as NCCL does on a GPU. The work runs in stream order on the runtime's stream worker, through
 * the same engine as the synchronous mode, so a mismatched call blocks its stream (not the
 * host call) until an abort or revoke releases it. The runtime is found at run time, never
 * linked: without one that can run work, the mode says so once and calls stay synchronous.
 * Calls on a capturing stream (CUDA graphs) are recorded as persistent jobs in any mode. */
#include <dlfcn.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fn_internal.h"

/* The few runtime entry points used, with CUDA's signatures (cudaError_t is an int enum,
 * cudaEvent_t an opaque pointer). */
typedef int (*launch_fn)(cudaStream_t, void (*)(void *), void *);
typedef int (*evcreate_fn)(void **, unsigned int);
typedef int (*evrecord_fn)(void *, cudaStream_t);
typedef int (*waitev_fn)(cudaStream_t, void *, unsigned int);
typedef int (*evdestroy_fn)(void *);
typedef int (*devcount_fn)(int *);
typedef int (*capturing_fn)(cudaStream_t, int *); /* enum cudaStreamCaptureStatus * */
typedef int (*capinfo_fn)(cudaStream_t, int *, unsigned long long *, void **, const void **,
                          const void **, size_t *);
typedef int (*uobj_create_fn)(void **, void *, void (*)(void *), unsigned int, unsigned int);
typedef int (*uobj_release_fn)(void *, unsigned int);
typedef int (*graph_retain_fn)(void *, void *, unsigned int, unsigned int);
typedef int (*sync_fn)(cudaStream_t);
typedef int (*evsync_fn)(void *);
typedef int (*getflags_fn)(cudaStream_t, unsigned int *);
typedef int (*error_fn)(void);

static struct {
    launch_fn launch;
    evcreate_fn ev_create;
    evrecord_fn ev_record;
    waitev_fn wait_event;
    evdestroy_fn ev_destroy;
    capturing_fn is_capturing;
    capinfo_fn capture_info;
    uobj_create_fn uobj_create;
    uobj_release_fn uobj_release;
    graph_retain_fn graph_retain;
    /* the synchronous mode's stream order (fn_stream_order) */
    sync_fn sync, query;
    evsync_fn ev_sync;
    getflags_fn get_flags;
    error_fn peek_error, get_error;
} g_rt;
static int g_on;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#define CUDA_EVENT_DISABLE_TIMING 0x02u
#define CUDA_STREAM_NON_BLOCKING 0x01u
#define CUDA_CAPTURE_STATUS_NONE 0 /* cudaStreamCaptureStatusNone */
#define CUDA_USER_OBJECT_NO_DESTRUCTOR_SYNC 1u
#define CUDA_GRAPH_USER_OBJECT_MOVE 1u

static void resolve(void)
{
    g_rt.launch = (launch_fn)dlsym(RTLD_DEFAULT, "cudaLaunchHostFunc");
    g_rt.ev_create = (evcreate_fn)dlsym(RTLD_DEFAULT, "cudaEventCreateWithFlags");
    g_rt.ev_record = (evrecord_fn)dlsym(RTLD_DEFAULT, "cudaEventRecord");
    g_rt.wait_event = (waitev_fn)dlsym(RTLD_DEFAULT, "cudaStreamWaitEvent");
    g_rt.ev_destroy = (evdestroy_fn)dlsym(RTLD_DEFAULT, "cudaEventDestroy");
    /* stream capture: recorded in any mode, wherever the runtime has it */
    g_rt.is_capturing = (capturing_fn)dlsym(RTLD_DEFAULT, "cudaStreamIsCapturing");
    g_rt.capture_info = (capinfo_fn)dlsym(RTLD_DEFAULT, "cudaStreamGetCaptureInfo");
    g_rt.uobj_create = (uobj_create_fn)dlsym(RTLD_DEFAULT, "cudaUserObjectCreate");
    g_rt.uobj_release = (uobj_release_fn)dlsym(RTLD_DEFAULT, "cudaUserObjectRelease");
    g_rt.graph_retain = (graph_retain_fn)dlsym(RTLD_DEFAULT, "cudaGraphRetainUserObject");
    if (!g_rt.launch)
        g_rt.is_capturing = NULL; /* nothing could be recorded */
    g_rt.sync = (sync_fn)dlsym(RTLD_DEFAULT, "cudaStreamSynchronize");
    g_rt.ev_sync = (evsync_fn)dlsym(RTLD_DEFAULT, "cudaEventSynchronize");
    g_rt.query = (sync_fn)dlsym(RTLD_DEFAULT, "cudaStreamQuery");
    g_rt.get_flags = (getflags_fn)dlsym(RTLD_DEFAULT, "cudaStreamGetFlags");
    g_rt.peek_error = (error_fn)dlsym(RTLD_DEFAULT, "cudaPeekAtLastError");
    g_rt.get_error = (error_fn)dlsym(RTLD_DEFAULT, "cudaGetLastError");
    if (!g_rt.peek_error || !g_rt.get_error)
        g_rt.sync = NULL; /* could not keep its errors from the application */
    const char *s = getenv("FAKENCCL_ASYNC");
    if (!s || strcmp(s, "1") != 0)
        return;
    devcount_fn count = (devcount_fn)dlsym(RTLD_DEFAULT, "cudaGetDeviceCount");
    int n = 0;
    if (!g_rt.launch || !g_rt.ev_create || !g_rt.ev_record || !g_rt.wait_event ||
        !g_rt.ev_destroy || !count) {
        fprintf(stderr, "fakenccl: FAKENCCL_ASYNC=1 but no CUDA runtime is loaded in this "
                        "process (cudaLaunchHostFunc not found): calls run synchronously\n");
        return;
    }
    if (count(&n) != 0 || n < 1) {
        fprintf(stderr, "fakenccl: FAKENCCL_ASYNC=1 but the loaded CUDA runtime has no usable "
                        "device: calls run synchronously\n");
        return;
    }
    g_on = 1;
}

int fn_async_on(void)
{
    pthread_once(&g_once, resolve);
    return g_on;
}

/* A queued call or group. A persistent one (captured into a graph) is run by every replay of
 * the graph and freed with it; its ops are templates whose slots are taken at each run. */
struct fn_job {
    int nops;
    int persistent;
    _Atomic int skip_reported;
    struct fn_op ops[];
};

static void futex_wake_all(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

/* Runs on the stream's worker thread, in stream order. */
static void job_run(void *arg)
{
    struct fn_job *j = arg;
    ncclResult_t r = fn_run(j->ops, j->nops);
    for (int i = 0; i < j->nops; i++) {
        struct ncclComm *c = j->ops[i].comm;
        int ok = ncclSuccess;
        /* The first error sticks: ncclCommGetAsyncError and later calls report it. */
        if (r != ncclSuccess)
            atomic_compare_exchange_strong(&c->async_err, &ok, (int)r);
        if (atomic_fetch_sub(&c->pending, 1) == 1)
            futex_wake_all(&c->pending);
        fn_comm_unref(c);
    }
    free(j);
}

/* One replay of a persistent job, on the stream worker, in stream order. The comms' next
 * slots are taken now, so a replay is the next collective of its comm whatever the peers do
 * (an eager call or a replay of their own). */
static void persistent_run(void *arg)
{
    struct fn_job *j = arg;
    int dead = 0;
    /* pending first, then dead (seq_cst): destroy stores dead, then drains pending, so either
     * it waits for this run or this run sees dead and never touches the comm's segment. */
    for (int i = 0; i < j->nops; i++)
        atomic_fetch_add(&j->ops[i].comm->pending, 1);
    for (int i = 0; i < j->nops; i++)
        if (atomic_load(&j->ops[i].comm->dead))
            dead = 1;
    struct fn_op *run = dead ? NULL : malloc((size_t)j->nops * sizeof *run);
    ncclResult_t r = ncclSuccess;
    if (dead) {
        if (!atomic_exchange(&j->skip_reported, 1))
            fprintf(stderr,
                    "fakenccl: graph replay of %s on a destroyed or aborted "
                    "communicator: skipped\n",
                    fn_op_name(&j->ops[0]));
    } else if (!run) {
        r = ncclSystemError;
    } else {
        memcpy(run, j->ops, (size_t)j->nops * sizeof *run); /* fresh progress state */
        for (int i = 0; i < j->nops; i++)
            fn_assign_seq(&run[i]);
        r = fn_run(run, j->nops);
    }
    free(run);
    for (int i = 0; i < j->nops; i++) {
        struct ncclComm *c = j->ops[i].comm;
        int ok = ncclSuccess;
        if (r != ncclSuccess)
            atomic_compare_exchange_strong(&c->async_err, &ok, (int)r);
        if (atomic_fetch_sub(&c->pending, 1) == 1)
            futex_wake_all(&c->pending);
    }
}

/* The graph (and every exec made from it) is gone: the user object's destructor. */
static void persistent_free(void *arg)
{
    struct fn_job *j = arg;
    for (int i = 0; i < j->nops; i++)
        fn_comm_unref(j->ops[i].comm);
    free(j);
}

/* Order stream b after everything enqueued on stream a so far. 0 / -1. */
static int stream_after(cudaStream_t b, cudaStream_t a)
{
    void *ev = NULL;
    if (g_rt.ev_create(&ev, CUDA_EVENT_DISABLE_TIMING) != 0)
        return -1;
    int e = g_rt.ev_record(ev, a);
    if (e == 0)
        e = g_rt.wait_event(b, ev, 0);
    g_rt.ev_destroy(ev); /* released by the runtime once recorded work completed */
    return e == 0 ? 0 : -1;
}

static int seen_before(const struct fn_op *ops, int i)
{
    for (int k = 0; k < i; k++)
        if (ops[k].stream == ops[i].stream)
            return 1;
    return 0;
}

ncclResult_t fn_async_submit(const struct fn_op *ops, int nops)
{
    struct fn_job *j = malloc(sizeof *j + (size_t)nops * sizeof *ops);
    if (!j)
        return ncclSystemError;
    j->nops = nops;
    memcpy(j->ops, ops, (size_t)nops * sizeof *ops);
    cudaStream_t s0 = ops[0].stream;
    /* A group spanning streams runs on the first one, after the others' earlier work and
     * before their later work, as NCCL joins the streams of a group. */
    for (int i = 1; i < nops; i++)
        if (ops[i].stream != s0 && !seen_before(ops, i) && stream_after(s0, ops[i].stream) != 0)
            goto cuda_error;
    for (int i = 0; i < nops; i++) {
        atomic_fetch_add(&ops[i].comm->refs, 1);
        atomic_fetch_add(&ops[i].comm->pending, 1);
    }
    if (g_rt.launch(s0, job_run, j) != 0) {
        for (int i = 0; i < nops; i++) {
            atomic_fetch_sub(&ops[i].comm->pending, 1);
            atomic_fetch_sub(&ops[i].comm->refs, 1);
        }
        goto cuda_error;
    }
    for (int i = 1; i < nops; i++)
        if (ops[i].stream != s0 && !seen_before(ops, i))
            stream_after(ops[i].stream, s0);
    return ncclSuccess;
cuda_error:
    free(j);
    fn_set_last_error("CUDA runtime refused to enqueue work on stream %p", (void *)s0);
    return ncclUnhandledCudaError;
}

/* Waits for what a kernel launched on stream now would wait for: the stream's earlier work,
 * and for a blocking stream the legacy stream's (an event recorded there carries both); where
 * that fails, for the stream alone. */
static void wait_stream(cudaStream_t stream)
{
    /* Fast path: an idle non-blocking stream (what NCCL programs mostly use) has nothing a
     * kernel would wait for; skipping the event spares a round trip to its worker thread. */
    unsigned int flags = 0;
    if (stream && g_rt.get_flags && g_rt.query && g_rt.get_flags(stream, &flags) == 0 &&
        (flags & CUDA_STREAM_NON_BLOCKING) && g_rt.query(stream) == 0)
        return;
    void *ev = NULL;
    if (g_rt.ev_create && g_rt.ev_record && g_rt.ev_sync && g_rt.ev_destroy &&
        g_rt.ev_create(&ev, CUDA_EVENT_DISABLE_TIMING) == 0) {
        int e = g_rt.ev_record(ev, stream);
        if (e == 0)
            e = g_rt.ev_sync(ev);
        g_rt.ev_destroy(ev);
        if (e == 0)
            return;
    }
    g_rt.sync(stream);
}

void fn_stream_order(const struct fn_op *ops, int nops)
{
    int calls = 0;
    for (int i = 0; i < nops; i++)
        calls += ops[i].kind != FN_OP_JOIN;
    if (!calls)
        return; /* inits only: resolving now would miss a runtime the program loads later */
    pthread_once(&g_once, resolve);
    if (!g_rt.sync)
        return;
    /* An error here (no device, a worker thread, a bad handle) is not the application's:
     * cleared, unless the application had one pending already. */
    int before = g_rt.peek_error();
    for (int i = 0; i < nops; i++)
        if (ops[i].kind != FN_OP_JOIN && !seen_before(ops, i))
            wait_stream(ops[i].stream);
    if (before == 0)
        g_rt.get_error();
}

void fn_async_drain(struct ncclComm *c)
{
    for (;;) {
        uint32_t p = atomic_load(&c->pending);
        if (p == 0)
            return;
        syscall(SYS_futex, (uint32_t *)&c->pending, FUTEX_WAIT, p, NULL, NULL, 0);
    }
}

int fn_capturing(cudaStream_t stream)
{
    pthread_once(&g_once, resolve);
    int st = CUDA_CAPTURE_STATUS_NONE;
    return g_rt.is_capturing && g_rt.is_capturing(stream, &st) == 0 &&
           st != CUDA_CAPTURE_STATUS_NONE;
}

static ncclResult_t capture_one_stream(const struct fn_op *ops, int nops);

ncclResult_t fn_capture_submit(const struct fn_op *ops, int nops)
{
    if (fn_cuda_on()) {
        fn_set_last_error("stream capture is not supported with FAKENCCL_CUDA=1");
        return ncclInvalidUsage;
    }
    int streams = 0;
    for (int i = 0; i < nops; i++) {
        if (seen_before(ops, i))
            continue;
        if (!fn_capturing(ops[i].stream)) {
            /* NCCL would join that stream into the capture; cross-stream capture is not
             * modelled */
            fn_set_last_error("captured group also uses a stream that is not capturing "
                              "(not supported)");
            return ncclInvalidUsage;
        }
        streams++;
    }
    if (streams == 1)
        return capture_one_stream(ops, nops);
    /* Several capturing streams (one thread driving several devices, each stream captured
     * into its own graph, as nccl-tests -g N -G M): each stream's capture gets the group's ops
     * on that stream; a replay of one graph runs them (its peers' replays run on their own
     * stream workers, so a ring still progresses). */
    struct fn_op *part = malloc((size_t)nops * sizeof *part);
    if (!part)
        return ncclSystemError;
    ncclResult_t r = ncclSuccess;
    for (int i = 0; r == ncclSuccess && i < nops; i++) {
        if (seen_before(ops, i))
            continue;
        int n = 0;
        for (int k = i; k < nops; k++)
            if (ops[k].stream == ops[i].stream)
                part[n++] = ops[k];
        r = capture_one_stream(part, n);
    }
    free(part);
    return r;
}

/* ops all on one capturing stream: one persistent job in its capture. */
static ncclResult_t capture_one_stream(const struct fn_op *ops, int nops)
{
    cudaStream_t s = ops[0].stream;
    struct fn_job *j = calloc(1, sizeof *j + (size_t)nops * sizeof *ops);
    if (!j)
        return ncclSystemError;
    j->nops = nops;
    j->persistent = 1;
    memcpy(j->ops, ops, (size_t)nops * sizeof *ops);
    for (int i = 0; i < nops; i++)
        atomic_fetch_add(&ops[i].comm->refs, 1); /* until the graph is destroyed */
    /* As NCCL: the job is a user object the capture's graph owns, so it is freed when the
     * graph and its execs are. A runtime without user objects leaks it (and the comms'
     * references: their memory and segment are then never released). */
    int st = 0;
    void *graph = NULL, *obj = NULL;
    if (g_rt.capture_info && g_rt.uobj_create && g_rt.graph_retain &&
        g_rt.capture_info(s, &st, NULL, &graph, NULL, NULL, NULL) == 0 && graph &&
        g_rt.uobj_create(&obj, j, persistent_free, 1, CUDA_USER_OBJECT_NO_DESTRUCTOR_SYNC) == 0 &&
        g_rt.graph_retain(graph, obj, 1, CUDA_GRAPH_USER_OBJECT_MOVE) != 0) {
        if (g_rt.uobj_release)
            g_rt.uobj_release(obj, 1); /* frees j through persistent_free */
        fn_set_last_error("CUDA runtime refused to attach work to the graph of stream %p",
                          (void *)s);
        return ncclUnhandledCudaError;
    }
    if (g_rt.launch(s, persistent_run, j) != 0) {
        if (!obj)
            persistent_free(j); /* else the graph frees it */
        fn_set_last_error("CUDA runtime refused to capture work on stream %p", (void *)s);
        return ncclUnhandledCudaError;
    }
    return ncclSuccess;
}
