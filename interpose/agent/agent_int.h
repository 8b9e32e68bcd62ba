/* The checker thread's private state and the functions its files share: not for the rest of the
 * agent layer. Unless a function says otherwise it runs on the checker thread only, does not
 * block (the network is non-blocking) and does not allocate; "under lk" means the caller holds
 * ncg_agent.lk. The files call only downwards, in the order of the sections below (bottom
 * first; tests/shim/t_agentcalls.sh): state.c <- linkio.c <- apply.c <- report.c <- exit.c <-
 * lost.c <- link.c <- thread.c <- client.c, checker.c. */
#ifndef NCG_AGENT_INT_H
#define NCG_AGENT_INT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include "channel.h"
#include "config.h"
#include "exit_sm.h"
#include "ncclguard/nccl_abi.h"
#include "link_sm.h"
#include "local.h"
#include "params.h"
#include "relayhost.h"
#include "wire.h"

struct ncg_comm;
struct ncg_shm_comm;
struct ncg_shm_record;
struct ncg_verdict;

#define NCG_MAX_LINKS 16 /* checkers one process reports to */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NCG_THREAD_STACK (4u << 20) /* sanitizers' frames are larger */
#else
#define NCG_THREAD_STACK (512u << 10) /* the checker thread's stack */
#endif

/* A relay tree as an id's tail announces it (link.c's coord_for). */
struct ncg_tree {
    uint8_t on;
    uint32_t root_node, nnodes, fanout, node; /* node: this process's */
    int32_t root_grank;                       /* the root's process's global rank, or -1 */
    struct sockaddr_storage root;             /* the root's TCP listener */
    socklen_t root_len;
};

/* A link to a checker: its state machine (link_sm.h) decides, link.c and lost.c drive it. */
struct ncg_link {
    uint64_t nrx, ntx, up_ns; /* traffic of closed connections, time it came up */
    int state; /* sm.state, copied after each of its steps: what the other files read */
    struct ncg_link_sm sm;
    struct ncg_peer io;
    struct sockaddr_storage addr, key; /* key: the address the id named (addr may move to the
                                          tree's root) */
    socklen_t alen, klen;
    char name[300];
    uint64_t token;
    struct ncg_msg_welcome w;
    uint8_t waited;     /* the last WAIT sent was not empty (an empty one clears it) */
    char lost_why[96];  /* what made it lost (CHECKER LOST says it) */
    int err;            /* the last connect's errno (for "cannot reach") */
    struct ncg_tree tr; /* tr.on: the link goes to this node's relay (a Unix name), else flat */
};

/* 1 when l belongs to a relay tree: to its node's relay (tr.on), or fallen back from a lost
 * one to the tree's root (tr.on cleared, the root's address kept). */
static inline int ncg_link_in_tree(const struct ncg_link *l)
{
    return l->tr.root_len != 0;
}

struct ncg_lcomm {
    struct ncg_comm *c;       /* NULL once removed */
    struct ncg_shm_comm *shm; /* NULL once removed (its slot may be reused) */
    uint64_t id;
    int32_t rank, nranks;
    int link; /* -1 not resolved yet, -2 unguarded */
    uint64_t p2p_next;
    uint64_t final;
    struct ncg_sd_facts sd; /* what its checker's SHUTDOWN said of it (local.h) */
    uint8_t removed;
    uint8_t aborted;                 /* removed by ncclCommAbort: its GOODBYE says so */
    uint64_t lost_cnt, lost_prog_ns; /* its link's checker lost: last count seen, and when */
    /* after that SHUTDOWN: this rank's completed count, and when it last moved (a slot the
     * departed process issued but never ran: ncg_local_exited_wait) */
    uint64_t sd_done, sd_done_ns;
    unsigned char uid[NCCL_UNIQUE_ID_BYTES];
    uint64_t blocked_prev[2]; /* 1 + the oldest incomplete slot / p2p index seen last report */
    uint8_t reported;         /* a REPORT carried it (else its GOODBYE goes with a first REPORT) */
    /* An application thread waits in ncg_channel_announce until the REPORT that registers it
     * is written to its link's socket: announce 1 until then (2 once a REPORT was sent early
     * for it), 0 when out or given up; announce_mark the link's byte count (io.ntx) at which
     * that REPORT is out, 0 before it was queued. */
    uint8_t announce;
    uint64_t announce_mark;
};

