/* fakecuda events: create/destroy (destroy returns at once, a pending record still completes),
 * record as a stream op, query/synchronize on the record generation, elapsed time from
 * CLOCK_MONOTONIC, and cudaStreamWaitEvent as a wait op on the waiting stream. */
#include <stdlib.h>

#include "fc_internal.h"

#define FC_EVENT_FLAGS (cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess)

void fc_event_unref_locked(struct fc_event *ev)
{
    if (--ev->refs > 0)
        return;
    pthread_cond_destroy(&ev->cv);
    free(ev);
}

static struct fc_event *event_lookup_locked(cudaEvent_t h)
{
    struct fc_entry *e = fc_table_find((uintptr_t)h, 1);

    return e && e->kind == FC_KIND_EVENT ? (struct fc_event *)h : NULL;
}

static int complete(const struct fc_event *ev)
{
    return ev->done_gen >= ev->record_gen;
}

FC_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    struct fc_event *ev;
    cudaError_t err = cudaSuccess;

    if (!event || (flags & ~(unsigned)FC_EVENT_FLAGS) ||
        ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)))
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    if (fc_rt.ndevices == 0)
        return fc_ret(cudaErrorNoDevice);
    ev = calloc(1, sizeof(*ev));
    if (!ev)
        return fc_ret(cudaErrorMemoryAllocation);
    ev->flags = flags;
    ev->refs = 1;
    ev->device = fc_current_device();
    pthread_cond_init(&ev->cv, NULL);
    pthread_mutex_lock(&fc_rt.lock);
    if (fc_table_insert((uintptr_t)ev, 1, FC_KIND_EVENT, ev->device) != 0) {
        fc_event_unref_locked(ev);
        err = cudaErrorMemoryAllocation;
    } else {
        *event = (cudaEvent_t)ev;
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

FC_API cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

FC_API cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    struct fc_event *ev;
    cudaError_t err = cudaSuccess;

    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    ev = event_lookup_locked(event);
    if (!ev) {
        err = cudaErrorInvalidResourceHandle;
    } else {
        fc_table_remove(fc_table_find((uintptr_t)ev, 1));
        fc_event_unref_locked(ev); /* a pending record op keeps it until it ran */
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

static cudaError_t event_record(cudaEvent_t event, cudaStream_t stream, unsigned int flags,
                                int ptds)
{
    cudaError_t err = cudaSuccess;
    struct fc_stream *s;
    struct fc_event *ev;
    struct fc_op *op;
    int captured;

    if (flags & ~(unsigned)cudaEventRecordExternal)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    op = fc_op_new(FC_OP_RECORD);
    if (!op)
        return fc_ret(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&fc_rt.lock);
    ev = event_lookup_locked(event);
    s = ev ? fc_resolve_locked(stream, ptds, &err) : NULL;
    if (!ev || !s) {
        free(op);
        if (!ev)
            err = cudaErrorInvalidResourceHandle;
    } else {
        op->u.event.ev = ev;
        op->u.event.gen = ev->record_gen + 1;
        ev->refs++;
        captured = s->cap != NULL; /* a graph node: each launch records it (fc_graph.c) */
        err = fc_enqueue_locked(s, op);
        if (err == cudaSuccess && !captured)
            ev->record_gen++; /* only once the op that completes it is queued */
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

FC_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    return event_record(event, stream, 0, 0);
}

FC_API cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
    return event_record(event, stream, 0, 1);
}

FC_API cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                            unsigned int flags)
{
    return event_record(event, stream, flags, 0);
}

FC_API cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
                                                 unsigned int flags)
{
    return event_record(event, stream, flags, 1);
}

FC_API cudaError_t cudaEventQuery(cudaEvent_t event)
{
    cudaError_t err;
    struct fc_event *ev;

    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    ev = event_lookup_locked(event);
    if (!ev)
        err = cudaErrorInvalidResourceHandle;
    else
        err = complete(ev) ? cudaSuccess : cudaErrorNotReady;
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

FC_API cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    cudaError_t err = cudaSuccess;
    struct fc_event *ev;
    uint64_t gen;

    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    ev = event_lookup_locked(event);
    if (!ev) {
        err = cudaErrorInvalidResourceHandle;
    } else if (!complete(ev) && fc_in_worker()) {
        err = cudaErrorNotPermitted;
    } else {
        gen = ev->record_gen; /* the most recent record at the time of the call */
        ev->refs++;
        while (ev->done_gen < gen)
            pthread_cond_wait(&ev->cv, &fc_rt.lock);
        fc_event_unref_locked(ev);
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

FC_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    cudaError_t err = cudaSuccess;
    struct fc_event *a, *b;

    if (!ms)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    a = event_lookup_locked(start);
    b = event_lookup_locked(end);
    if (!a || !b || ((a->flags | b->flags) & cudaEventDisableTiming) || !a->record_gen ||
        !b->record_gen)
        err = cudaErrorInvalidResourceHandle;
    else if (!complete(a) || !complete(b))
        err = cudaErrorNotReady;
    else
        *ms = (float)((double)(b->when.tv_sec - a->when.tv_sec) * 1e3 +
                      (double)(b->when.tv_nsec - a->when.tv_nsec) / 1e6);
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

static cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t event, unsigned int flags,
                                     int ptds)
{
    cudaError_t err = cudaSuccess;
    struct fc_stream *s;
    struct fc_event *ev;
    struct fc_op *op;

    if (flags & ~(unsigned)cudaEventWaitExternal)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    op = fc_op_new(FC_OP_WAIT_EVENT);
    if (!op)
        return fc_ret(cudaErrorMemoryAllocation);
    pthread_mutex_lock(&fc_rt.lock);
    s = fc_resolve_locked(stream, ptds, &err);
    ev = s ? event_lookup_locked(event) : NULL;
    if (s && !ev)
        err = cudaErrorInvalidResourceHandle;
    if (!ev || (complete(ev) && !s->cap)) {
        free(op); /* nothing to wait for (a captured wait is decided at each launch) */
    } else {
        op->u.event.ev = ev;
        op->u.event.gen = ev->record_gen; /* the record at the time of the call */
        ev->refs++;
        err = fc_enqueue_locked(s, op);
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

FC_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    return stream_wait_event(stream, event, flags, 0);
}

FC_API cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event,
                                            unsigned int flags)
{
    return stream_wait_event(stream, event, flags, 1);
}
