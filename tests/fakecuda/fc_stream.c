/* fakecuda streams: each stream a FIFO of ops run by its own worker thread; the legacy default
 * stream's implicit synchronization with blocking streams (as wait ops in the queues); the
 * per-thread default streams; stream and device synchronization; fork. Everything is guarded
 * by fc_rt.lock, which no thread holds while an op runs or while it waits (condvars). */
#include <stdlib.h>
#include <string.h>

#include "fc_internal.h"

/* The per-thread default streams of one thread, one per device, made on first use. */
struct fc_ptds {
    uint64_t epoch;
    struct fc_stream *s[FC_MAX_DEVICES];
};

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t ptds_key;
static __thread struct fc_ptds *t_ptds;
static __thread struct fc_stream *t_worker_of; /* the stream this thread works for, if any */

int fc_in_worker(void)
{
    return t_worker_of != NULL;
}

static int is_blocking(const struct fc_stream *s)
{
    return s->kind != FC_STREAM_LEGACY && !(s->flags & cudaStreamNonBlocking);
}

static int pending(const struct fc_stream *s)
{
    return s->done_seq < s->enq_seq;
}

static struct fc_stream *stream_new_locked(enum fc_stream_kind kind, int device, unsigned flags,
                                           int priority)
{
    struct fc_stream *s = calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    s->kind = kind;
    s->device = device;
    s->flags = flags;
    s->priority = priority;
    s->refs = 1; /* the owner: user handle, runtime (legacy) or thread (per-thread) */
    pthread_cond_init(&s->work_cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    /* At the head: a sync walking the list while it waits never meets newer streams. */
    s->next = fc_rt.streams;
    if (fc_rt.streams)
        fc_rt.streams->prev = s;
    fc_rt.streams = s;
    return s;
}

void fc_stream_unref_locked(struct fc_stream *s)
{
    if (--s->refs > 0)
        return;
    if (s->prev)
        s->prev->next = s->next;
    else
        fc_rt.streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    pthread_cond_destroy(&s->work_cv);
    pthread_cond_destroy(&s->done_cv);
    free(s);
}

/* The owner lets go: the worker finishes what is queued, then the stream is freed. */
static void stream_release_owner_locked(struct fc_stream *s)
{
    s->destroyed = 1;
    pthread_cond_signal(&s->work_cv);
    fc_stream_unref_locked(s);
}

static void ptds_destructor(void *arg)
{
    struct fc_ptds *p = arg;
    int i;

    pthread_mutex_lock(&fc_rt.lock);
    if (p->epoch == fc_rt.epoch) {
        for (i = 0; i < FC_MAX_DEVICES; i++)
            if (p->s[i])
                stream_release_owner_locked(p->s[i]);
    }
    pthread_mutex_unlock(&fc_rt.lock);
    t_ptds = NULL;
    free(p);
}

static void key_once_fn(void)
{
    pthread_key_create(&ptds_key, ptds_destructor);
}

static struct fc_stream *per_thread_locked(int device)
{
    if (!t_ptds || t_ptds->epoch != fc_rt.epoch) {
        /* a table of an older epoch (before fork) is abandoned with its streams */
        struct fc_ptds *p = calloc(1, sizeof(*p));
        if (!p)
            return NULL;
        p->epoch = fc_rt.epoch;
        pthread_once(&key_once, key_once_fn);
        pthread_setspecific(ptds_key, p);
        t_ptds = p;
    }
    if (!t_ptds->s[device])
        t_ptds->s[device] = stream_new_locked(FC_STREAM_PER_THREAD, device, 0, 0);
    return t_ptds->s[device];
}

struct fc_stream *fc_resolve_locked(cudaStream_t h, int ptds, cudaError_t *err)
{
    int dev = fc_current_device();
    struct fc_entry *e;
    struct fc_stream *s;

    if (!h)
        h = ptds ? cudaStreamPerThread : cudaStreamLegacy;
    if (h == cudaStreamLegacy || h == cudaStreamPerThread) {
        if (fc_rt.ndevices == 0) {
            *err = cudaErrorNoDevice;
            return NULL;
        }
        if (h == cudaStreamLegacy) {
            if (!fc_rt.legacy[dev])
                fc_rt.legacy[dev] = stream_new_locked(FC_STREAM_LEGACY, dev, 0, 0);
            s = fc_rt.legacy[dev];
        } else {
            s = per_thread_locked(dev);
        }
        if (!s)
            *err = cudaErrorMemoryAllocation;
        return s;
    }
    e = fc_table_find((uintptr_t)h, 1);
    if (!e || e->kind != FC_KIND_STREAM) {
        *err = cudaErrorInvalidResourceHandle;
        return NULL;
    }
    return (struct fc_stream *)h;
}

struct fc_op *fc_op_new(enum fc_op_kind kind)
{
    struct fc_op *op = calloc(1, sizeof(*op));

    if (op)
        op->kind = kind;
    return op;
}

void fc_op_release_locked(struct fc_op *op)
{
    if (op->kind == FC_OP_RECORD || op->kind == FC_OP_WAIT_EVENT)
        fc_event_unref_locked(op->u.event.ev);
    else if (op->kind == FC_OP_WAIT_STREAM)
        fc_stream_unref_locked(op->u.stream.s);
    free(op);
}

/* Runs one op; called by the worker with fc_rt.lock held, returns with it held. */
static void run_op_locked(struct fc_op *op)
{
    struct fc_event *ev;
    struct fc_stream *t;

    switch (op->kind) {
    case FC_OP_HOSTFN:
        pthread_mutex_unlock(&fc_rt.lock);
        op->u.host.fn(op->u.host.arg);
        pthread_mutex_lock(&fc_rt.lock);
        break;
    case FC_OP_MEMCPY:
        pthread_mutex_unlock(&fc_rt.lock);
        memmove(op->u.copy.dst, op->u.copy.src, op->u.copy.n);
        pthread_mutex_lock(&fc_rt.lock);
        break;
    case FC_OP_MEMSET:
        pthread_mutex_unlock(&fc_rt.lock);
        memset(op->u.set.dst, op->u.set.value, op->u.set.n);
        pthread_mutex_lock(&fc_rt.lock);
        break;
    case FC_OP_RECORD:
        ev = op->u.event.ev;
        if (op->u.event.gen > ev->done_gen) {
            ev->done_gen = op->u.event.gen;
            clock_gettime(CLOCK_MONOTONIC, &ev->when);
        }
        pthread_cond_broadcast(&ev->cv);
        break;
    case FC_OP_WAIT_EVENT:
        ev = op->u.event.ev;
        while (ev->done_gen < op->u.event.gen)
            pthread_cond_wait(&ev->cv, &fc_rt.lock);
        break;
    case FC_OP_WAIT_STREAM:
        t = op->u.stream.s;
        while (t->done_seq < op->u.stream.seq)
            pthread_cond_wait(&t->done_cv, &fc_rt.lock);
        break;
    }
}

static void *worker_main(void *arg)
{
    struct fc_stream *s = arg;
    struct fc_op *op;

    t_worker_of = s;
    fc_set_current_device(s->device);
    pthread_mutex_lock(&fc_rt.lock);
    for (;;) {
        while (!s->head && !s->destroyed)
            pthread_cond_wait(&s->work_cv, &fc_rt.lock);
        op = s->head;
        if (!op)
            break; /* destroyed and drained */
        s->head = op->next;
        if (!s->head)
            s->tail = NULL;
        run_op_locked(op);
        s->done_seq = op->seq;
        pthread_cond_broadcast(&s->done_cv);
        fc_op_release_locked(op);
    }
    s->worker = 0;
    fc_stream_unref_locked(s); /* the worker's reference */
    pthread_mutex_unlock(&fc_rt.lock);
    return NULL;
}

static cudaError_t start_worker_locked(struct fc_stream *s)
{
    pthread_attr_t attr;
    pthread_t tid;
    int rc;

    if (s->worker)
        return cudaSuccess;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&tid, &attr, worker_main, s);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return cudaErrorMemoryAllocation;
    s->worker = 1;
    s->refs++;
    return cudaSuccess;
}

