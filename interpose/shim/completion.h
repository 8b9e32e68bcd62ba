/* Completion tracking: which issued calls of each communicator have completed (the segment's
 * coll_done / p2p_done, and coll_held / p2p_held for calls issued in a group not launched yet).
 * Two ways to learn it, chosen once per process (ncg_completion_init):
 *  - RETURN: the NCCL is synchronous (the CPU NCCL; any NCCL whose calls finish before they
 *    return): a call's return is its completion, stored by the issuing thread right after the
 *    real call, or for grouped calls at the outermost ncclGroupEnd's return.
 *  - EVENTS: the NCCL is asynchronous (a GPU): the return only enqueued the work; completion
 *    comes from CUDA events recorded on the call's stream (at most one per stream every
 *    NCG_CEV_GAP_NS) and stream queries, polled by the checker thread (ncg_completion_poll).
 *    CUDA is resolved at run time (dlsym), never linked. */
#ifndef NCG_COMPLETION_H
#define NCG_COMPLETION_H

#include <ck_pr.h>
#include <stddef.h>
#include <stdint.h>

#include "ncclguard/shm.h"
#include "shim.h"

enum ncg_cmode {
    NCG_CMODE_RETURN = 0, /* a call's return is its completion */
    NCG_CMODE_PROBE = 1,  /* CUDA runtime found: the first calls tell whether NCCL is async */
    NCG_CMODE_EVENTS = 2, /* CUDA events / stream queries, polled by the checker thread */
};
extern int ncg_cmode; /* enum ncg_cmode; written once at activation (and by the probe) */

#define NCG_CEV_GAP_NS 2000000ull /* a new event only when the stream's last one is older */
#define NCG_CEV_RING                                                                               \
    64u /* events in flight per communicator and kind: more than one poll                          \
           interval (100 ms) of events at one per NCG_CEV_GAP_NS */
#define NCG_CEV_PROBES                                                                             \
    64 /* calls probed with cudaStreamQuery before deciding: a fast device                         \
          may finish a few calls before the query that follows them */

/* Event tracking of one communicator and kind (collective or p2p), inside struct ncg_comm.
 * Single producer (the thread driving the comm) and single consumer (the checker thread). */
struct ncg_cev {
    uint64_t *done;      /* the segment counter it advances (coll_done or p2p_done) */
    void *stream;        /* stream of the latest call (cudaStream_t) */
    uint64_t issued;     /* latest call's value (slot + 1): what a drained stream completes */
    uint64_t last_ev_ns; /* coarse clock of the latest event recorded */
    uint64_t head, tail; /* ring positions: producer advances head, consumer tail */
    void *ev[NCG_CEV_RING];
    uint64_t val[NCG_CEV_RING];
    void *spare[NCG_CEV_RING]; /* completed events, handed back to the producer */
    uint64_t spare_head, spare_tail;
    uint64_t undrained; /* poller: a stream query found work not done with at most this many
                           issued (so fewer completed); 0: none seen */
    int registered;
};

/* The CUDA runtime functions used (cudaError_t is an int-sized enum; 0 = success,
 * 600 = cudaErrorNotReady). Filled by dlsym, or by a unit test (ncg_completion_set_cuda). */
struct ncg_cuda_api {
    int (*event_create_with_flags)(void **event, unsigned int flags);
    int (*event_record)(void *event, void *stream);
    int (*event_query)(void *event);
    int (*stream_query)(void *stream);
    int (*get_device)(int *device);                          /* optional (NULL: one device) */
    int (*event_elapsed)(float *ms, void *start, void *end); /* optional (NULL: no SLOW samples
                                                                on the stream, slow.h) */
};
/* The CUDA runtime functions in use (EVENTS mode); slow.c's timed events. Any thread. */
const struct ncg_cuda_api *ncg_cuda_api_get(void);
#define NCG_CUDA_SUCCESS 0
#define NCG_CUDA_NOT_READY 600
#define NCG_CUDA_EVENT_DISABLE_TIMING 0x2u

/* Decide the mode (NCCLGUARD_COMPLETION=auto|return|events; auto: RETURN unless a CUDA runtime
 * is in the process, then PROBE; one loaded later is found by the first calls given a stream,
 * or by ncg_completion_poll). One verbose
 * line says what was decided. At activation, under
 * ncg_lock; calls dlsym. */