struct ncg_agent {
    pthread_mutex_t lk;
    pthread_cond_t cv;
    pthread_cond_t ann_cv; /* with lk: an announced comm's REPORT is out (ncg_announce_tick) */
    int started;
    pid_t pid;
    pthread_t th;
    int wake[2];
    /* comms (under lk) */
    struct ncg_lcomm *lc;
    size_t nlc, caplc;
    /* the checker of the ids this process makes: a relay tree's root (made under lk, then owned
     * by the thread once published; have_root __atomic), of one node for a flat job */
    struct ncg_rhost *root;
    int have_root;
    int root_failed;           /* it could not start: later ids run unguarded too */
    int root_flat;             /* the root of a one-node tree: the ids' tails stay flat */
    struct ncg_tree root_tree; /* the root's layout, written into the ids' tails */
    uint16_t port;
    uint64_t token;
    /* this process's node relay of another process's tree (made by the thread alone: link.c;
     * one per process) */
    struct ncg_rhost *rh;
    int have_rh;
    /* exit handshake (under lk): the application asked to exit; the thread said it is done */
    int exiting, exit_done;
    /* thread-owned */
    struct ncg_link link[NCG_MAX_LINKS];
    int nlink;
    uint64_t last_report_ns;
    /* the exit's state machine (machine/exit_sm.h; exit.c drives it): the checker thread's */
    struct ncg_exit_sm exit;
    /* what the at-exit waiter reads while the exit runs (exit.c publishes them from the
     * machine after each tick) */
    int holding;     /* __atomic: ncg_exit_at_exit extends its wait meanwhile */
    int registering; /* __atomic: a clean exit waits for a link to register this process (the
                      * same extension) */
    int staying;     /* __atomic: a clean exit of the checker's host stays for the processes it
                      * checks (exit.c): ncg_exit_at_exit waits as long */
    int aborting; /* __atomic: an abort verdict is being applied; a clean exit waits for its _exit
                   */
};

/* How long a creating thread waits for its comm's REPORT, and how long a link may take to come
 * up before nobody waits for it any more (client.c, thread.c). */
#define NCG_ANNOUNCE_NS 1000000000ull

/* state.c */
extern struct ncg_agent ncg_agent;
/* The agent's timings and thresholds (params.h), built from the configuration when the thread
 * starts; the checker thread's. */
extern struct ncg_agent_params ncg_params;
/* Any thread. */
int ncg_rh_up(void);        /* this process hosts a relay that runs */
int ncg_root_up(void);      /* this process's checker (a root) runs */
int ncg_ending(void);       /* an abort verdict is ending this process (checker thread) */
int ncg_exiting(void);      /* the application is exiting (reads exiting under lk; not with lk) */
void ncg_wake_thread(void); /* wakes the thread's poll() */
const struct ncg_launch_ranks *ncg_launch(void); /* the launcher's ranks, read once */
int32_t ncg_global_rank(void);
/* A relay's parameters from this process's configuration. Pure. */
struct ncg_rhost_params ncg_agent_rhost_params(uint64_t tok, uint32_t node, uint32_t root,
                                               uint32_t nnodes, uint32_t fanout);

/* linkio.c */
void ncg_link_close(struct ncg_link *l);
void ncg_link_send(struct ncg_link *l, const struct ncg_msg *m);

/* apply.c */
/* What a verdict applied asks of the exit (exit.c's ncg_exit_after_verdict): shown 0, nothing. */
struct ncg_applied {
    int shown, error, must_exit;
    uint64_t comm_id;
};
/* Applies a verdict (li: the link it came on, -1: decided here); takes lk; may capture stacks
 * (~300 ms). Does not end the process: its caller hands the result to the exit (ncg_exit_apply). */
struct ncg_applied ncg_apply_verdict(struct ncg_verdict *v, int li);

/* report.c: REPORT, GOODBYEs, WAITs and p2p records to every link; takes lk. Returns a RANK
 * EXITED it decided alone (NULL: none; allocated: the caller frees it), not applied: its
 * caller applies it (ncg_exit_report). */
struct ncg_verdict *ncg_client_report(uint64_t now);
/* Checker thread, each interval once this process said its GOODBYEs and awaits its exit (an
 * abort verdict's RELEASE: ncg_ending()): an empty REPORT on each link that is up, the
 * liveness its checker reads, with no counts (it reads none after a process's GOODBYE). */
void ncg_client_keepalive(void);
/* The comms this process destroyed and said goodbye for (they leave ncg_agent.lc), for its
 * SHUTDOWN (exit.c): its own coordinator may not have read that goodbye when the process exits.
 * With the comm rank it held there: the SHUTDOWN's first entry names it (the exit's REPORT
 * removes a destroyed comm before the SHUTDOWN is built; without its rank a late rank could name
 * the host only if the host's checker had read the host's own GOODBYE by then). The latest
 * NCG_WIRE_MAX_COMMS, checker thread only. */
