/* A relay of the checker tree (docs/checker.md, "Scaling to thousands of ranks"): the state
 * machine that serves its node's client processes (the client protocol, unchanged) and its
 * child relays, sends its subtree's figures to its parent, merges the answers of a digest
 * round per subtree, and forwards verdicts down. The relay without a parent (the root) runs
 * the comparison and issues every verdict. Pure like the coordinator: fed decoded messages,
 * connection events and the time, it emits messages through callbacks; no sockets, threads or
 * clock of its own (unit-tested in tests/checker/relay_unit.c). */
#ifndef NCG_RELAY_H
#define NCG_RELAY_H

#include <stddef.h>
#include <stdint.h>
#include "ncclguard/shm.h"
#include "verdict.h"
#include "wire.h"

/* Bounds on what peers make a relay hold (a refusal: one event line, not one per message).
 * Communicators tracked, in all and per child relay (its subtree may hold every comm of the
 * job); live (comm, rank) registrations per client connection (what one process tracks). */
#define NCG_RELAY_MAX_COMMS 16384u
#define NCG_RELAY_CONN_RANKS NCG_SHM_MAX_COMMS
/* Connections that have said no HELLO yet (more: the oldest is dropped). */
#define NCG_RELAY_MAX_UNAUTHED 64u
/* Faults queued per comm while detached from the parent (more: merged into the last). */
#define NCG_RELAY_PEND 8u

struct ncg_relay_params {
    uint64_t token; /* 0: none required */
    uint32_t interval_ms;
    double heartbeat_timeout_s;
    uint32_t node; /* this relay's node number (0: the root) */
    uint8_t root;  /* 1: no parent; compares and issues verdicts */
    uint32_t pid;  /* of the relay's process: the clients with this pid are its own ranks */
    char host[64];
    uint8_t embedded; /* WELCOME says so: the relay runs inside a rank (its death is theirs) */
    /* 1: clients get a plain VERDICT (per-rank arrays, from the gather's runs), as
     * interpose/agent/client.c expects; 0: RVERDICT (the simulator's virtual ranks read it,
     * saving 12 B x ranks each) */
    uint8_t client_verdicts;
    uint8_t has_global_rank; /* WELCOME carries global_rank (the relay's process's), else -1 */
    int32_t global_rank;
    double lag_warn_s;    /* root: LAG warning after this long without progress (0: none) */
    double lag_abort_s;   /* root: LAG becomes an error after this long (0: never) */
    double stuck_warn_s;  /* root: STUCK warning after this long without completion (0: none) */
    double stuck_abort_s; /* root: STUCK becomes an error after this long (0: never) */
    double exit_wait_s;   /* root: the exit release's bound (release.h; 0: released at once) */
    /* SLOW (relay_slow.c): all three unset (0): ncg_relay_slow_defaults (the relay reads no
     * configuration; its host passes NCCLGUARD_SLOW, _SLOW_WINDOW, _SLOW_SHARE_PCT,
     * _SLOW_HOLD_S, through ncg_relay_params_of) */
    uint8_t slow_off;     /* 1: samples ignored, no SLOW warning */
    uint32_t slow_window; /* root: slots one decision covers (0: 16) */
    double slow_share;    /* root: share of the step the others must lose (0..1) */
    double slow_hold_s;   /* root: how long the rule holds before a rank is named (0: at once) */
};

struct ncg_relay_ops {
    void (*send)(void *arg, int conn, const struct ncg_msg *m); /* to a child connection */
    void (*drop)(void *arg, int conn); /* close it later (the relay has forgotten it) */
    void (*up)(void *arg, const struct ncg_msg *m); /* to the parent (never called at the root) */
    void (*event)(void *arg, const char *line);     /* optional: one line per event */
    void *arg;
};

struct ncg_relay_stats {
    uint64_t verdicts;    /* root: verdicts issued */
    uint64_t forwarded;   /* verdicts received from the parent and passed down */
    uint64_t ignored;     /* verdicts received for a communicator that had one already */
    uint64_t rounds;      /* QUERY rounds started (root) or forwarded */
    uint64_t targeted;    /* of which asked only some ranks (narrowing: one per group) */
    uint64_t faults;      /* RANK DIED events raised or forwarded */
    uint64_t verified;    /* root: slots proven equal on every member, summed over comms */
    uint64_t comms;       /* communicators tracked now */
    uint64_t refused;     /* comms or registrations refused by a bound above, faults merged, p2p
                             records past NCG_P2PM_MAX */
    uint64_t p2p_held;    /* p2p records held now (waiting for their other side), over comms */
    uint64_t p2p_matched; /* p2p pairs whose two sides met here (agreeing or not) */
    uint64_t p2p_up;      /* p2p records sent to the parent (RP2P) */
    uint64_t dropped;     /* connections dropped: wrong token, no HELLO, past a bound, silent */
    uint64_t by_kind[NCG_V_KIND_MAX_]; /* root: verdicts issued per kind (warnings included) */
};

struct ncg_relay;

