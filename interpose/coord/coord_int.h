/* The coordinator's private state (coord.h is its contract): the tables the files of coord/
 * share (members per communicator, connections), and the internal functions one of them
 * defines for the others. Not for other layers. Same threading as coord.h: one thread at a
 * time, never blocking. */
#ifndef NCG_COORD_INT_H
#define NCG_COORD_INT_H

#include <stddef.h>
#include <stdint.h>
#include "conntab.h"
#include "coord.h"
#include "deadlock.h"
#include "ncclguard/shm.h"
#include "p2pmatch.h"
#include "release.h"
#include "round.h"
#include "straggler.h"
#include "verdict.h"
#include "verdicts.h"

enum { M_UNKNOWN = 0, M_ACTIVE = 1, M_GONE = 2, M_DEAD = 3 };

struct cmember {
    int conn; /* -1 until registered */
    uint8_t state;
    uint8_t waiting; /* an answer to the current query is outstanding */
    int32_t grank;
    uint64_t count;
    uint64_t progress_ns;      /* its count last grew (status endpoint) */
    uint64_t rate_t0, rate_c0; /* calls-per-second window start (ncg_coord_view) */
    double rate;
    uint32_t pid; /* of the process that registered it, kept after its connection ends */
    char host[64];
    uint64_t done;      /* slots completed (v2); a lower bound when sampled */
    uint64_t done_hi;   /* at most this many completed (v3; = done when exact) */
    uint8_t sampled;    /* its completion is sampled by CUDA events (asynchronous NCCL) */
    uint32_t tid;       /* the thread driving the comm in that process */
    uint64_t report_ns; /* when its count was last reported */
    uint8_t how;        /* M_GONE: NCG_BYE_ABORT or NCG_BYE_VERDICT from its goodbye, else 0 */
    uint64_t slow_last; /* 1 + the slot of its latest straggler sample taken, 0 none */
};

/* SLOW: the samples of a slot not yet received from every member (coord_slow.c; the table and
 * its rule are straggler.h's, shared with the relay tree). */
struct cslow {
    struct ncg_sg sg;
    struct ncg_sg_pend pend;
};

struct ccomm {
    uint64_t id;
    uint32_t nranks;
    struct cmember *m;
    uint64_t vc;              /* slots < vc are verified equal on every member that answered */
    uint8_t done;             /* an error verdict was issued: no more checking */
    struct ncg_verdict *last; /* that verdict, for members that register later */
    uint64_t empty_ns; /* its last member left (a verdict's comm stays a while: NCG_CO_KEEP_NS) */
    uint8_t lag_warned;
    uint64_t progress_ns;  /* last time any member's count grew */
    uint64_t dprogress_ns; /* last time any member's completed count grew */
    uint64_t stuck_warned; /* 1 + the slot a STUCK warning was issued for, 0 none */
    /* comparison round */
    uint8_t q_active, q_mode, q_narrow;
    uint32_t qid, qn;
    uint64_t qslot[NCG_WIRE_MAX_SLOTS];
    uint64_t lo, hi;        /* narrowing range [lo, hi] */
    struct ncg_answer *ans; /* [nranks * qn] */
    struct ncg_p2pm p2p;    /* records waiting for their other side */
    struct ncg_release rel; /* its error verdict's exit release (release.h) */
    struct cslow *slow;     /* straggler state, from its first sample (coord_slow.c) */
};

struct cconn {
    struct ncg_conn h; /* first: a slot of the connection table (conntab.h) */
    uint8_t bye;
    uint32_t pid;
    char host[64];
    struct ncg_wait_ent *waits; /* the calls its threads are blocked in (latest WAIT) */
    uint32_t nwaits;
    uint64_t wait_gen; /* WAITs received */
    /* a wait on a member that left (gonewait.h): its signature and the WAITs in a row that
     * carried it */
    uint64_t gw_sig;
    uint32_t gw_seen;
    uint32_t q_sent; /* 1 + the qid of the QUERY last sent (once per process: it answers for
                        each of its ranks on the comm) */
};

