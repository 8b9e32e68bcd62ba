/* fakecuda graphs: a graph is an ordered list of ops (recorded by a stream capture, fc_capture.c);
 * an executable graph is a copy of that list, and each launch enqueues copies of its ops on the
 * launch stream, in order, after the exec's previous launch. User objects (cudaUserObject*) tie
 * resources to graphs and execs. Everything is guarded by fc_rt.lock; user-object destructors run
 * without it. */
#include <stdlib.h>
#include <string.h>

#include "fc_graph.h"

#define FC_INSTANTIATE_FLAGS                                                                       \
    (cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUpload |                   \
     cudaGraphInstantiateFlagDeviceLaunch | cudaGraphInstantiateFlagUseNodePriority)

static struct fc_op *op_of(cudaGraphNode_t n)
{
    return (struct fc_op *)(void *)n;
}

static void *lookup_locked(const void *h, enum fc_kind kind)
{
    struct fc_entry *e = h ? fc_table_find((uintptr_t)h, 1) : NULL;

    return e && e->kind == kind ? (void *)h : NULL;
}

/* A copy of template op t for another list; event and stream references are taken. */
static struct fc_op *op_clone_locked(const struct fc_op *t)
{
    struct fc_op *op = fc_op_new(t->kind);

    if (!op)
        return NULL;
    op->u = t->u;
    if (t->kind == FC_OP_RECORD || t->kind == FC_OP_WAIT_EVENT)
        op->u.event.ev->refs++;
    else if (t->kind == FC_OP_WAIT_STREAM)
        op->u.stream.s->refs++;
    return op;
}

static void nodes_free_locked(cudaGraphNode_t *nodes, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        fc_op_release_locked(op_of(nodes[i]));
    free(nodes);
}

/* A copy of n nodes, or NULL (out of memory; nothing leaked). */
static cudaGraphNode_t *nodes_clone_locked(cudaGraphNode_t *src, size_t n)
{
    cudaGraphNode_t *v = calloc(n ? n : 1, sizeof(*v));
    size_t i;

    for (i = 0; v && i < n; i++) {
        struct fc_op *op = op_clone_locked(op_of(src[i]));
        if (!op) {
            nodes_free_locked(v, i);
            return NULL;
        }
        v[i] = (cudaGraphNode_t)(void *)op;
    }
    return v;
}

/* ---- user objects ---- */

/* Drops count references of o; returns dead with o prepended when it reached zero. */
static struct fc_uobj *uobj_drop_locked(struct fc_uobj *o, unsigned count, struct fc_uobj *dead)
{
    if (o->refs > count) {
        o->refs -= count;
        return dead;
    }
    o->refs = 0;
    fc_table_remove(fc_table_find((uintptr_t)o, 1));
    o->next = dead;
    return o;
}

void fc_uobjs_destroy(struct fc_uobj *dead)
{
    while (dead) {
        struct fc_uobj *next = dead->next;
        if (dead->destroy)
            dead->destroy(dead->ptr);
        free(dead);
        dead = next;
    }
}

/* Adds count references of o to u (taken from the caller when move). 0 or -1 (no memory). */
static int urefs_add_locked(struct fc_urefs *u, struct fc_uobj *o, unsigned count, int move)
{
    size_t i;

    for (i = 0; i < u->n && u->v[i].obj != o; i++)
        ;
    if (i == u->n) {
        void *grown = realloc(u->v, (u->n + 1) * sizeof(*u->v));
        if (!grown)
            return -1;
        u->v = grown;
        u->v[u->n].obj = o;
        u->v[u->n].count = 0;
        u->n++;
    }
    u->v[i].count += count;
    if (!move)
        o->refs += count;
    return 0;
}

/* dst gains its own references on everything src holds. 0 or -1. */
static int urefs_copy_locked(struct fc_urefs *dst, const struct fc_urefs *src)
{
    size_t i;

    for (i = 0; i < src->n; i++)
        if (urefs_add_locked(dst, src->v[i].obj, src->v[i].count, 0) != 0)
            return -1;
    return 0;
}

static struct fc_uobj *urefs_clear_locked(struct fc_urefs *u, struct fc_uobj *dead)
{
    size_t i;

