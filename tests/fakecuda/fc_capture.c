/* fakecuda stream capture: a capturing stream records the ops enqueued to it into its capture's
 * graph instead of running them (fc_stream.c asks fc_capture_append_locked); begin, end and the
 * capture queries. Guarded by fc_rt.lock like the rest. */
#include <stdlib.h>
#include <string.h>

#include "fc_graph.h"

cudaError_t fc_capture_append_locked(struct fc_stream *s, struct fc_op *op)
{
    if (s->cap->invalidated) {
        fc_op_release_locked(op);
        return cudaErrorStreamCaptureInvalidated;
    }
    if (fc_graph_push_locked(s->cap->graph, op) != 0) {
        fc_op_release_locked(op);
        s->cap->invalidated = 1;
        return cudaErrorMemoryAllocation;
    }
    return cudaSuccess;
}

cudaError_t fc_capture_refuse_locked(struct fc_stream *s)
{
    s->cap->invalidated = 1;
    return cudaErrorStreamCaptureUnsupported;
}

struct fc_uobj *fc_capture_drop_locked(struct fc_stream *s)
{
    struct fc_capture *c = s->cap;
    struct fc_uobj *dead;

    s->cap = NULL;
    dead = fc_graph_free_locked(c->graph, NULL);
    free(c);
    return dead;
}

static cudaError_t begin_capture(cudaStream_t stream, enum cudaStreamCaptureMode mode, int ptds)
{
    cudaError_t err = cudaSuccess;
    struct fc_capture *c;
    struct fc_stream *s;

    if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    s = fc_resolve_locked(stream, ptds, &err);
    if (s && s->kind == FC_STREAM_LEGACY) {
        err = cudaErrorStreamCaptureUnsupported; /* the legacy stream cannot capture */
    } else if (s && s->cap) {
        err = cudaErrorIllegalState;
    } else if (s) {
        c = calloc(1, sizeof(*c));
        if (c)
            c->graph = fc_graph_new_locked();
        if (!c || !c->graph) {
            free(c);
            err = cudaErrorMemoryAllocation;
        } else {
            c->id = ++fc_rt.capture_ids;
            c->mode = mode;
            c->graph->capturing = 1;
            s->cap = c;
        }
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

FC_API cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    return begin_capture(stream, mode, 0);
}

FC_API cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    return begin_capture(stream, mode, 1);
}

static cudaError_t end_capture(cudaStream_t stream, cudaGraph_t *pGraph, int ptds)
{
    struct fc_uobj *dead = NULL;
    cudaError_t err = cudaSuccess;
    struct fc_stream *s;
    struct fc_capture *c;

    if (!pGraph)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    s = fc_resolve_locked(stream, ptds, &err);
    if (s && !s->cap) {
        err = cudaErrorIllegalState;
    } else if (s && s->cap->invalidated) {
        *pGraph = NULL;
        dead = fc_capture_drop_locked(s);
        err = cudaErrorStreamCaptureInvalidated;
    } else if (s) {
        c = s->cap;
        s->cap = NULL;
        c->graph->capturing = 0;
        *pGraph = (cudaGraph_t)(void *)c->graph;
        free(c);
    }
    pthread_mutex_unlock(&fc_rt.lock);
    fc_uobjs_destroy(dead);
    return fc_ret(err);
}

FC_API cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    return end_capture(stream, pGraph, 0);
}

FC_API cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph)
{
    return end_capture(stream, pGraph, 1);
}

static enum cudaStreamCaptureStatus status_of(const struct fc_stream *s)
{
    if (!s->cap)
        return cudaStreamCaptureStatusNone;
    return s->cap->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
}

static cudaError_t capture_info(cudaStream_t stream, int ptds, enum cudaStreamCaptureStatus *st,
                                unsigned long long *id, cudaGraph_t *graph,
                                const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                size_t *ndeps)
{
    cudaError_t err = cudaSuccess;
    struct fc_graph *g = NULL;
    struct fc_stream *s;

    if (!st || (edges && !deps))
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    s = fc_resolve_locked(stream, ptds, &err);
    if (s) {
        *st = status_of(s);
        /* the id stays the same for the whole sequence, invalidated or not */
        if (id)
            *id = s->cap ? s->cap->id : 0;
        if (s->cap && !s->cap->invalidated)
            g = s->cap->graph;
        if (graph)
            *graph = (cudaGraph_t)(void *)g;
        /* ops are captured in sequence: the next depends on the last captured one */
        if (deps)
            *deps = g && g->n ? &g->nodes[g->n - 1] : NULL;
        if (edges)
            *edges = NULL; /* default edges only */
        if (ndeps)
            *ndeps = g && g->n ? 1 : 0;
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

FC_API cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                         enum cudaStreamCaptureStatus *pCaptureStatus)
{
    return capture_info(stream, 0, pCaptureStatus, NULL, NULL, NULL, NULL, NULL);
}

FC_API cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream,
                                              enum cudaStreamCaptureStatus *pCaptureStatus)
{
    return capture_info(stream, 1, pCaptureStatus, NULL, NULL, NULL, NULL, NULL);
}

FC_API cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                            enum cudaStreamCaptureStatus *captureStatus_out,
                                            unsigned long long *id_out, cudaGraph_t *graph_out,
                                            const cudaGraphNode_t **dependencies_out,
                                            const cudaGraphEdgeData **edgeData_out,
                                            size_t *numDependencies_out)
{
    return capture_info(stream, 0, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out);
}

FC_API cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream,
                                                 enum cudaStreamCaptureStatus *captureStatus_out,
                                                 unsigned long long *id_out, cudaGraph_t *graph_out,
                                                 const cudaGraphNode_t **dependencies_out,
                                                 const cudaGraphEdgeData **edgeData_out,
                                                 size_t *numDependencies_out)
{
    return capture_info(stream, 1, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out);
}
