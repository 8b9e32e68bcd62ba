/* The relay's private state (relay.h is its contract): the tables the files of relay/ share
 * (children per communicator, connections), and the internal functions one of them defines for
 * the others. Not for other layers. Same threading as relay.h: one thread at a time, never
 * blocking. */
#ifndef NCG_RELAY_INT_H
#define NCG_RELAY_INT_H

#include <stddef.h>
#include <stdint.h>
#include "conntab.h"
#include "deadlock.h"
#include "ncclguard/shm.h"
#include "p2pmatch.h"
#include "relay.h"
#include "release.h"
#include "round.h"
#include "straggler.h"
#include "verdict.h"
#include "verdicts.h"

enum { K_ACTIVE = 1, K_GONE = 2 };

struct rkid {
    int conn;
    uint8_t relay;   /* 1: a child relay; 0: one rank of a client process */
    uint8_t state;   /* K_ACTIVE, K_GONE (said goodbye) */
    uint8_t waiting; /* an answer to the round in flight is outstanding */
    uint32_t rank;   /* client: its comm rank */
    uint64_t min, max;
    uint32_t known, active;
    uint8_t nown;
    uint32_t own[NCG_RELAY_OWN];
    uint8_t how;   /* client, K_GONE: NCG_BYE_ABORT / NCG_BYE_VERDICT of its goodbye */
    uint8_t ngone; /* child relay: ranks that left beneath it (its last RSTAT) */
    struct ncg_rgone gone[NCG_RELAY_GONE];
    uint8_t nlow, low_more; /* child relay: ranks at its minimum */
    uint32_t low[NCG_RELAY_LOW];
    /* completion (STUCK): a client's done and max(done, done_hi); a child relay's minima */
    uint64_t dmin, dhi;
    uint8_t sampled; /* completion sampled by CUDA events (a child relay: somewhere) */
    uint32_t ndlow;  /* child relay: ranks at its dmin, exact */
    uint8_t ndlow_l; /* of which listed */
    uint32_t dlow[NCG_RELAY_LOW];
    uint32_t tid; /* client: the thread driving the comm (its latest REPORT; DEADLOCK) */
    /* child relay: the ranks beneath it that answered its last round asking every rank (a
     * narrowing QUERY for some ranks goes only to the subtrees holding them); unknown (0) until
     * then, or when that answer's groups were truncated */
    uint8_t span_known, nspan;
    struct ncg_rrange span[NCG_RELAY_RANGES];
    int32_t grank; /* client: its global rank (REPORT), -1 unknown */
    uint8_t fwait; /* child relay: its answer to the figures gather in flight is outstanding */
    /* SLOW (relay_slow.c): 1 + the latest sampled slot it sent (0 none); a child relay's who
     * of the argmin of its latest slot that carried one (sw_rank: that argmin, -1 none) */
    uint64_t slow_last;
    int32_t sw_rank;
    struct ncg_sg_who sw;
};

/* SLOW on a comm (relay_slow.c): the sampled slots gathering beneath this relay; below the
 * root, the complete ones waiting for the next RSLOW; at the root, the window deciding. */
#define NCG_RL_SLOW_SEEN 4u
struct rslow {
    struct ncg_sg_pend pend;
    uint32_t nout;
    struct ncg_sg_slot out[NCG_RSLOW_SLOTS];
    struct ncg_sg_who outw[NCG_RSLOW_SLOTS];
    int32_t sent_rank; /* the argmin whose who was last sent up with a slot, -1 none */
    struct ncg_sg_who sent;
    struct ncg_sg *sg; /* root: the window (straggler.h), NULL below */
    struct {
        int32_t rank;
        struct ncg_sg_who who;
    } seen[NCG_RL_SLOW_SEEN]; /* root: the latest argmins fed with what is known of them */
    uint32_t seen_next;
    struct ncg_sg_who named; /* root: the named rank's, while one is */
};

/* The figures gather in flight on a comm (relay_figs.c): the parent's RFIGQ being answered, or
 * (root, or ncg_relay_figs_request) our own. */
struct rfigq {
    uint8_t active;
    uint8_t up; /* the answer goes to the parent (else: kept as the comm's last gather) */
    uint32_t qid, lo, hi;
    uint64_t deadline_ns;
    struct ncg_figset acc; /* merged so far */
};

