/* ncg-sim (tests/sim/README.md): what its files share. ncg_sim.c: the options, the driver and
 * its JSON; sim_run.c: a process's relays and ranks and its loop; sim_link.c: the links (the
 * in-process queue, sockets, the relays' callbacks); sim_rank.c: the virtual ranks. One thread
 * per process: nothing here is locked; every function runs on it and never blocks (except
 * sock_connect's retries while a listener comes up). */
#ifndef NCG_SIM_H
#define NCG_SIM_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include "channel.h"
#include "ncclguard/shm.h"
#include "relay.h"
#include "verdict.h"
#include "wire.h"

#define TOKEN 0x5eed5eedull
#define RING 1024u /* records a rank keeps (the shim's ring) */
#define COMM0 0x51a0000000000000ull

struct sim_args {
    uint32_t ranks, per_node, comms, fanout, workers;
    double rate, seconds, warm_s, event_s;
    int64_t mismatch_rank, kill_rank, kill_relay;
    uint64_t mismatch_slot;
    int json;
    int64_t stop_relay;
    double hb_s;
    int frames;
    int64_t deadlock_rank;
    double after_s;    /* the run goes on this long after the fault */
    double scrape_s;   /* the root process renders the root's /metrics this often (0: never) */
    int scrape_status; /* ... and its /status */
    int64_t slow_rank; /* --slow-rank: this rank arrives late at every sampled slot */
    double slow_pct;   /* ... by this share of the step (percent) */
    int samples;       /* --samples: every rank sends jittered samples, nobody slow */
};
extern struct sim_args A;
extern uint32_t nnodes;
extern uint64_t T0, t_event, t_end, w_start, w_end;
extern pid_t driver;
/* Straggler samples (--slow-rank, --samples) are sent from t_samp on (0: never). */
extern uint64_t t_samp;
/* --deadlock-rank R: from the event on every rank is blocked in slot dl_slot of comm 0 except
 * R, blocked in slot dl_slot of comm 1 first (it takes them in the other order): none
 * completes it, and each sends a WAIT every interval, as blocked processes do. */
extern uint64_t dl_slot;

static inline uint64_t now_ns(void)
{
    return ncg_now_ns();
}

static inline uint32_t parent_of(uint32_t node)
{
    return ncg_relay_parent(node, nnodes, A.fanout);
}

/* ---- the process's objects (sim_run.c) ---- */

struct vr {                     /* a virtual rank: one client process holding one rank */
    uint32_t rank, node, at;    /* at: the node of the relay it talks to */
    uint8_t dead, sock, frozen; /* frozen: its process stopped (--stop-relay) */
    uint64_t rx_ns;             /* its checker was last heard from */
    int relay, conn;            /* in-process link: relay index here and conn id there */
    struct ncg_peer peer;
    uint32_t verdicts;
    uint32_t narrowed; /* QUERYs limited to representatives that reached it */
    uint8_t dirty;     /* its socket has bytes queued, in the flush list */
    uint64_t reports;  /* REPORTs it sent */
    uint64_t got_ns;
    uint8_t kind;
    char subject[NCG_WIRE_STR];
    uint64_t samp_from; /* straggler samples: slots below this were considered */
    uint64_t samp_seen; /* comms (bit c, c < 64) it sent a sample on: a time per slot known */
    uint32_t slows;     /* SLOW warnings received */
    int32_t slow_named; /* the rank the first named */
    uint64_t slow_ns;
};

enum { C_SOCK = 0, C_RANK = 1, C_RELAY = 2 }; /* a child connection's kind (sconn.local) */
struct sconn {
    uint8_t used, local, closing, dirty; /* dirty: in the flush list */
    int vr;                              /* C_RANK: the virtual rank; C_RELAY: the child relay */
    uint32_t gen;                        /* in-process link: frames for an older one are dropped */
    struct ncg_peer p; /* a socket; in-process, only its REPORT references (tref, rref) */
};

struct sr { /* a relay */
    uint32_t node, up_node;
    struct ncg_relay *r;
    int lfd;
    uint8_t dead, up_ok, frozen, up_dirty;
    uint8_t up_local; /* the link up is in-process: conn up_conn of the parent here */
    int up_conn;      /* (its frames go through the queue; up keeps only REPORT references) */
    uint32_t up_gen;
    struct ncg_peer up;
    struct sconn *c;
    int nc;
    uint64_t busy_ns, busy_w0, busy_w1;
};

extern struct vr *V;
extern uint32_t nv;
extern struct sr *R;
extern uint32_t nr;
extern uint32_t node_lo; /* relays hosted here: nodes [node_lo, node_lo + nr) */
extern int ep;
extern uint64_t bytes_local, bytes_inproc; /* sent node-local / between relays in-process */
/* Bytes sent per frame type, [0] node-local (the queue), [1] between relays (--frames). */
extern uint64_t bytes_type[2][NCG_MSG_TYPE_MAX_];
extern uint64_t verdict_ns, root_verdicts;
extern char root_summary[512];
extern uint64_t slow_root_ns, slow_root_n; /* the root's first SLOW warning, and how many */
extern char slow_summary[512];
extern int is_root_proc;

