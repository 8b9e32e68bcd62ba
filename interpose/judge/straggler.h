/* Stragglers (SLOW): which rank of a communicator the others wait for, from per-rank durations
 * of sampled collective slots, never from clocks of different hosts. Within one collective every
 * member finishes at about the same moment, so a member's time inside slot k (issue to
 * completion, on its own clock) is finish_k - arrival_i: the rank everyone waits for has the
 * SHORTEST duration, and what the others lose at slot k is their mean duration minus it.
 * Per sampled slot the figures merge as min, argmin, sum and count (a relay tree can merge them
 * the same way); per communicator a window of the latest slots decides. Pure: no I/O, threads
 * or clock (the caller passes the time); one caller at a time per state. */
#ifndef NCG_STRAGGLER_H
#define NCG_STRAGGLER_H

#include <stddef.h>
#include <stdint.h>

#define NCG_SG_WIN_MAX 64u /* the largest window */

/* Where the named rank is late (the side of its minimum). */
enum ncg_sg_side {
    NCG_SG_HOST = 0,   /* its host issued the call late (its stream was idle, or no stream) */
    NCG_SG_DEVICE = 1, /* its stream was still busy when the call was issued: the GPU is late */
};

/* One sampled slot, merged over the ranks that measured it. Plain figures: mergeable. */
struct ncg_sg_slot {
    uint64_t slot;
    uint32_t n;       /* ranks merged */
    int32_t argmin;   /* comm rank with the shortest duration; -1 on a tie (nobody) */
    uint8_t side;     /* enum ncg_sg_side of argmin */
    uint64_t min_ns;  /* the shortest duration */
    uint64_t sum_ns;  /* sum of the durations */
    uint64_t step_ns; /* sum of the ranks' time per slot (their own period / slots between) */
};

/* The slot's empty accumulator (n = 0). Pure. */
void ncg_sg_slot_init(struct ncg_sg_slot *a, uint64_t slot);
/* Merges one rank's sample (duration, its time per slot, side) into a. Pure. */
void ncg_sg_slot_add(struct ncg_sg_slot *a, int32_t rank, uint64_t dur_ns, uint64_t step_ns,
                     uint8_t side);
/* Merges b (the same slot, other ranks) into a: what a relay does. Returns 1 when b's minimum
 * became a's (b's argmin is a's now: whatever the caller knows of it goes with it). Pure. */
int ncg_sg_slot_merge(struct ncg_sg_slot *a, const struct ncg_sg_slot *b);

struct ncg_sg_cfg {
    uint32_t window;  /* slots decided over (1..NCG_SG_WIN_MAX; default 16) */
    double dominance; /* share of the window's slots the rank must be the minimum of (0.7) */
    double share_min; /* share of the step the others must lose to it (0.05) */
    uint64_t hold_ns; /* how long the rule must have held for the same rank before it is named,
                       * from the oldest window slot it was the minimum of (5 s; 0: at once) */
};
#define NCG_SG_CFG_DEFAULT                                                                         \
    {                                                                                              \
        16, 0.7, 0.05, 5000000000ull                                                               \
    }

struct ncg_sg_ent {
    uint64_t slot;
    int32_t who; /* argmin, -1 none */
    uint8_t side;
    uint64_t loss_ns; /* mean duration - minimum: what the others lost, per rank */
    uint64_t step_ns; /* time per slot (mean over the ranks) */
    uint64_t t_ns;    /* when it was fed */
};

/* Per communicator. Zero it with ncg_sg_init. */
struct ncg_sg {
    struct ncg_sg_cfg cfg;
    struct ncg_sg_ent win[NCG_SG_WIN_MAX];
    uint32_t n, head; /* entries held, next position */
    uint64_t last_slot;
    int have_last;
    /* the episode */
    int32_t named; /* -1: none */
    uint8_t side;
    double share;
    uint64_t since_ns;
    uint32_t quiet; /* slots fed in a row where the rule did not hold for it */
    int32_t ended;  /* the rank of the latest episode that ended (NCG_SG_END), -1 none */
    /* the hold: the rank the rule held for at every feed since cand_ns (-1: none) */
    int32_t cand;
    uint64_t cand_ns;
};

