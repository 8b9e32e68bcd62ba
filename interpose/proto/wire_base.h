/* The side-channel protocol's bounds and the client protocol's message structs, below both
 * the client protocol (wire.h) and the relay tree's (wire_relay.h), which both use them. Plain
 * declarations: the frames and codecs are wire.h's. */
#ifndef NCG_WIRE_BASE_H
#define NCG_WIRE_BASE_H

#include <stddef.h>
#include <stdint.h>

#define NCG_WIRE_MAGIC 0x4e434757u /* "NCGW" */
#define NCG_WIRE_VERSION                                                                           \
    14u /* 2: completed counts and driver threads in REPORT, WAIT; 3: bounds; 4: queued WAIT       \
          entries (stream, launch order); 5: REPORT entries as what changed (ncg_report_ref);      \
          6: QUERY's optional representatives (the relay tree's narrowing); 7: DONE and RELEASE    \
          (the exit release, release.h); 8: REPORT entries' straggler samples (NCG_RE_SLOW);       \
          9: a verdict's per-rank figures as runs (figruns.h), RVERDICT with them, RFIGQ / RFIGA   \
          (the relay tree's figures gather); 10: RSLOW (the relay tree's straggler figures per     \
          sampled slot, relay_slow.c); 11: a SLOW verdict's figures as data after its notes        \
          (struct ncg_vslow, verdict.h), not only in its words; 12: QUERY, ANSWER and RSTAT        \
          with varints and differences (the steady state's bytes per rank); 13: GOODBYE and        \
          SHUTDOWN entries name their comm rank (a process holding several ranks of one comm       \
          says which one left); 14: WAIT entries of host threads blocked waiting for their         \
          streams (queued = NCG_WAIT_HOST, with the event's recording thread); P2P names the comm  \
          rank whose records it carries (a process holding several ranks of one comm) */
#define NCG_WIRE_HDR 12u
#define NCG_WIRE_MAX_PAYLOAD (1u << 20) /* a verdict's per-rank runs: 1 MiB bounds them */

#define NCG_WIRE_MAX_COMMS 64u /* comm entries per REPORT / GOODBYE */
#define NCG_WIRE_MAX_SLOTS 32u /* slots per QUERY / ANSWER (the narrowing fan-out K) */
#define NCG_WIRE_MAX_P2P 64u   /* p2p records per P2P message */
#define NCG_WIRE_MAX_CALLS 8u  /* distinct calls per VERDICT */
#define NCG_WIRE_MAX_WAITS 64u /* blocked calls per WAIT */
#define NCG_WIRE_NOTES 4096u   /* bound of a verdict's notes, NUL included */
#define NCG_WIRE_MAX_RANKS (1u << 20)
#define NCG_WIRE_STR 256u  /* bound of every string field, NUL included */
#define NCG_WIRE_SITE 128u /* bound of a call-site string, NUL included */

enum ncg_msg_type {
    NCG_MSG_HELLO = 1,   /* client -> checker: first frame, carries the token */
    NCG_MSG_WELCOME = 2, /* checker -> client: token accepted */
    NCG_MSG_REPORT = 3,  /* client -> checker: per-comm counts; also the heartbeat */
    NCG_MSG_QUERY = 4,   /* checker -> client: send digests / records at these slots */
    NCG_MSG_ANSWER = 5,  /* client -> checker */
    NCG_MSG_P2P = 6,     /* client -> checker: recent send/recv records */
    NCG_MSG_GOODBYE = 7, /* client -> checker: comms destroyed, or the process exits cleanly */
    NCG_MSG_VERDICT = 8, /* checker -> client */
    NCG_MSG_PING = 9,    /* checker -> client: the checker is alive */
    NCG_MSG_SHUTDOWN =
        10, /* checker -> client: its process exits cleanly (u.goodbye: its final counts) */
    NCG_MSG_WAIT = 11, /* client -> checker: the calls its threads are blocked in (after REPORT) */
    /* The relay tree (relay.h, codecs in wire_relay.c): */
    NCG_MSG_RHELLO = 12,   /* child relay -> parent: first frame (answered by WELCOME) */
    NCG_MSG_RSTAT = 13,    /* child relay -> parent: per-comm subtree figures, the heartbeat */
    NCG_MSG_RANSWER = 14,  /* child relay -> parent: a QUERY's answers merged per subtree */
    NCG_MSG_RFAULT = 15,   /* child relay -> parent: ranks died beneath it */
    NCG_MSG_RVERDICT = 16, /* parent -> child relay or client: a verdict, its figures as runs */
    NCG_MSG_RWHERE = 17,   /* relay -> root: registers its port, asks where a node's relay is */
    NCG_MSG_RHERE = 18,    /* root -> relay: the nearest registered relay at or above that node */
    NCG_MSG_RP2P = 19,     /* child relay -> parent: p2p records not matched beneath it */
    NCG_MSG_RWAIT = 20,    /* child relay -> parent: one process's WAIT, passed up to the root */
    NCG_MSG_RASK = 21,     /* parent -> child relay: send the next WAITs up even if unchanged */
    /* The exit release (v7, release.h), flat and tree alike (u.exit): */
    NCG_MSG_DONE = 22,    /* client -> checker/relay, relay -> parent: printed and reported (the
                             whole subtree, from a relay) the error verdict on comm_id */
    NCG_MSG_RELEASE = 23, /* checker/relay -> client or child relay: its ranks may exit now */
    /* The relay tree's figures gather (v9, relay_figs.c): */
    NCG_MSG_RFIGQ = 24, /* parent -> child relay: send the figures of a comm's ranks lo..hi */
    NCG_MSG_RFIGA = 25, /* child relay -> parent: those beneath it, as runs (u.rfiga) */
    /* The relay tree's stragglers (v10, relay_slow.c): */
    NCG_MSG_RSLOW = 26, /* child relay -> parent: per comm, sampled slots merged (u.rslow) */
    NCG_MSG_TYPE_MAX_
};

