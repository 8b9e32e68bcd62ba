/* ncg-dsim (docs/simulator.md): the checker's whole protocol in one thread on a virtual clock.
 * The real relay root (interpose/relay/) and the real codecs (interpose/proto/) run against
 * the in-job agent's real machines (agent.c drives them) and a model of the shim's ranks
 * (work.c), over simulated connections (world.c); every random choice comes from one seeded PRNG,
 * so a seed replays bit for bit. This header: what the files share. Everything runs on the one
 * thread. */
#ifndef NCG_DSIM_H
#define NCG_DSIM_H

#include <stddef.h>
#include <stdint.h>

#include "ncclguard/shm.h"
#include "exit_sm.h"
#include "link_sm.h"
#include "local.h"
#include "params.h"
#include "relay.h"
#include "verdict.h"
#include "wire.h"

#define MS 1000000ull
#define SEC 1000000000ull

/* ---- the PRNG (xoshiro256**, seeded by splitmix64): the only source of randomness ---- */
uint64_t rnd(void);
uint64_t rnd_below(uint64_t n);               /* [0, n) */
uint64_t rnd_range(uint64_t lo, uint64_t hi); /* [lo, hi] */
void rnd_seed(uint64_t seed);

/* ---- the event queue (a binary heap on (time, sequence): ties in insertion order) ---- */
enum ev_kind {
    EV_TICK,     /* a: process: its agent's loop (report interval) */
    EV_RANK,     /* a: rank: runs its next call (its compute time passed) */
    EV_FRAME,    /* a: connection, b: direction (0 to the host, 1 to the client) */
    EV_HOSTTICK, /* the relay root's tick */
    EV_FAULT,    /* a: fault index */
    EV_PRINTED,  /* a: process: its verdict block printed and its report written */
    EV_CONNECT,  /* a: process: its connect attempt is answered (accepted or refused) */
    EV_KILLALL,  /* the launcher ends every process left */
    EV_RESUME,   /* a: process: a stopped process runs again */
    EV_ACCEPT,   /* a: connection: the host's checker accepts it from the backlog */
    EV_ATEXIT,   /* a: process: its at-exit waiter's timeout */
};
struct ev {
    uint64_t t, seq;
    uint8_t kind;
    uint32_t a, b;
};
void ev_push(uint64_t t, uint8_t kind, uint32_t a, uint32_t b);

/* ---- the trace: every event as a line, hashed (FNV-1a); the last lines kept for a report ---- */
void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t trace_hash(void);

/* ---- communicators and ranks (work.c) ---- */
struct rec { /* one ring record: what QUERY is answered with */
    uint64_t digest, count;
    int32_t root;
    uint8_t func, dtype, redop;
};
struct p2prec {
    uint64_t seq, count;
    int32_t peer;
    uint8_t func, dtype;
};
struct member { /* a rank's view of one communicator */
    uint64_t issued, done;
    struct rec *ring; /* every slot (the simulated ring keeps NCG_RING_SIM of them) */
    size_t cap;
    struct p2prec *p2p; /* every p2p record, and how many went in P2P messages */
    size_t np2p, p2pcap, p2psent;
    uint64_t *sent_to, *recv_from; /* [nranks]: p2p sequence per peer */
    uint8_t active, gone;          /* created here / destroyed (or its process left) */
    uint8_t bye_pending;           /* destroyed; its GOODBYE waits for the link (still reported) */
    uint64_t lost_cnt, lost_prog_ns; /* the agent's CHECKER LOST clock (agent/lost.c) */
    /* its checker's SHUTDOWN (link.c take_bye; has_peer: one came), for report.c's local RANK
     * EXITED (exited_locally) */
    uint8_t has_peer;       /* sd holds a SHUTDOWN's facts */
    struct ncg_sd_facts sd; /* local.h, as the agent's (link.c take_bye) */
    uint64_t sd_done, sd_done_ns;
};
#define NCG_RING_SIM 1024u
struct comm {
    uint64_t id;
    uint32_t nranks;
    uint32_t *grank;     /* [nranks]: global rank of each comm rank */
    struct member *m;    /* [nranks] */
    uint64_t stuck_slot; /* this slot never completes (UINT64_MAX: none) */
};

/* SLEEP: count ns outside NCCL; DESTROY: ncclCommDestroy of comm by this rank alone */
enum op_kind { OP_COLL, OP_SEND, OP_RECV, OP_SPLIT, OP_SLEEP, OP_DESTROY, OP_END };
struct op {
    uint8_t kind, func;
    uint32_t comm; /* index in W.comm */
    uint32_t peer; /* comm rank (send/recv), child comm index (split) */
    uint64_t count;
    int32_t root;
};

