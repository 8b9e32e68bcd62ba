/* CUDA graphs (issue 16): an NCCL call issued on a stream that is capturing is kept with its
 * capture instead of taking a slot; the capture's calls follow it to its graph and to every
 * executable instantiated from it; each cudaGraphLaunch of such an executable numbers and
 * records the calls on their communicators, in capture order, as if issued then (same
 * fingerprints, the capture's call sites, records marked NCG_REC_GRAPH). graph.c interposes the
 * runtime's capture and graph functions; CUDA is resolved at run time, never linked. */
#ifndef NCG_GRAPH_H
#define NCG_GRAPH_H

#include <ck_pr.h>

#include "graphtab.h"

/* Captures begun through an interposed cudaStreamBeginCapture* and not yet ended (any
 * thread). While 0 the record path never asks the runtime whether a stream is capturing. */
extern int ncg_graph_captures;

/* Record path (comm.c), only while ncg_graph_captures > 0: when stream is capturing, append c
 * to its capture and return 1 (the caller records nothing); 0 otherwise. Application thread;
 * takes the graph lock; allocates. */
int ncg_graph_capture_call(void *stream, const struct ncg_gcall *c);

static inline int ncg_graph_capturing(void)
{
    return __builtin_expect(ck_pr_load_int(&ncg_graph_captures) != 0, 0);
}

#endif