/* A relay's settings from a parsed configuration (ncg_config_parse): its period, timeouts,
 * LAG/STUCK thresholds, exit wait and SLOW; the rest (who it is, where) zero, for its host to
 * set. The one place NCCLGUARD_* becomes a relay's settings. Pure. */
struct ncg_config;
struct ncg_relay_params ncg_relay_params_of(const struct ncg_config *cfg);
/* The settings of a relay whose host sets none: ncg_relay_params_of the configuration's
 * defaults (ncg_config_defaults); ncg_relay_new takes its SLOW fields from here. Pure. */
struct ncg_relay_params ncg_relay_slow_defaults(void);

/* All functions below: one thread at a time, never block; they allocate. */
struct ncg_relay *ncg_relay_new(const struct ncg_relay_params *p, const struct ncg_relay_ops *ops);
void ncg_relay_free(struct ncg_relay *r);
void ncg_relay_connected(struct ncg_relay *r, int conn, uint64_t now_ns);
/* A message from a child connection: a client (HELLO first) or a child relay (RHELLO first). */
void ncg_relay_message(struct ncg_relay *r, int conn, const struct ncg_msg *m, uint64_t now_ns);
/* The child connection ended: without a GOODBYE, a RANK DIED of its ranks (a child relay: of
 * the ranks of its own process). */
void ncg_relay_closed(struct ncg_relay *r, int conn, uint64_t now_ns);
/* The link to a parent is up (first time, or reattached to another ancestor): the relay sends
 * RHELLO and, from the next tick on, RSTAT; faults queued while detached are sent. */
void ncg_relay_parent_up(struct ncg_relay *r, uint64_t now_ns);
/* The parent link is gone: the relay stops sending up (and queues faults) until parent_up. */
void ncg_relay_parent_down(struct ncg_relay *r);
/* A node relay leaving (its process exits): an RSTAT now, with the goodbyes read since the
 * last one. Its clients that said goodbye to it do not reattach, so the parent hears of them
 * only so; its host calls it on leaving and again once its clients' connections closed (their
 * last goodbyes read). Not at the root; only while attached. */
void ncg_relay_leaving(struct ncg_relay *r, uint64_t now_ns);
/* A message from the parent: WELCOME, QUERY, RVERDICT, PING, RASK, RELEASE, RFIGQ. */
void ncg_relay_parent_message(struct ncg_relay *r, const struct ncg_msg *m, uint64_t now_ns);
/* 1 when the parent has been silent for the heartbeat timeout (the caller reattaches). */
int ncg_relay_parent_silent(const struct ncg_relay *r, uint64_t now_ns);
/* Periodic work: heartbeats of children, RSTAT up, pings down; at the root, rounds. Call at
 * least every interval_ms. */
void ncg_relay_tick(struct ncg_relay *r, uint64_t now_ns);
void ncg_relay_get_stats(const struct ncg_relay *r, struct ncg_relay_stats *st);
/* Communicators whose exit release (release.h) still waits for DONEs (the host holds its own
 * exit meanwhile). Does not allocate. */
int ncg_relay_releases_waiting(const struct ncg_relay *r);
/* 1 once an allocation failed: the state is incomplete, the
 * root issues no more verdicts and the host is to stop the checker. Does not allocate. */
int ncg_relay_out_of_memory(const struct ncg_relay *r);
/* For the SHUTDOWN of the root's process: per communicator without an error verdict, the
 * ranks that left (GOODBYE) beneath, each with its final count, lowest counts first, at most
 * NCG_RELAY_LEFT_PER_COMM per comm and cap in all. Returns how many were filled. Does not
 * allocate. */
#define NCG_RELAY_LEFT_PER_COMM 8u
struct ncg_relay_left_ent {
    uint64_t comm_id;
    uint32_t rank;
    uint64_t count;
};
size_t ncg_relay_left(const struct ncg_relay *r, struct ncg_relay_left_ent *out, size_t cap);

/* ---- read-only view, for the status endpoint (net/status_tree.c; relay_view.c) ---- */

#define NCG_RELAY_VIEW_SLOW 16u /* slowest ranks listed per communicator */

/* A connection: a child relay or a client process (of this relay's node). */
struct ncg_relay_conn_view {
    int conn;
    uint8_t relay, authed, bye; /* a child relay / said (R)HELLO / said the process GOODBYE */
    uint32_t pid, node;         /* node: a child relay's */
    int32_t global_rank;        /* a client's (its HELLO), -1 unknown or a relay */
    const char *host;
    double heartbeat_age_s, connected_s;
};

/* A rank of a client process connected here (at a node relay: the node's own ranks). */
struct ncg_relay_rank_view {
    uint32_t rank; /* comm rank */
    int conn;      /* its process's connection here (-1: none: it left or died) */
    int32_t global_rank;
    uint32_t pid;
    const char *host;       /* "" when its process is gone */
    uint8_t state;          /* 1 active, 2 left (goodbye), 3 died here (its last figures) */
    uint64_t issued, done;  /* collective calls issued / completed, as last reported */
    double heartbeat_age_s; /* of its process (-1: gone) */
    double wait_share;      /* root, SLOW: of the step the others lose to it (-1: not known) */
    uint8_t has_wait;       /* root: its process reported it blocked in wait (latest WAIT) */
    struct ncg_wait_ent wait;
};

