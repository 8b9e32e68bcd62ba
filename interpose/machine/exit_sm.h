/* The exit of a guarded process as one state machine (pure): an abort verdict's (DONE, GOODBYEs,
 * the wait for RELEASE, the flush, _exit), a clean exit's (GOODBYEs once the links came up, the
 * checker's host staying for its clients, done), and holding other processes' exit releases.
 * Events and the time in, what to do out (struct ncg_exit_out); agent/exit.c is the driver that
 * owns sockets, clock, locks and the messages. docs/checker.md, "The exit release".
 *
 * Phases. The abort side: NONE -> WAITING (its RELEASE; skipped when the verdict was decided
 * here, its link is not up or the release is off) -> ARMED (_exit once the verdict is flushed to
 * this process's clients, at abort_at_ns + abort_past at the latest) -> ROOT_LEFT (a tree's root
 * said it leaves first) -> _exit. The clean side: RUNNING -> LINKS (exit requested, GOODBYEs wait
 * for the links still connecting) -> STAYING (the checker's host, GOODBYEs sent, while processes
 * it checks run) -> SENT -> DONE. Holding (either side): this process's checker holds other
 * processes' exit releases; its SHUTDOWN is deferred (sd_deferred) and its exit waits, until
 * hold_until_ns at the latest.
 *
 * The overlaps, decided (one phase governs, the other is told so):
 * - Two error verdicts: the first that ends the process governs. Any later one, applied or not
 *   (a second VERDICT, a RANK EXITED judged inside the first's REPORT: ncg_exit_sm_ending() is
 *   already true when that REPORT goes, so it is not shown), gets DONE and, while WAITING, its
 *   RELEASE is awaited too (when its link is up); never a second set of GOODBYEs, never a new
 *   phase, never an earlier exit than the first's.
 * - A clean exit beside an abort: the abort governs. A clean exit requested while the abort
 *   side is not NONE sends nothing of its own (the abort's GOODBYEs, flagged as the verdict's,
 *   went), never stays and is never done: the abort's _exit ends the process with its status.
 *   (An abort verdict never starts once a clean exit was requested: apply.c shows it as
 *   "finished", must_exit 0.)
 * - Holding beside an abort: the abort's own exit and root leaving wait for the hold (bounded).
 * All functions: the checker thread only (the machine is its own), do not block or allocate. */
#ifndef NCG_MACHINE_EXIT_SM_H
#define NCG_MACHINE_EXIT_SM_H

#include <stdint.h>
#include "params.h"

enum ncg_exit_abort { NCG_XA_NONE = 0, NCG_XA_WAITING, NCG_XA_ARMED, NCG_XA_ROOT_LEFT };
enum ncg_exit_clean { NCG_XC_RUNNING = 0, NCG_XC_LINKS, NCG_XC_SENT, NCG_XC_STAYING, NCG_XC_DONE };

#define NCG_EXIT_MAX_REL 64 /* verdicts whose RELEASE one abort may await */

/* The host's stay view (the root's figures, relayhost.h's ncg_host_stay): other processes
 * connected with active ranks and no last goodbye (procs), connected without registering
 * (unreg), members of its comms never registered (unknown), this process's own goodbye not
 * read yet (self_pending), the latest a process connected (newest_ns). */
struct ncg_exit_stay_view {
    int procs, unreg, unknown, self_pending;
    uint64_t newest_ns;
};

/* What the driver sees, each tick and finish (it fills what the machine reads there). */
struct ncg_exit_obs {
    int exiting;        /* the application asked to exit (atexit) */
    int aborting;       /* an abort verdict is being applied (apply.c, before it is shown) */
    int connecting;     /* links still connecting (or waiting for their checker's WELCOME) */
    int unreg_link;     /* of those, one carrying comms no REPORT registered, or -1 */
    int hosted_waiting; /* this process's checker still waits for other processes' DONEs */
    int root_up, root_flat, rh_up; /* its checker (flat: a tree of one node), its node relay */
    int pending;    /* armed: bytes and connections of our checker and relay not flushed */
    int tx_pending; /* clean: bytes queued on any live connection */
    int stay_ok;    /* stay holds the view (ncg_exit_sm_stay_view_due); 0: none could be had */
    struct ncg_exit_stay_view stay;
    uint64_t last_report_ns; /* the thread's last REPORT or keepalive */
};