    for (i = 0; i < u->n; i++)
        dead = uobj_drop_locked(u->v[i].obj, u->v[i].count, dead);
    free(u->v);
    u->v = NULL;
    u->n = 0;
    return dead;
}

FC_API cudaError_t cudaUserObjectCreate(cudaUserObject_t *object_out, void *ptr,
                                        cudaHostFn_t destroy, unsigned int initialRefcount,
                                        unsigned int flags)
{
    struct fc_uobj *o;
    cudaError_t err = cudaSuccess;

    if (!object_out || !destroy || initialRefcount == 0 || flags != cudaUserObjectNoDestructorSync)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    o = calloc(1, sizeof(*o));
    if (!o)
        return fc_ret(cudaErrorMemoryAllocation);
    o->ptr = ptr;
    o->destroy = destroy;
    o->refs = initialRefcount;
    pthread_mutex_lock(&fc_rt.lock);
    if (fc_table_insert((uintptr_t)o, 1, FC_KIND_UOBJ, -1) != 0) {
        free(o);
        err = cudaErrorMemoryAllocation;
    } else {
        *object_out = (cudaUserObject_t)(void *)o;
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

FC_API cudaError_t cudaUserObjectRetain(cudaUserObject_t object, unsigned int count)
{
    struct fc_uobj *o;

    if (count == 0)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    o = lookup_locked(object, FC_KIND_UOBJ);
    if (o)
        o->refs += count;
    pthread_mutex_unlock(&fc_rt.lock);
    return o ? cudaSuccess : fc_ret(cudaErrorInvalidValue);
}

FC_API cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned int count)
{
    struct fc_uobj *o, *dead = NULL;

    if (count == 0)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    o = lookup_locked(object, FC_KIND_UOBJ);
    if (o)
        dead = uobj_drop_locked(o, count, NULL);
    pthread_mutex_unlock(&fc_rt.lock);
    fc_uobjs_destroy(dead);
    return o ? cudaSuccess : fc_ret(cudaErrorInvalidValue);
}

FC_API cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                             unsigned int count, unsigned int flags)
{
    cudaError_t err = cudaSuccess;
    struct fc_graph *g;
    struct fc_uobj *o;

    if (count == 0 || (flags & ~(unsigned)cudaGraphUserObjectMove))
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    g = lookup_locked(graph, FC_KIND_GRAPH);
    o = lookup_locked(object, FC_KIND_UOBJ);
    if (!g || !o)
        err = cudaErrorInvalidValue;
    else if (urefs_add_locked(&g->urefs, o, count, flags & cudaGraphUserObjectMove) != 0)
        err = cudaErrorMemoryAllocation;
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

FC_API cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                              unsigned int count)
{
    cudaError_t err = cudaSuccess;
    struct fc_uobj *o, *dead = NULL;
    struct fc_graph *g;
    size_t i;

    if (count == 0)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    g = lookup_locked(graph, FC_KIND_GRAPH);
    o = lookup_locked(object, FC_KIND_UOBJ);
    for (i = 0; g && o && i < g->urefs.n && g->urefs.v[i].obj != o; i++)
        ;
    if (!g || !o || i == g->urefs.n || g->urefs.v[i].count < count) {
        err = cudaErrorInvalidValue;
    } else {
        g->urefs.v[i].count -= count;
        dead = uobj_drop_locked(o, count, NULL);
    }
    pthread_mutex_unlock(&fc_rt.lock);
    fc_uobjs_destroy(dead);
    return fc_ret(err);
}

/* ---- graphs ---- */

struct fc_graph *fc_graph_new_locked(void)
{
    struct fc_graph *g = calloc(1, sizeof(*g));

    if (g && fc_table_insert((uintptr_t)g, 1, FC_KIND_GRAPH, -1) != 0) {
        free(g);
        g = NULL;
    }
    return g;
}

struct fc_uobj *fc_graph_free_locked(struct fc_graph *g, struct fc_uobj *dead)
{
    fc_table_remove(fc_table_find((uintptr_t)g, 1));
    nodes_free_locked(g->nodes, g->n);
    dead = urefs_clear_locked(&g->urefs, dead);
    free(g);
    return dead;
}