enum ncg_sg_event {
    NCG_SG_NONE = 0,
    NCG_SG_START = 1,  /* a rank is named (none was) */
    NCG_SG_CHANGE = 2, /* another rank, or the same rank on the other side */
    NCG_SG_END = 3,    /* the episode of s->ended ended: the rule did not hold for a window */
};

/* Pure; no allocation. cfg NULL: the defaults; out-of-range values are clamped. */
void ncg_sg_init(struct ncg_sg *s, const struct ncg_sg_cfg *cfg);
/* Feeds one merged slot (fewer than 2 ranks, or a slot not after the last one fed, as a signed
 * 64-bit distance: ignored), decided at now_ns. Returns the event (s->named, s->share,
 * s->since_ns, s->side say what it is about). Pure; no allocation. */
enum ncg_sg_event ncg_sg_feed(struct ncg_sg *s, const struct ncg_sg_slot *a, uint64_t now_ns);
/* The member rank left: its episode ends (NCG_SG_END returned, s->ended), and the window
 * forgets the slots it was the minimum of. Pure. */
enum ncg_sg_event ncg_sg_forget(struct ncg_sg *s, int32_t rank);
/* The share of the step the others lost waiting for rank over the window's latest slots (as
 * the decision takes them), -1 before any. Pure. */
double ncg_sg_wait_share(const struct ncg_sg *s, int32_t rank);

/* ---- slots still coming in: every relay of the tree (relay_slow.c) gathers, completes and
 * drops slots by one rule ---- */

/* What is known of a slot's argmin beyond its comm rank (who the warning names). */
struct ncg_sg_who {
    int32_t grank; /* global rank, -1 unknown */
    uint32_t pid;  /* 0 unknown */
    char host[64]; /* "" unknown */
};

#define NCG_SG_PEND 8u /* slots gathered at once per communicator (more: the oldest dropped) */
struct ncg_sg_pend {
    uint32_t n;
    struct ncg_sg_slot s[NCG_SG_PEND];
    struct ncg_sg_who who[NCG_SG_PEND]; /* of s[i].argmin */
    uint64_t t_ns[NCG_SG_PEND];         /* when its first figures came */
};

/* One member's (or subtree's) merged figures b of a slot: ignored when b->slot is not after its
 * previous one (*last: 1 + the slot it sent last, 0 none), which *last records; merged into the
 * slot's pending entry (new: the oldest dropped when full) unless b is empty (b->n 0: a rank's
 * first sample, no time per slot yet), its argmin's who going with it. Returns 1 merged. Pure. */
int ncg_sg_pend_take(struct ncg_sg_pend *p, uint64_t *last, const struct ncg_sg_slot *b,
                     const struct ncg_sg_who *who, uint64_t now_ns);
/* The index of the lowest pending slot (they leave in slot order), -1 none. Pure. */
int ncg_sg_pend_lowest(const struct ncg_sg_pend *p);
/* Removes entry i into *out / *who (either may be NULL). Pure. */
void ncg_sg_pend_pop(struct ncg_sg_pend *p, int i, struct ncg_sg_slot *out, struct ncg_sg_who *who);

enum ncg_sg_fate {
    NCG_SG_HOLD = 0, /* more figures are still coming */
    NCG_SG_FEED = 1, /* complete: to the window (or, below the root of the tree, up) */
    NCG_SG_DROP = 2, /* will never be complete: some active member skipped it */
};
/* The rule for the lowest pending slot a: `want` ranks active, `passed` 1 when every active
 * member (a relay: every active client rank and child relay) has sent this slot or a later one,
 * or its deadline passed. Complete (a->n >= want >= 2): FEED; else passed: DROP; else HOLD.
 * Pure. */
enum ncg_sg_fate ncg_sg_fate(const struct ncg_sg_slot *a, uint32_t want, int passed);

/* The samples a REPORT carries of those at slots[0..n) (increasing): when
 * more than max, only those whose slot is a multiple of 2^L, the smallest L that fits, so that
 * ranks that thin their samples keep the same slots. Writes their indices to idx; returns how
 * many. Pure. */
size_t ncg_sg_thin(const uint64_t *slots, size_t n, size_t max, size_t *idx);

#endif