enum rank_state { R_RUN, R_BLOCKED, R_FINISHED };
struct rank {
    uint32_t g, proc;
    struct op *prog;
    size_t nprog, pc;
    uint8_t state;
    uint64_t blocked_since; /* R_BLOCKED: since when */
    uint32_t bcomm, bcrank; /* R_BLOCKED: the call's comm and this rank's comm rank */
    uint64_t bslot;         /* collective slot, or p2p sequence */
    uint8_t bp2p, bfunc;    /* blocked in a p2p call / its function */
    uint32_t bpeer;
    uint64_t compute_lo, compute_hi; /* time between calls */
};

/* ---- processes and their agents ---- */
enum proc_state { P_ALIVE, P_STOPPED, P_DEAD, P_EXITED };

struct proc {
    uint32_t id, first_rank, nranks;
    uint8_t state;
    uint64_t stop_until;              /* P_STOPPED: resumed then */
    uint64_t slow_until, slow_factor; /* starved: its work takes slow_factor times longer */
    int exit_status;                  /* P_EXITED */
    uint64_t exit_t;
    int conn; /* its connection to the checker, -1 none */
    /* its agent (agent.c): the real machines, and what their drivers keep */
    struct ncg_link_sm link; /* its one link (a flat job's: to process 0's checker) */
    struct ncg_exit_sm xs;
    uint8_t link_made;      /* the link was made (with its first comm) */
    uint8_t exiting;        /* the application asked to exit (atexit) */
    uint8_t aborting;       /* an abort verdict is being applied (apply.c) */
    uint8_t busy;           /* its checker thread prints a verdict: nothing else runs there */
    uint8_t comms_reported; /* a REPORT carried its comms (link_unregistered) */
    uint8_t sd_flags;       /* its SHUTDOWN's flags (exit.c exit_sd) */
    uint8_t atexit_ext;     /* the at-exit waiter extended its wait once */
    uint64_t busy_until;    /* busy: its EV_PRINTED's time (at least) */
    uint64_t last_report_ns, last_loop;
    int pv_error, pv_exit, pv_link; /* the verdict being printed: what the exit is told */
    uint64_t pv_comm;
    uint64_t next_tick; /* its queued EV_TICK (others are stale) */
    /* what it has shown (the invariants read these) */
    int nverdicts; /* verdicts received and printed (error or warning) */
    uint8_t v_kind, v_sev, v_local, v_knock, printed, reported, warned_unguarded;
    uint64_t v_comm, v_at;
    char v_subject[NCG_WIRE_STR];
    uint64_t printed_t;
    uint8_t waited;      /* its last WAIT named calls */
    uint64_t app_done_t; /* its application returned then (0: not yet) */
    uint64_t released;   /* 1 + the comm of the RELEASE it got (0: none) */
    int errors_seen;     /* error verdicts that reached it (first printed, others answered DONE) */
};

/* ---- connections ---- */
struct frame {
    struct frame *next;
    uint64_t at;
    long n; /* 0: the sender closed (EOF after the frames before it) */
    uint8_t b[];
};
struct conn {
    uint32_t proc;
    uint8_t open[2];     /* [0] the host's end, [1] the client's end */
    uint8_t relay_knows; /* ncg_relay_connected was called and not yet closed */
    uint32_t skip[2];    /* frames taken before their event (read at accept): events to skip */
    uint8_t registered;  /* the checker read a REPORT on it */
    uint8_t accepted;    /* the checker accepted it */
    uint8_t sd_sent;     /* the host's SHUTDOWN went on it */
    uint8_t backlog;     /* it waits in the listener's backlog (accepted by EV_ACCEPT) */
    uint8_t dropped;     /* the checker dropped it (a refusal of its own) */
    struct frame *h[2], *t[2];
    uint64_t last_at[2];
    uint64_t part_until;                /* a partition: frames either way held until then */
    struct ncg_report_ref tx[2], rx[2]; /* each end's REPORT references */
};

/* ---- faults ---- */
enum fault_kind {
    F_CRASH,     /* a: process */
    F_STOP,      /* a: process, b: ms stopped */
    F_STARVE,    /* a: process, b: ms, factor 10 */
    F_RESET,     /* a: process (its connection) */
    F_PARTITION, /* a: process, b: ms frames are held */
    F_EXIT,      /* a: process: its application returns now (its ranks' programs end) */
};
struct fault {
    uint64_t at;
    uint8_t kind;
    uint32_t a, b;
};

/* ---- what a run is (the workload names the expected outcome) ---- */
enum launcher { L_NONE, L_MPIRUN, L_TORCHRUN };
struct expect {
    uint8_t kind; /* NCG_V_NONE: no verdict or warning at all */
    uint8_t severity;
    uint32_t comm;    /* comm index the verdict is on */
    uint32_t crank;   /* a comm rank the subject must name (UINT32_MAX: any) */
    uint64_t from_t;  /* detectable from this virtual time (set when the fault happens) */
    uint64_t bound;   /* ... and reaches every live member within this */
    uint8_t armed;    /* the fault happened (from_t valid) */
    uint8_t local_ok; /* a verdict decided locally (checker lost) counts too */
};