int fc_graph_push_locked(struct fc_graph *g, struct fc_op *op)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        cudaGraphNode_t *grown = realloc(g->nodes, cap * sizeof(*grown));
        if (!grown)
            return -1;
        g->nodes = grown;
        g->cap = cap;
    }
    g->nodes[g->n++] = (cudaGraphNode_t)(void *)op;
    return 0;
}

FC_API cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
    struct fc_graph *g;

    if (!pGraph || flags != 0)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    g = fc_graph_new_locked();
    if (g)
        *pGraph = (cudaGraph_t)(void *)g;
    pthread_mutex_unlock(&fc_rt.lock);
    return g ? cudaSuccess : fc_ret(cudaErrorMemoryAllocation);
}

FC_API cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    struct fc_uobj *dead = NULL;
    cudaError_t err = cudaSuccess;
    struct fc_graph *g;

    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    g = lookup_locked(graph, FC_KIND_GRAPH);
    if (!g)
        err = graph ? cudaErrorInvalidResourceHandle : cudaErrorInvalidValue;
    else if (g->capturing)
        err = cudaErrorIllegalState; /* destroyed by its cudaStreamEndCapture */
    else
        dead = fc_graph_free_locked(g, NULL); /* execs have their own copies */
    pthread_mutex_unlock(&fc_rt.lock);
    fc_uobjs_destroy(dead);
    return fc_ret(err);
}

FC_API cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes)
{
    cudaError_t err = cudaSuccess;
    struct fc_graph *g;
    size_t i;

    if (!numNodes)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    g = lookup_locked(graph, FC_KIND_GRAPH);
    if (!g) {
        err = graph ? cudaErrorInvalidResourceHandle : cudaErrorInvalidValue;
    } else if (!nodes) {
        *numNodes = g->n;
    } else {
        /* as CUDA: up to *numNodes handles, NULL past the last node, the count obtained */
        for (i = 0; i < *numNodes; i++)
            nodes[i] = i < g->n ? g->nodes[i] : NULL;
        if (*numNodes > g->n)
            *numNodes = g->n;
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

/* ---- executable graphs ---- */

static cudaError_t instantiate(cudaGraphExec_t *pExec, cudaGraph_t graph, unsigned long long flags)
{
    cudaError_t err = cudaSuccess;
    struct fc_graph *g;
    struct fc_exec *x;

    if (!pExec || (flags & ~(unsigned long long)FC_INSTANTIATE_FLAGS))
        return cudaErrorInvalidValue;
    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    g = lookup_locked(graph, FC_KIND_GRAPH);
    x = g && !g->capturing ? calloc(1, sizeof(*x)) : NULL;
    if (!g || g->capturing) {
        err = cudaErrorInvalidValue;
    } else if (!x || !(x->nodes = nodes_clone_locked(g->nodes, g->n))) {
        free(x);
        err = cudaErrorMemoryAllocation;
    } else if (urefs_copy_locked(&x->urefs, &g->urefs) != 0 ||
               fc_table_insert((uintptr_t)x, 1, FC_KIND_EXEC, -1) != 0) {
        fc_uobjs_destroy(urefs_clear_locked(&x->urefs, NULL)); /* none reaches zero: g holds */
        nodes_free_locked(x->nodes, g->n);
        free(x);
        err = cudaErrorMemoryAllocation;
    } else {
        x->n = g->n;
        *pExec = (cudaGraphExec_t)(void *)x;
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return err;
}

FC_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                        unsigned long long flags)
{
    return fc_ret(instantiate(pGraphExec, graph, flags));
}

FC_API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                 unsigned long long flags)
{
    return fc_ret(instantiate(pGraphExec, graph, flags));
}

static cudaError_t instantiate_with_params(cudaGraphExec_t *pExec, cudaGraph_t graph,
                                           cudaGraphInstantiateParams *p)
{
    cudaError_t err;

    if (!p)
        return fc_ret(cudaErrorInvalidValue);
    err = instantiate(pExec, graph, p->flags);
    p->errNode_out = NULL;
    p->result_out = err == cudaSuccess ? cudaGraphInstantiateSuccess : cudaGraphInstantiateError;
    return fc_ret(err);
}

FC_API cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                  cudaGraphInstantiateParams *instantiateParams)
{
    return instantiate_with_params(pGraphExec, graph, instantiateParams);
}