void ncg_completion_init(void);
/* The PCI bus id of the calling thread's current CUDA device into buf ("" when the process has
 * no CUDA runtime loaded, or it fails): cudaGetDevice + cudaDeviceGetPCIBusId resolved from the
 * process's runtime, never loading one. The thread creating a segment; may block in CUDA. */
void ncg_cuda_bus_id(char *buf, size_t len);

/* The calling thread's current CUDA device under asynchronous NCCL (EVENTS mode), for the
 * stream handles that name a different stream on each device (streamtab.h); 0 otherwise or
 * when unknown. Application thread; one cudaGetDevice. */
int ncg_cuda_device_now(void);

/* Tests: use api instead of the process's CUDA runtime, in the given mode. Any thread, before
 * the first call. */
void ncg_completion_set_cuda(const struct ncg_cuda_api *api, int mode);

/* Asynchronous path of ncg_done_after_call (EVENTS / PROBE): application thread, no lock;
 * records at most one event per NCG_CEV_GAP_NS on the stream. */
void ncg_cev_after_call(struct ncg_cev *e, uint64_t val, void *stream);

/* What a communicator's completed count is known to be, for its REPORT (checker thread):
 * *lo = done (exact unless sampled), *hi = at most this many completed: done itself where a
 * call's return is its completion or the tracker is unused; else one below the value of the
 * oldest event not reached yet, else one below what was issued when a stream query last found
 * work left, else issued. Returns 1 when sampled. */
int ncg_cev_bounds(const struct ncg_cev *e, uint64_t done, uint64_t issued, uint64_t *hi);

/* Checker thread (or a test): query events and drained streams, advance the done counters.
 * Lock-free; never blocks (cudaEventQuery / cudaStreamQuery). */
void ncg_completion_poll(void);

/* Groups (application thread, wrappers.c / comm.c): a call issued inside a group on segment
 * comm s (p2p: idx is the p2p record index, else the slot); the outermost ncclGroupEnd is
 * entered (launch: the held calls are now waited on) and has returned (done). In EVENTS mode
 * the group's completion is the event of its last call: cev is the comm's tracker. */
void ncg_group_note(struct ncg_shm_comm *s, struct ncg_cev *cev, int p2p, uint64_t idx,
                    void *stream);
void ncg_group_launch(void);
void ncg_group_done(void);

/* 1 while auto mode has not found a CUDA runtime and a call given a stream should look for one
 * (completion.c; a stream means the application loaded one after activation). */
extern int ncg_cuda_late;
/* Application thread, slow path of ncg_done_after_call: look for the runtime now. */
void ncg_cuda_find_late(void);

/* slow.c: the end of the sampled call in flight (ncg_tls.slow_c, set by ncg_slow_issue): its host
 * mark, or its event pair on the stream. Application thread. */
void ncg_slow_after_call(void *stream);

/* After the application's recorded call returned (wrappers.c): store its completion (RETURN)
 * or hand it to the event path (also the first calls with a stream while no runtime was
 * found). Hot path: two TLS loads and a store in RETURN mode. */
static inline void ncg_done_after_call(void *stream)
{
    uint64_t *at = ncg_tls.done_at;
    if (!at)
        return;
    ncg_tls.done_at = 0;
    int mode = __atomic_load_n(&ncg_cmode, __ATOMIC_RELAXED);
    if (__builtin_expect(mode == NCG_CMODE_RETURN && stream != NULL, 0) &&
        __atomic_load_n(&ncg_cuda_late, __ATOMIC_RELAXED)) {
        ncg_cuda_find_late();
        mode = __atomic_load_n(&ncg_cmode, __ATOMIC_ACQUIRE);
    }
    if (__builtin_expect(mode == NCG_CMODE_RETURN, 1))
        ck_pr_store_64(at, ncg_tls.done_val); /* x86: a plain store orders after the record */
    else
        ncg_cev_after_call(ncg_tls.done_cev, ncg_tls.done_val, stream);
    if (__builtin_expect(ncg_tls.slow_c != NULL, 0)) /* a sampled slot (slow.h) */
        ncg_slow_after_call(stream);
}

#endif