struct world {
    uint64_t now, seed;
    const char *workload, *args;
    uint32_t nproc, k, nranks;
    struct proc *proc;
    struct rank *rank;
    struct comm *comm;
    uint32_t ncomm;
    struct conn *conn;
    uint32_t nconn, conncap;
    struct fault *fault;
    uint32_t nfault;
    struct ncg_relay *relay; /* process 0's checker (NULL once it is gone) */
    struct ncg_relay_params rp;
    struct ncg_agent_params ap;
    struct expect ex;
    uint8_t launcher, netfaults, host_left;
    uint8_t no_backlog_farewell; /* --no-backlog-farewell: the host's SHUTDOWN skips its backlog */
    /* --stop-host, --rules-only: the workload's expectations (its verdict, no silence, how it
     * ends) are not checked, the protocol's rules are (no refusal said of a live checker, a
     * host's farewell to every connection, the exit release, the checker's memory) */
    uint8_t rules_only;
    uint64_t end_t, delay_lo, delay_hi;
    uint64_t refuse_until;  /* nothing accepted until then (descriptors exhausted): a backlog */
    int first_exit_nonzero; /* a process exited non-zero (the launcher acts) */
    int first_exit_local;   /* ... after a verdict decided in it (it exits at once) */
    uint64_t first_exit_t;
    int violation;
    uint64_t events;
    uint64_t max_comms_seen, max_p2p_held;
    int verbose;
    uint32_t nlive;          /* processes neither dead nor exited */
    uint64_t last_connect_t; /* the checker's latest accepted connection */
    /* the workload's fault: the rank, comm and slot of an odd call (armed when issued), the
     * process whose application returns early (armed then), or armed at the start */
    uint32_t fault_rank, fault_comm;
    uint64_t fault_slot;
    int early_proc;
    uint8_t arm_at_start;
    uint64_t silent_bound; /* a rank blocked this long with nothing said: a violation */
};
extern struct world W;

/* world.c */
void world_init(void);
void world_free(void);
int world_run(void); /* 0, or 1 on a violation (printed) */
int conn_open(uint32_t proc);
void conn_send(int c, int dir, const struct ncg_msg *m);
void conn_close_end(int c, int end); /* the end closes: the other sees EOF after its frames */
void conn_reset(int c);              /* both ends see a close at once; frames lost */
void conn_accept(int c);             /* the host's checker accepts it (from the backlog) */
void proc_exit(struct proc *p, int status, const char *why);
void proc_crash(struct proc *p);
uint64_t proc_delay(const struct proc *p, uint64_t d); /* d under its starvation */

/* agent.c: the agent: the real machines' drivers */
void agent_tick(struct proc *p); /* its checker thread's loop (it queues its next EV_TICK) */
void agent_atexit(struct proc *p);
void agent_rx(struct proc *p, const struct ncg_msg *m);
void agent_closed(struct proc *p);
void agent_connected(struct proc *p, int accepted);
void agent_printed(struct proc *p);
void agent_app_done(struct proc *p);
void agent_destroyed(struct proc *p, uint32_t comm, uint32_t crank); /* its GOODBYE */

/* agent_io.c: the agent's messages and the host's listener (agent.c calls them) */
void msg_send(struct proc *p, const struct ncg_msg *m); /* on its link, when up (HELLO: sent) */
int proc_holds(const struct proc *p, uint32_t ci, uint32_t cr); /* comm rank cr of comm ci */
void send_report(struct proc *p);                               /* REPORT, WAIT, P2P, GOODBYEs */
void send_answer(struct proc *p, const struct ncg_msg_query *q);
void send_goodbye(struct proc *p, uint8_t flags); /* the process leaves: every comm rank */
void host_shutdown(uint8_t flags);                /* its SHUTDOWN to every connection, once */
int host_stay(uint32_t self_pid, struct ncg_exit_stay_view *st); /* ncg_rhost_stay's view */
void host_accept_backlog(void);

/* work.c: workloads and the ranks */
int work_build(const char *name); /* 0, or -1: unknown workload */
void rank_step(struct rank *r);
void work_free(void);
const char *const *work_names(void);

/* check.c: invariants */
void check_verdict(struct proc *p, const struct ncg_verdict *v, int local);
void check_step(void);
void check_exit_nonzero(const struct proc *p); /* p exits non-zero now */
void check_killed(const struct proc *p);       /* the launcher ends p now */
void check_fault_armed(void);                  /* the workload's fault happens now */
void check_end(void);
void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
