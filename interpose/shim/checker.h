/* The boundary between the shim (interpose/shim: wrappers, comm tracking), which calls these
 * hooks, and the checker (interpose/checker: side channel, comparison, verdicts, actions),
 * which implements them: the shim's only way up, so that the layers include downwards only.
 * All hooks are called from application threads outside the per-call hot path, and must
 * return quickly without waiting on the network. */
#ifndef NCG_CHECKER_H
#define NCG_CHECKER_H

#include "ncclguard/nccl_abi.h"

struct ncg_comm;

/* In the process that called ncclGetUniqueId, after the real call succeeded: may start the
 * checker's listener and writes {tag, version, port, token} into the unused tail of *id. */
void ncg_checker_on_unique_id(ncclUniqueId *id);

/* A communicator became known (init returned ncclSuccess or ncclInProgress). */
void ncg_checker_on_comm_added(struct ncg_comm *c);

/* The application destroyed, finalized or aborted a communicator (clean goodbye for it). */
void ncg_checker_on_comm_removed(struct ncg_comm *c);

/* In a fork()ed child: forget the parent's threads and connections (no I/O, no locks). */
void ncg_checker_on_fork_child(void);

/* The shim activates (first communicator, under ncg_lock, before the segment exists): the
 * checker prepares what its verdicts will need (the report directory; one line if unusable).
 * May block on file-system calls. */
void ncg_checker_on_activate(void);

#endif