FC_API cudaError_t cudaGraphInstantiateWithParams_ptsz(
    cudaGraphExec_t *pGraphExec, cudaGraph_t graph, cudaGraphInstantiateParams *instantiateParams)
{
    return instantiate_with_params(pGraphExec, graph, instantiateParams);
}

/* Enqueues (or captures) a copy of template t on s. Events are resolved now, as for an
 * eager call: a record takes the event's next generation, a wait the latest one. */
static cudaError_t launch_op_locked(struct fc_stream *s, const struct fc_op *t)
{
    struct fc_op *op = op_clone_locked(t);
    struct fc_event *ev;
    int captured = s->cap != NULL;
    cudaError_t err;

    if (!op)
        return cudaErrorMemoryAllocation;
    ev = op->kind == FC_OP_RECORD || op->kind == FC_OP_WAIT_EVENT ? op->u.event.ev : NULL;
    if (op->kind == FC_OP_RECORD) {
        op->u.event.gen = ev->record_gen + 1;
    } else if (op->kind == FC_OP_WAIT_EVENT) {
        if (!captured && ev->done_gen >= ev->record_gen) {
            fc_op_release_locked(op); /* complete: nothing to wait for */
            return cudaSuccess;
        }
        op->u.event.gen = ev->record_gen;
    }
    err = fc_enqueue_locked(s, op);
    if (err == cudaSuccess && op->kind == FC_OP_RECORD && !captured)
        ev->record_gen++;
    return err;
}

static cudaError_t graph_launch(cudaGraphExec_t exec, cudaStream_t stream, int ptds)
{
    cudaError_t err = cudaSuccess;
    struct fc_stream *s;
    struct fc_exec *x;
    struct fc_op *w;
    size_t i;

    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    x = lookup_locked(exec, FC_KIND_EXEC);
    s = x ? fc_resolve_locked(stream, ptds, &err) : NULL;
    if (!x) {
        err = exec ? cudaErrorInvalidResourceHandle : cudaErrorInvalidValue;
    } else if (s && s->cap) {
        /* launched into a capture: its nodes join the capture's graph, which also holds
         * the exec's user objects from now on */
        if (urefs_copy_locked(&s->cap->graph->urefs, &x->urefs) != 0)
            err = cudaErrorMemoryAllocation;
        for (i = 0; err == cudaSuccess && i < x->n; i++)
            err = launch_op_locked(s, op_of(x->nodes[i]));
    } else if (s) {
        /* after the exec's previous launch, wherever it went: a graph never overlaps itself */
        if (x->last && x->last != s && x->last->done_seq < x->last_seq) {
            w = fc_op_new(FC_OP_WAIT_STREAM);
            if (!w) {
                err = cudaErrorMemoryAllocation;
            } else {
                w->u.stream.s = x->last;
                w->u.stream.seq = x->last_seq;
                x->last->refs++;
                err = fc_enqueue_locked(s, w);
            }
        }
        for (i = 0; err == cudaSuccess && i < x->n; i++)
            err = launch_op_locked(s, op_of(x->nodes[i]));
        if (x->last != s) {
            s->refs++;
            if (x->last)
                fc_stream_unref_locked(x->last);
            x->last = s;
        }
        x->last_seq = s->enq_seq;
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

FC_API cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return graph_launch(graphExec, stream, 0);
}

FC_API cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return graph_launch(graphExec, stream, 1);
}

static cudaError_t graph_upload(cudaGraphExec_t exec, cudaStream_t stream, int ptds)
{
    cudaError_t err = cudaSuccess;

    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    if (!lookup_locked(exec, FC_KIND_EXEC))
        err = exec ? cudaErrorInvalidResourceHandle : cudaErrorInvalidValue;
    else
        fc_resolve_locked(stream, ptds, &err); /* nothing to upload: host memory */
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

FC_API cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return graph_upload(graphExec, stream, 0);
}

FC_API cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return graph_upload(graphExec, stream, 1);
}

