/* Unit tests of the straggler decision (interpose/judge/straggler.c): simulated data-parallel
 * steps of 8 and 16 ranks where each rank computes, then all-reduces (every rank finishes the
 * collective when the last one arrives), one rank 10% or 20% slower: named, and only it, within
 * one window; every rank jittering 0-10%: nobody, over thousands of slots and several seeds;
 * the slow rank changing mid-run; window edges, ties, wrap of the slot, missing samples, a rank
 * leaving, the end of an episode, the side, merging as a relay would, thinning; one stall (the
 * whole job paused a few seconds) names nobody; the hold: a rank late for a few seconds of fast
 * calls (a descheduled process) is not named, one late for longer is, once the rule held for 5 s.
 * The rule's tests run without the hold (RULE), the hold's with the defaults. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "straggler.h"

NCG_CHECK_PROGRAM("straggler_test");

static uint64_t rng = 88172645463325252ull;
static double urand(void) /* [0, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* the window rule alone: the defaults without the hold */
static const struct ncg_sg_cfg RULE = {16, 0.7, 0.05, 0};
static uint64_t tick = 1000; /* ns between two feeds of run() */

#define MAXR 16
/* One step: compute C ms (x (1 + slow) for the slow rank, + jitter), then the collective that
 * ends 1 ms after the last arrival. Fills the merged slot. */
static void step(struct ncg_sg_slot *a, uint64_t slot, int n, int slow_rank, double slow,
                 double jitter, uint8_t side)
{
    const double C = 30e6, comm = 1e6;
    double arr[MAXR], last = 0;
    for (int i = 0; i < n; i++) {
        arr[i] = C * (1 + jitter * urand() + (i == slow_rank ? slow : 0));
        last = arr[i] > last ? arr[i] : last;
    }
    ncg_sg_slot_init(a, slot);
    for (int i = 0; i < n; i++)
        ncg_sg_slot_add(a, i, (uint64_t)(last + comm - arr[i]), (uint64_t)(last + comm),
                        i == slow_rank ? side : NCG_SG_HOST);
}

/* Runs slots [from, to) and returns the feed index of the first START/CHANGE naming want (or -1),
 * counting every event naming anyone else in *wrong. */
static long run(struct ncg_sg *s, uint64_t from, uint64_t to, int n, int slow_rank, double slow,
                double jitter, uint8_t side, int want, int *wrong)
{
    long first = -1;
    for (uint64_t k = from; k != to; k++) {
        struct ncg_sg_slot a;
        step(&a, k * 16, n, slow_rank, slow, jitter, side);
        enum ncg_sg_event ev = ncg_sg_feed(s, &a, k * tick);
        if (ev == NCG_SG_START || ev == NCG_SG_CHANGE) {
            if (s->named == want && first < 0)
                first = (long)(k - from);
            else if (s->named != want)
                (*wrong)++;
        }
    }
    return first;
}

static void slow_named(void)
{
    for (int n = 8; n <= 16; n += 8)
        for (int pct = 10; pct <= 20; pct += 10)
            for (uint8_t side = 0; side <= 1; side++) {
                struct ncg_sg s;
                ncg_sg_init(&s, &RULE);
                int wrong = 0, r = n - 3;
                long at = run(&s, 0, 400, n, r, pct / 100.0, 0, side, r, &wrong);
                CHECKF(at == 15, "%d ranks, %d%%: named at feed %ld (want 15: a full window)", n,
                       pct, at);
                CHECKF(wrong == 0, "%d ranks: %d other events", n, wrong);
                CHECKF(s.named == r && s.side == side, "named %d side %d", s.named, s.side);
                /* 20% of 30 ms lost per 37 ms step, 10%: 3 of 34 (mean over n ranks) */
                double want = pct / 100.0 * 30 / (30 * (1 + pct / 100.0) + 1) * (n - 1) / n;
                CHECKF(s.share > want * 0.95 && s.share < want * 1.05, "share %.3f want %.3f",
                       s.share, want);
                /* with 0-5% jitter on every rank as well */
                ncg_sg_init(&s, &RULE);
                wrong = 0;
                at = run(&s, 0, 400, n, r, pct / 100.0, 0.05, side, r, &wrong);
                CHECKF(at >= 15 && at < 64 && wrong == 0,
                       "%d ranks %d%% with jitter: at %ld, %d wrong", n, pct, at, wrong);
            }
}

