/* Straggler samples (slow.h): which slots are sampled, the issue and completion marks of a
 * sampled call (host clock, or a timed CUDA event pair on its stream), the checker thread's
 * reading of the event pairs, and the published ring of samples the REPORT carries. */
#define _GNU_SOURCE
#include "slow.h"

#include <ck_pr.h>
#include <pthread.h>

#include "clock.h"
#include "comm.h"
#include "completion.h"
#include "config.h"
#include "hash.h"
#include "publist.h"

/* Whether the host marks read the cycle counter (1) or CLOCK_MONOTONIC (0: no invariant TSC);
 * decided once at the first comm's creation, before any sampled call. */
static int g_use_ticks = -1;

/* Read by the application threads and the checker thread, written by comm creators: relaxed
 * atomic (a plain load on x86-64 and aarch64), so no thread reads a torn or racing value. */
static inline int use_ticks(void)
{
    return __atomic_load_n(&g_use_ticks, __ATOMIC_RELAXED);
}

static inline uint64_t mark(void)
{
    return __builtin_expect(use_ticks() > 0, 1) ? ncg_ticks() : ncg_now_ns();
}

uint64_t ncg_slow_first(uint64_t comm_id)
{
    if (!ncg_cfg.slow || !ncg_cfg.check)
        return NCG_SLOW_OFF;
    if (use_ticks() < 0) /* racing creators agree */
        __atomic_store_n(&g_use_ticks, ncg_ticks_usable(), __ATOMIC_RELAXED);
    return ncg_slow_gap(comm_id, 0, ncg_cfg.slow_sample);
}

/* Writer of s (one thread at a time: see slow.h). */
static void publish(struct ncg_slow *s, uint64_t slot, uint64_t dur, uint64_t period,
                    int has_period, uint8_t device, uint8_t ticks)
{
    struct ncg_slow_raw *o = &s->s[s->head % NCG_SLOW_RING];
    /* relaxed stores: a reader lapped by this writer may read the entry meanwhile (it drops
     * what it finds overwritten, ncg_slow_read), so every field is an atomic access */
    __atomic_store_n(&o->slot, slot, __ATOMIC_RELAXED);
    __atomic_store_n(&o->dur, dur, __ATOMIC_RELAXED);
    __atomic_store_n(&o->period, has_period ? period : 0, __ATOMIC_RELAXED);
    __atomic_store_n(
        &o->gap,
        has_period && slot - s->prev_slot <= UINT32_MAX ? (uint32_t)(slot - s->prev_slot) : 0,
        __ATOMIC_RELAXED);
    __atomic_store_n(&o->device, device, __ATOMIC_RELAXED);
    __atomic_store_n(&o->ticks, ticks, __ATOMIC_RELAXED);
    s->prev_slot = slot;
    s->have_prev = 1;
    /* the sample before the head that publishes it (release) */
    __atomic_store_n(&s->head, s->head + 1, __ATOMIC_RELEASE);
}

/* ---- the ticks-to-ns ratio (checker thread only) ---- */

static uint64_t cal_t0, cal_n0; /* the first mark: ticks, ns */
static double cal_ratio;        /* ns per tick, 0: not yet */

/* A (ticks, ns) pair read as close together as the two reads allow. */
static void cal_pair(uint64_t *t, uint64_t *n)
{
    uint64_t a = ncg_ticks();
    *n = ncg_now_ns();
    uint64_t b = ncg_ticks();
    *t = a + (b - a) / 2;
}

void ncg_slow_calibrate(void)
{
    uint64_t t, n;
    if (use_ticks() <= 0) /* no sample in ticks, or no comm sampled yet */
        return;
    cal_pair(&t, &n);
    if (!cal_n0) {
        cal_t0 = t, cal_n0 = n;
        return;
    }
    /* over 100 ms the two reads' ~50 ns apart is 5e-7 of the ratio; the longer, the better */
    if (n - cal_n0 >= 100000000ull && t > cal_t0)
        cal_ratio = (double)(n - cal_n0) / (double)(t - cal_t0);
}

/* ---- comms with event pairs, for the checker thread ---- */

