/* The agent's link to one checker as a state machine: connecting, HELLO sent, registered, lost
 * and retried, down for good, and a relay tree's route (this node's relay, or fallen back to the
 * tree's root). It takes events with the time (and what it must observe of the process) and
 * returns what to do; the driver (agent/link.c, lost.c) owns the sockets, the clock, the lock,
 * the logging and the verdicts. Pure: no I/O, no clock, no configuration (timings come from
 * params.h's `link` section). */
#ifndef NCG_MACHINE_LINK_SM_H
#define NCG_MACHINE_LINK_SM_H

#include <stdint.h>
#include "params.h"

/* A link's states. The values are also the agent's `ncg_link.state` (its other files read it):
 * the order CONNECTING < HELLO < UP matters to them. */
enum {
    NCG_LINK_FREE = 0,   /* not made */
    NCG_LINK_CONNECTING, /* connect() under way */
    NCG_LINK_HELLO,      /* connected, HELLO sent, its WELCOME awaited */
    NCG_LINK_UP,         /* registered (WELCOME came) */
    NCG_LINK_DOWN,       /* down for good: unreachable, refused, it left, or a verdict named it */
    NCG_LINK_RETRY,      /* lost, or no node relay yet: connected again at retry_ns */
};

/* Where the link goes. */
enum { NCG_ROUTE_FLAT = 0, NCG_ROUTE_RELAY, NCG_ROUTE_ROOT };

struct ncg_link_sm {
    uint8_t state;       /* NCG_LINK_* */
    uint8_t route;       /* NCG_ROUTE_*: a relay tree's link goes to its node's relay or its root */
    uint8_t root_node;   /* this process is on the tree's root node (its relay is the root's) */
    uint8_t local0;      /* this process is LOCAL_RANK 0: its node's relay from the start */
    uint8_t coord;       /* NCCLGUARD_COORD: a standalone checker, a token the user set */
    uint8_t embedded;    /* the WELCOME said: the checker lives in a job process */
    uint8_t welcomed;    /* a WELCOME came once (embedded is known) */
    uint8_t attempt;     /* connects in this try (a second one after becoming the node relay) */
    uint8_t acted;       /* the CHECKER LOST clock is not to be acted on (done, or none) */
    uint8_t reelect;     /* its node relay left: any process may become the next at once */
    uint8_t tree_said;   /* the node relay's name unreachable was said (once) */
    uint64_t born_ns;    /* made: in its first relay_elect only LOCAL_RANK 0 becomes the relay */
    uint64_t start_ns;   /* the current connect began */
    uint64_t last_rx_ns; /* the checker last sent something (or the connect began) */
    uint64_t lost_ns;    /* lost since (0: not lost): retried, CHECKER LOST clock running */
    uint64_t retry_ns;   /* RETRY: connect again at this time (UINT64_MAX: never) */
    uint64_t tree_fail_ns; /* the node relay's name unreachable since (0: reachable) */
};

/* What starts a step. */
enum ncg_link_evt {
    NCG_LEV_START,       /* the link is made: connect */
    NCG_LEV_CONNECT,     /* result of NCG_LA_CONNECT: ev.conn */
    NCG_LEV_RELAY,       /* result of NCG_LA_BECOME_RELAY: ev.relay_ok */
    NCG_LEV_CONNECT_ERR, /* the connect failed (SO_ERROR) */
    NCG_LEV_WRITABLE,    /* the connect completed */
    NCG_LEV_WELCOME,     /* ev.embedded */
    NCG_LEV_MESSAGE,     /* any other message (QUERY, VERDICT, RELEASE) */
    NCG_LEV_SHUTDOWN,    /* ev.flags (NCG_BYE_*), ev.releasing, ev.exiting, ev.own_stopped */
    NCG_LEV_CLOSED,      /* the connection closed or a read or write failed; ev.releasing ... */
    NCG_LEV_NOMEM,       /* our own shortage on its side channel */
    NCG_LEV_CLOCK,       /* each loop: timeouts (connect, silence); ev.exiting, ev.releasing */
    NCG_LEV_TICK,        /* each loop while not exiting: a retry due, the CHECKER LOST clock */
    NCG_LEV_ACTED,       /* the driver acted on CHECKER LOST (NCG_LA_CHECK_LOST) */
    NCG_LEV_RESUMED,     /* this thread was suspended: the checker's silence is not its own */
};

enum { NCG_CONN_OK = 0, NCG_CONN_INPROGRESS, NCG_CONN_REFUSED };

struct ncg_link_ev {
    int type; /* enum ncg_link_evt */
    uint64_t now;
    uint32_t flags;      /* SHUTDOWN's NCG_BYE_* */
    uint8_t conn;        /* CONNECT: NCG_CONN_* */
    uint8_t relay_ok;    /* RELAY: this process is (or another just became) the node's relay */
    uint8_t embedded;    /* WELCOME */
    uint8_t exiting;     /* the application is exiting */
    uint8_t releasing;   /* an abort waits for RELEASEs of verdicts */
    uint8_t own_stopped; /* SHUTDOWN FAILED: this process's own checker is the one (said) */
    uint8_t why;         /* CLOSED: NCG_WHY_* (0: NCG_WHY_CLOSED) */
};