static void jitter_never(void)
{
    for (int seed = 1; seed <= 10; seed++)
        for (int n = 2; n <= 16; n += n < 8 ? 2 : 8) {
            rng = 0x9e3779b97f4a7c15ull * (uint64_t)seed;
            struct ncg_sg s;
            ncg_sg_init(&s, &RULE);
            int wrong = 0;
            run(&s, 0, 4000, n, -1, 0, 0.10, 0, -2, &wrong);
            CHECKF(wrong == 0, "seed %d, %d ranks jittering 0-10%%: %d SLOW events", seed, n,
                   wrong);
        }
}

static void rank_changes(void)
{
    struct ncg_sg s;
    ncg_sg_init(&s, &RULE);
    int wrong = 0;
    CHECKF(run(&s, 0, 100, 8, 2, 0.2, 0.02, 0, 2, &wrong) >= 15 && !wrong, "first rank");
    long at = run(&s, 100, 200, 8, 6, 0.2, 0.02, 0, 6, &wrong);
    CHECKF(at > 0 && at <= 16 && wrong == 0, "change to rank 6 after %ld feeds, %d wrong", at,
           wrong);
    CHECKF(s.named == 6, "named %d", s.named);
    /* the same rank, now on the device: a change too (new side), same since */
    uint64_t since = s.since_ns;
    at = run(&s, 200, 300, 8, 6, 0.2, 0.02, NCG_SG_DEVICE, 6, &wrong);
    CHECKF(at > 0 && s.side == NCG_SG_DEVICE && s.since_ns == since, "side change at %ld", at);
}

static void episode_end(void)
{
    struct ncg_sg s;
    ncg_sg_init(&s, &RULE);
    int wrong = 0, ends = 0;
    run(&s, 0, 100, 8, 1, 0.2, 0, 0, 1, &wrong);
    long ended = -1;
    for (uint64_t k = 100; k < 200; k++) { /* healthy again */
        struct ncg_sg_slot a;
        step(&a, k * 16, 8, -1, 0, 0.1, 0);
        enum ncg_sg_event ev = ncg_sg_feed(&s, &a, k);
        CHECKF(ev == NCG_SG_NONE || ev == NCG_SG_END, "event %d while healthy", ev);
        if (ev == NCG_SG_END) {
            ends++;
            ended = (long)(k - 100);
        }
    }
    /* the rule stops holding once 5 of 16 are someone else's (feed ~5), then a window */
    CHECKF(ends == 1 && ended >= 16 && ended < 40 && s.ended == 1 && s.named == -1,
           "%d ends, at %ld, ended %d", ends, ended, s.ended);
    CHECKF(run(&s, 200, 300, 8, 1, 0.2, 0, 0, 1, &wrong) >= 0 && !wrong,
           "a new episode warns again");
}

/* The whole job paused for 4 s (SIGSTOP to its process group, a paused VM) while some ranks were
 * inside a sampled collective: the ones that were not arrive 4 s "late", and that slot alone
 * holds far more loss than a window of steps. A rank that is the minimum of most slots by a
 * hair (1% slower: 0.9% of the step, under the 5% floor) must not be named for it, nor the rank
 * that happened to arrive last, while a rank really 20% slower still is, with its share. */
static void one_stall(void)
{
    for (int stalled = 5; stalled <= 6; stalled++)
        for (int slowpct = 1; slowpct <= 20; slowpct += 19) {
            struct ncg_sg s;
            ncg_sg_init(&s, &RULE);
            int wrong = 0, r = 5;
            long at = run(&s, 0, 40, 8, r, slowpct / 100.0, 0, 0, r, &wrong);
            struct ncg_sg_slot a;
            ncg_sg_slot_init(&a, 40 * 16);
            for (int i = 0; i < 8; i++) /* `stalled` arrives 4 s after the others entered */
                ncg_sg_slot_add(&a, i, i == stalled ? 1000000 : 4001000000ull, 4031000000ull, 0);
            enum ncg_sg_event ev = ncg_sg_feed(&s, &a, 40000);
            CHECKF(ev == NCG_SG_NONE, "stall of rank %d: event %d", stalled, ev);
            long at2 = run(&s, 41, 80, 8, r, slowpct / 100.0, 0, 0, r, &wrong);
            if (slowpct == 1) {
                CHECKF(at < 0 && at2 < 0 && !wrong && s.named == -1,
                       "1%% slower, stall of rank %d: named %d (%d others)", stalled, s.named,
                       wrong);
            } else {
                CHECKF(at == 15 && !wrong && s.named == r, "20%% slower: named %d", s.named);
                double want = 0.2 * 30 / 37 * 7 / 8; /* the window still holds the stall */
                CHECKF(s.share > want * 0.95 && s.share < want * 1.05, "share %.3f want %.3f",
                       s.share, want);
            }
        }
}

