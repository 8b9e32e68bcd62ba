/* The checker's verdicts, each kind built in one place from plain figures: the relay tree's
 * root (relay/) gathers the figures from its own tables and calls these. Every function allocates
 * the verdict (error severity unless said otherwise) and returns it, or NULL when out of memory.
 * Pure: no I/O, threads or clock; the caller serializes (tests/checker/unit.c, relay_unit.c). The
 * client's own verdicts (RANK DIED of the checker's host, CHECKER LOST) are agent/client.c's. */
#ifndef NCG_VERDICTS_H
#define NCG_VERDICTS_H

#include <stddef.h>
#include <stdint.h>
#include "deadlock.h"
#include "gonewait.h"
#include "p2pmatch.h"
#include "verdict.h"

/* What every verdict on a communicator carries. */
struct ncg_vcomm {
    uint64_t id;
    uint32_t nranks;     /* the communicator's size */
    int64_t last_agreed; /* its highest slot verified equal everywhere, -1 none */
    /* NULL: no per-rank arrays (the tree's verdicts); else called once to fill v->counts and
     * v->members (nranks each, -1 unknown) */
    void (*ranks)(const void *arg, struct ncg_verdict *v);
    const void *arg;
};

/* RANK DIED's reasons, the coordinator's and every relay's: a connection that closed without a
 * goodbye; one silent past the heartbeat timeout (ncg_v_silent writes it into buf, returned). */
#define NCG_DIED_CLOSED "connection lost without goodbye"
char *ncg_v_silent(char *buf, size_t cap, uint64_t silent_ns);

/* Appends to v->detail that the counts of ranks[0..n) (sorted in place) are as last reported,
 * up to oldest_ns ago (members that stopped reporting: their count is their last word). */
void ncg_v_note_stale(struct ncg_verdict *v, int32_t *ranks, size_t n, uint64_t oldest_ns);
/* The same note appended to the string buf of capacity cap. */
void ncg_v_note_stale_buf(char *buf, size_t cap, int32_t *ranks, size_t n, uint64_t oldest_ns);
/* MISMATCH at slot: calls(arg, v) fills v->calls (and v->subject: the ranks outside the largest
 * group); more: more distinct calls than could be gathered (the tree's answer groups). */
struct ncg_verdict *ncg_v_mismatch(const struct ncg_vcomm *c, uint64_t slot,
                                   void (*calls)(void *arg, struct ncg_verdict *v), void *arg,
                                   int more);
/* P2P MISMATCH of a differing pair (p2pmatch.h). */
struct ncg_verdict *ncg_v_p2p(const struct ncg_vcomm *c, const struct ncg_p2pm_rec pair[2]);
/* RANK DIED of ranks[0..n) (sorted in place); detail: how they were lost (NULL: unknown). */
struct ncg_verdict *ncg_v_rank_died(const struct ncg_vcomm *c, int32_t *ranks, size_t n,
                                    const char *detail);
/* RANK EXITED of who[0..n) (sorted in place), which left after fin calls while others issued up
 * to mx; how: NCG_BYE_ABORT / NCG_BYE_VERDICT when all of them left that way, else 0. */
struct ncg_verdict *ncg_v_exited(const struct ncg_vcomm *c, int32_t *who, size_t n, uint64_t fin,
                                 uint64_t mx, int how);
/* RANK EXITED of comm rank who, which left after fin calls (how: as ncg_v_exited's) while the
 * wait e of another member can never complete without it (gonewait.h): the waiting call, its
 * rank and its call site in calls[0], the words in detail. */
struct ncg_verdict *ncg_v_exited_wait(const struct ncg_vcomm *c, int32_t who, uint64_t fin, int how,
                                      const struct ncg_wait_ent *e);
/* LAG of who[0..n) (sorted in place; more: more laggards than listed) at counts mn..mx, after
 * idle seconds without progress; act: an error, else a warning. */
struct ncg_verdict *ncg_v_lag(const struct ncg_vcomm *c, int32_t *who, size_t n, int more, int act,
                              uint64_t mn, uint64_t mx, double idle);

/* SLOW (always a warning) of comm rank `rank` (global rank grank, pid on host; grank -1 / pid
 * 0 / host "" unknown, host NULL unknown where it is decided, the relay tree's root: the words
 * say "on an unknown host"): the others lose share (0..1) of the step waiting for it, for
 * since_s seconds; device: its stream starts the collective late (else its host issues it
 * late). The figures go into v->slow, subject and detail are their words. */
struct ncg_verdict *ncg_v_slow(const struct ncg_vcomm *c, int32_t rank, int32_t grank, uint32_t pid,
                               const char *host, double share, double since_s, int device);
/* The end of rank's SLOW episode (v->slow.ended; since_s: how long it lasted): sent to the
 * members like the warning, so that their status stops naming it, but neither printed nor
 * counted among the job's verdicts (ncg_v_counted). Allocates. */
struct ncg_verdict *ncg_v_slow_end(const struct ncg_vcomm *c, int32_t rank, int32_t grank,
                                   uint32_t pid, const char *host, double since_s);

/* Whether a LAG or STUCK is due after idle seconds without progress: 2 an error (past abort_s,
 * when set), 1 a warning (past warn_s, when set, unless warned of already), else 0. */
int ncg_v_due(double idle, double warn_s, double abort_s, int warned);
/* LAG's: 0 when the active members' counts mn..mx agree (mn UINT64_MAX: none active; the warning
 * is then forgotten: *warned = 0), else ncg_v_due's. */
int ncg_v_lag_due(uint64_t mn, uint64_t mx, double idle, double warn_s, double abort_s,
                  uint8_t *warned);

/* STUCK's figures: the first slot some member has not completed lies in [k, khi]. */
struct ncg_stuck_fig {
    uint64_t k, khi;
    double idle;  /* seconds without progress */
    int act;      /* an error, else a warning */
    int32_t *who; /* [n] ranks that have not completed slot k (sorted in place) */
    size_t n;
    uint64_t nstalled;           /* how many ranks have not (at least n) */
    int whole;                   /* nstalled covers every rank: named "0-N" whatever who says */
    const struct ncg_call *call; /* the call at slot k, or NULL */
    const char *site;            /* its call site ("" or NULL: none) */
    const char *tail;            /* the caller's lines after STUCK's own in the notes, or NULL */
};
/* STUCK. Its notes are NULL when they could not be allocated. */
struct ncg_verdict *ncg_v_stuck(const struct ncg_vcomm *c, const struct ncg_stuck_fig *s);
/* DEADLOCK of comm ci of cycle f over the comms dc (deadlock.h), with the cycle's notes. */
struct ncg_verdict *ncg_v_deadlock(const struct ncg_vcomm *c, const struct ncg_dl_cycle *f,
                                   const struct ncg_dl_comm *dc, size_t ci, const char *notes);

#endif
