/* The DEADLOCK verdict's pure part, for the relay tree's root (relay_dl.c): from the WAIT entries
 * of the processes that have blocked calls and what is known of each communicator's members, one
 * cycle of waitfor.h's graphs (the threads' under synchronous NCCL, the streams' under asynchronous
 * NCCL), its signature, its second sighting, and the diagnostic's text. No sockets, threads or
 * clocks (tests/checker/relay_unit_deadlock.c). */
#ifndef NCG_DEADLOCK_H
#define NCG_DEADLOCK_H

#include <stddef.h>
#include <stdint.h>
#include "p2pmatch.h"
#include "wire.h"

#define NCG_DL_MAX (NCG_WIRE_MAX_CALLS * 8) /* steps of a cycle followed */

/* A process with blocked calls: its latest WAIT's entries. */
struct ncg_dl_proc {
    uint32_t pid;
    const char *host;
    const struct ncg_wait_ent *w;
    uint32_t nw;
};

/* What is known of one member of a communicator. */
struct ncg_dl_member {
    uint8_t known; /* active and reported (0: no edge is drawn to it, none of its waits count) */
    uint32_t proc; /* index of its process among the ncg_dl_proc given (any value if it has none) */
    uint32_t tid;  /* the thread driving the comm there */
    int32_t grank;
    uint64_t count, done; /* collective calls issued and completed on the comm */
};

struct ncg_dl_comm {
    uint64_t id;
    uint32_t nranks;
    const struct ncg_dl_member *m; /* [nranks] */
    uint64_t done_floor;           /* every member completed at least this many (0: unknown) */
    /* the send/recv records held unmatched for this comm (p2pmatch.h), NULL: not all known here
     * (a root with child relays beneath), and then no send/recv waits for a host thread
     * (ncg_sd_comm) */
    const struct ncg_p2pm *p2p;
};

struct ncg_dl_step {
    uint32_t proc; /* the blocked (or queuing) process */
    size_t comm;   /* index of the comm of its call */
    uint32_t rank; /* its comm rank there */
    int64_t slot;  /* the collective slot, -1 for p2p */
};

struct ncg_dl_cycle {
    long n;       /* steps, in wait-for order (each waits for the next, the last for the first) */
    uint64_t sig; /* equal for the same cycle at another tick */
    struct ncg_dl_step step[NCG_DL_MAX];
};

/* Finds one cycle among the processes' WAIT entries: streams 0, the entries of blocked threads
 * (waitfor.h's ncg_wf_find_cycle); 1, the queued entries (ncg_sd_find_cycle). An entry counts
 * when its comm is one of c[] and its rank there is a known member of that process, and (a
 * collective) no member is known to have completed its slot. notes (NCG_WIRE_NOTES bytes, may be
 * NULL) gets the diagnostic: the cycle, one line per step. Returns 1 found, 0 none, -1 out of
 * memory. Allocates temporary arrays. */
int ncg_dl_find(const struct ncg_dl_proc *p, size_t np, const struct ncg_dl_comm *c, size_t nc,
                int streams, struct ncg_dl_cycle *out, char *notes);

/* The tables of one check (the tree root's): np processes (p, and gen their
 * WAIT counts, indexed alike), room for nc comms (dc, whose members mm[i] the caller allocates:
 * freed with the tables), the cycle found (f) and its notes (NCG_WIRE_NOTES bytes). */
struct ncg_dl_tables {
    struct ncg_dl_proc *p;
    uint64_t *gen;
    struct ncg_dl_comm *dc;
    struct ncg_dl_member **mm;
    size_t nc;
    struct ncg_dl_cycle *f;
    char *notes;
};
/* Allocates t's tables, zeroed: 0, or -ENOMEM (nothing left allocated). */
int ncg_dl_tables_new(struct ncg_dl_tables *t, size_t np, size_t nc);
void ncg_dl_tables_free(struct ncg_dl_tables *t);

/* A cycle's second sighting: the same signature at a later check, with every process of the
 * cycle having sent a newer WAIT since the first (gen[proc]: its WAITs so far, indexed like the
 * ncg_dl_proc array), so that all were in those calls at the same moment. Else the sighting is
 * remembered as the first. d starts zeroed. */
struct ncg_dl_seen {
    uint64_t sig;
    uint32_t n;
    uint32_t proc[NCG_DL_MAX];
    uint64_t gen[NCG_DL_MAX];
};
int ncg_dl_confirmed(struct ncg_dl_seen *d, const struct ncg_dl_cycle *f, const uint64_t *gen);

/* The verdict of comm ci in cycle f (one per comm of the cycle): its ranks of the cycle into
 * subject, "global ranks G wait on each other across comms C" into detail; returns the slot
 * of its first step (-1: p2p), or -2 when ci has no step. */
int64_t ncg_dl_verdict(const struct ncg_dl_cycle *f, const struct ncg_dl_comm *c, size_t ci,
                       char *subject, size_t scap, char *detail, size_t dcap);

#endif