/* A communicator as this relay sees its subtree: exact aggregates over every rank beneath
 * (child relays' last RSTAT), and the ranks of its own clients. */
struct ncg_relay_comm_view {
    uint64_t id;
    uint32_t nranks;
    uint32_t known, active, left;       /* ranks beneath: registered, active, left */
    uint32_t dead;                      /* ranks of this relay's own clients that died */
    uint64_t issued_min, issued_max;    /* over the active ranks (0 when none) */
    uint64_t done_min, done_hi;         /* completed: the minimum, and its upper bound */
    uint32_t nslow;                     /* ranks at issued_min while issued_min < issued_max */
    uint8_t slow_more;                  /* more ranks are at the minimum than listed */
    uint32_t slow[NCG_RELAY_VIEW_SLOW]; /* comm ranks */
    uint32_t nrelays;                   /* child relays holding it */
    uint64_t verified;                  /* root: slots proven equal on every member */
    double progress_age_s, done_age_s;  /* since a count / a completed count beneath grew */
    uint8_t done, lag_warned, stuck_warned;
    const struct ncg_verdict *verdict; /* the verdict known here (root: issued), or NULL */
    /* root: the rank SLOW names now (relay_slow.c), -1 none; what is known of it (grank -1,
     * pid 0, host "": not known), the share of the step the others lose, since when */
    int32_t sg_rank, sg_grank;
    uint32_t sg_pid;
    const char *sg_host;
    double sg_share, sg_since_s;
    uint8_t sg_device;                      /* late on its GPU (else its host) */
    uint32_t nhere;                         /* ranks of client processes connected here */
    const struct ncg_relay_rank_view *here; /* [nhere], by comm rank */
};

struct ncg_relay_view_ops {
    void (*conn)(void *arg, const struct ncg_relay_conn_view *c);
    void (*comm)(void *arg, const struct ncg_relay_comm_view *c);
    void *arg;
};

/* Calls ops->conn for every connection, then ops->comm for every communicator (views valid
 * during the call only). Pure reads of r: O(connections + kids). Same thread as the other
 * calls; never blocks; allocates a scratch array (out of memory: a comm's here[] is empty). */
void ncg_relay_view(const struct ncg_relay *r, uint64_t now_ns,
                    const struct ncg_relay_view_ops *ops);
const struct ncg_relay_params *ncg_relay_get_params(const struct ncg_relay *r); /* pure */

/* The figures gather (relay_figs.c) for a status view: starts gathering the figures of ranks
 * lo..hi of comm_id from the subtree (the whole tree at the root) unless one is in flight.
 * 0, -ENOENT (no such comm here), -EINVAL (bad range), -EBUSY (a gather in flight). */
int ncg_relay_figs_request(struct ncg_relay *r, uint64_t comm_id, uint32_t lo, uint32_t hi,
                           uint64_t now_ns);
/* The latest completed gather of our own on comm_id (a request's, or a verdict's): its runs
 * (*runs, *n; valid until the next call into r), its range *lo..*hi and completion time *at_ns.
 * 0, or -ENOENT when none completed. Does not allocate. */
int ncg_relay_figs_last(const struct ncg_relay *r, uint64_t comm_id, const struct ncg_figrun **runs,
                        uint32_t *n, uint32_t *lo, uint32_t *hi, uint64_t *at_ns);

/* The tree over nodes 0..nnodes-1 (node 0: the root): each relay's subtree is a contiguous
 * range of nodes (a relay covering [lo, hi) splits [lo+1, hi) into `fanout` equal chunks; the
 * first node of each chunk is a child relay covering it), so the ranks beneath any relay are
 * one range and merged rank lists stay short. Returns the parent of node (0 for node 0).
 * Pure; the same on every rank (it knows its node, the node count and the fan-out). */
uint32_t ncg_relay_parent(uint32_t node, uint32_t nnodes, uint32_t fanout);

/* ---- pure helpers, exported for the unit tests ---- */

/* Merges group g (nranks and ranges of its members) into slot s: into the group with the same
 * status and digest, else a new group, else s->more. Ranges stay sorted and coalesced; past
 * NCG_RELAY_RANGES the group is marked truncated (its nranks stays exact). */
void ncg_rslot_merge(struct ncg_rslot *s, const struct ncg_rgroup *g);
/* Like the coordinator's slot_agrees: 1 every answer OK and equal (at least 2 ranks), 0 they
 * differ, -1 unverifiable (a slot left some ring, or fewer than 2 answers). */
int ncg_rslot_agrees(const struct ncg_rslot *s);
/* The group's ranks in compact form ("0-7,9-15"; truncated: "0-7,16-23,... (N ranks)"). */
char *ncg_rgroup_ranks(const struct ncg_rgroup *g, char *buf, size_t cap);

#endif
