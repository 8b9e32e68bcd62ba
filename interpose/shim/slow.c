/* Straggler samples (slow.h): which slots are sampled, the issue and completion marks of a
 * sampled call (host clock, or a timed CUDA event pair on its stream), the checker thread's
 * reading of the event pairs, and the published ring of samples the REPORT carries. */
#define _GNU_SOURCE
#include "slow.h"

#include <ck_pr.h>
#include <pthread.h>
#include <string.h>

#include "clock.h"
#include "comm.h"
#include "completion.h"
#include "config.h"
#include "hash.h"

/* Slots to the next sample after slot: 1..2N-1, N on average, from the comm id and the slot only
 * (every member draws the same), so the samples do not fall on the same call of every step. */
static uint64_t slow_gap(uint64_t id, uint64_t slot)
{
    uint64_t n = ncg_cfg.slow_sample;
    return n <= 1 ? 1 : 1 + ncg_mix64(id ^ (slot * 0x9e3779b97f4a7c15ull)) % (2 * n - 1);
}

uint64_t ncg_slow_first(uint64_t comm_id)
{
    if (!ncg_cfg.slow || !ncg_cfg.check)
        return NCG_SLOW_OFF;
    return slow_gap(comm_id, 0);
}

static uint32_t us32(uint64_t ns)
{
    uint64_t us = ns / 1000;
    return us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/* Writer of s (one thread at a time: see slow.h). */
static void publish(struct ncg_slow *s, uint64_t slot, uint64_t dur_ns, uint64_t period_ns,
                    int has_period, uint8_t device)
{
    struct ncg_slow_sample *o = &s->s[s->head % NCG_SLOW_RING];
    *o = (struct ncg_slow_sample){.slot = slot,
                                  .dur_us = us32(dur_ns),
                                  .period_us = has_period ? us32(period_ns) : 0,
                                  .gap = has_period && slot - s->prev_slot <= UINT32_MAX
                                             ? (uint32_t)(slot - s->prev_slot)
                                             : 0,
                                  .device = device};
    s->prev_slot = slot;
    s->have_prev = 1;
    /* the sample before the head that publishes it (release) */
    __atomic_store_n(&s->head, s->head + 1, __ATOMIC_RELEASE);
}

/* ---- comms with event pairs, for the checker thread ---- */

#define NCG_SLOW_MAX 256u
static struct ncg_slow *slow_all[NCG_SLOW_MAX];
static uint32_t slow_n;
static pthread_mutex_t slow_lk = PTHREAD_MUTEX_INITIALIZER;

static void slow_register(struct ncg_slow *s)
{
    pthread_mutex_lock(&slow_lk);
    if (!s->registered && slow_n < NCG_SLOW_MAX) {
        s->registered = 1;
        ck_pr_store_ptr(&slow_all[slow_n], s);
        __atomic_store_n(&slow_n, slow_n + 1, __ATOMIC_RELEASE); /* the pointer first */
    }
    pthread_mutex_unlock(&slow_lk);
}

enum { HOW_HOST = 1, HOW_EVENTS = 2 };
static __thread int t_how __attribute__((tls_model("initial-exec")));

void ncg_slow_issue(struct ncg_comm *c, uint64_t slot, void *stream, int grouped)
{
    c->slow_next = slot + slow_gap(c->id, slot);
    if (grouped) /* launched at the group's end, not timed by its own call */
        return;
    struct ncg_slow *s = &c->slow;
    int mode = __atomic_load_n(&ncg_cmode, __ATOMIC_ACQUIRE);
    if (mode == NCG_CMODE_RETURN) {
        s->slot_issue = slot;
        t_how = HOW_HOST;
        ncg_tls.slow_c = c;
        s->t_issue = ncg_now_ns(); /* last: as close to the real call as it gets */
        return;
    }
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
    t_how = HOW_EVENTS;
    ncg_tls.slow_c = c;
}

void ncg_slow_after_call(void *stream)
{
    struct ncg_comm *c = ncg_tls.slow_c;
    ncg_tls.slow_c = NULL;
    ncg_slow_after(c, stream);
}

void ncg_slow_after(struct ncg_comm *c, void *stream)
{
    struct ncg_slow *s = &c->slow;
    if (t_how == HOW_HOST) {
        uint64_t end = ncg_now_ns();
        int has = s->have_prev;
        uint64_t period = end - s->prev_end_ns;
        s->prev_end_ns = end;
        publish(s, s->slot_issue, end - s->t_issue, period, has, 0);
        return;
    }
    const struct ncg_cuda_api *cu = ncg_cuda_api_get();
    if (cu->event_record(s->box[s->bhead % NCG_SLOW_BOX].ev1, stream) != NCG_CUDA_SUCCESS)
        return;
    if (!s->registered)
        slow_register(s);
    /* the box's events and slot before the head that hands it to the checker (release) */
    __atomic_store_n(&s->bhead, s->bhead + 1, __ATOMIC_RELEASE);
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
                    b->busy);
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
    uint32_t n = __atomic_load_n(&slow_n, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++)
        poll_one(ck_pr_load_ptr(&slow_all[i]), cu);
}

uint32_t ncg_slow_read(struct ncg_slow *s, struct ncg_slow_sample *out, uint32_t cap)
{
    uint64_t h = __atomic_load_n(&s->head, __ATOMIC_ACQUIRE);
    uint64_t from = s->sent;
    if (h - from > NCG_SLOW_RING - 1) /* the oldest may be overwritten while read */
        from = h - (NCG_SLOW_RING - 1);
    if (h - from > cap)
        from = h - cap;
    uint32_t n = 0;
    for (uint64_t i = from; i < h; i++)
        out[n++] = s->s[i % NCG_SLOW_RING];
    /* a writer that lapped the reader meanwhile overwrote the oldest: drop what it reached */
    uint64_t h2 = __atomic_load_n(&s->head, __ATOMIC_ACQUIRE);
    uint32_t skip = 0;
    while (skip < n && h2 - (from + skip) > NCG_SLOW_RING - 1)
        skip++;
    if (skip)
        memmove(out, out + skip, sizeof *out * (n - skip));
    s->sent = h;
    return n - skip;
}
