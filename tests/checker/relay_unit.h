/* The relay tree's unit tests (relay_unit*.c), shared: the in-memory network that carries
 * every frame encoded and decoded between small trees of relays and their simulated clients
 * (relay_unit.c), the helpers over it, and each topic file's tests, which main runs in order.
 * Everything here runs on the test's one thread; nothing blocks. */
#ifndef NCG_TESTS_RELAY_UNIT_H
#define NCG_TESTS_RELAY_UNIT_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ncclguard/shm.h"
#include "p2pmatch.h"
#include "relay.h"
#include "straggler.h"
#include "verdict.h"
#include "wire.h"

/* Sanitizer builds: their allocators would bypass relay_unit.c's failing malloc, so the
 * out-of-memory cases are skipped there. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NCG_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define NCG_SANITIZED 1
#endif
#endif

/* While set, malloc/calloc/realloc of this program fail with ENOMEM (relay_unit.c). */
extern int fail_alloc;

#define MAXR 4 /* relays */
#define MAXK 8 /* child connections per relay */
#define MAXQ 4096

enum { TO_CHILD, TO_PARENT, TO_CLIENT }; /* who receives */
struct pkt {
    int kind, relay, conn; /* TO_CHILD: relay's child conn; TO_PARENT: relay gets it from its
                              parent; TO_CLIENT: relay's client on conn */
    long n;
    uint8_t *b;
};

struct client { /* one rank per client process */
    int relay, conn, rank;
    uint32_t pid;
    uint64_t count, odd_from; /* digest differs from slot odd_from (UINT64_MAX: never) */
    uint8_t same_call;        /* from odd_from the digest differs but the call looks the same */
    uint64_t done, done_hi;   /* completed slots, and the upper bound when sampled */
    uint8_t sampled;
    uint8_t none_targeted; /* answers a QUERY limited to representatives with "none" */
    int verdicts, plain;
    int slow_ended; /* SLOW episode ends received (verdicts.h, ncg_v_slow_end) of rank 5, global
                       rank 5 */
    int releases;   /* RELEASEs received (the exit release) */
    int queries, targeted; /* QUERYs received, of which limited to representatives */
    struct ncg_verdict *v;
    uint8_t nslow; /* straggler samples for its next REPORT */
    struct ncg_report_slow slow[NCG_WIRE_MAX_SLOW];
};

struct net {
    struct ncg_relay *r[MAXR];
    int parent[MAXR], parent_conn[MAXR]; /* the conn id this relay has at its parent */
    int child_relay[MAXR][MAXK];         /* -1: conn is a client */
    struct client cl[64];
    int ncl;
    struct pkt q[MAXQ];
    int qh, qt;
    uint64_t now;
    uint8_t client_verdicts;
    uint8_t fork; /* tree(1): relay 2 under the root (conn 3), a sibling of relay 1 */
    double lag_warn_s, lag_abort_s, stuck_warn_s, stuck_abort_s, exit_wait_s;
    int frozen; /* a relay that runs no more (frames to it are lost), or -1 */
    /* what each relay said: event lines about a bound (refused, merged), and sent up */
    int refused_ev[MAXR], merged_ev[MAXR];
    int stat_ents[MAXR];                      /* RSTAT entries */
    struct ncg_rstat_ent stat_last[MAXR];     /* the latest RSTAT entry */
    int rfaults[MAXR], rfault_ranks[MAXR];    /* RFAULTs, and ranks in them */
    struct ncg_msg_rfault rfault_first[MAXR]; /* the first RFAULT */
    int rp2p_recs[MAXR];                      /* p2p records sent up (RP2P) */
    int p2p_ev[MAXR];                         /* event lines about the p2p bound */
    int rwait_up[MAXR];                       /* RWAITs sent up */
    int rslow_slots[MAXR], rslow_who[MAXR];   /* RSLOW: slots sent up, of which with who */
    int rslow_unordered[MAXR]; /* RSLOW entries whose slots do not increase (refused whole) */
    long rslow_bytes[MAXR];    /* their frames' bytes */
};

/* The network and what the relays said: reset by tree(). */
extern struct net T;