static void push_locked(struct fc_stream *s, struct fc_op *op)
{
    op->seq = ++s->enq_seq;
    op->next = NULL;
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    pthread_cond_signal(&s->work_cv);
}

/* Makes s wait, before its next op, for everything enqueued so far on t. */
static cudaError_t push_wait_stream_locked(struct fc_stream *s, struct fc_stream *t)
{
    struct fc_op *op = fc_op_new(FC_OP_WAIT_STREAM);

    if (!op)
        return cudaErrorMemoryAllocation;
    op->u.stream.s = t;
    op->u.stream.seq = t->enq_seq;
    t->refs++;
    push_locked(s, op);
    return cudaSuccess;
}

cudaError_t fc_enqueue_locked(struct fc_stream *s, struct fc_op *op)
{
    if (s->cap)
        return fc_capture_append_locked(s, op); /* nothing runs, no implicit dependency */
    return fc_enqueue_now_locked(s, op);
}

cudaError_t fc_enqueue_now_locked(struct fc_stream *s, struct fc_op *op)
{
    cudaError_t err = start_worker_locked(s);
    struct fc_stream *b;

    /* The legacy stream waits for all earlier work of the device's blocking streams, and a
     * blocking stream for all earlier work of the legacy stream. Waits only ever point at
     * work enqueued earlier under this lock, so they cannot form a cycle. */
    if (err == cudaSuccess && s->kind == FC_STREAM_LEGACY) {
        for (b = fc_rt.streams; b && err == cudaSuccess; b = b->next)
            if (b != s && b->device == s->device && is_blocking(b) && pending(b))
                err = push_wait_stream_locked(s, b);
    } else if (err == cudaSuccess && is_blocking(s)) {
        b = fc_rt.legacy[s->device];
        if (b && pending(b))
            err = push_wait_stream_locked(s, b);
    }
    if (err != cudaSuccess) {
        fc_op_release_locked(op);
        return err;
    }
    push_locked(s, op);
    return cudaSuccess;
}