/* The defaults hold for 5 s: a rank the minimum of every slot for 3 s of fast sampled calls (a
 * window spans 0.8 s: one process descheduled, a hiccup) is never named; one late for 10 s is,
 * 5 s after the first slot it was the minimum of; a slow job whose window spans 9 s names it at
 * the window's fill; the slow rank changing goes through the hold too. */
static void hold(void)
{
    struct ncg_sg s;
    ncg_sg_init(&s, NULL);
    CHECKF(s.cfg.hold_ns == 5000000000ull, "default hold %llu ns",
           (unsigned long long)s.cfg.hold_ns);
    int wrong = 0;
    tick = 50000000; /* a sample every 50 ms */
    run(&s, 0, 40, 8, -1, 0, 0.05, 0, -2, &wrong);
    long at = run(&s, 40, 100, 8, 3, 0.2, 0.02, 0, 3, &wrong); /* 3 s late */
    CHECKF(at < 0 && !wrong && s.named == -1, "a 3 s blip named %d at %ld", s.named, at);
    at = run(&s, 100, 300, 8, -1, 0, 0.05, 0, -2, &wrong);
    CHECKF(at < 0 && !wrong && s.named == -1, "after the blip: named %d", s.named);
    at = run(&s, 300, 600, 8, 3, 0.2, 0.02, 0, 3, &wrong); /* 15 s late */
    CHECKF(at >= 100 && at <= 104 && !wrong && s.named == 3,
           "late for 15 s: named %d at feed %ld (want 100: 5 s)", s.named, at);
    CHECKF(s.since_ns >= 300 * tick && s.since_ns <= 302 * tick, "since %llu",
           (unsigned long long)s.since_ns);
    /* it changes: rank 6 is named 5 s after it became the minimum, rank 3's episode over */
    at = run(&s, 600, 900, 8, 6, 0.2, 0.02, 0, 6, &wrong);
    CHECKF(at >= 100 && at <= 110 && !wrong && s.named == 6 && s.ended == 3,
           "change: named %d at feed %ld, ended %d", s.named, at, s.ended);
    /* a slow job: 16 slots of 36 ms steps between two samples, the window spans 9 s */
    ncg_sg_init(&s, NULL);
    tick = 16 * 36000000ull;
    at = run(&s, 0, 40, 8, 5, 0.2, 0, 0, 5, &wrong);
    CHECKF(at == 15 && !wrong, "slow job: named at feed %ld", at);
    tick = 1000;
}

static void edges(void)
{
    struct ncg_sg s;
    struct ncg_sg_cfg c = {4, 0.75, 0.05, 0};
    ncg_sg_init(&s, &c);
    struct ncg_sg_slot a;
    /* 3 of 4 named (exactly the dominance): named at the 4th feed, not before */
    int who[] = {3, 0, 3, 3};
    for (int k = 0; k < 4; k++) {
        ncg_sg_slot_init(&a, (uint64_t)k);
        for (int i = 0; i < 4; i++)
            ncg_sg_slot_add(&a, i, i == who[k] ? 1000 : 3000, 10000, 0);
        enum ncg_sg_event ev = ncg_sg_feed(&s, &a, (uint64_t)k);
        CHECKF(ev == (k == 3 ? NCG_SG_START : NCG_SG_NONE), "feed %d: event %d", k, ev);
    }
    CHECKF(s.named == 3 && s.since_ns == 0, "named %d since %llu", s.named,
           (unsigned long long)s.since_ns);
    /* share: loss per rank (mean 2500 - 1000) over 10000 per slot, 3 of 4 slots */
    CHECKF(s.share > 0.11 && s.share < 0.1126, "share %.4f", s.share);
    /* below the dominance: 2 of 4 */
    ncg_sg_init(&s, &c);
    int who2[] = {3, 3, 0, 1}; /* 2 of 4, 7.5% of the step */
    for (int k = 0; k < 4; k++) {
        ncg_sg_slot_init(&a, (uint64_t)k);
        for (int i = 0; i < 4; i++)
            ncg_sg_slot_add(&a, i, i == who2[k] ? 1000 : 3000, 10000, 0);
        CHECKF(ncg_sg_feed(&s, &a, 0) == NCG_SG_NONE, "feed %d", k);
    }
    /* below the share: always the minimum, by 1% of the step */
    ncg_sg_init(&s, &c);
    for (int k = 0; k < 8; k++) {
        ncg_sg_slot_init(&a, (uint64_t)k);
        for (int i = 0; i < 4; i++)
            ncg_sg_slot_add(&a, i, i == 2 ? 1000 : 1100, 10000, 0);
        CHECKF(ncg_sg_feed(&s, &a, 0) == NCG_SG_NONE, "small share, feed %d", k);
    }
}