static struct ncg_publist slow_all = {.lk = PTHREAD_MUTEX_INITIALIZER};

static void slow_register(struct ncg_slow *s)
{
    ncg_publist_add(&slow_all, s, &s->registered); /* full: this comm is not sampled */
}

enum { HOW_HOST = 1, HOW_EVENTS = 2 };

/* The event pair of a sampled call under asynchronous NCCL: the stream's state and the start
 * event. Kept out of ncg_slow_issue so that the host path saves no registers for it. */
static __attribute__((noinline)) void issue_events(struct ncg_comm *c, uint64_t slot, void *stream,
                                                   int mode)
{
    struct ncg_slow *s = &c->slow;
    const struct ncg_cuda_api *cu = ncg_cuda_api_get();
    if (mode != NCG_CMODE_EVENTS || !cu->event_elapsed ||
        s->bhead - __atomic_load_n(&s->btail, __ATOMIC_ACQUIRE) >= NCG_SLOW_BOX)
        return; /* probing, or no timed events, or the checker has not read the last ones */
    struct ncg_slow_box *b = &s->box[s->bhead % NCG_SLOW_BOX];
    if ((!b->ev0 && cu->event_create_with_flags(&b->ev0, 0) != NCG_CUDA_SUCCESS) ||
        (!b->ev1 && cu->event_create_with_flags(&b->ev1, 0) != NCG_CUDA_SUCCESS))
        return;
    /* busy: the stream still runs earlier work, so the call waits for this rank's device */
    b->busy = cu->stream_query(stream) == NCG_CUDA_NOT_READY;
    if (cu->event_record(b->ev0, stream) != NCG_CUDA_SUCCESS)
        return;
    b->slot = slot;
    s->how = HOW_EVENTS;
    ncg_tls.slow_c = c;
}

void ncg_slow_issue(struct ncg_comm *c, uint64_t slot, void *stream, int grouped)
{
    c->slow_next = slot + ncg_slow_gap(c->id, slot, ncg_cfg.slow_sample);
    if (grouped) /* launched at the group's end, not timed by its own call */
        return;
    int mode = __atomic_load_n(&ncg_cmode, __ATOMIC_ACQUIRE);
    if (__builtin_expect(mode != NCG_CMODE_RETURN, 0)) {
        issue_events(c, slot, stream, mode);
        return;
    }
    struct ncg_slow *s = &c->slow;
    s->slot_issue = slot;
    s->how = HOW_HOST;
    ncg_tls.slow_c = c;
    s->t_issue = mark(); /* last: as close to the real call as it gets */
}

static __attribute__((noinline)) void after_events(struct ncg_slow *s, void *stream)
{
    const struct ncg_cuda_api *cu = ncg_cuda_api_get();
    if (cu->event_record(s->box[s->bhead % NCG_SLOW_BOX].ev1, stream) != NCG_CUDA_SUCCESS)
        return;
    if (!s->registered)
        slow_register(s);
    /* the box's events and slot before the head that hands it to the checker (release) */
    __atomic_store_n(&s->bhead, s->bhead + 1, __ATOMIC_RELEASE);
}

void ncg_slow_after_call(void *stream)
{
    uint64_t end = mark(); /* first: as close to the real call's return as it gets */
    struct ncg_comm *c = ncg_tls.slow_c;
    ncg_tls.slow_c = NULL;
    struct ncg_slow *s = &c->slow;
    if (__builtin_expect(s->how != HOW_HOST, 0)) {
        after_events(s, stream);
        return;
    }
    /* a previous host mark, of the same unit (not an event pair's) */
    int has = s->have_prev && s->prev_end;
    uint64_t period = end - s->prev_end;
    s->prev_end = end;
    if (end >= s->t_issue) /* else migrated across unsynchronized counters: dropped */
        publish(s, s->slot_issue, end - s->t_issue, period, has, 0, use_ticks() > 0);
}