/* Root: a group of the round that found a difference, stood for by one of its ranks in the
 * narrowing rounds after it (its members' digests agreed at the later slot, so they agree at
 * every earlier one: the representative's answer is theirs). */
struct rrep {
    uint32_t nranks;
    uint8_t nrange;
    struct ncg_rrange r[NCG_RELAY_RANGES];
};

struct rcomm {
    uint64_t id;
    uint32_t nranks;
    struct rkid *k;
    uint32_t nk, capk;
    uint8_t done;             /* a verdict is known: no more checking */
    struct ncg_verdict *last; /* that verdict (nranks 0), for members that attach later */
    /* the round in flight: the root's own, or the parent's QUERY being answered */
    uint8_t q_active;
    uint32_t qid, nwait;
    uint8_t nrep; /* the round asks only these ranks (0: every rank) */
    uint32_t rep[NCG_QUERY_REPS];
    struct rrep repg[NCG_QUERY_REPS]; /* root: the group each one stands for */
    struct ncg_round rd;              /* its slots; at the root also what is verified (round.h) */
    struct ncg_msg_ranswer *acc;      /* answers merged so far */
    uint64_t round_ns;           /* root: when its last plain round started (root_round_start) */
    struct ncg_msg_rfault *pend; /* faults raised while detached from the parent */
    uint32_t npend;
    uint8_t pend_full;     /* past NCG_RELAY_PEND in this detachment: said once */
    uint64_t progress_ns;  /* a count beneath this relay last grew (LAG) */
    uint8_t lag_warned;    /* root: a LAG warning is outstanding */
    uint64_t dprogress_ns; /* a completed count (or its bound) beneath last grew (STUCK) */
    uint64_t stuck_warned; /* root: 1 + the slot a STUCK warning was issued for, 0 none */
    uint64_t behind_ns;    /* root: root_behind_lag last held then (a sampled STUCK waits) */
    uint64_t seen_ns;      /* root: its first round was due then (rounds wait for every rank) */
    uint8_t sent_dead;     /* the latest RSTAT up carried it with no active rank (its last word:
                              only then may a non-root relay forget it) */
    uint64_t unlive_ns;    /* root: no active rank beneath since then, some left (0: not so) */
    struct ncg_p2pm p2p;   /* p2p records that met no other side here yet */
    uint8_t p2p_full;      /* past NCG_P2PM_MAX: said once */
    uint8_t nbad;          /* below the root: 2 when bad[] holds a differing pair for the root */
    struct ncg_rp2p_rec bad[2];
    struct ncg_release rel;    /* its error verdict's exit release: the root's deadline; below it,
                                  DONE up once the subtree is done, RELEASE down from the parent */
    struct rfigq fq;           /* the figures gather in flight */
    struct ncg_verdict *pendv; /* root: the verdict issued once that gather completes */
    struct ncg_figset flast;   /* the latest completed gather of our own (ranks flo..fhi) */
    uint32_t flo, fhi;
    uint64_t flast_ns;      /* when it completed, 0: none yet */
    struct ncg_figset dead; /* client ranks here that died: their last figures (gathers) */
    struct rslow *slow;     /* SLOW, from the first sample beneath (relay_slow.c) */
    /* root: slots < vall are verified on every member; those in [vall, rd.vc) only on the
     * vknown members known when the rounds verifying them began (a member known later resets
     * rd.vc to vall: ncg_rl_root_round_start) */
    uint64_t vall;
    uint32_t vknown;
    uint8_t rel_late; /* the exit release reopened for members that registered after it */
};

struct rconn {
    struct ncg_conn h; /* first: a slot of the connection table (conntab.h) */
    uint8_t relay, bye;
    uint8_t refused; /* past its bound (relay.h): said once */
    uint32_t nkids;  /* its kids that count against that bound (kid_counts) */
    uint32_t pid, node;
    char host[64];
    uint64_t wait_gen; /* client: its WAITs so far (DEADLOCK: relay_dl.c) */
    uint64_t wait_sig; /* client: what its last RWAIT up said (0: none sent) */
};