/* m encoded, every truncation decoded ("more bytes"), then whole into out; then a corrupted
 * copy decoded or refused. The caller releases out. */
void roundtrip(const struct ncg_msg *m, struct ncg_msg *out);
/* m encoded then decoded: the decoder's length, or the encoder's refusal (<= 0). */
long encode_decode(const struct ncg_msg *m);
/* m encoded into the queue for relay's child conn / from relay's parent / to relay's client
 * (kind TO_*); delivered by pump(). */
void push(int kind, int relay, int conn, const struct ncg_msg *m);
/* Delivers the queue until it is empty (frames to T.frozen are lost). */
void pump(void);
/* Every attached client's REPORT for comm 0xc0 (its count, done, straggler samples), pumped. */
void report_all(void);
/* 100 ms later: relays nr-1 .. 0 tick, each pumped. */
void tick_all(int nr);
/* A fresh tree of 2 relays (4 ranks) or, with three_levels, 3 relays (6 ranks); T's knobs
 * (client_verdicts, fork, the verdicts' thresholds) kept. */
void tree(int three_levels);
/* Frees nr relays, the clients' verdicts and the queue. */
void tree_free(int nr);
/* c's process says GOODBYE for comm 0xc0 after count calls, then its connection closes. */
void goodbye(struct client *c, uint64_t count, uint8_t flags);

struct vseen { /* what a relay's view showed (view_of) */
    int nconn, nrelay;
    uint32_t relay_node;
    struct ncg_relay_comm_view c;
    struct ncg_relay_rank_view here[8];
    int ncomm;
};
/* relay's view now: its connections counted, its (last) comm and that comm's rows here. */
struct vseen view_of(int relay);

/* relay_unit_codec.c: the pure helpers, the relay frames' codecs, the tree's shape. */
void test_helpers(void);
void test_codecs(void);
void test_codec_rp2p(void);
void test_topology(void);
void test_params_of(void);

/* relay_unit_rounds.c: digest rounds (agreement, MISMATCH narrowed and named), the verdict's
 * forms, the figures gather, the root's wait for every rank, the read-only view. */
void test_agree(void);
void test_mismatch(void);
void test_mismatch_rep_missing(void);
void test_mismatch_sibling(void);
void test_mismatch_absent_rank(void);
void test_mismatch_alike(void);
void test_client_verdicts(void);
void test_figs_gather(void);
void test_round_waits(void);
void test_late_compared(void);
void test_view(void);

/* relay_unit_faults.c: RANK DIED of a client and of a relay, faults while detached, a silent
 * relay, the bounds (connections, comms, pending faults), re-registration, out of memory. */
void test_client_died(void);
void test_relay_died(void);
void test_detached_fault(void);
void test_silent_relay(void);
void probe_detached(int tick_between);
void test_conn_cap(void);
void test_unauthed_cap(void);
void test_comm_cap(void);
void test_reregister(void);
void test_pend_cap(void);
void test_nomem(void);

/* relay_unit_exit.c: RANK EXITED, late members, the exit release. */
void test_exited(void);
void test_gone_wait(void);
void probe_exited(int fast);
void probe_late(void);
void probe_relay_leaves(int leaving);
void test_late_at_root(void);
void test_release(void);
void test_release_detached(void);
void test_release_late(void);
void test_release_reattach_released(void);

/* relay_unit_progress.c: LAG, STUCK and SLOW through the tree. */
void test_lag(void);
void test_stuck(void);
void test_codec_rslow(void);
void test_slow_pend(void);
void test_slow_tree(void);
void test_slow_jitter(void);
void test_slow_partial(void);
void test_slow_late(void);

/* relay_unit_p2p.c: p2p records matched where they meet, P2P MISMATCH, ageing, bounds. */
void test_p2p_leaf(void);
void test_p2p_cross(void);
void test_p2p_mismatch_leaf(void);
void test_p2p_mismatch_cross(void);
void test_p2p_age(void);
void test_p2p_cap(void);
void test_p2p_nomem(void);

/* relay_unit_deadlock.c: DEADLOCK through the tree (RWAIT), and the root's table at scale. */
void test_deadlock(void);
void test_deadlock_many(void);

#endif
