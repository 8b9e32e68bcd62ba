/* A comparison round's steps, for the relay tree's root (relay_round.c): which slots to ask next
 * and what a finished round proves. A plain round asks the digest at the slowest member's last
 * slot; a difference is narrowed with K spaced digests, then, once the range is at most K slots,
 * with the records themselves. Pure: no I/O, no allocation; any thread (the caller serializes per
 * communicator). */
#ifndef NCG_ROUND_H
#define NCG_ROUND_H

#include <stdint.h>
#include "wire.h"

struct ncg_round {
    uint64_t vc;     /* slots < vc are verified equal on every member that answered */
    uint64_t lo, hi; /* the narrowing range [lo, hi] */
    uint8_t narrow;  /* the round in flight narrows a difference */
    uint8_t mode;    /* its QUERY mode (NCG_QUERY_RECORDS or 0) */
    uint32_t qn;     /* its slots */
    uint64_t qslot[NCG_WIRE_MAX_SLOTS];
};

enum { NCG_ROUND_IDLE = 0, NCG_ROUND_ASK = 1, NCG_ROUND_MISMATCH = 2 };

/* Sets up a plain round: the digest at slot t (the slowest member's count - 1). */
void ncg_round_plain(struct ncg_round *r, uint64_t t);

/* The round that asked qslot[0..qn) is complete; agrees(arg, k) says what slot k's answers
 * show: 1 all equal, 0 they differ, -1 unverifiable. Advances vc and the range. Returns
 * NCG_ROUND_ASK (ask qslot[0..qn) in mode next), NCG_ROUND_MISMATCH (*k: the first slot whose
 * records differ; qslot is left as it was asked), or NCG_ROUND_IDLE (nothing to ask now). */
int ncg_round_done(struct ncg_round *r, int (*agrees)(void *arg, uint32_t k), void *arg,
                   uint32_t *k);

#endif
