/* Unit test of completion by CUDA events (interpose/shim/completion.c) against a mock runtime: one
 * stream whose device progress the test controls. Completion never runs ahead of the device,
 * events are recorded at most once per NCG_CEV_GAP_NS, a drained stream completes the calls
 * after the last event, the probe picks EVENTS for an async NCCL and RETURN for a synchronous
 * one, and a failing runtime falls back to RETURN. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "completion.h"
#include "config.h"
#include "streamtab.h"

__thread struct ncg_tls ncg_tls __attribute__((tls_model("initial-exec")));

static int failures;
#define EXPECT(c)                                                                                  \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            printf("FAIL line %d: %s\n", __LINE__, #c);                                            \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* The mock: work items enqueued on the stream (calls and events), the device's progress. */
static uint64_t enq, dev, created, recorded;
static int fail_record;
static struct mev {
    uint64_t at;
} evs[64];
static int m_create(void **e, unsigned f)
{
    (void)f;
    *e = &evs[created++ % 64];
    return 0;
}
static int m_record(void *e, void *s)
{
    (void)s;
    if (fail_record)
        return 1;
    recorded++;
    ((struct mev *)e)->at = enq; /* reached when everything enqueued so far is done */
    return 0;
}
static int m_equery(void *e)
{
    return dev >= ((struct mev *)e)->at ? NCG_CUDA_SUCCESS : NCG_CUDA_NOT_READY;
}
static int m_squery(void *s)
{
    (void)s;
    return dev >= enq ? NCG_CUDA_SUCCESS : NCG_CUDA_NOT_READY;
}
static const struct ncg_cuda_api mock = {m_create, m_record, m_equery, m_squery, NULL, NULL};
static int cur_dev;
static int m_getdev(int *d)
{
    *d = cur_dev;
    return 0;
}

/* Stream indices (streamtab.c): a handle keeps its index; the default-stream handles (0, 1, 2)
 * name one stream per device, so the device is part of their key under asynchronous NCCL. */
static void test_streams(void)
{
    struct ncg_cuda_api a = mock;
    a.get_device = m_getdev;
    ncg_completion_set_cuda(&a, NCG_CMODE_EVENTS);
    uint8_t x = ncg_stream_index((void *)0x7000), y = ncg_stream_index((void *)0x8000);
    EXPECT(x && y && x != y && ncg_stream_index((void *)0x7000) == x);
    for (uintptr_t h = 0; h <= 2; h++) {
        cur_dev = 0;
        uint8_t d0 = ncg_stream_index((void *)h);
        cur_dev = 1;
        uint8_t d1 = ncg_stream_index((void *)h);
        EXPECT(d0 && d1 && d0 != d1 && d0 != x && d1 != y);
        cur_dev = 0;
        EXPECT(ncg_stream_index((void *)h) == d0); /* back on device 0: the same stream */
    }
    cur_dev = 0;
    EXPECT(ncg_stream_index(NULL) != ncg_stream_index((void *)2)); /* legacy vs per-thread */
}

static void sleep_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

int main(void)
{
    struct ncg_shm_comm *s = calloc(1, sizeof *s);
    struct ncg_cev cev;
    memset(&cev, 0, sizeof cev);
    cev.done = &s->coll_done;
    void *stream = (void *)0x1234;
    test_streams();

    /* EVENTS: 1000 calls enqueued in a burst: few events, completion follows the device */
    ncg_completion_set_cuda(&mock, NCG_CMODE_EVENTS);
    for (uint64_t k = 0; k < 1000; k++) {
        enq++; /* the NCCL call's work */
        ncg_cev_after_call(&cev, k + 1, stream);
    }
    EXPECT(recorded >= 1 && recorded <= 3); /* the burst takes well under 2 ms per event */
    ncg_completion_poll();
    EXPECT(s->coll_done == 0); /* the device has done nothing */
    dev = 500;
    ncg_completion_poll();
    EXPECT(s->coll_done <= 500); /* never ahead of the device */
    dev = enq;
    ncg_completion_poll();
    EXPECT(s->coll_done == 1000); /* drained: the stream query covers calls after the event */

    /* spaced calls: one event each once the gap has passed, completed in order */
    uint64_t r0 = recorded;
    for (uint64_t k = 1000; k < 1005; k++) {
        sleep_ms(6);
        enq++;
        ncg_cev_after_call(&cev, k + 1, stream);
    }
    EXPECT(recorded - r0 == 5);
    dev = enq - 2; /* the last two calls still run */
    ncg_completion_poll();
    EXPECT(s->coll_done == 1003);
    dev = enq;
    ncg_completion_poll();
    EXPECT(s->coll_done == 1005);

    /* the ring of events in flight never overflows (the device is stuck) */
    dev = enq;
    for (uint64_t k = 1005; k < 1005 + 3 * NCG_CEV_RING; k++) {
        sleep_ms(3);
        enq++;
        ncg_cev_after_call(&cev, k + 1, stream);
    }
    EXPECT(cev.head - cev.tail <= NCG_CEV_RING);
    ncg_completion_poll();
    EXPECT(s->coll_done <= 1005);
    dev = enq;
    ncg_completion_poll();
    ncg_completion_poll();
    EXPECT(s->coll_done == 1005 + 3 * NCG_CEV_RING);

    /* PROBE, asynchronous NCCL: the stream is busy right after a call -> EVENTS */
    ncg_completion_set_cuda(&mock, NCG_CMODE_PROBE);
    uint64_t base = s->coll_done;
    enq++;
    ncg_cev_after_call(&cev, base + 1, stream);
    EXPECT(ncg_cmode == NCG_CMODE_EVENTS);
    EXPECT(s->coll_done == base);
    /* PROBE, synchronous NCCL: idle streams after NCG_CEV_PROBES calls -> RETURN */
    ncg_completion_set_cuda(&mock, NCG_CMODE_PROBE);
    dev = enq;
    for (int k = 0; k < NCG_CEV_PROBES; k++)
        ncg_cev_after_call(&cev, base + 2 + (uint64_t)k, stream);
    EXPECT(ncg_cmode == NCG_CMODE_RETURN);
    EXPECT(s->coll_done == base + 1 + NCG_CEV_PROBES);

    /* a failing runtime: back to RETURN, the call counts as completed */
    ncg_completion_set_cuda(&mock, NCG_CMODE_EVENTS);
    fail_record = 1;
    sleep_ms(10); /* past the gap on the coarse clock */
    enq++;
    ncg_cev_after_call(&cev, base + 100, stream);
    EXPECT(ncg_cmode == NCG_CMODE_RETURN && s->coll_done == base + 100);

    /* groups: held while open, launched at End's entry, completed at its return */
    ncg_completion_set_cuda(&mock, NCG_CMODE_RETURN);
    s->coll_done = 0;
    ncg_group_note(s, &cev, 0, 7, stream);
    ncg_group_note(s, &cev, 0, 8, stream);
    ncg_group_note(s, &cev, 1, 3, stream);
    EXPECT(s->coll_held == 8 && s->p2p_held == 4);
    ncg_group_launch();
    EXPECT(s->coll_held == 0 && s->p2p_held == 0);
    ncg_group_done();
    EXPECT(s->coll_done == 9 && s->p2p_done == 4);

    if (failures) {
        printf("cev_test: %d failures\n", failures);
        return 1;
    }
    printf("cev_test: all checks pass\n");
    return 0;
}
