/* The monotonic clocks every layer reads, in nanoseconds: one definition of each, inline (the
 * coarse one is on the recording hot path). */
#ifndef NCG_CLOCK_H
#define NCG_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns (vDSO, no syscall). Any thread; no allocation. */
static inline uint64_t ncg_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC_COARSE in ns: tick resolution (a few ms) for a few ns in the vDSO where the
 * exact clock costs ~22 ns (kvm-clock; BENCHMARKS.md "Per-call cost"). Same epoch as
 * ncg_now_ns. Any thread; no allocation. */
static inline uint64_t ncg_coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
