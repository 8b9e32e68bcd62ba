/* ncg-dsim (docs/simulator.md): the checker's whole protocol in one thread on a virtual clock.
 * The real relay root (interpose/relay/) and the real codecs (interpose/proto/) run against
 * a model of the in-job agent (agent.c) and of the shim's ranks (work.c), over simulated
 * connections (world.c); every random choice comes from one seeded PRNG, so a seed replays
 * bit for bit. This header: what the files share. Everything runs on the one thread. */
#ifndef NCG_DSIM_H
#define NCG_DSIM_H

#include <stddef.h>
#include <stdint.h>

#include "ncclguard/shm.h"
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

/* The link's model (agent.c: dsim_link_step): events and the time in, actions out. The real
 * machine (interpose/machine/link_sm.h, branch `link`) replaces this function. */
enum link_ev { LE_START, LE_ACCEPTED, LE_REFUSED, LE_RX, LE_CLOSED, LE_TICK };
enum link_st { LS_IDLE, LS_CONNECTING, LS_HELLO, LS_UP, LS_DOWN, LS_UNGUARDED };
struct link_sm {
    uint8_t st, embedded, shutdown_seen;
    uint64_t first_try, retry_at, last_rx;
};
enum link_act_bits {
    LA_CONNECT = 1,   /* dial the checker */
    LA_HELLO = 2,     /* send HELLO */
    LA_REPORT = 4,    /* send REPORT (and WAIT, P2P) now */
    LA_LOST = 8,      /* the checker is lost: a verdict decided here (RANK DIED of its host) */
    LA_UNGUARDED = 16 /* give up: run on unguarded (said once) */
};
int dsim_link_step(struct link_sm *l, int ev, uint8_t rx_type, uint64_t now,
                   const struct ncg_agent_params *p);

/* The exit's model (agent.c: dsim_exit_step): the same shape. The real machine
 * (interpose/machine/exit_sm.h, branch `exit`) replaces this function. */
enum exit_ev {
    XE_VERDICT,  /* an error verdict arrived on the link (comm in arg) */
    XE_LOCAL,    /* an error verdict decided here (no checker to release us) */
    XE_PRINTED,  /* its block printed and its report written */
    XE_RELEASE,  /* RELEASE arrived (comm in arg) */
    XE_LINKGONE, /* the checker's link closed, or its SHUTDOWN came */
    XE_APPDONE,  /* the application returned: a clean exit */
    XE_TICK
};
enum exit_st { XS_RUN, XS_PRINTING, XS_RELEASE_WAIT, XS_CLEAN, XS_STAY, XS_GONE, XS_REGISTER };
struct exit_sm {
    uint8_t st, local, clean_after; /* clean_after: the app finished while aborting */
    uint8_t timed_out;              /* the release wait ended by its bound */
    uint64_t until;                 /* XS_RELEASE_WAIT: bound; XS_CLEAN: deadline */
    uint64_t comm;                  /* the verdict's comm */
};
enum exit_act_bits {
    XA_PRINT = 1,     /* start printing and reporting (EV_PRINTED follows) */
    XA_DONE = 2,      /* send DONE for the comm */
    XA_GOODBYE_V = 4, /* send GOODBYEs flagged NCG_BYE_VERDICT */
    XA_GOODBYE = 8,   /* send a REPORT and the GOODBYEs of a clean exit */
    XA_EXIT86 = 16,   /* _exit(86) */
    XA_EXIT0 = 32,    /* the clean exit completes (status 0) */
};
int dsim_exit_step(struct exit_sm *x, int ev, uint64_t arg, uint64_t now, int hosting_others,
                   const struct ncg_agent_params *p);

struct proc {
    uint32_t id, first_rank, nranks;
    uint8_t state;
    uint64_t stop_until;              /* P_STOPPED: resumed then */
    uint64_t slow_until, slow_factor; /* starved: its work takes slow_factor times longer */
    int exit_status;                  /* P_EXITED */
    uint64_t exit_t;
    int conn; /* its connection to the checker, -1 none */
    struct link_sm link;
    struct exit_sm xs;
    uint64_t next_tick;
    /* what it has shown (the invariants read these) */
    int nverdicts; /* verdicts received and printed (error or warning) */
    uint8_t v_kind, v_sev, v_local, v_knock, printed, reported, warned_unguarded;
    uint64_t v_comm, v_at;
    char v_subject[NCG_WIRE_STR];
    uint64_t printed_t;
    uint64_t held[8]; /* RELEASEs' comms read after printing (the thread was busy) */
    uint32_t nheld;
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
    uint8_t registered;  /* the checker read a REPORT on it */
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
    uint64_t end_t, delay_lo, delay_hi;
    uint64_t refuse_until;  /* accepts refused until then (descriptor exhaustion) */
    int first_exit_nonzero; /* a process exited non-zero (the launcher acts) */
    int first_exit_local;   /* ... after a verdict decided in it (it exits at once) */
    uint64_t first_exit_t;
    int violation;
    uint64_t events;
    uint64_t max_comms_seen, max_p2p_held;
    int verbose;
    uint32_t nlive;          /* processes neither dead nor exited */
    uint64_t last_connect_t; /* the checker's latest accepted connection */
    uint64_t hold_since;     /* the host holds its exit for a release since then */
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
void proc_exit(struct proc *p, int status, const char *why);
void proc_crash(struct proc *p);
uint64_t proc_delay(const struct proc *p, uint64_t d); /* d under its starvation */

/* agent.c: the agent model */
void agent_tick(struct proc *p);
void agent_rx(struct proc *p, const struct ncg_msg *m);
void agent_closed(struct proc *p);
void agent_connected(struct proc *p, int accepted);
void agent_printed(struct proc *p);
void agent_app_done(struct proc *p);
void agent_destroyed(struct proc *p, uint32_t comm, uint32_t crank); /* its GOODBYE */
int agent_hosting_others(void);

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
