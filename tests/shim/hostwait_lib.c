/* The rest of the shim as interpose/shim/hostwait.c sees it, for its unit test: the lifecycle
 * state, the thread-local state, the thread id, the capture count and the completion mode
 * (RETURN: streamtab.c keys the default-stream handles as they are). Linked with hostwait.c
 * and streamtab.c into libhostwait.so, which tests/shim/hostwait_test.c links before the CPU
 * CUDA runtime, as a preloaded libncclguard.so comes before it. */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

#include "completion.h"
#include "graph.h"
#include "shim.h"

__thread struct ncg_tls ncg_tls __attribute__((tls_model("initial-exec")));
int ncg_state; /* the test sets it: NCG_ST_ACTIVE, _DORMANT, _DISABLED */
int ncg_cmode = NCG_CMODE_RETURN;
int ncg_graph_captures;

uint32_t ncg_tid_slow(void)
{
    ncg_tls.tid = (uint32_t)syscall(SYS_gettid);
    return ncg_tls.tid;
}

int ncg_cuda_device_now(void)
{
    return 0;
}

/* Calls into the runtime from inside this object, as completion.c's polling from inside
 * libncclguard.so: they must pass through unrecorded. The volatile store after the call keeps
 * it from being a tail call, so that the return address is in this object. */
int hw_lib_stream_sync(void *stream);
int hw_lib_stream_query(void *stream);
int cudaStreamSynchronize(void *stream);
int cudaStreamQuery(void *stream);
static volatile int hw_lib_last;

int hw_lib_stream_sync(void *stream)
{
    hw_lib_last = cudaStreamSynchronize(stream);
    return hw_lib_last;
}

int hw_lib_stream_query(void *stream)
{
    hw_lib_last = cudaStreamQuery(stream);
    return hw_lib_last;
}
