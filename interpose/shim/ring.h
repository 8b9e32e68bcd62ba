/* Writing and reading the per-comm record rings of the segment (layout in ncclguard/shm.h).
 * Writers are any application threads (multi-producer: indices are reserved before writing);
 * readers are any process. Consistency comes from the per-record seqlock stamp only. */
#ifndef NCG_RING_H
#define NCG_RING_H

#include <ck_pr.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ncclguard/shm.h"

enum ncg_ring_kind { NCG_RING_COLL = 0, NCG_RING_P2P = 1 };

#define NCG_REC_WORDS (sizeof(struct ncg_shm_record) / sizeof(uint64_t))

/* Store *r as record idx (a ring position that only this writer reserved). Any thread,
 * lock-free, no syscall. The stamp is 2*idx+1 while writing and 2*idx+2 once complete. */
static inline void ncg_ring_put(struct ncg_shm_record *slot, uint64_t idx,
                                const struct ncg_shm_record *r)
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

/* The same as ncg_ring_put, from the fields in registers (the hot path: a record assembled on
 * the stack from narrow fields and re-read as words costs store-forwarding stalls). Any thread,
 * lock-free, no syscall. Field packing follows struct ncg_shm_record (little-endian). */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ncg_ring_put_fields packs little-endian words"
#endif
_Static_assert(offsetof(struct ncg_shm_record, tid) == 48 &&
                   offsetof(struct ncg_shm_record, root_or_peer) == 52 &&
                   offsetof(struct ncg_shm_record, dtype) == 57 &&
                   offsetof(struct ncg_shm_record, redop) == 58 &&
                   offsetof(struct ncg_shm_record, flags) == 59 &&
                   offsetof(struct ncg_shm_record, reserved) == 60,
               "record word packing");
static inline void ncg_ring_put_fields(struct ncg_shm_record *slot, uint64_t idx, uint64_t seq,
                                       uint64_t count, uint64_t digest, uint64_t caller_pc,
                                       uint64_t t_ns, uint32_t tid, int32_t root_or_peer,
                                       uint32_t func, uint32_t dtype, uint32_t redop,
                                       uint32_t flags, uint32_t reserved)
{
    uint64_t *dst = (uint64_t *)slot;
    uint64_t w6 = (uint64_t)tid | (uint64_t)(uint32_t)root_or_peer << 32;
    uint64_t w7 = (uint64_t)(func & 0xff) | (uint64_t)(dtype & 0xff) << 8 |
                  (uint64_t)(redop & 0xff) << 16 | (uint64_t)(flags & 0xff) << 24 |
                  (uint64_t)reserved << 32;
    ck_pr_store_64(&slot->stamp, 2 * idx + 1);
    /* Odd stamp before any field (as in ncg_ring_put). */
    ck_pr_fence_store();
    ck_pr_store_64(&dst[1], seq);
    ck_pr_store_64(&dst[2], count);
    ck_pr_store_64(&dst[3], digest);
    ck_pr_store_64(&dst[4], caller_pc);
    ck_pr_store_64(&dst[5], t_ns);
    ck_pr_store_64(&dst[6], w6);
    ck_pr_store_64(&dst[7], w7);
    /* Fields before the even stamp. */
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
