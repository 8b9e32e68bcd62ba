/* Point-to-point matching (docs/checker.md, P2P MISMATCH): the k-th send from rank S to rank D
 * must agree with the k-th recv at D from S on count and dtype (one-sided signals: the k-th
 * signal from S to D on a channel with the wait that needs it, judge/sigmatch.h; a wait's match
 * also drops the earlier signals it counted). A table holds records by
 * (S, D, k) until the other side arrives or they are taken out by age. One table per
 * communicator, in every relay of the tree (relay.c), which forwards what it could not match to its
 * parent. Pure: no I/O, threads or clock. */
#ifndef NCG_P2PMATCH_H
#define NCG_P2PMATCH_H

#include <stdint.h>
#include "ncclguard/shm.h"
#include "wire.h"

#define NCG_P2PM_MAX 65536u                     /* records held per table */
#define NCG_P2PM_AGE_NS (60ull * 1000000000ull) /* unmatched records are dropped after this */

/* One side of a pair: the record as its rank reported it, with the pair's ranks. The rank
 * that reported it is src for a send, dst for a recv (ncg_p2pm_origin). */
struct ncg_p2pm_rec {
    int32_t src, dst;
    uint64_t t_ns; /* when it was added to the table */
    struct ncg_p2p_rec rec;
};

struct ncg_p2pm_node;
struct ncg_p2pm { /* zero-initialized: empty (the buckets come with the first record) */
    struct ncg_p2pm_node **bucket;
    uint32_t n; /* records held */
};

enum ncg_p2pm_result {
    NCG_P2PM_HELD = 0,   /* no other side yet: held */
    NCG_P2PM_EQUAL = 1,  /* matched, count and dtype agree: both sides gone */
    NCG_P2PM_DIFFER = 2, /* matched, they differ (P2P MISMATCH): both sides gone, in pair[] */
    NCG_P2PM_DUP = 3,    /* the same side of a held record again: dropped */
    NCG_P2PM_FULL = 4,   /* NCG_P2PM_MAX held: not held (*out is the record) */
    NCG_P2PM_BAD = 5,    /* peer outside [0, nranks), or neither send nor recv: dropped */
    NCG_P2PM_NOMEM = 6   /* an allocation failed: not held (*out is the record) */
};

/* The record r that comm rank `me` (of nranks) reported, added at now_ns. EQUAL / DIFFER fill
 * pair[0] (the send) and pair[1] (the recv); FULL / NOMEM fill pair[0] with r as a table
 * record. One thread at a time per table; allocates. */
int ncg_p2pm_add(struct ncg_p2pm *t, int32_t me, uint32_t nranks, const struct ncg_p2p_rec *r,
                 uint64_t now_ns, struct ncg_p2pm_rec pair[2]);

/* Removes every record added more than age_ns before now_ns (now_ns = UINT64_MAX with age_ns
 * 0: all), passing each to cb first when cb is not NULL. Does not allocate. */
void ncg_p2pm_take(struct ncg_p2pm *t, uint64_t now_ns, uint64_t age_ns,
                   void (*cb)(void *arg, const struct ncg_p2pm_rec *e), void *arg);

/* 1 when the table holds the k-th send (func NCG_F_SEND) or recv from src to dst unmatched: its
 * other side was not reported (yet). Pure; does not allocate. */
int ncg_p2pm_held(const struct ncg_p2pm *t, int32_t src, int32_t dst, uint64_t k, uint8_t func);

/* Frees every record and the buckets; the table is empty again. Does not allocate. */
void ncg_p2pm_clear(struct ncg_p2pm *t);

/* The rank that reported e. Pure. */
static inline int32_t ncg_p2pm_origin(const struct ncg_p2pm_rec *e)
{
    return e->rec.func == NCG_F_SEND ? e->src : e->dst;
}

struct ncg_verdict;
/* Fills v's calls, slot, subject ("lo,hi") and detail ("send #k from rank S to rank D") for a
 * mismatching pair (pair[0] the send, as ncg_p2pm_add gives it). Pure. */
void ncg_p2pm_verdict(struct ncg_verdict *v, const struct ncg_p2pm_rec pair[2]);

#endif