FC_API cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                                       cudaGraphExecUpdateResultInfo *resultInfo)
{
    cudaError_t err = cudaSuccess;
    cudaGraphNode_t *nodes;
    struct fc_graph *g;
    struct fc_exec *x;
    size_t i;

    if (!resultInfo)
        return fc_ret(cudaErrorInvalidValue);
    memset(resultInfo, 0, sizeof(*resultInfo));
    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    x = lookup_locked(hGraphExec, FC_KIND_EXEC);
    g = lookup_locked(hGraph, FC_KIND_GRAPH);
    for (i = 0; x && g && i < x->n && i < g->n; i++)
        if (op_of(x->nodes[i])->kind != op_of(g->nodes[i])->kind)
            break;
    if (!x || !g || g->capturing) {
        resultInfo->result = cudaGraphExecUpdateError;
        err = cudaErrorInvalidValue;
    } else if (x->n != g->n) {
        resultInfo->result = cudaGraphExecUpdateErrorTopologyChanged;
        err = cudaErrorGraphExecUpdateFailure;
    } else if (i < g->n) {
        resultInfo->result = cudaGraphExecUpdateErrorNodeTypeChanged;
        resultInfo->errorNode = g->nodes[i];
        resultInfo->errorFromNode = x->nodes[i];
        err = cudaErrorGraphExecUpdateFailure;
    } else if (!(nodes = nodes_clone_locked(g->nodes, g->n)) ||
               urefs_copy_locked(&x->urefs, &g->urefs) != 0) {
        /* (the exec keeps its own user objects and gains the new graph's, for its nodes) */
        if (nodes)
            nodes_free_locked(nodes, g->n);
        resultInfo->result = cudaGraphExecUpdateError;
        err = cudaErrorMemoryAllocation;
    } else {
        nodes_free_locked(x->nodes, x->n); /* launched copies already queued are their own */
        x->nodes = nodes;
        resultInfo->result = cudaGraphExecUpdateSuccess;
    }
    pthread_mutex_unlock(&fc_rt.lock);
    return fc_ret(err);
}

/* Host function queued behind an exec's last launch: its user objects go once that ran. */
struct deferred {
    struct fc_urefs urefs;
};

static void release_deferred(void *arg)
{
    struct deferred *d = arg;
    struct fc_uobj *dead;

    pthread_mutex_lock(&fc_rt.lock);
    dead = urefs_clear_locked(&d->urefs, NULL);
    pthread_mutex_unlock(&fc_rt.lock);
    fc_uobjs_destroy(dead);
    free(d);
}

/* Hands x's user objects to a host function queued behind x's last launch, when that has not
 * completed. 1 when handed over, 0 when they are to be released now. */
static int defer_release_locked(struct fc_exec *x)
{
    struct deferred *d;
    struct fc_op *op;

    if (!x->last || x->last->done_seq >= x->last_seq || x->urefs.n == 0)
        return 0;
    d = malloc(sizeof(*d));
    op = d ? fc_op_new(FC_OP_HOSTFN) : NULL;
    if (!op) {
        free(d);
        return 0; /* out of memory: released now (the work may outlive them) */
    }
    d->urefs = x->urefs;
    op->u.host.fn = release_deferred;
    op->u.host.arg = d;
    if (fc_enqueue_now_locked(x->last, op) != cudaSuccess) {
        free(d);
        return 0;
    }
    x->urefs.v = NULL;
    x->urefs.n = 0;
    return 1;
}

FC_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    cudaError_t err = cudaSuccess;
    struct fc_uobj *dead = NULL;
    struct fc_exec *x;

    fc_init();
    pthread_mutex_lock(&fc_rt.lock);
    x = lookup_locked(graphExec, FC_KIND_EXEC);
    if (!x) {
        err = graphExec ? cudaErrorInvalidResourceHandle : cudaErrorInvalidValue;
    } else {
        fc_table_remove(fc_table_find((uintptr_t)x, 1));
        nodes_free_locked(x->nodes, x->n);
        /* As CUDA, destroying an exec with launches in flight is allowed: the user objects
         * (what the queued work may use) are released once the last launch completed. */
        if (!defer_release_locked(x))
            dead = urefs_clear_locked(&x->urefs, NULL);
        if (x->last)
            fc_stream_unref_locked(x->last);
        free(x);
    }
    pthread_mutex_unlock(&fc_rt.lock);
    fc_uobjs_destroy(dead);
    return fc_ret(err);
}
