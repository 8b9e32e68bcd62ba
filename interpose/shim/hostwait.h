/* Host waits: which application thread is blocked waiting for which stream right now. Under an
 * asynchronous NCCL a call only enqueues; the host thread blocks later in
 * cudaStreamSynchronize / cudaEventSynchronize / cudaDeviceSynchronize, or polls
 * cudaEventQuery / cudaStreamQuery. hostwait.c interposes those (and cudaEventRecord, to know
 * which stream and which calls an event stands for) like graph.c's functions, and keeps the
 * facts lock-free in process memory for the checker thread (docs/shim.md "Host waits"). */
#ifndef NCG_HOSTWAIT_H
#define NCG_HOSTWAIT_H

#include <stddef.h>
#include <stdint.h>

#include "streamtab.h"

#define NCG_HW_SLOTS 128u   /* host threads tracked at once (one slot each, claimed once) */
#define NCG_HW_EVENTS 1024u /* events remembered (cudaEventRecord), power of two */

/* struct ncg_hostwait.kind: what the thread waits in. NCG_HW_POLL is a flag on STREAM or
 * EVENT: the thread is not blocked but polls (its last query said cudaErrorNotReady). */
#define NCG_HW_STREAM 1u /* cudaStreamSynchronize[_ptsz] */
#define NCG_HW_EVENT 2u  /* cudaEventSynchronize */
#define NCG_HW_DEVICE 3u /* cudaDeviceSynchronize */
#define NCG_HW_POLL 0x80u
#define NCG_HW_POLL_STREAM (NCG_HW_POLL | NCG_HW_STREAM) /* cudaStreamQuery[_ptsz] NotReady */
#define NCG_HW_POLL_EVENT (NCG_HW_POLL | NCG_HW_EVENT)   /* cudaEventQuery NotReady */

#define NCG_HW_STREAM_UNKNOWN 0u /* table full, or an event never seen recorded */
#define NCG_HW_STREAM_ALL                                                                          \
    255u /* DEVICE: every stream of the process (the kind says so: 255                             \
            is also the last real index of streamtab.h) */
#define NCG_HW_ORDER_NONE (NCG_ORDER_MASK + 1u) /* no bound: every call on the stream */

struct ncg_hostwait {
    uint32_t tid;      /* the waiting host thread */
    uint8_t kind;      /* NCG_HW_STREAM, NCG_HW_EVENT, NCG_HW_DEVICE, | NCG_HW_POLL */
    uint8_t stream;    /* stream index (streamtab.h), 0 unknown, 255 every stream */
    uint8_t pad[2];    /* 0 */
    uint32_t rec_tid;  /* event waits: the thread that recorded it (0: unknown, any thread) */
    uint32_t order;    /* event waits: rec_tid's calls on stream up to this launch order
                          (ncg_tls.order & NCG_ORDER_MASK at the record); NCG_HW_ORDER_NONE:
                          every call on the stream, whoever issued it */
    uint64_t since_ns; /* when it began to wait (CLOCK_MONOTONIC; polls: the first NotReady of
                          this stream or event in a row) */
    uint64_t last_ns;  /* polls: the latest NotReady; blocking kinds: the snapshot's now_ns */
};
_Static_assert(sizeof(struct ncg_hostwait) == 32, "struct ncg_hostwait layout");

/* The CUDA runtime's own definition of name, resolved once into *slot (NULL at first): the next
 * object's (RTLD_NEXT), else a runtime loaded RTLD_LOCAL (Python); NULL when there is none.
 * *first (may be NULL) is set to 1 by the call that resolved it. Every interposed runtime
 * function (graph.c, hostwait.c) resolves so. Any thread; takes the loader's lock on first use
 * only; no allocation after. */
void *ncg_cuda_real(void **slot, const char *name, int *first);

/* Copies the host threads waiting now into out (at most cap); returns how many. Each entry is
 * consistent (a per-thread seqlock); a thread whose wait changes during the read is left out
 * this time. A polling entry stays until the thread's next interposed CUDA call: the caller
 * judges whether its last_ns is recent. Any thread, any time (the checker thread); lock-free,
 * never blocks, no allocation; one getpid. */
size_t ncg_hostwait_snapshot(struct ncg_hostwait *out, size_t cap, uint64_t now_ns);

#endif
