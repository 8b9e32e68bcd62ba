/* The relay tree's messages (docs/checker.md, "Scaling to thousands of ranks"): structs and
 * their codecs, kept apart from wire.c's client protocol. Included by wire.h (the structs sit
 * in struct ncg_msg's union); nothing here touches the client protocol's frames. */
#ifndef NCG_WIRE_RELAY_H
#define NCG_WIRE_RELAY_H

#include <stdint.h>
#include "figruns.h"
#include "wire_base.h"

#define NCG_RELAY_OWN 16u   /* ranks of the relay's own process per RSTAT entry */
#define NCG_RELAY_GROUPS 4u /* distinct answers per slot in RANSWER (beyond: "more") */
#define NCG_RELAY_RANGES 8u /* rank ranges per answer group (beyond: "truncated") */
#define NCG_RELAY_DEAD 64u  /* ranks per RFAULT */
#define NCG_RELAY_GONE 8u   /* ranks that left, per RSTAT entry (the lowest final counts) */
#define NCG_RELAY_STAT 32u  /* comm entries per RSTAT (more comms: several RSTATs) */
#define NCG_RELAY_LOW 8u    /* ranks at the subtree's minimum count, per RSTAT entry (LAG) */

struct ncg_msg_rhello {
    uint64_t token;
    uint32_t pid;
    uint32_t node; /* the child relay's node number */
    char host[64];
};

/* One communicator as seen from a relay's subtree. */
struct ncg_rstat_ent {
    uint64_t comm_id;
    uint32_t nranks;
    uint32_t known;    /* ranks registered beneath (active or gone) */
    uint32_t active;   /* of which still active */
    uint64_t min, max; /* collective calls issued, over the active ranks (0 when none) */
    uint8_t nown;      /* ranks held by the relay's own process: its death is theirs */
    uint32_t own[NCG_RELAY_OWN];
    /* ranks beneath that left (GOODBYE), lowest final counts first: RANK EXITED at the root */
    uint8_t ngone;
    struct ncg_rgone {
        uint32_t rank;
        uint8_t how; /* NCG_BYE_ABORT / NCG_BYE_VERDICT from its goodbye, else 0 */
        uint64_t count;
    } gone[NCG_RELAY_GONE];
    uint32_t idle_ms; /* since a count beneath it last grew (LAG) */
    uint8_t nlow;     /* ranks at min (the lagging ones when counts differ) */
    uint8_t low_more; /* more ranks at min than listed */
    uint32_t low[NCG_RELAY_LOW];
    /* completion (STUCK at the root), over the active ranks (0 when none): the first slot
     * some rank has not completed lies in [dmin, dhi] (exact when equal) */
    uint64_t dmin;     /* min completed */
    uint64_t dhi;      /* min of each rank's upper bound max(done, done_hi) */
    uint8_t sampled;   /* some rank's completion is sampled by CUDA events */
    uint32_t didle_ms; /* since a completed count (or its bound) beneath last grew */
    uint32_t ndlow;    /* ranks at dmin, exact */
    uint8_t ndlow_l;   /* of which listed in dlow[] (beyond: ndlow says how many) */
    uint32_t dlow[NCG_RELAY_LOW];
};
struct ncg_msg_rstat {
    uint32_t n;
    struct ncg_rstat_ent e[NCG_RELAY_STAT];
};

struct ncg_rrange {
    uint32_t lo, hi; /* comm ranks lo..hi inclusive */
};
/* Ranks whose answers at one slot are equal (status, and digest when OK). */
struct ncg_rgroup {
    uint8_t status; /* enum ncg_answer_status, never NCG_ANS_NONE */
    uint64_t digest;
    struct ncg_call call;     /* one member's record (records mode) */
    char site[NCG_WIRE_SITE]; /* that member's call site, or "" */
    uint32_t nranks;          /* exact */
    uint8_t nrange;
    uint8_t truncated; /* more ranks than the ranges list (nranks stays exact) */
    struct ncg_rrange r[NCG_RELAY_RANGES];
};
struct ncg_rslot {
    uint8_t ngroups;
    uint8_t more; /* further distinct answers were left out */
    struct ncg_rgroup g[NCG_RELAY_GROUPS];
};
struct ncg_msg_ranswer {
    uint64_t comm_id;
    uint32_t qid;
    uint32_t n; /* = the QUERY's slot count */
    struct ncg_rslot s[NCG_WIRE_MAX_SLOTS];
};

struct ncg_msg_rfault {
    uint64_t comm_id;
    uint32_t nranks;
    uint32_t n;
    uint32_t rank[NCG_RELAY_DEAD]; /* comm ranks that died */
    char detail[NCG_WIRE_STR];     /* "pid 123 on host, connection lost without goodbye" */
};

struct ncg_verdict;
struct ncg_msg_rverdict {
    uint32_t comm_nranks;  /* the communicator's size (v carries no per-rank arrays) */
    struct ncg_verdict *v; /* owned by the message; v->nranks is 0, its per-rank figures are
                              v->figs (v9: runs within comm_nranks, the root's gather) */
};

/* The figures gather (v9, relay_figs.c): the root asks for the figures of ranks lo..hi of a
 * comm; each relay answers once for its subtree (its clients' and its children's answers
 * merged, at most NCG_FIG_MAX_RUNS runs, coarsened past it), or at its deadline without the
 * children that did not answer (their ranks unknown). */