static void poll_one(struct ncg_slow *s, const struct ncg_cuda_api *cu)
{
    uint64_t head = __atomic_load_n(&s->bhead, __ATOMIC_ACQUIRE);
    while (s->bdone != head) {
        struct ncg_slow_box *b = &s->box[s->bdone % NCG_SLOW_BOX];
        float ms = 0, pms = 0;
        if (cu->event_query(b->ev1) != NCG_CUDA_SUCCESS)
            break; /* not reached yet */
        if (cu->event_elapsed(&ms, b->ev0, b->ev1) != NCG_CUDA_SUCCESS || ms < 0)
            ms = -1;
        /* the period from the previous box's end, while the checker still holds it */
        int has = s->bdone > 0 && s->btail < s->bdone && s->have_prev;
        if (has) {
            struct ncg_slow_box *p = &s->box[(s->bdone - 1) % NCG_SLOW_BOX];
            has = cu->event_elapsed(&pms, p->ev1, b->ev1) == NCG_CUDA_SUCCESS && pms > 0;
        }
        if (ms >= 0)
            publish(s, b->slot, (uint64_t)((double)ms * 1e6), (uint64_t)((double)pms * 1e6), has,
                    b->busy, 0);
        else
            s->have_prev = 0; /* no period across a sample that could not be read */
        /* the previous box goes back to the application thread (release: read before) */
        __atomic_store_n(&s->btail, s->bdone, __ATOMIC_RELEASE);
        s->bdone++;
    }
}

void ncg_slow_poll(void)
{
    const struct ncg_cuda_api *cu = ncg_cuda_api_get();
    if (!cu->event_elapsed)
        return;
    uint32_t n = ncg_publist_count(&slow_all);
    for (uint32_t i = 0; i < n; i++)
        poll_one(ncg_publist_at(&slow_all, i), cu);
}

static uint32_t us32(double ns)
{
    double us = ns / 1000;
    return us >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

uint32_t ncg_slow_read(struct ncg_slow *s, struct ncg_slow_sample *out, uint32_t cap)
{
    struct ncg_slow_raw raw[NCG_SLOW_RING];
    if (cap > NCG_SLOW_RING)
        cap = NCG_SLOW_RING;
    uint64_t h = __atomic_load_n(&s->head, __ATOMIC_ACQUIRE);
    uint64_t from = s->sent;
    if (h - from > NCG_SLOW_RING - 1) /* the oldest may be overwritten while read */
        from = h - (NCG_SLOW_RING - 1);
    if (h - from > cap)
        from = h - cap;
    uint32_t n = 0;
    for (uint64_t i = from; i < h; i++) { /* relaxed loads: see publish */
        const struct ncg_slow_raw *e = &s->s[i % NCG_SLOW_RING];
        raw[n++] = (struct ncg_slow_raw){.slot = __atomic_load_n(&e->slot, __ATOMIC_RELAXED),
                                         .dur = __atomic_load_n(&e->dur, __ATOMIC_RELAXED),
                                         .period = __atomic_load_n(&e->period, __ATOMIC_RELAXED),
                                         .gap = __atomic_load_n(&e->gap, __ATOMIC_RELAXED),
                                         .device = __atomic_load_n(&e->device, __ATOMIC_RELAXED),
                                         .ticks = __atomic_load_n(&e->ticks, __ATOMIC_RELAXED)};
    }
    /* a writer that lapped the reader meanwhile overwrote the oldest: drop what it reached */
    uint64_t h2 = __atomic_load_n(&s->head, __ATOMIC_ACQUIRE);
    uint32_t skip = 0;
    while (skip < n && h2 - (from + skip) > NCG_SLOW_RING - 1)
        skip++;
    double r = cal_ratio;
    for (uint32_t k = skip; k < n; k++)
        if (raw[k].ticks && r <= 0)
            return 0; /* not calibrated yet: read again later */
    for (uint32_t k = skip; k < n; k++) {
        double f = raw[k].ticks ? r : 1.0;
        out[k - skip] = (struct ncg_slow_sample){.slot = raw[k].slot,
                                                 .dur_us = us32((double)raw[k].dur * f),
                                                 .period_us = us32((double)raw[k].period * f),
                                                 .gap = raw[k].gap,
                                                 .device = raw[k].device};
    }
    s->sent = h;
    return n - skip;
}