cudaError_t fc_enqueue(cudaStream_t h, int ptds, struct fc_op *op, struct fc_stream **s_out,
                       uint64_t *seq_out)
{
    cudaError_t err = cudaSuccess;
    struct fc_stream *s;

    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    s = fc_resolve_locked(h, ptds, &err);
    if (s && s->cap && (s_out || seq_out)) {
        err = fc_capture_refuse_locked(s); /* a synchronous call would wait for nothing */
        fc_op_release_locked(op);
    } else if (!s) {
        fc_op_release_locked(op);
    } else {
        err = fc_enqueue_locked(s, op);
        if (err == cudaSuccess && s_out)
            *s_out = s;
        if (err == cudaSuccess && seq_out)
            *seq_out = s->enq_seq;
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return err;
}

void fc_wait_seq(struct fc_stream *s, uint64_t seq)
{
    pthread_mutex_lock(&fc_rt.lock);
    while (s->done_seq < seq)
        pthread_cond_wait(&s->done_cv, &fc_rt.lock);
    pthread_mutex_unlock(&fc_rt.lock);
}

/* Which streams a synchronization covers: those of `device` (all when < 0), and for the
 * legacy stream's only the blocking ones and itself. */
static int covers(const struct fc_stream *s, int device, int blocking_only)
{
    if (device >= 0 && s->device != device)
        return 0;
    return !blocking_only || is_blocking(s) || s->kind == FC_STREAM_LEGACY;
}

/* Waits for the work enqueued before the call on the covered streams. The targets are taken
 * first (a reference each), so work enqueued while waiting is not waited for. */
static cudaError_t wait_covered_locked(int device, int blocking_only)
{
    struct {
        struct fc_stream *s;
        uint64_t seq;
    } *w = NULL, *grown;
    size_t n = 0, cap = 0, i;
    cudaError_t err = cudaSuccess;
    struct fc_stream *s;

    for (s = fc_rt.streams; s; s = s->next) {
        if (!covers(s, device, blocking_only) || !pending(s))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            grown = realloc(w, cap * sizeof(*w));
            if (!grown) {
                err = cudaErrorMemoryAllocation;
                break;
            }
            w = grown;
        }
        w[n].s = s;
        w[n].seq = s->enq_seq;
        s->refs++;
        n++;
    }
    for (i = 0; i < n; i++)
        while (w[i].s->done_seq < w[i].seq)
            pthread_cond_wait(&w[i].s->done_cv, &fc_rt.lock);
    for (i = 0; i < n; i++)
        fc_stream_unref_locked(w[i].s);
    free(w);
    return err;
}

