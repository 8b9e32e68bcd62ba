/* One-sided signals in the checker (include/ncclguard/signal.h has the records' encoding): how
 * a signal's two sides compare and which sent signals a wait accounts for. The p2p matcher
 * (p2pmatch.c) pairs the k-th signal from S to D on a channel with the wait that needs it; the
 * gone-wait and wait-for rules then apply as to send/recv. Pure: no I/O, threads or clock. */
#ifndef NCG_JUDGE_SIGNAL_H
#define NCG_JUDGE_SIGNAL_H

#include <stdint.h>
#include "ncclguard/shm.h"
#include "ncclguard/signal.h"
#include "wire.h"

/* How many held signals a wait's match removes at most (bounded work per record). */
#define NCG_SIG_DROP_MAX 4096u

/* 1 when the matched pair (a send side and a receive side with equal seq) is a signal's: its
 * sides never differ (a wait does not name the sender's count or type). Pure. */
static inline int ncg_sig_pair(const struct ncg_p2p_rec *a, const struct ncg_p2p_rec *b)
{
    return ncg_sig_is(a->seq) && ncg_sig_is(b->seq);
}

/* The seqs of the signals a wait's record r (a receive at the last signal it needs, count =
 * how many) accounts for besides its own: [*lo, *hi). Empty for anything else. At most
 * NCG_SIG_DROP_MAX of them, the latest. Pure. */
void ncg_sig_wait_span(const struct ncg_p2p_rec *r, uint64_t *lo, uint64_t *hi);

#endif
