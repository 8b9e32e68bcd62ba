/* The verdicts a process decides on its own, from what it alone still knows, when its checker
 * cannot send one: RANK DIED of the process that held its checker (or relay), CHECKER LOST of
 * a standalone checker while its communicators stall, and RANK EXITED from the counts of the
 * SHUTDOWN a checker's process left with. Each is built here and only here, from plain
 * figures. Pure: no sockets, threads or clock. */
#ifndef NCG_LOCAL_H
#define NCG_LOCAL_H

#include <stdint.h>
#include "verdict.h"
#include "wire.h"

/* This process's place in the verdict's communicator. */
struct ncg_local_self {
    uint64_t comm_id;
    uint32_t nranks;
    int32_t rank;        /* the comm rank held here (out of range: none) */
    int32_t global_rank; /* this process's */
    uint64_t count;      /* the collective calls it issued there */
};

/* The process that held the lost checker, as the link to it knew it. */
struct ncg_local_holder {
    int rootlost;             /* this node's relay said the tree's root is gone */
    int relay;                /* the link went to this node's relay of a relay tree */
    uint32_t node, root_node; /* that relay's node, the tree root's node */
    int32_t root_grank;       /* the tree root's process's global rank (-1: unknown) */
    const char *root_addr;    /* the tree root's address, as text */
    int32_t grank;            /* the holder's global rank from its WELCOME (-1: unknown) */
    uint32_t pid;             /* the holder's, from its WELCOME */
    const char *host;
    const char *why; /* how the connection was lost */
};

/* Each returns a new error verdict (ncg_verdict_free), or NULL when out of memory (or, RANK
 * EXITED, when none is due). Any thread; allocates. */
/* RANK DIED of the holder: its connection is lost (or, rootlost, the tree's root behind it). */
struct ncg_verdict *ncg_local_rank_died(const struct ncg_local_self *s,
                                        const struct ncg_local_holder *h);
/* CHECKER LOST: the standalone checker named name (tree: the tree's root this process fell
 * back to, name saying so) unreachable for unreachable_s (why), and no call issued on the
 * communicator for heartbeat_s. */
struct ncg_verdict *ncg_local_checker_lost(const struct ncg_local_self *s, int tree,
                                           const char *name, double unreachable_s, const char *why,
                                           double heartbeat_s);
/* What the checker's SHUTDOWN said of who left a communicator, when it names them (its entries'
 * ranks; a checker that names none leaves holder_rank -1 and n 0). */
/* What a departed checker's SHUTDOWN said of one communicator: a comm's first entry is the
 * leaving process's own count and comm rank (UINT64_MAX: it held no rank there), the later ones
 * the members that left before it, each with its rank and count. */
struct ncg_sd_facts {
    uint64_t final;  /* the checker's process left at this count (UINT64_MAX: no SHUTDOWN) */
    uint64_t left;   /* another member left at this count (lowest; UINT64_MAX: none) */
    int32_t rank;    /* the leaving process's comm rank here (-1 unknown) */
    uint8_t verdict; /* its process was ended by a verdict */
    uint8_t ngone;   /* the members that left before it, and their counts */
    int32_t gone_rank[8];
    uint64_t gone_count[8];
};
/* Nothing said yet. */
void ncg_sd_facts_reset(struct ncg_sd_facts *f);
/* g's entries for comm_id into f; 1 when g named comm_id. */
int ncg_sd_facts_take(struct ncg_sd_facts *f, const struct ncg_msg_goodbye *g, uint64_t comm_id);

struct ncg_local_gone {
    int32_t holder_rank;   /* the checker's process's comm rank there, -1 unknown or none */
    const int32_t *rank;   /* [n] the members that left before it, */
    const uint64_t *count; /* [n] each after this many collective calls */
    size_t n;
};

/* RANK EXITED judged here once the checker's process left: it left the communicator at
 * peer_final (UINT64_MAX: never), and told of members that left before it at peer_left (the
 * lowest; UINT64_MAX: none); peer_verdict: a verdict ended it; holder_grank: its global rank.
 * Due when this rank issued calls past the lower of the two. With gone (may be NULL) naming
 * them, the verdict names the comm ranks that left before this rank's count, with their counts,
 * as the checker would have; else the checker's process, and "the ranks that left before it". */
struct ncg_verdict *ncg_local_rank_exited(const struct ncg_local_self *s, uint64_t peer_final,
                                          uint64_t peer_left, int peer_verdict,
                                          int32_t holder_grank, const struct ncg_local_gone *gone);

/* RANK EXITED judged here once the checker's process left at peer_final (peer_verdict as
 * above) while this rank's first incomplete collective slot `done` (done < s->count), one the
 * leaver had issued too (done < peer_final), stopped completing for idle_s: the leaver never
 * ran it, so it never completes here either (counts that agree hide it). NULL when not due. */
struct ncg_verdict *ncg_local_exited_wait(const struct ncg_local_self *s, uint64_t done,
                                          double idle_s, uint64_t peer_final, int peer_verdict,
                                          int32_t holder_grank);

#endif