struct ncg_relay {
    struct ncg_relay_params p;
    struct ncg_relay_ops ops;
    struct ncg_conntab conns; /* of struct rconn */
    struct rcomm **comm;
    size_t ncomm, capcomm;
    uint32_t next_qid;
    uint8_t attached;
    uint64_t parent_rx_ns, last_stat_ns, last_ping_ns, last_tick_ns, last_sweep_ns;
    uint64_t now_ns; /* of the call being handled (the root's exit release starts then) */
    struct ncg_relay_stats st;
    uint8_t refused;       /* past NCG_RELAY_MAX_COMMS: said once */
    uint8_t unauthed_said; /* past NCG_RELAY_MAX_UNAUTHED: said once */
    int nomem; /* an allocation failed: the state is no longer complete (ncg_relay_out_of_memory) */
    struct rdl *dl;        /* root: the processes with blocked calls (relay_dl.c), NULL until one */
    uint64_t ask_until_ns; /* every WAIT goes up until then, changed or not (an RASK) */
};

/* c's figures over its active kids (LAG, STUCK, and relay_round.c's round start): members known
 * and active, min and max count, the completion bounds. */
struct dfig {
    uint64_t mn, mx, dmin, dhi;
    uint32_t known, active;
    uint8_t sampled;
};

/* relay.c: the tables */
/* Every allocation failure goes through here: the relay stops judging (ncg_relay_out_of_memory).
 * Returns NULL. */
void *ncg_rl_nomem(struct ncg_relay *r);
/* One event line (relay.h's ops.event), when there is an event callback. No allocation. */
__attribute__((format(printf, 2, 3))) void ncg_rl_event(const struct ncg_relay *r, const char *fmt,
                                                        ...);
/* A refusal by one of relay.h's bounds: counted; said in one event line the first time for this
 * flag only. */
__attribute__((format(printf, 3, 4))) void ncg_rl_refuse(struct ncg_relay *r, uint8_t *said,
                                                         const char *fmt, ...);
/* conn's state, or NULL when id is no connection. */
struct rconn *ncg_rl_conn_get(const struct ncg_relay *r, int id);
/* The comm of that id, or NULL. */
struct rcomm *ncg_rl_comm_find(struct ncg_relay *r, uint64_t id);
/* The ranks of c known to have left (its clients here that said goodbye, and those its child
 * relays listed), at most NCG_RELAY_DEAD, into g; the highest count of its active members into
 * *mx_active (may be NULL). No allocation. */
uint32_t ncg_rl_gone(const struct rcomm *c, struct ncg_rgone *g, uint64_t *mx_active);
/* The comm, created if new (within NCG_RELAY_MAX_COMMS). conn >= 0: for a kid of conn's about to
 * be added (relay: a child relay's), so a new comm is not created when conn has no room. */
struct rcomm *ncg_rl_comm_get(struct ncg_relay *r, uint64_t id, uint32_t nranks, int conn,
                              int relay);
/* c's kid for conn (a child relay's, or a client's rank), or NULL. */
struct rkid *ncg_rl_kid_find(struct rcomm *c, int conn, int relay, uint32_t rank);

/* relay_group.c: d's ranges become the union of d's and s's (sorted, coalesced; past
 * NCG_RELAY_RANGES, d is marked truncated). */
void ncg_rl_ranges_union(struct ncg_rgroup *d, const struct ncg_rgroup *s);

/* relay_issue.c: verdicts, faults, the exit release */
/* The root's verdict v on c goes out now (takes v): kept (an error), sent down the tree, the
 * exit release begun. Called by the gather (relay_figs.c) with v's figures filled. */
void ncg_rl_verdict_send_now(struct ncg_relay *r, struct rcomm *c, struct ncg_verdict *v);
/* c as verdicts.h's constructors take it (no per-rank arrays: the gather fills v->figs). Pure. */
struct ncg_vcomm ncg_rl_vcomm(const struct rcomm *c);
/* How old a count may be before a verdict notes it as a member's last word (five intervals,
 * at least 1 s). Pure. */
uint64_t ncg_rl_stale_ns(const struct ncg_relay *r);
/* The root's verdict on c (takes v): kept for late members, sent down the whole tree. NULL (its
 * constructor ran out of memory): the relay is out of memory. */
void ncg_rl_verdict_issue(struct ncg_relay *r, struct rcomm *c, struct ncg_verdict *v);
/* c's verdict to conn, or (conn < 0) to every child once; client connections get a plain
 * VERDICT when the relay serves real clients. */
