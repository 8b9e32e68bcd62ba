/* The monotonic clocks every layer reads, in nanoseconds: one definition of each, inline (the
 * coarse one is on the recording hot path); and a raw cycle counter for the straggler samples'
 * marks (shim/slow.c converts it with a ratio calibrated against CLOCK_MONOTONIC). */
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

/* A raw counter, ticks at a constant rate of unknown frequency: x86-64 rdtsc (~10 ns on a kvm VM
 * where clock_gettime costs ~24 ns), aarch64 cntvct_el0, else CLOCK_MONOTONIC's ns. Not
 * serializing: a mark may move by a few instructions. Usable for durations only where
 * ncg_ticks_usable() says so. Any thread; no allocation. */
static inline uint64_t ncg_ticks(void)
{
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return ncg_now_ns();
#endif
}

#if defined(__x86_64__)
#include <cpuid.h>
#endif
/* Whether ncg_ticks() runs at a constant rate through frequency changes and idle states (x86:
 * CPUID's invariant TSC bit; aarch64's generic timer always does). Any thread; no allocation;
 * a CPUID instruction (slow under a hypervisor: call it once). */
static inline int ncg_ticks_usable(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    __cpuid(0x80000007u, a, b, c, d);
    return (d >> 8) & 1;
#else
    return 1;
#endif
}

#endif