struct ncg_left_own {
    uint64_t id, final;
    uint32_t rank;
};
extern struct ncg_left_own ncg_left_own[NCG_WIRE_MAX_COMMS];
extern unsigned ncg_left_own_n;

/* exit.c: the exit sequence (its phases: machine/exit_sm.h) */
/* Applies v (ncg_apply_verdict: takes lk, may capture stacks) and hands what it says to the
 * exit (ncg_exit_after_verdict): may end the process. v stays the caller's. */
void ncg_exit_apply(struct ncg_verdict *v, int li, uint64_t now);
/* ncg_client_report, and the RANK EXITED it returned applied (unless ending) and freed; takes
 * lk. */
void ncg_exit_report(uint64_t now);
/* After a verdict was shown: DONE, and an abort's GOODBYEs and wait for RELEASE; takes lk. */
void ncg_exit_after_verdict(int error, int must_exit, uint64_t comm_id, int li, uint64_t now);
/* An error verdict while ending: DONE, and its RELEASE awaited too. */
void ncg_exit_verdict_while_ending(uint64_t comm_id, int li);
/* comm_id's RELEASE came on li (0: every one of li, its checker gone). */
void ncg_exit_release_got(uint64_t comm_id, int li, uint64_t now);
/* GOODBYEs to every checker, our SHUTDOWN to our clients unless only_bye; takes lk. */
void ncg_exit_messages(uint8_t flags, int only_bye);
/* 1 while an abort verdict waits for its RELEASE (a link lost then releases it). */
int ncg_exit_awaiting_release(void);
/* The thread loop's exit steps: before the links' work, and after it (1: the thread ends;
 * an abort's _exit there does not return). */
void ncg_exit_tick(int exiting, uint64_t now);
int ncg_exit_finish(int exiting, uint64_t now);
/* atexit handler: any thread; blocks up to ~1 s (longer while an abort verdict is under way). */
void ncg_exit_at_exit(void);

/* lost.c: the machine's actions on a lost checker (link_sm.h's NCG_LA_*): the CHECKER LOST
 * clock of li's comms starts (takes lk); RANK DIED of the checker's process, judged here (takes
 * lk, may end the process); CHECKER LOST of li's stalled comms (takes lk; 1: acted); the link's
 * name becomes its tree's root's. */
void ncg_lost_clock_start(int li, uint64_t now);
void ncg_lost_rank_died(int li, const char *why, int rootlost, uint64_t now);
int ncg_lost_check(int li, uint64_t now);
void ncg_lost_name_root(struct ncg_link *l);

/* link.c */
void ncg_link_connect(struct ncg_link *l, uint64_t now); /* may become the node's relay */
void ncg_resolve_links(uint64_t now);                    /* takes lk */
void ncg_link_io(int li, short rev, uint64_t now);
/* One event of link li's machine (link_sm.h), and what it says done, its follow-ups (a
 * connect's result) included; why: the cause's words (NULL: the machine's). Returns every
 * NCG_LA_* done. Takes lk for some actions: not under lk, except for NCG_LEV_START. */
unsigned ncg_link_drive(int li, struct ncg_link_ev ev, const char *why);
/* Each loop: every link's timeouts (connect, a silent checker). */
void ncg_links_clock(int exiting, uint64_t now);
/* This thread was suspended (not the checkers): their silence clocks restart now. */
void ncg_links_resumed(uint64_t now);

/* A lost checker (the machine's loss fed to it: the drive above): the coordinator's process
 * vanished (connection lost, or silent); rootlost: the node's relay said the tree's root is gone
 * (its SHUTDOWN NCG_BYE_ROOT). */
void ncg_link_lost(int li, const char *why, uint64_t now);
void ncg_link_lost_as(int li, const char *why, int rootlost, uint64_t now);
void ncg_checker_lost_tick(uint64_t now); /* takes lk */

/* thread.c: each loop, before the REPORT: the comms application threads wait to see
 * registered (ncg_channel_announce); wakes the ones whose REPORT is out, or that cannot be
 * (link down, unguarded, exiting, connecting for over 1 s). 1: a REPORT is due now for them.
 * Takes lk. */
int ncg_announce_tick(int exiting, uint64_t now);

/* Starts the checker thread once per process; under lk; 0 or -errno. */
int ncg_start_thread_locked(void);

#endif