/* What a process sends the driver at the end. */
struct result {
    uint64_t expected, notified, dups, wrong;
    uint64_t first_ns, last_ns;
    uint8_t kind;
    char subject[NCG_WIRE_STR];
    uint64_t verdict_ns, root_verdicts, verified;
    uint64_t narrowed_ranks;             /* virtual ranks a narrowing QUERY reached */
    uint64_t root_rounds, root_narrowed; /* the root's rounds, of which for representatives */
    char summary[512];
    double relay_busy_max;
    uint32_t relay_busy_node;
    uint64_t bytes_win, net_win, reports_win;
    uint64_t type_win[2][NCG_MSG_TYPE_MAX_];
    double cpu_win;
    long rss_kb;
    uint32_t fan_in;
    /* SLOW: ranks that received a warning, more than one, naming another rank than the first */
    uint64_t slow_notified, slow_dups, slow_wrong, slow_first_ns, slow_last_ns;
    int32_t slow_named;
    uint64_t slow_root_ns, slow_root_n;
    char slow_summary[512];
    /* --scrape-s: renders in the window's process (the root's) */
    uint32_t scrapes, scrapes_not_ready;
    double scrape_ms_median, scrape_ms_max;
    double status_wait_ms_max; /* a /status waiting for the figures gather: request to answer */
    uint64_t metrics_bytes, status_bytes;
};

/* Runs process proc (0: the root's) until the end and sends its result on wfd; exits. */
void run_proc(int wfd, int rel, int proc) __attribute__((noreturn));

/* ---- virtual ranks (sim_rank.c) ---- */

void chains_init(void);        /* the digests of every slot, and the sampled slots of every comm */
uint64_t count_at(uint64_t t); /* calls issued by time t */
uint64_t issued_at(uint32_t rank, uint32_t c, uint64_t t); /* ... on comm c (deadlock aside) */
void vr_hello(struct vr *v);              /* its HELLO, the first frame on a link */
void vr_report(struct vr *v, uint64_t t); /* REPORT (and WAIT when blocked) */
void vr_rx(struct vr *v, const struct ncg_msg *m, uint64_t t); /* a frame from its relay */
void vr_reattach(struct vr *v, uint32_t dead_node); /* to the dead relay's parent, a socket */

/* ---- links (sim_link.c) ---- */

/* Where a queued frame goes: a virtual rank; a relay's child connection (from one of its
 * ranks, or from a child relay hosted here); a relay's link up (from its parent hosted here).
 * LQ_EOF_*: the other end closed an in-process relay link (a socket's EOF, after its frames). */
enum { LQ_RANK, LQ_CHILD, LQ_UP, LQ_EOF_CHILD, LQ_EOF_UP };
/* Queues m for the in-process end (kind, idx, conn, gen); net: between relays. */
void lq_push(int kind, int idx, int conn, uint32_t gen, int net, const struct ncg_msg *m,
             struct ncg_report_ref *ref);
void lq_drain(void); /* delivers every queued frame, those queued meanwhile too */
/* A socket's frame, counted per type; key: its epoll key, *dirty: in the flush list */
void net_send(struct ncg_peer *p, const struct ncg_msg *m, uint64_t key, uint8_t *dirty);
void flush_all(void); /* flushes the sockets with bytes queued, closes dropped links */

enum { EK_LISTEN = 1, EK_CHILD = 2, EK_UP = 3, EK_VR = 4 }; /* epoll keys' kinds */
uint64_t ekey(int kind, uint32_t idx, uint32_t conn);       /* an epoll key: kind, index, conn */
void ep_add(int fd, uint64_t key);                          /* fd into the loop's epoll, EPOLLIN */
void sock_name(uint32_t node, struct sockaddr_un *a, socklen_t *len); /* node's listener */
int sock_connect(uint32_t node); /* a connected non-blocking socket, or -1 */
/* Reads a socket and delivers its frames; EOF: closes (and reattaches) as the kind says. */
void peer_read(struct ncg_peer *p, int kind, uint32_t idx, uint32_t conn);

int relay_index(uint32_t node);                   /* its index in R, or -1 when not hosted here */
struct ncg_relay_ops sim_relay_ops(uint32_t idx); /* the callbacks of relay R[idx] */
int conn_new(struct sr *s);                       /* a free child connection of s */
void up_attach(struct sr *s); /* links s to s->up_node (in-process when hosted here) */
void up_close(struct sr *s);  /* closes s's link up, no callback */
void up_lost(struct sr *s);   /* ... and reattaches to the parent's parent */
void child_close(struct sr *s, int conn, int tell); /* tell: the relay hears of it */

/* Runs call, adding its wall time to relay s's busy time. */
#define BUSY(s, call)                                                                              \
    do {                                                                                           \
        uint64_t t0_ = now_ns();                                                                   \
        call;                                                                                      \
        (s)->busy_ns += now_ns() - t0_;                                                            \
    } while (0)

#endif