void ncg_rl_send_verdict(struct ncg_relay *r, struct rcomm *c, struct ncg_verdict *v, int conn);
/* A copy of the parent's verdict v to keep (without per-rank arrays), or NULL. */
struct ncg_verdict *ncg_rl_verdict_dup(struct ncg_relay *r, const struct ncg_verdict *v);
/* Ranks of c died (n of them): the root decides, any other relay tells its parent (or keeps
 * the fault until it has one again). */
void ncg_rl_fault(struct ncg_relay *r, struct rcomm *c, const uint32_t *ranks, uint32_t n,
                  const char *detail);
/* RELEASE to every connection the verdict went to, and to the child relays beneath that hold
 * the comm now (one that reattached after losing its link: its ranks wait for it). */
void ncg_rl_release_down(struct ncg_relay *r, struct rcomm *c);
/* Every connection c's error verdict went to said DONE or closed (or, at the root, the
 * deadline passed): the root releases them all; a relay below says DONE for its subtree. A
 * release reopened for members that got the verdict after it (release_add) is released where it
 * was reopened, at its own deadline at the latest. */
void ncg_rl_release_check(struct ncg_relay *r, struct rcomm *c);
/* conn said DONE for comm_id, or is gone (gone: every comm; a client's is forgotten, a child
 * relay's subtree stays waited for, until the root's deadline, as it may reattach elsewhere). */
void ncg_rl_release_mark(struct ncg_relay *r, int conn, uint64_t comm_id, int gone, int relay);

/* relay_round.c: the digest rounds */
/* The round in flight is done once no kid's answer is outstanding (then decided or sent up). */
void ncg_rl_round_check(struct ncg_relay *r, struct rcomm *c);
/* Starts answering (or, at the root, asking) q's slots on c: the QUERY goes to every active
 * child (or only towards q's representatives); answers are merged into c->acc. */
void ncg_rl_round_begin(struct ncg_relay *r, struct rcomm *c, const struct ncg_msg_query *q);
/* A plain round when the slowest member moved past what is verified: one per interval, as the
 * flat coordinator, while more than PACE_SLOTS slots wait; else one per two intervals (each
 * round is a QUERY and an ANSWER per rank, more than half of a rank's traffic; digests are
 * chained, so a later round still covers every slot: a difference is found up to an interval
 * later, never missed). Only when no round is in flight (narrowing follows at once). */
void ncg_rl_root_round_start(struct ncg_relay *r, struct rcomm *c, uint64_t now_ns);
/* A client's ANSWER (one rank), a child relay's RANSWER (its subtree's groups). */
void ncg_rl_on_answer(struct ncg_relay *r, int conn, const struct ncg_msg_answer *a);
void ncg_rl_on_ranswer(struct ncg_relay *r, int conn, const struct ncg_msg_ranswer *a);

/* relay_p2p.c */
/* A client's records: from its lowest live rank on the comm, as coord.c's on_p2p. */
void ncg_rl_on_p2p(struct ncg_relay *r, int conn, const struct ncg_msg_p2p *p, uint64_t now_ns);
/* A child relay's records (RP2P). */
void ncg_rl_on_rp2p(struct ncg_relay *r, const struct ncg_msg_rp2p *p, uint64_t now_ns);
/* Below the root and attached, in a tick that sent RSTAT (up: so the parent knows the comm
 * first; once an interval), a differing pair and the records held for more than an interval go
 * up; all: every held record (the comm is about to be forgotten). At the root, or detached,
 * records older than NCG_P2PM_AGE_NS are dropped (sweep: once a second). */
void ncg_rl_p2p_tick(struct ncg_relay *r, struct rcomm *c, uint64_t now_ns, int sweep, int up,
                     int all);

/* relay_parent.c: the subtree's figures up (RSTAT; also the heartbeat). */
void ncg_rl_send_stats(struct ncg_relay *r, uint64_t now_ns);

/* relay_hang.c: c's figures; the root's LAG and STUCK on c. */
struct dfig ncg_rl_comm_dfig(const struct rcomm *c);
void ncg_rl_check_lag(struct ncg_relay *r, struct rcomm *c, uint64_t now_ns);
void ncg_rl_check_stuck(struct ncg_relay *r, struct rcomm *c, uint64_t now_ns);

/* relay_figs.c: the figures gather (RFIGQ down, RFIGA up; docs/checker.md). */
/* Starts a gather of c's ranks lo..hi (up: answering the parent's qid; else ours, kept in
 * c->flast, and the pending verdict issued when it completes); a gather in flight is ended
 * first. Deadline: 1 s at the root, 300 ms below. */
