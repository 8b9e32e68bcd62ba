/* The shim's one way up: a table of observers that the layer above (interpose/agent: the
 * checker) registers when the library loads, and the shim calls on the events it sees. The shim
 * defines no function of the agent's and calls none by name, so the layers include and link
 * downwards only, and the shim runs alone (no table: it records, nothing checks).
 * Every observer is called from application threads outside the per-call hot path, and must
 * return quickly without waiting on the network, except comm_announce (bounded). */
#ifndef NCG_OBSERVER_H
#define NCG_OBSERVER_H

#include "ncclguard/nccl_abi.h"

struct ncg_comm;

struct ncg_observer {
    /* In the process that called ncclGetUniqueId, after the real call succeeded: may start the
     * checker's listener and writes {tag, version, port, token} into the unused tail of *id. */
    void (*unique_id)(ncclUniqueId *id);
    /* A communicator became known (init returned ncclSuccess or ncclInProgress). */
    void (*comm_added)(struct ncg_comm *c);
    /* Right after comm_added, from the wrapper that created it (InitRank, InitRankConfig,
     * InitRankScalable, InitAll, Split, Shrink; not a first call that finds a pending comm
     * ready), outside every lock of the shim: may wait, at most about a second, for the
     * checker to hear of it, so that a rank that dies right after init is known to have been
     * a member. */
    void (*comm_announce)(struct ncg_comm *c);
    /* The application destroyed, finalized or aborted a communicator (clean goodbye for it). */
    void (*comm_removed)(struct ncg_comm *c);
    /* In a fork()ed child: forget the parent's threads and connections (no I/O, no locks). */
    void (*fork_child)(void);
    /* The shim activates (first communicator, under ncg_lock, before the segment exists): the
     * checker prepares what its verdicts will need (the report directory; one line if
     * unusable). May block on file-system calls. */
    void (*activate)(void);
};

/* Registers the table (a static one: it is kept, not copied), from a constructor of the layer
 * above, before any application thread runs; NULL unregisters. */
void ncg_observer_set(const struct ncg_observer *o);

/* The table, never NULL (an empty one when none is registered): ncg_observed()->comm_added. */
const struct ncg_observer *ncg_observed(void);

#endif