cudaError_t fc_sync_streams_locked(int device)
{
    return wait_covered_locked(device, 0);
}

static cudaError_t stream_create(cudaStream_t *pStream, unsigned int flags, int priority)
{
    struct fc_stream *s;
    cudaError_t err = cudaSuccess;

    if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking))
        return fc_ret(cudaErrorInvalidValue);
    if (priority < FC_PRIO_GREATEST)
        priority = FC_PRIO_GREATEST;
    if (priority > FC_PRIO_LEAST)
        priority = FC_PRIO_LEAST;
    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    if (fc_rt.ndevices == 0) {
        err = cudaErrorNoDevice;
    } else {
        s = stream_new_locked(FC_STREAM_USER, fc_current_device(), flags, priority);
        if (!s) {
            err = cudaErrorMemoryAllocation;
        } else if (fc_table_insert((uintptr_t)s, 1, FC_KIND_STREAM, s->device) != 0) {
            fc_stream_unref_locked(s);
            err = cudaErrorMemoryAllocation;
        } else {
            *pStream = (cudaStream_t)s;
        }
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

FC_API cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    return stream_create(pStream, cudaStreamDefault, 0);
}

FC_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return stream_create(pStream, flags, 0);
}

FC_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags,
                                                int priority)
{
    return stream_create(pStream, flags, priority);
}

FC_API cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    if (leastPriority)
        *leastPriority = FC_PRIO_LEAST;
    if (greatestPriority)
        *greatestPriority = FC_PRIO_GREATEST;
    return cudaSuccess;
}

FC_API cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    struct fc_uobj *dead = NULL;
    struct fc_entry *e;
    cudaError_t err = cudaSuccess;

    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    /* NULL, cudaStreamLegacy and cudaStreamPerThread are not in the table */
    e = fc_table_find((uintptr_t)stream, 1);
    if (!e || e->kind != FC_KIND_STREAM) {
        err = cudaErrorInvalidResourceHandle;
    } else {
        fc_table_remove(e);
        if (((struct fc_stream *)stream)->cap)
            dead = fc_capture_drop_locked((struct fc_stream *)stream);
        stream_release_owner_locked((struct fc_stream *)stream); /* pending work still runs */
    }
    pthread_mutex_unlock(&fc_rt.lock);
    fc_uobjs_destroy(dead);
    return fc_ret(err);
}