/* What to do, in this order (the driver executes the bits set). */
enum {
    NCG_XO_DONE = 1u << 0,         /* DONE for done_comm on link done_link (if up) */
    NCG_XO_LOG_UNREG = 1u << 1,    /* line: exits before link log_link's checker accepted it */
    NCG_XO_REPORT = 1u << 2,       /* a REPORT (registers comms not reported yet) */
    NCG_XO_GOODBYES = 1u << 3,     /* GOODBYEs (bye_flags) and the SHUTDOWN built; it goes to our
                                      clients unless only_bye */
    NCG_XO_LOG_STAY = 1u << 4,     /* line, once: the host stays for log_n processes */
    NCG_XO_KEEPALIVE = 1u << 5,    /* an empty REPORT (liveness); last_report_ns = now */
    NCG_XO_DEBUG_STAYED = 1u << 6, /* debug: the host stayed stayed_s seconds */
    NCG_XO_SD_REBUILD = 1u << 7,   /* rebuild the SHUTDOWN (counts of those that left meanwhile) */
    NCG_XO_ROOT_LEAVES = 1u << 8,  /* our checker (tree root) leaves with the SHUTDOWN */
    NCG_XO_RELAY_LEAVES = 1u << 9, /* our node relay leaves with the SHUTDOWN */
    NCG_XO_DEBUG_NO_RELEASE = 1u << 10, /* debug: no RELEASE within bound_s seconds */
    NCG_XO_EXIT_NOW = 1u << 11,         /* _exit with the verdict's status */
    NCG_XO_CLEAN_DONE = 1u << 12,       /* the clean exit is done: wake the at-exit waiter */
};

struct ncg_exit_out {
    unsigned what;
    int done_link;
    uint64_t done_comm;
    uint8_t bye_flags, only_bye;
    int log_link, log_n;             /* LOG_UNREG's link, LOG_STAY's count */
    double reg_s, stayed_s, bound_s; /* LOG_UNREG's, DEBUG_STAYED's, DEBUG_NO_RELEASE's seconds */
};

struct ncg_exit_sm {
    const struct ncg_agent_params *p;
    enum ncg_exit_abort abort;
    enum ncg_exit_clean clean;
    /* abort: WAITING until release_until_ns for rel[]; ARMED: _exit at abort_at_ns (flushed
     * sooner); hold_until_ns bounds holding others */
    uint64_t release_until_ns, abort_at_ns, hold_until_ns;
    struct {
        uint64_t comm_id;
        int link;
        uint8_t released;
    } rel[NCG_EXIT_MAX_REL];
    int nrel;
    int sd_deferred; /* the SHUTDOWN waits (a release, holding others, the host's stay) */
    int hold;        /* this tick: holding others' exit releases */
    /* clean: gives up at deadline_ns; GOODBYEs went at sent_ns; a link that must register us
     * awaited since reg_ns; the stay: since stay_ns, join_ns the latest a process connected,
     * eval_ns its last view; over (never again), said its line */
    uint64_t deadline_ns, sent_ns, reg_ns, stay_ns, join_ns, eval_ns;
    int stay_over, stay_said;
    /* what the at-exit waiter reads (the driver publishes them as atomics after each call) */
    int registering, staying, holding;
};

/* A machine at rest (RUNNING, NONE) on p (kept: it must outlive the machine). */
void ncg_exit_sm_init(struct ncg_exit_sm *m, const struct ncg_agent_params *p);
/* An abort verdict ends this process (WAITING or later): no other verdict is shown. Any thread
 * may read it as a hint; the checker thread's view is exact. */
static inline int ncg_exit_sm_ending(const struct ncg_exit_sm *m)
{
    return m->abort != NCG_XA_NONE;
}
/* A verdict that was shown and reported: its severity is error; the action ends the process
 * (must_exit); the link it came on (-1: decided here) and whether that link is up. */
struct ncg_exit_verdict {
    int error, must_exit, link, link_up;
    uint64_t comm;
};
/* A verdict applied (o: root_up, rh_up read). */
struct ncg_exit_out ncg_exit_sm_verdict(struct ncg_exit_sm *m, const struct ncg_exit_verdict *v,
                                        const struct ncg_exit_obs *o, uint64_t now);
/* An error verdict that reached a process already ending (not shown). */
struct ncg_exit_out ncg_exit_sm_verdict_ending(struct ncg_exit_sm *m, uint64_t comm, int link,
                                               int link_up);
/* comm's RELEASE came on link (comm 0: all of link's, its checker gone or the link lost); the
 * last one awaited arms the exit (o: root_up, rh_up read). */
void ncg_exit_sm_release(struct ncg_exit_sm *m, uint64_t comm, int link,
                         const struct ncg_exit_obs *o, uint64_t now);
/* 1: the next tick reads the stay view (the driver fills o->stay and o->stay_ok first). */
int ncg_exit_sm_stay_view_due(const struct ncg_exit_sm *m, const struct ncg_exit_obs *o,
                              uint64_t now);
/* Each loop, before the links' work: GOODBYEs, the stay, a deferred SHUTDOWN, a relay leaving. */
struct ncg_exit_out ncg_exit_sm_tick(struct ncg_exit_sm *m, const struct ncg_exit_obs *o,
                                     uint64_t now);
/* Each loop, after the links' work: a release that never came, the abort's _exit, a clean exit
 * done (then DONE, and the machine takes nothing more). */
struct ncg_exit_out ncg_exit_sm_finish(struct ncg_exit_sm *m, const struct ncg_exit_obs *o,
                                       uint64_t now);
/* 1: the loop polls every 10 ms (an exit under way; a host's long stay excepted). */
int ncg_exit_sm_fast(const struct ncg_exit_sm *m, int exiting, uint64_t now);

#endif
