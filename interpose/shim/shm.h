/* The process's segment (layout: ncclguard/shm.h): created at the first communicator, comm slots
 * handed out at comm creation, marked EXITED and unlinked at clean exit, forgotten in a forked
 * child. All functions here are off the hot path and run under the shim's creation lock
 * unless stated otherwise. */
#ifndef NCG_SHM_PRIV_H
#define NCG_SHM_PRIV_H

#include <stdint.h>

#include "clock.h"
#include "ncclguard/shm.h"

/* The segment, or NULL while dormant. Written under the creation lock, once complete
 * (release); read by other threads through ncg_seg_get. */
extern struct ncg_shm_header *ncg_seg;

/* The segment once complete, or NULL. Any thread (the checker thread starts before it exists);
 * acquire: pairs with ncg_shm_create's release, so its header fields are seen filled. */
static inline struct ncg_shm_header *ncg_seg_get(void)
{
    return __atomic_load_n(&ncg_seg, __ATOMIC_ACQUIRE);
}

/* Create and fill the segment (shared under /dev/shm, or a private mapping when NCCLGUARD_SHM=0
 * or on failure, with one warning). Creation lock held; syscalls, no malloc. 0 or -errno. */
int ncg_shm_create(void);

/* A free comm slot (a fresh one first, else the oldest destroyed one, cleared), state FREE, or
 * NULL when all are in use (comms_dropped is bumped). Creation lock held. */
struct ncg_shm_comm *ncg_shm_comm_alloc(void);

/* Fill a slot's identity and publish it (state ACTIVE, release). Creation lock held. */
void ncg_shm_comm_publish(struct ncg_shm_comm *s, uint64_t comm_id, uint64_t parent_id,
                          uint32_t origin, int32_t rank, int32_t nranks);

/* Mark a slot DESTROYED (release). Any application thread. */
void ncg_shm_comm_retire(struct ncg_shm_comm *s);

/* The figures of a SLOW warning as the segment keeps them (ncclguard/shm.h, slow_*). */
struct ncg_shm_slow {
    uint64_t since_ns; /* CLOCK_MONOTONIC here when the episode began */
    int32_t rank, grank;
    uint32_t pid;
    uint16_t share_bp; /* 1/10000 of the step */
    uint8_t side;      /* enum ncg_slow_side */
};

/* Records the latest SLOW warning about slot s's comm (seqlock, ncclguard/shm.h). The checker
 * thread only (the one writer); no lock, no allocation. */
void ncg_shm_comm_slow_set(struct ncg_shm_comm *s, const struct ncg_shm_slow *w);

/* At clean exit in the creating process: state EXITED, unlink the name. Any thread, no lock. */
void ncg_shm_exit(void);

/* In a fork()ed child: drop (unmap) the parent's segment without touching it. No locks. */
void ncg_shm_fork_child(void);

/* ncg_now_ns(): CLOCK_MONOTONIC in ns, the segment's clock (common/clock.h). */

#endif
