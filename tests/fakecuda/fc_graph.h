/* fakecuda's graphs, shared by fc_graph.c (graphs, executables, user objects) and fc_capture.c
 * (stream capture). Private to tests/fakecuda. Everything here is used under fc_rt.lock. */
#ifndef FC_GRAPH_H
#define FC_GRAPH_H

#include "fc_internal.h"

/* A user object: destroy(ptr) runs once the last reference (caller's, graphs', execs') goes. */
struct fc_uobj {
    void *ptr;
    cudaHostFn_t destroy;
    unsigned refs;
    struct fc_uobj *next; /* on a list of objects to destroy */
};

/* References a graph or an exec holds on user objects. */
struct fc_urefs {
    struct {
        struct fc_uobj *obj;
        unsigned count;
    } * v;
    size_t n;
};

/* cudaGraph_t: the nodes (each a struct fc_op) in recorded order. */
struct fc_graph {
    cudaGraphNode_t *nodes;
    size_t n, cap;
    struct fc_urefs urefs;
    int capturing; /* the graph of a capture in progress (not destroyable, not instantiable) */
};

/* cudaGraphExec_t: its own copy of the nodes; the end of its last launch (a stream reference
 * and a position on it), which the next launch waits for and destroy defers to. */
struct fc_exec {
    cudaGraphNode_t *nodes;
    size_t n;
    struct fc_urefs urefs;
    struct fc_stream *last;
    uint64_t last_seq;
};

/* A capture sequence in progress on one stream. */
struct fc_capture {
    unsigned long long id; /* unique over the process's life, never 0 */
    enum cudaStreamCaptureMode mode;
    int invalidated;
    struct fc_graph *graph;
};

/* A new empty graph, registered in the handle table; NULL when out of memory. */
struct fc_graph *fc_graph_new_locked(void);
/* Unregister and free g; the user objects whose last reference it held are chained on dead
 * (destroyed by the caller after the lock). */
struct fc_uobj *fc_graph_free_locked(struct fc_graph *g, struct fc_uobj *dead);
/* Append op (the graph takes it); 0, or -1 when out of memory (op still the caller's). */
int fc_graph_push_locked(struct fc_graph *g, struct fc_op *op);

#endif