static void ties_missing_wrap(void)
{
    struct ncg_sg s;
    struct ncg_sg_cfg c = {4, 0.75, 0.05, 0};
    struct ncg_sg_slot a;
    /* ties name nobody: ranks 1 and 2 equal and shortest every slot */
    ncg_sg_init(&s, &c);
    for (int k = 0; k < 8; k++) {
        ncg_sg_slot_init(&a, (uint64_t)k);
        for (int i = 0; i < 4; i++)
            ncg_sg_slot_add(&a, i, i == 1 || i == 2 ? 1000 : 5000, 10000, 0);
        CHECKF(a.argmin == -1, "tie: argmin %d", a.argmin);
        CHECKF(ncg_sg_feed(&s, &a, 0) == NCG_SG_NONE, "tie feed %d", k);
    }
    /* missing samples: a slot measured by one rank only, a slot repeated or older: ignored */
    ncg_sg_init(&s, &c);
    uint64_t base = UINT64_MAX - 1; /* and the slot wraps: UINT64_MAX - 1, UINT64_MAX, 0, 1 */
    int events = 0;
    for (int k = 0; k < 4; k++) {
        ncg_sg_slot_init(&a, base + (uint64_t)k);
        ncg_sg_slot_add(&a, 3, 1000, 10000, 0);
        CHECKF(ncg_sg_feed(&s, &a, 0) == NCG_SG_NONE, "one rank only");
        for (int i = 0; i < 3; i++)
            ncg_sg_slot_add(&a, i, 5000, 10000, 0);
        events += ncg_sg_feed(&s, &a, 0) != NCG_SG_NONE;
        CHECKF(ncg_sg_feed(&s, &a, 0) == NCG_SG_NONE, "the same slot again");
        struct ncg_sg_slot old = a;
        old.slot -= 2;
        CHECKF(k < 2 || ncg_sg_feed(&s, &old, 0) == NCG_SG_NONE, "an older slot");
    }
    CHECKF(events == 1 && s.named == 3 && s.n == 4, "across the wrap: %d events, named %d, %u held",
           events, s.named, s.n);
    /* the named rank leaves: the episode ends, and its slots no longer count */
    CHECKF(ncg_sg_forget(&s, 2) == NCG_SG_NONE && s.named == 3, "another rank leaves");
    CHECKF(ncg_sg_forget(&s, 3) == NCG_SG_END && s.named == -1 && s.ended == 3, "it leaves");
    ncg_sg_slot_init(&a, 5);
    for (int i = 0; i < 3; i++)
        ncg_sg_slot_add(&a, i, i == 0 ? 4000 : 5000, 10000, 0);
    CHECKF(ncg_sg_feed(&s, &a, 0) == NCG_SG_NONE, "one slot of rank 0 is not a majority");
}

static void merge_thin(void)
{
    /* a relay merging two halves gives what one accumulator gives */
    struct ncg_sg_slot all, lo, hi;
    ncg_sg_slot_init(&all, 7);
    ncg_sg_slot_init(&lo, 7);
    ncg_sg_slot_init(&hi, 7);
    uint64_t d[6] = {5000, 4000, 6000, 1200, 5500, 4900};
    for (int i = 0; i < 6; i++) {
        ncg_sg_slot_add(&all, i, d[i], 9000 + (uint64_t)i, i == 3);
        ncg_sg_slot_add(i < 3 ? &lo : &hi, i, d[i], 9000 + (uint64_t)i, i == 3);
    }
    ncg_sg_slot_merge(&lo, &hi);
    CHECKF(!memcmp(&lo, &all, sizeof lo) && all.argmin == 3 && all.side == 1 && all.n == 6,
           "merge differs (argmin %d)", lo.argmin);
    /* thinning keeps multiples of 2^L, the same on every rank */
    uint64_t sl[] = {3, 8, 12, 16, 21, 24, 32};
    size_t idx[8];
    CHECKF(ncg_sg_thin(sl, 7, 8, idx) == 7, "fits");
    size_t k = ncg_sg_thin(sl, 7, 3, idx);
    CHECKF(k == 2 && sl[idx[0]] == 16 && sl[idx[1]] == 32, "thin to %zu", k); /* 4 of 8 */
    k = ncg_sg_thin(sl, 7, 1, idx);
    CHECKF(k == 1 && sl[idx[0]] == 32, "thin to one: %zu", k);
}

int main(void)
{
    slow_named();
    jitter_never();
    rank_changes();
    episode_end();
    one_stall();
    hold();
    edges();
    ties_missing_wrap();
    merge_thin();
    return ncg_check_done();
}
