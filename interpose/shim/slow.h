/* Straggler samples (SLOW, docs/checker.md "Stragglers"): at deterministic sampled slots of each
 * communicator (the same slots on every member: a gap drawn from a hash of the comm id and the
 * slot, NCCLGUARD_SLOW_SAMPLE on average) the rank's own duration of the call, issue to
 * completion on its own clock, and its time per slot since the previous sample. Synchronous
 * NCCL: the host clock around the call. Asynchronous NCCL (EVENTS): a timed CUDA event pair
 * around the call on its stream, read by the checker thread (cudaEventElapsedTime), and whether
 * the stream was still busy when the call was issued (the GPU is late) or idle (the host is).
 * The hot path pays one compare with the comm's next sampled slot; a sampled host call two reads
 * of the cycle counter (clock.h ncg_ticks), converted to time by the checker thread with a ratio
 * it calibrates against CLOCK_MONOTONIC (samples taken before that wait in the ring). */
#ifndef NCG_SLOW_H
#define NCG_SLOW_H

#include <stdint.h>

#define NCG_SLOW_RING 16u /* published samples kept per comm (power of two) */
#define NCG_SLOW_BOX 4u   /* timed event pairs in flight per comm (asynchronous NCCL) */
#define NCG_SLOW_OFF UINT64_MAX

struct ncg_slow_sample {
    uint64_t slot;
    uint32_t dur_us;    /* issue to completion */
    uint32_t period_us; /* completion of the previous sample to this one's */
    uint32_t gap;       /* slots between the two (0: no previous sample) */
    uint8_t device;     /* 1: the stream was busy at issue */
};

/* A published sample as its writer left it: durations in ticks (host marks) or in ns (timed
 * events); ncg_slow_read converts. */
struct ncg_slow_raw {
    uint64_t slot;
    uint64_t dur, period; /* issue to completion; the previous sample's completion to this one's */
    uint32_t gap;         /* slots between the two (0: no previous sample) */
    uint8_t device;       /* 1: the stream was busy at issue */
    uint8_t ticks;        /* 1: dur and period in ncg_ticks(), 0: in ns */
};

struct ncg_slow_box {
    void *ev0, *ev1; /* timed events (created once, reused) */
    uint64_t slot;
    uint8_t busy;
};

/* Per communicator, inside struct ncg_comm. */
struct ncg_slow {
    /* published: single writer (the issuing thread under synchronous NCCL, the checker thread
     * under asynchronous), read by the checker thread (ncg_slow_read) */
    struct ncg_slow_raw s[NCG_SLOW_RING];
    uint64_t head;
    /* writer's */
    uint64_t prev_slot, prev_end; /* in the unit of the last sample */
    int have_prev;
    uint64_t t_issue; /* synchronous: the call in flight, issued at (ticks) */
    uint64_t slot_issue;
    int how; /* the sampled call in flight: timed by host marks or by an event pair */
    /* asynchronous: the application thread fills box[bhead], the checker thread reads them in
     * order (bdone) and hands a box back (btail) once the next one no longer needs its end
     * event for the period */
    struct ncg_slow_box box[NCG_SLOW_BOX];
    uint64_t bhead, btail, bdone;
    int registered;
    /* reader's */
    uint64_t sent;
};

struct ncg_comm;
/* The comm's first sampled slot (NCG_SLOW_OFF when NCCLGUARD_SLOW=0). Creation; pure. */
uint64_t ncg_slow_first(uint64_t comm_id);
/* Slow path of a sampled slot (comm.c, application thread, before the real call): the next
 * sampled slot, and the issue mark (a clock read, or a stream query and an event record). */
void ncg_slow_issue(struct ncg_comm *c, uint64_t slot, void *stream, int grouped);
/* Checker thread: reads the finished event pairs of every comm into their samples. Never
 * blocks. */
void ncg_slow_poll(void);
/* Checker thread, each tick: calibrates the ticks-to-ns ratio against CLOCK_MONOTONIC over the
 * thread's own intervals (ready after 100 ms, refined over the whole run). No allocation. */
void ncg_slow_calibrate(void);
/* Checker thread: the samples published since the previous read (at most cap, the latest),
 * oldest first, in microseconds. Samples in ticks wait (0 returned, nothing consumed) while the
 * ratio is not calibrated yet, so none is ever sent with a wrong scale. */
uint32_t ncg_slow_read(struct ncg_slow *s, struct ncg_slow_sample *out, uint32_t cap);

#endif
