/* A wait on a member that left (docs/checker.md, RANK EXITED): a rank's blocked or queued call
 * that can only complete with a member that has already left the communicator (destroyed it,
 * exited) or died. A send/recv waits for its peer; a collective slot for every member that has
 * not completed it. Counts cannot show these: a rank that exits instead of posting its side of
 * a send/recv, or with its last collective enqueued but never run, leaves counts that agree.
 * Pure: no I/O, threads or clock; the caller confirms a sighting over later WAITs
 * (tests/checker/relay_unit_exit.c). */
#ifndef NCG_GONEWAIT_H
#define NCG_GONEWAIT_H

#include <stdint.h>
#include "wire.h"

enum { NCG_GW_HERE = 0, NCG_GW_LEFT = 1, NCG_GW_DIED = 2 };

/* What the checker knows of one member of the waiting call's communicator. */
struct ncg_gw_member {
    uint8_t left;  /* NCG_GW_HERE (or not known yet), NCG_GW_LEFT, NCG_GW_DIED */
    uint64_t done; /* collective slots it completed, as last reported (a lower bound) */
};

/* The comm rank that the wait e (by comm rank e->rank of a comm of nranks members, member(arg,
 * i, out) filling what is known of member i) waits for and that has left or died, or -1 when
 * every member it needs is still there. A collective names the lowest such member that had not
 * completed e's slot. Pure; no allocation. */
int32_t ncg_gw_target(const struct ncg_wait_ent *e, uint32_t nranks,
                      void (*member)(const void *arg, uint32_t i, struct ncg_gw_member *out),
                      const void *arg);

/* A signature of the wait e on target, equal for the same wait at a later WAIT. Pure. */
uint64_t ncg_gw_sig(uint64_t comm_id, const struct ncg_wait_ent *e, int32_t target);

/* How many WAITs in a row must carry the same wait on a departed member before the verdict:
 * the first can be a call whose completion is not yet known (sampled by CUDA events). */
#define NCG_GW_SIGHTINGS 3u

#endif