static cudaError_t stream_query(cudaStream_t h, int ptds)
{
    cudaError_t err = cudaSuccess;
    struct fc_stream *s, *b;

    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    s = fc_resolve_locked(h, ptds, &err);
    if (s && s->cap) {
        err = fc_capture_refuse_locked(s);
    } else if (s && s->kind == FC_STREAM_LEGACY) {
        for (b = fc_rt.streams; b; b = b->next)
            if (covers(b, s->device, 1) && pending(b))
                err = cudaErrorNotReady;
    } else if (s && pending(s)) {
        err = cudaErrorNotReady;
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

static cudaError_t stream_sync(cudaStream_t h, int ptds)
{
    cudaError_t err = cudaSuccess;
    struct fc_stream *s;
    uint64_t seq;

    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    s = fc_resolve_locked(h, ptds, &err);
    if (s && s->cap) {
        err = fc_capture_refuse_locked(s);
    } else if (s && fc_in_worker()) {
        err = cudaErrorNotPermitted;
    } else if (s && s->kind == FC_STREAM_LEGACY) {
        err = wait_covered_locked(s->device, 1);
    } else if (s) {
        seq = s->enq_seq;
        s->refs++;
        while (s->done_seq < seq)
            pthread_cond_wait(&s->done_cv, &fc_rt.lock);
        fc_stream_unref_locked(s);
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

static cudaError_t stream_get(cudaStream_t h, int ptds, unsigned int *flags, int *priority)
{
    cudaError_t err = cudaSuccess;
    struct fc_stream *s;

    if (!flags && !priority)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    s = fc_resolve_locked(h, ptds, &err);
    if (s && flags)
        *flags = s->flags;
    if (s && priority)
        *priority = s->priority;
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

FC_API cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    return stream_query(stream, 0);
}

FC_API cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream)
{
    return stream_query(stream, 1);
}

FC_API cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    return stream_sync(stream, 0);
}

FC_API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
    return stream_sync(stream, 1);
}

FC_API cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
    return flags ? stream_get(hStream, 0, flags, NULL) : fc_ret(cudaErrorInvalidValue);
}

FC_API cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int *flags)
{
    return flags ? stream_get(hStream, 1, flags, NULL) : fc_ret(cudaErrorInvalidValue);
}

FC_API cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
    return priority ? stream_get(hStream, 0, NULL, priority) : fc_ret(cudaErrorInvalidValue);
}

FC_API cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int *priority)
{
    return priority ? stream_get(hStream, 1, NULL, priority) : fc_ret(cudaErrorInvalidValue);
}

FC_API cudaError_t cudaDeviceSynchronize(void)
{
    cudaError_t err;

    fc_init();
    if (fc_rt.ndevices == 0)
        return fc_ret(cudaErrorNoDevice);
    if (fc_in_worker())
        return fc_ret(cudaErrorNotPermitted);
    pthread_mutex_lock(&fc_rt.lock);
    err = fc_sync_streams_locked(fc_current_device());
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

static cudaError_t launch_host_func(cudaStream_t stream, cudaHostFn_t fn, void *userData, int ptds)
{
    struct fc_op *op;

    if (!fn)
        return fc_ret(cudaErrorInvalidValue);
    op = fc_op_new(FC_OP_HOSTFN);
    if (!op)
        return fc_ret(cudaErrorMemoryAllocation);
    op->u.host.fn = fn;
    op->u.host.arg = userData;
    return fc_ret(fc_enqueue(stream, ptds, op, NULL, NULL));
}

FC_API cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    return launch_host_func(stream, fn, userData, 0);
}

FC_API cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    return launch_host_func(stream, fn, userData, 1);
}

/* fork: the child keeps the allocations but no stream, event or worker (threads do not
 * survive fork); the parent's objects are abandoned there, as their locks and condvars may be
 * mid-use. Holding fc_rt.lock across fork keeps the table consistent. */
void fc_fork_prepare(void)
{
    pthread_mutex_lock(&fc_rt.lock);
}

void fc_fork_parent(void)
{
    pthread_mutex_unlock(&fc_rt.lock);
}

void fc_fork_child(void)
{
    size_t i, n = 0;

    for (i = 0; i < fc_rt.n_table; i++)
        if (fc_rt.table[i].kind == FC_KIND_DEVICE_MEM || fc_rt.table[i].kind == FC_KIND_HOST_MEM)
            fc_rt.table[n++] = fc_rt.table[i];
    fc_rt.n_table = n;
    fc_rt.streams = NULL;
    memset(fc_rt.legacy, 0, sizeof(fc_rt.legacy));
    fc_rt.epoch++;
    t_worker_of = NULL;
    pthread_mutex_unlock(&fc_rt.lock);
}
