/* Writing and reading the per-comm record rings of the segment (layout in ncclguard/shm.h).
 * Writers are any application threads (multi-producer: indices are reserved before writing);
 * readers are any process. Consistency comes from the per-record seqlock stamp only. */
#ifndef NCG_RING_H
#define NCG_RING_H

#include <ck_pr.h>
#include <stdint.h>
#include <string.h>

#include "ncclguard/shm.h"

enum ncg_ring_kind { NCG_RING_COLL = 0, NCG_RING_P2P = 1 };

#define NCG_REC_WORDS (sizeof(struct ncg_shm_record) / sizeof(uint64_t))

/* Store *r as record idx (a ring position that only this writer reserved). Any thread,
 * lock-free, no syscall. The stamp is 2*idx+1 while writing and 2*idx+2 once complete. */
static inline void ncg_ring_put(struct ncg_shm_record *slot, uint64_t idx, const struct ncg_shm_record *r)
{
    uint64_t w[NCG_REC_WORDS];
    memcpy(w, r, sizeof w);
    uint64_t *dst = (uint64_t *)slot;
    ck_pr_store_64(&slot->stamp, 2 * idx + 1);
    /* Odd stamp before any field: a reader that sees a new field re-reads a changed stamp. */
    ck_pr_fence_store();
    for (unsigned i = 1; i < NCG_REC_WORDS; i++)
        ck_pr_store_64(&dst[i], w[i]);
    /* Fields before the even stamp: a reader that sees 2*idx+2 sees the whole record. */
    ck_pr_fence_store();
    ck_pr_store_64(&slot->stamp, 2 * idx + 2);
}

/* Read record idx of ring (NCG_RING_COLL: idx is the slot number; NCG_RING_P2P: idx counts p2p
 * records, 0..p2p_seq-1) into *out. Returns 0 with a consistent copy; -EAGAIN when it is not
 * (completely) written yet or was being rewritten while read (try again later); -ENOENT when it
 * has been overwritten by a later record (fell out of the ring) or ring is not a ring.
 * Any thread of any process; lock-free, never blocks, no allocation. */
int ncg_ring_read(const struct ncg_shm_comm *c, int ring, uint64_t idx, struct ncg_shm_record *out);

#endif
