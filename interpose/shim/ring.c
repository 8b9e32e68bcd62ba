/* The reader side of the record rings (the writer is inline in ring.h): a seqlock read that
 * tells "not yet" from "gone". Used by the checker thread and by the CLI on a mapped segment. */
#include "ring.h"

#include <errno.h>

int ncg_ring_read(const struct ncg_shm_comm *c, int ring, uint64_t idx, struct ncg_shm_record *out)
{
    const struct ncg_shm_record *slot;
    if (ring == NCG_RING_COLL)
        slot = &c->coll[idx & (NCG_COLL_RING - 1)];
    else if (ring == NCG_RING_P2P)
        slot = &c->p2p[idx & (NCG_P2P_RING - 1)];
    else
        return -ENOENT;
    const uint64_t want = 2 * idx + 2;
    const uint64_t *src = (const uint64_t *)slot;
    uint64_t w[NCG_REC_WORDS];

    uint64_t s1 = ck_pr_load_64((uint64_t *)&slot->stamp);
    /* Stamp before fields: pairs with the writer's first store fence. */
    ck_pr_fence_load();
    for (unsigned i = 1; i < NCG_REC_WORDS; i++)
        w[i] = ck_pr_load_64((uint64_t *)&src[i]);
    /* Fields before the second stamp read: a changed stamp reveals a concurrent rewrite. */
    ck_pr_fence_load();
    uint64_t s2 = ck_pr_load_64((uint64_t *)&slot->stamp);

    if (s1 == want && s2 == want) {
        w[0] = want;
        memcpy(out, w, sizeof w);
        return 0;
    }
    if (s1 > want || s2 > want)
        return -ENOENT; /* a later lap owns this position */
    return -EAGAIN;     /* older lap, or our record is being written */
}
