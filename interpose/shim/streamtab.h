/* Stream indices: a small process-wide number (1..NCG_STREAMS-1) for each CUDA stream handle
 * that carried a recorded call, stored with the call's per-thread launch order in the record's
 * `reserved` word (NCG_REC_ORDER / NCG_REC_STREAM). The checker's DEADLOCK under asynchronous
 * NCCL needs both: calls one thread enqueued on one stream run in that order (docs/checker.md).
 * 0 means "unknown" (the table is full): such calls never order anything. */
#ifndef NCG_STREAMTAB_H
#define NCG_STREAMTAB_H

#include <stdint.h>

#include "completion.h"
#include "shim.h"

#define NCG_STREAMS 256u
#define NCG_ORDER_BITS 24u
#define NCG_ORDER_MASK ((1u << NCG_ORDER_BITS) - 1u)
/* The reserved word of a record: stream index in the top 8 bits, the issuing thread's launch
 * order (24 bits, wrapping; the calls of one group share it) below. */
#define NCG_REC_STREAM(reserved) ((uint8_t)((reserved) >> NCG_ORDER_BITS))
#define NCG_REC_ORDER(reserved) ((reserved)&NCG_ORDER_MASK)

/* The index of stream, 0 when the table is full. Any thread; lock-free (a compare-and-swap on
 * first sight of a stream); never allocates. The handles 0 (the legacy default stream), 1
 * (cudaStreamLegacy) and 2 (cudaStreamPerThread) name another stream on each device: they
 * are keyed with the thread's current device (one cudaGetDevice per call, asynchronous NCCL
 * only), and the per-thread one is told apart by the thread id the checker pairs it with. */
uint8_t ncg_stream_index_slow(void *stream);
uint8_t ncg_stream_index_special(void *stream);
static inline uint8_t ncg_stream_index(void *stream)
{
    if (__builtin_expect((uintptr_t)stream <= 2, 0) &&
        __atomic_load_n(&ncg_cmode, __ATOMIC_RELAXED) == NCG_CMODE_EVENTS)
        return ncg_stream_index_special(stream); /* only there do stream orders matter */
    if (__builtin_expect(stream == ncg_tls.last_stream && ncg_tls.last_sidx, 1))
        return ncg_tls.last_sidx;
    uint8_t i = ncg_stream_index_slow(stream);
    ncg_tls.last_stream = stream;
    ncg_tls.last_sidx = i;
    return i;
}

/* The reserved word for the calling thread's next recorded call on stream: an ungrouped call
 * takes the next launch order, a call inside a group the one its group will take at launch
 * (ncg_group_launch advances it). Hot path: TLS only. */
static inline uint32_t ncg_rec_reserved(void *stream, int grouped)
{
    uint32_t ord = grouped ? ncg_tls.order + 1 : ++ncg_tls.order;
    return (uint32_t)ncg_stream_index(stream) << NCG_ORDER_BITS | (ord & NCG_ORDER_MASK);
}

#endif
