/* One-sided signals (NCCL 2.30's ncclPutSignal / ncclSignal / ncclWaitSignal) on the p2p ring
 * and wire: every signal a put or signal sends is a send record, every ncclWaitSignal
 * descriptor a receive record, on a channel of its own per (signal index, context) encoded in
 * the record's pair number (seq), so that the p2p matcher, the waits on departed members and
 * the wait-for graph apply to them unchanged and a signal never pairs with a send/recv.
 * Layout of a signal seq: bit 63 set; bits 40..62 the channel; bits 0..39 the k-th signal from
 * the sender to the receiver on that channel (0-based). A wait's record carries the last signal
 * it needs (the cumulative count it waits for, minus 1) and, in count, how many it waits for.
 * Pure: header only, no allocation. */
#ifndef NCG_SIGNAL_ABI_H
#define NCG_SIGNAL_ABI_H

#include <stdint.h>

#define NCG_SIG_SEQ_BIT (1ull << 63)
#define NCG_SIG_K_BITS 40
#define NCG_SIG_K_MASK ((1ull << NCG_SIG_K_BITS) - 1)
#define NCG_SIG_CHAN_MASK ((1ull << 23) - 1)
/* Channels: sigIdx 0..4095 and ctx 0..2047 have one each (NCCL 2.30 takes 0 and 0 only);
 * larger values share the channel of their low bits. */
#define NCG_SIG_IDX_BITS 12

static inline uint64_t ncg_sig_chan(int sig_idx, int ctx)
{
    return (((uint64_t)(uint32_t)ctx << NCG_SIG_IDX_BITS) |
            ((uint64_t)(uint32_t)sig_idx & ((1u << NCG_SIG_IDX_BITS) - 1))) &
           NCG_SIG_CHAN_MASK;
}

/* The seq of the k-th signal (0-based) on channel chan. */
static inline uint64_t ncg_sig_seq(uint64_t chan, uint64_t k)
{
    return NCG_SIG_SEQ_BIT | (chan & NCG_SIG_CHAN_MASK) << NCG_SIG_K_BITS | (k & NCG_SIG_K_MASK);
}

static inline int ncg_sig_is(uint64_t seq)
{
    return (seq & NCG_SIG_SEQ_BIT) != 0;
}
static inline uint64_t ncg_sig_k(uint64_t seq)
{
    return seq & NCG_SIG_K_MASK;
}
/* The ordinal a verdict prints for a p2p record's pair number: a send/recv's own (its pair's
 * k-th, 0-based), a signal's k on its channel (never the encoded seq). */
static inline uint64_t ncg_p2p_nth(uint64_t seq)
{
    return ncg_sig_is(seq) ? ncg_sig_k(seq) : seq;
}
static inline int ncg_sig_idx_of(uint64_t seq)
{
    return (int)((seq >> NCG_SIG_K_BITS) & ((1u << NCG_SIG_IDX_BITS) - 1));
}
static inline int ncg_sig_ctx_of(uint64_t seq)
{
    return (int)(((seq >> NCG_SIG_K_BITS) & NCG_SIG_CHAN_MASK) >> NCG_SIG_IDX_BITS);
}

#endif