struct ncg_coord {
    struct ncg_coord_params p;
    struct ncg_coord_ops ops;
    struct ncg_conntab conns; /* of struct cconn */
    struct ccomm **comm;
    size_t ncomm, capcomm;
    uint32_t next_qid;
    uint64_t last_ping_ns, last_sweep_ns, last_tick_ns;
    uint64_t now_ns; /* of the call being handled (a verdict's exit release starts then) */
    struct ncg_coord_stats st;
    /* DEADLOCK: a cycle seen once is confirmed by a second sighting after every process in it
     * sent a newer WAIT (so they were all blocked in those calls at the same moment). One
     * state per graph: [0] blocked threads, [1] stream order (asynchronous NCCL). */
    struct ncg_dl_seen dl[2];
    int nomem; /* an allocation failed: the state is no longer complete (ncg_coord_out_of_memory) */
};

/* coord.c */
/* conn's state, or NULL when id is no connection. No allocation. */
struct cconn *ncg_co_conn_get(const struct ncg_coord *co, int id);
/* The comm of that id, or NULL. No allocation. */
/* A comm whose verdict ended it stays this long after its last member left, in /status and
 * /metrics (a scraper every minute still sees the verdict), unless its id registers again. */
#define NCG_CO_KEEP_NS 120000000000ull

struct ccomm *ncg_co_comm_find(struct ncg_coord *co, uint64_t id);
/* Every allocation failure goes through here: a checker that lost state must stop (the
 * server tells its clients) rather than judge from what is left. Returns NULL. */
void *ncg_co_nomem(struct ncg_coord *co);
/* One event line (coord.h's ops.event), when there is an event callback. No allocation. */
__attribute__((format(printf, 2, 3))) void ncg_co_event(const struct ncg_coord *co, const char *fmt,
                                                        ...);
/* "pid 123 (global rank 4) on host" of an authenticated connection. */
const char *ncg_co_conn_who(const struct cconn *cc, char *buf, size_t cap);

/* coord_issue.c */
/* c as verdicts.h's constructors take it (with its members' counts and global ranks). Pure. */
struct ncg_vcomm ncg_co_vcomm(const struct ccomm *c);
/* Sends v to every live member of c (once per process) and takes ownership of v. Allocates. */
void ncg_co_verdict_issue(struct ncg_coord *co, struct ccomm *c, struct ncg_verdict *v);
/* RELEASE to every process c's error verdict went to, once all said DONE or closed, or at the
 * deadline. */
void ncg_co_release_check(struct ncg_coord *co, struct ccomm *c);
/* A member registered after c's error verdict got it now: it is waited for too, or released
 * at once when the others were. */
void ncg_co_release_late(struct ncg_coord *co, struct ccomm *c, int conn);
/* conn said DONE for comm_id, or is gone (gone: every comm; it is forgotten, never sent a
 * RELEASE, so that a new connection given its id gets none). */
void ncg_co_release_mark(struct ncg_coord *co, int conn, uint64_t comm_id, int gone);

/* coord_round.c: the round in flight is decided once no member's answer is outstanding; a plain
 * round starts when the slowest member moved past what is verified; an ANSWER from conn. */
void ncg_co_round_check(struct ncg_coord *co, struct ccomm *c);
void ncg_co_round_start(struct ncg_coord *co, struct ccomm *c);
void ncg_co_on_answer(struct ncg_coord *co, int conn, const struct ncg_msg_answer *a);

/* coord_slow.c: comm rank `rank` of c reported samples (REPORT v8); a SLOW warning when the
 * window names a rank or another one. Allocates c->slow once. */
void ncg_co_slow_samples(struct ncg_coord *co, struct ccomm *c, uint32_t rank,
                         const struct ncg_report_slow *s, uint32_t n, uint64_t now_ns);
/* Tick: the named rank of c left (its episode ends). */
void ncg_co_slow_tick(struct ncg_coord *co, struct ccomm *c);
/* coord_slow.c, for the view: the share of the step the others lose waiting for comm rank
 * `rank` over the latest window of merged slots (-1: none yet); the named rank, if any. */
double ncg_co_slow_wait_share(const struct ccomm *c, uint32_t rank);
void ncg_co_slow_view(const struct ccomm *c, uint64_t now_ns, struct ncg_coord_slow_view *v);

/* coord_hang.c: STUCK on c; DEADLOCK over every comm (the threads' graph, the streams'). */
void ncg_co_check_stuck(struct ncg_coord *co, struct ccomm *c, uint64_t now_ns);
void ncg_co_check_deadlock(struct ncg_coord *co);
void ncg_co_check_deadlock_streams(struct ncg_coord *co);

#endif
