/* Per-communicator state kept by the shim (process-private), one per ncclComm_t the process
 * created. The fields below are the contract the checker reads; the shim may add more.
 * Lifetime: a struct ncg_comm is never freed (handles the checker holds stay valid); after
 * the comm_removed observer (observer.h) its shm slot may be recycled for a later comm. */
#ifndef NCG_COMM_H
#define NCG_COMM_H

#include <stdint.h>
#include "ncclguard/nccl_abi.h"
#include "ncclguard/shm.h"
#include "completion.h"
#include "slow.h"

/* Signals sent to and expected from one peer on one channel (include/ncclguard/signal.h). */
struct ncg_sigent {
    uint64_t chan;   /* ncg_sig_chan(sigIdx, ctx) */
    int32_t peer;    /* -1: free */
    uint64_t sent;   /* signals put/signalled to peer */
    uint64_t expect; /* signals the waits so far expect from peer (cumulative, as NCCL counts) */
};

struct ncg_comm {
    ncclComm_t handle;  /* the real communicator */
    uint64_t id;        /* identity, equal on every member */
    uint64_t parent_id; /* 0 for root comms */
    int32_t rank, nranks;
    uint32_t origin;          /* enum ncg_comm_origin */
    ncclUniqueId root_uid;    /* the id of the root comm this one descends from (for split and
                                 shrink children: the ancestor's), with ncclguard's tail */
    struct ncg_shm_comm *shm; /* its slot in the segment, or NULL when not recorded */
    volatile int failed;      /* set by the checker (soft action): calls on it return an error */

    /* Shim-private below (comm.c); the checker should not need them. */
    uint64_t seq_digest[2] __attribute__((aligned(16))); /* {next slot, digest of slots before it},
                                                             advanced together by one 16-byte CAS */
    uint64_t slow_next;     /* the next sampled slot (slow.h), NCG_SLOW_OFF: none */
    uint64_t *p2p_send;     /* nranks counters: sends issued to each peer */
    uint64_t *p2p_recv;     /* nranks counters: receives posted from each peer */
    uint64_t split_count;   /* ncclCommSplit calls on this comm (NOCOLOR included) */
    uint64_t shrink_count;  /* ncclCommShrink calls on this comm */
    uint64_t grow_count;    /* ncclCommGrow calls on this comm (2.30) */
    struct ncg_sigent *sig; /* signal counters per (peer, channel), NULL until the first signal */
    uint32_t sig_cap;       /* entries of sig (a power of two) */
    uint64_t created_ns;
    int pending;           /* rank/nranks not known yet (nonblocking split/shrink child):
                              not recorded, not in the segment, checker not told, until ready */
    int removed;           /* finalized/destroyed/aborted: the checker was told once */
    struct ncg_cev cev[2]; /* completion by CUDA events: [0] collectives, [1] p2p */
    int aborted;           /* by ncclCommAbort: named as such to the peers (RANK EXITED) */
    struct ncg_slow slow;  /* straggler samples (slow.h) */
};

/* The tracked comm of handle h, or NULL. Any thread; lock-free. */
struct ncg_comm *ncg_comm_find(ncclComm_t h);
/* Track a new comm (rank < 0: learnt once ready) and tell the checker; NULL when untracked.
 * Application thread; takes ncg_lock, allocates. */
struct ncg_comm *ncg_comm_track(ncclComm_t h, uint64_t id, uint64_t parent_id, uint32_t origin,
                                int32_t rank, int32_t nranks, const ncclUniqueId *root_uid);
/* The comm of an application call when it is to be recorded (known, ready), else NULL with *rc
 * -1 when a verdict failed it. Application thread; lock-free once ready. */
struct ncg_comm *ncg_comm_usable(ncclComm_t comm, int *rc);
/* Write the k-th p2p record (func NCG_F_SEND / NCG_F_RECV) of c to its ring and arm the
 * call's completion. Hot path: lock-free, no allocation. */
void ncg_p2p_put(struct ncg_comm *c, void *pc, uint64_t k, uint32_t func, size_t count, int dtype,
                 int peer, void *stream);

#endif