struct ncg_msg_rfigq {
    uint64_t comm_id;
    uint32_t nranks;
    uint32_t qid;
    uint32_t lo, hi; /* comm ranks, inclusive, hi < nranks */
};
struct ncg_msg_rfiga {
    uint64_t comm_id;
    uint32_t nranks;
    uint32_t qid;
    uint32_t n; /* at most NCG_FIG_MAX_RUNS, sorted and disjoint, within nranks */
    struct ncg_figrun r[NCG_FIG_MAX_RUNS];
};

/* The root's directory of relays (the tree's zero-config wiring, relayhost.c): a relay that
 * starts registers the port its children reach it on (the root takes the address the
 * connection came from) and asks for the relay of node `want`, its parent in the tree. */
#define NCG_RELAY_NODE_NONE UINT32_MAX
struct ncg_msg_rwhere {
    uint64_t token;
    uint32_t node; /* the sender's node */
    uint32_t want; /* the node whose relay it looks for */
    uint16_t port; /* where the sender's relay listens for child relays (0: not listening) */
};
struct ncg_msg_rhere {
    uint32_t want;
    uint32_t found; /* the nearest registered relay at or above want (the root at worst) */
    uint8_t exact;  /* found == want */
    uint16_t port;  /* 0 with found = the root: stay on this connection */
    char ip[48];    /* numeric address, "" for the root */
};

/* P2P records a relay could not match within its hold (or whose pair it found to differ: both
 * sides, for the root's verdict), each with the comm rank that reported it (the send's sender,
 * the recv's receiver); the parent matches them as the coordinator does (p2pmatch.h). */
struct ncg_rp2p_rec {
    uint32_t rank;
    struct ncg_p2p_rec rec; /* rec.peer < nranks, rec.func NCG_F_SEND or NCG_F_RECV */
};
struct ncg_msg_rp2p {
    uint64_t comm_id;
    uint32_t nranks;
    uint32_t n; /* at most NCG_WIRE_MAX_P2P */
    struct ncg_rp2p_rec r[NCG_WIRE_MAX_P2P];
};

/* One process's blocked calls (its latest WAIT), as its node relay heard them, passed up
 * unchanged to the root (DEADLOCK through the tree: relay_dl.c), with what the graph needs of
 * its memberships: for each of its comms its rank, driver thread, issued and completed
 * counts. Sent when the process's WAIT differs from the last one sent up (its calls wait an
 * interval or more; an empty one when they stop), and, for two intervals after an RASK from
 * the parent (the root saw a cycle and wants it confirmed), for every WAIT. RASK has no
 * payload. */
struct ncg_rwait_mem {
    uint64_t comm_id;
    uint32_t nranks, rank;
    uint32_t tid;
    uint64_t count, done;
};
struct ncg_msg_rwait {
    uint32_t node, conn; /* the node relay that heard it, and its connection there: with the
                            pid, the process's key at the root (hosts may share a name, and
                            containers their pids) */
    uint32_t pid;
    int32_t grank; /* its global rank (-1: unknown) */
    char host[64];
    uint64_t gen; /* its WAITs so far, as counted by its node relay */
    uint32_t nm;  /* at most NCG_WIRE_MAX_COMMS */
    struct ncg_rwait_mem m[NCG_WIRE_MAX_COMMS];
    struct ncg_msg_wait w;
};

/* SLOW through the tree (v10, relay_slow.c): per comm, sampled slots each merged over the
 * ranks beneath the sender that measured it (judge/straggler.h's min, argmin, sum, count and
 * time per slot: aggregates, never per-rank figures), sent once complete beneath it or at a
 * deadline. The argmin's global rank, pid and host come only when they differ from those of the
 * previous slot the sender sent with them on this comm (the straggler is mostly the same rank):
 * a slot without them refers to those. Durations travel in microseconds. */
#define NCG_RSLOW_SLOTS 8u  /* slots per comm entry */
#define NCG_RSLOW_COMMS 32u /* comm entries per RSLOW (more: several frames) */
struct ncg_rslow_slot {
    uint64_t slot;
    uint32_t n;     /* ranks merged, >= 1 */
    int32_t argmin; /* comm rank with the shortest duration, -1 a tie */
    uint8_t side;   /* of argmin: 0 host, 1 device */
    uint8_t has_who;
    uint64_t min_ns, sum_ns, step_ns; /* multiples of 1000 (microseconds on the wire) */
    int32_t grank;                    /* has_who: argmin's global rank (-1 unknown) */
    uint32_t pid;                     /* has_who: its pid (0 unknown) */
    char host[64];                    /* has_who: its host ("" unknown) */
};
struct ncg_rslow_ent {
    uint64_t comm_id;
    uint32_t nranks;
    uint8_t ns; /* 1..NCG_RSLOW_SLOTS, increasing slots */
    struct ncg_rslow_slot s[NCG_RSLOW_SLOTS];
};
struct ncg_msg_rslow {
    uint32_t n; /* 1..NCG_RSLOW_COMMS */
    struct ncg_rslow_ent e[NCG_RSLOW_COMMS];
};

struct ncg_msg;
struct ncg_wcodec;
/* The codec of a relay tree's message type (wire_io.h), NULL for another type; used by wire.c.
 * Pure; its decoders allocate RANSWER / RVERDICT / RWAIT / RFIGA payloads and RSLOW's, which
 * ncg_wire_relay_release frees. */
const struct ncg_wcodec *ncg_wire_relay_codec(uint8_t type);
void ncg_wire_relay_release(struct ncg_msg *m);

#endif