void ncg_rl_figs_begin(struct ncg_relay *r, struct rcomm *c, uint32_t qid, uint32_t lo, uint32_t hi,
                       int up, uint64_t now_ns);
/* The parent's RFIGQ; a child relay's RFIGA. */
void ncg_rl_on_rfigq(struct ncg_relay *r, const struct ncg_msg_rfigq *q, uint64_t now_ns);
void ncg_rl_on_rfiga(struct ncg_relay *r, int conn, const struct ncg_msg_rfiga *a);
/* The gather is complete once no child relay's answer is outstanding (kids removed meanwhile
 * count as answered), or at its deadline: then answered up or kept. Each tick and after each
 * answer. */
void ncg_rl_figs_check(struct ncg_relay *r, struct rcomm *c, uint64_t now_ns);
/* Kid k (a client rank, or a child relay) of c is about to be removed as lost: its last figures
 * are kept in c->dead (a child relay's own ranks when its last RSTAT showed one count). */
void ncg_rl_figs_dead(struct ncg_relay *r, struct rcomm *c, const struct rkid *k);
/* Frees c's gather state. */
void ncg_rl_figs_free(struct rcomm *c);
/* Root: v (taken) goes out once a gather of every rank completes (at once when the relay holds
 * no child relay on c); a verdict already waiting goes out first with what is known. */
void ncg_rl_figs_verdict(struct ncg_relay *r, struct rcomm *c, struct ncg_verdict *v);

/* relay_slow.c: SLOW through the tree (docs/checker.md, "Stragglers"). Each relay gathers, per
 * comm and sampled slot, its clients' samples and its child relays' merged slots
 * (straggler.h's pending table and rule, the flat coordinator's); a slot complete beneath it,
 * or past its deadline, goes up in the next RSLOW; the root feeds the comm's window and issues
 * the SLOW warning. */
/* A client rank's samples (its REPORT entry), k its kid on c. Allocates c->slow once. */
void ncg_rl_slow_report(struct ncg_relay *r, struct rcomm *c, struct rkid *k,
                        const struct ncg_report_slow *smp, uint32_t n, uint64_t now_ns);
/* A child relay's RSLOW. */
void ncg_rl_on_rslow(struct ncg_relay *r, int conn, const struct ncg_msg_rslow *m, uint64_t now_ns);
/* Each tick, per comm: slots past their deadline settled; at the root, a named rank that left
 * ends its episode. */
void ncg_rl_slow_tick(struct ncg_relay *r, struct rcomm *c, uint64_t now_ns);
/* Below the root and attached, each tick: the complete slots up (RSLOW). */
void ncg_rl_slow_flush(struct ncg_relay *r);
/* The parent link came up: the new parent knows no argmin's who yet. */
void ncg_rl_slow_parent_up(struct ncg_relay *r);
void ncg_rl_slow_free(struct rcomm *c);

/* relay_dl.c: DEADLOCK through the tree. */
void ncg_rl_dl_free(struct ncg_relay *r);
/* root: the blocked call (collective, else p2p) its client on conn reported for rank of
 * comm_id, or NULL (/status's last_call) */
const struct ncg_wait_ent *ncg_rl_dl_wait_of(const struct ncg_relay *r, int conn, uint64_t comm_id,
                                             uint32_t rank);
/* root: the blocked call its client on conn reported for rank of comm_id at slot k, or NULL */
const struct ncg_wait_ent *ncg_rl_dl_wait_at(const struct ncg_relay *r, int conn, uint64_t comm_id,
                                             uint32_t rank, uint64_t k);
/* RASK (from the parent, or the root's own): every WAIT goes up for two intervals. */
void ncg_rl_dl_ask(struct ncg_relay *r, uint64_t now_ns);
/* A client's WAIT; a child relay's RWAIT. */
void ncg_rl_on_wait(struct ncg_relay *r, int conn, const struct ncg_msg_wait *wt, uint64_t now_ns);
void ncg_rl_on_rwait(struct ncg_relay *r, struct ncg_msg_rwait *w);
/* The root, each tick: the wait-for graphs' check. */
void ncg_rl_check_deadlock(struct ncg_relay *r, uint64_t now_ns);

#endif