/* What the driver does, in this order. */
enum {
    NCG_LA_CLOSE = 1 << 0,        /* close the connection */
    NCG_LA_TO_ROOT = 1 << 1,      /* the address becomes the tree's root's */
    NCG_LA_NAME_ROOT = 1 << 2,    /* ... and the link's name the root's */
    NCG_LA_KEEP_WHY = 1 << 3,     /* keep the loss's cause (why) for CHECKER LOST */
    NCG_LA_LOST_CLOCK = 1 << 4,   /* start the CHECKER LOST clock of its comms */
    NCG_LA_TAKE_BYE = 1 << 5,     /* take the SHUTDOWN's counts into its comms */
    NCG_LA_RELEASE_ALL = 1 << 6,  /* no RELEASE will come on it: every one awaited is over */
    NCG_LA_RANK_DIED = 1 << 7,    /* judge RANK DIED of the checker's process locally */
    NCG_LA_CHECK_LOST = 1 << 8,   /* judge CHECKER LOST of its stalled comms (then ACTED) */
    NCG_LA_REPORT_NOW = 1 << 9,   /* report at once */
    NCG_LA_ACCEPT = 1 << 10,      /* MESSAGE: registered, the message is to be handled */
    NCG_LA_HELLO = 1 << 11,       /* send HELLO */
    NCG_LA_CONNECT = 1 << 12,     /* connect to the address (then a CONNECT event) */
    NCG_LA_BECOME_RELAY = 1 << 13 /* become the node's relay (then a RELAY event) */
};

/* The loss's cause (the driver's words for it). */
enum {
    NCG_WHY_NONE = 0,
    NCG_WHY_CLOSED,          /* connection lost */
    NCG_WHY_SILENT,          /* silent for the heartbeat timeout */
    NCG_WHY_CONNECT_TIMEOUT, /* connect timed out */
    NCG_WHY_ROOT_LOST,       /* the node relay said the tree's root was lost */
    NCG_WHY_SHUT_DOWN,       /* a standalone checker said it shut down */
};

/* The line to log (the driver's words for it). */
enum {
    NCG_LSAY_NONE = 0,
    NCG_LSAY_UNREACHABLE,      /* cannot reach it (the connect's error): unguarded */
    NCG_LSAY_UNREACHABLE_WHY,  /* cannot reach it (why): unguarded */
    NCG_LSAY_REFUSED,          /* closed after our HELLO with NCCLGUARD_COORD: wrong token? */
    NCG_LSAY_CLOSED_EARLY,     /* closed after our HELLO (zero-config: it failed) */
    NCG_LSAY_LEFT_EXITING,     /* (debug) it left before accepting this exiting process */
    NCG_LSAY_LOST,             /* lost a standalone (or unanswering) checker: retrying */
    NCG_LSAY_SHUT_DOWN,        /* a standalone checker shut down: retrying */
    NCG_LSAY_FAILED,           /* the checker stopped (out of memory): unguarded */
    NCG_LSAY_BYE,              /* (debug) the checker shut down (its process exited) */
    NCG_LSAY_NOMEM,            /* our own shortage: unguarded */
    NCG_LSAY_FALLBACK,         /* (debug) lost the node relay: reporting to the root */
    NCG_LSAY_TREE_UNREACHABLE, /* the node relay unreachable for tree_say: still trying */
    NCG_LSAY_ATTACHED,         /* (debug) attached (again) to a tree */
    NCG_LSAY_RECONNECTED,      /* reconnected to a standalone checker */
};

struct ncg_link_do {
    uint32_t act; /* NCG_LA_* */
    uint8_t say;  /* NCG_LSAY_* */
    uint8_t why;  /* NCG_WHY_*: the loss's cause (KEEP_WHY, RANK_DIED, say) */
};

/* A link made at now (pure): route from the id's tree (tree: the id names one; relay: this
 * process's node is known, so it goes to the node's relay; root_node: that node is the root's). */
void ncg_link_sm_init(struct ncg_link_sm *sm, int tree, int relay, int root_node, int local0,
                      int coord, uint64_t now);
/* One event (pure, no allocation): the state moves, and what to do comes back. */
struct ncg_link_do ncg_link_sm_step(struct ncg_link_sm *sm, const struct ncg_link_ev *ev,
                                    const struct ncg_agent_params *p);
/* When the link wants the next TICK (a retry): UINT64_MAX when none is due (pure). */
uint64_t ncg_link_sm_wake_ns(const struct ncg_link_sm *sm);
/* The checker is known to be standalone (NCCLGUARD_COORD, or its WELCOME said so) (pure). */
int ncg_link_sm_standalone(const struct ncg_link_sm *sm);

#endif