struct ncg_msg_hello {
    uint64_t token;
    uint32_t pid;
    int32_t global_rank;
    char host[64];
};

struct ncg_msg_welcome {
    uint32_t pid;
    int32_t global_rank; /* of the checker's process, -1 when standalone */
    uint8_t embedded;    /* 1: the checker runs inside a rank (its death is a rank's death) */
    char host[64];
};

/* v8: one straggler sample of a REPORT entry (docs/checker.md "Stragglers"): at a sampled slot,
 * the rank's own time from issue to completion and its time per slot since its previous sample
 * (its own clock: durations only, never a time of day). */
#define NCG_WIRE_MAX_SLOW 4u /* samples per entry and REPORT */
struct ncg_report_slow {
    uint64_t slot;    /* < the entry's count */
    uint32_t dur_us;  /* issue to completion */
    uint32_t step_us; /* time per slot since the previous sample, 0 unknown */
    uint8_t device;   /* 1: its stream was busy at issue (the device is late), 0: the host */
};

struct ncg_report_entry {
    uint64_t comm_id;
    uint32_t nranks;
    uint32_t rank;
    uint64_t count; /* collective slots issued */
    int32_t global_rank;
    uint64_t done; /* collective slots completed (v2); a lower bound when sampled */
    uint32_t tid;  /* the thread driving the comm here: issuer of its latest call, or its creator */
    uint64_t done_hi; /* v3: at most this many completed (= done when exact) */
    uint8_t flags;    /* v3: NCG_REP_* */
};
#define NCG_REP_SAMPLED 1u /* completion sampled by CUDA events: done..done_hi bound it */

struct ncg_msg_report {
    uint32_t n;
    struct ncg_report_entry e[NCG_WIRE_MAX_COMMS];
    /* v8: entry i's samples since the previous REPORT (increasing slots), beside the entries so
     * that the delta reference (ncg_report_ref) never holds them */
    uint8_t nslow[NCG_WIRE_MAX_COMMS];
    struct ncg_report_slow slow[NCG_WIRE_MAX_COMMS][NCG_WIRE_MAX_SLOW];
};

/* v5: a REPORT entry carries only the fields that differ from the entry at the same position
 * of the previous REPORT on the same connection (counts as the increase, completed counts as
 * their distance to the count), so a steady REPORT is 2 bytes per communicator. Each end of a
 * connection keeps that previous REPORT here (its first NCG_WIRE_REF_COMMS entries; later ones
 * always go whole); a new connection starts from a zeroed one. Without one (NULL), entries are
 * encoded whole and a compact entry does not decode. */
#define NCG_WIRE_REF_COMMS 8u
struct ncg_report_ref {
    uint32_t n; /* entries held: positions 0..n-1 of the previous REPORT */
    struct ncg_report_entry e[NCG_WIRE_REF_COMMS];
};
/* Entry field mask (v5): which fields follow; absent ones equal the reference entry's. */
#define NCG_RE_ID 0x01u    /* comm_id, nranks, rank, global_rank: a new entry (reference: 0) */
#define NCG_RE_COUNT 0x02u /* count's increase */
#define NCG_RE_DONE 0x04u  /* count - done */
#define NCG_RE_HI 0x08u    /* count - done_hi */
#define NCG_RE_TID 0x10u
#define NCG_RE_FLAGS 0x20u
#define NCG_RE_SLOW                                                                                \
    0x40u /* v8: a count of samples, then each: count - slot, dur_us * 2 + device,                 \
             step_us (never taken from the reference) */

#define NCG_QUERY_RECORDS 1u /* want full records and call sites, not only digests */
#define NCG_QUERY_REPS 4u    /* representatives a narrowing QUERY may be limited to */
struct ncg_msg_query {
    uint64_t comm_id;
    uint32_t qid;
    uint8_t mode;
    uint32_t n;
    uint64_t slot[NCG_WIRE_MAX_SLOTS];
    /* the relay tree's narrowing rounds: only these comm ranks are to answer, one per group of
     * ranks whose digests agreed at a later slot (0: every rank; encoded only when set) */
    uint8_t nrep;
    uint32_t rep[NCG_QUERY_REPS];
};

/* One call's comparable fields (the fingerprint) plus where it came from. */
struct ncg_call {
    uint64_t seq; /* slot, or pair sequence for p2p */
    uint64_t count;
    int32_t root; /* root or peer, -1 when none */
    uint8_t func, dtype, redop;
};

enum ncg_answer_status {
    NCG_ANS_OK = 0,
    NCG_ANS_GONE = 1 /* overwritten in the ring */,
    NCG_ANS_NONE = 2
};
struct ncg_answer {
    uint8_t status;
    uint64_t digest;
    struct ncg_call call;
    char site[NCG_WIRE_SITE];
};

struct ncg_msg_answer {
    uint64_t comm_id;
    uint32_t qid;
    uint32_t rank; /* the answering comm rank (a process may hold several) */
    uint32_t n;
    struct ncg_answer a[NCG_WIRE_MAX_SLOTS];
};

/* One call a thread of the reporting process is blocked in: launched, not completed, for at
 * least one report interval (the oldest such call per comm and kind). Under asynchronous NCCL
 * (v4, queued = 1) instead one of the first launched calls not known complete on a comm whose
 * completion has not moved for an interval, with the stream it was enqueued on and the issuing
 * thread's launch order (docs/checker.md, DEADLOCK). */
#define NCG_WIRE_ORDER_MAX 0xffffffu /* launch orders are 24-bit, wrapping */
/* v14: queued = NCG_WAIT_HOST: no call but a host thread (tid) blocked waiting for stream
 * `stream` (NCG_WAIT_ALL_STREAMS: every stream of the process) to finish its calls, in a
 * synchronization or a polling loop (site: in what); rec_tid != 0 (an event's wait): only the
 * calls that thread enqueued on that stream up to launch order `order`. comm_id, rank, p2p and
 * call are zero. */
#define NCG_WAIT_QUEUED 1u
#define NCG_WAIT_HOST 2u
#define NCG_WAIT_ALL_STREAMS 255u
struct ncg_wait_ent {
    uint64_t comm_id;
    uint32_t rank;  /* comm rank */
    uint32_t tid;   /* the blocked thread (queued: the thread that enqueued it) */
    uint8_t p2p;    /* 0: collective at slot call.seq; 1: p2p, call.seq-th to/from call.root */
    uint8_t queued; /* v4: 1 = enqueued on a stream, not known complete (not a blocked thread);
                       v14: NCG_WAIT_HOST */
    uint8_t stream; /* v4, queued: the process's stream index, 0 = unknown */
    uint32_t order; /* v4, queued: the thread's launch order (equal: one group) */
    struct ncg_call call;
    char site[NCG_WIRE_SITE];
    uint32_t rec_tid; /* v14, NCG_WAIT_HOST: an event's recording thread, 0 = every call */
};
struct ncg_msg_wait {
    uint32_t n;
    struct ncg_wait_ent w[NCG_WIRE_MAX_WAITS];
};

struct ncg_p2p_rec {
    uint64_t seq; /* k: the k-th send to / recv from peer on this comm */
    uint64_t count;
    int32_t peer;
    uint8_t func; /* NCG_F_SEND / NCG_F_RECV */
    uint8_t dtype;
};

struct ncg_msg_p2p {
    uint64_t comm_id;
    uint32_t n;
    uint32_t rank; /* v14: the comm rank whose records these are (NCG_BYE_ANYRANK: the process's) */
    struct ncg_p2p_rec r[NCG_WIRE_MAX_P2P];
};

#define NCG_BYE_PROCESS 1u /* the whole process exits: every comm of this connection is gone */
/* SHUTDOWN only: the checker stopped because its process ran out of memory; the counts are not
 * final (its ranks live on): clients run on unguarded, with no verdict. */
#define NCG_BYE_FAILED 2u
/* GOODBYE and SHUTDOWN: the process ends by ncclguard's abort action (an error verdict). */
#define NCG_BYE_VERDICT 4u
/* GOODBYE: the comms listed were ended by ncclCommAbort (not destroyed). */
#define NCG_BYE_ABORT 8u
/* SHUTDOWN from a node relay (relay tree): the relay's process exits cleanly but the checking
 * goes on: clients and child relays reattach (a new node relay, or the parent's). */
#define NCG_BYE_RELAY 16u
/* SHUTDOWN from a relay: the tree's root was lost (its process died or is unreachable), so no
 * verdict can come any more: a RANK DIED of the root's process, as the flat checker's loss. */
#define NCG_BYE_ROOT 32u
#define NCG_BYE_ANYRANK UINT32_MAX /* an entry for whichever rank(s) the process holds there */
struct ncg_msg_goodbye {
    uint8_t flags;
    uint32_t n;
    uint64_t comm_id[NCG_WIRE_MAX_COMMS];
    uint64_t count[NCG_WIRE_MAX_COMMS];
    /* v13: the comm rank that left (NCG_BYE_ANYRANK: the process's, all of them) */
    uint32_t rank[NCG_WIRE_MAX_COMMS];
};

#endif
