/* Helpers for the fakecuda test programs (C, and C++ for nvcc's kernel.cu): CK(call) fails
 * the test (exit 1) unless the call returned cudaSuccess, EXPECT(call, code) unless it returned
 * code, and a flag with a condvar for host functions that must block until a test thread
 * releases them. */
#ifndef FC_TEST_H
#define FC_TEST_H

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(call) EXPECT(call, cudaSuccess)
#define EXPECT(call, code)                                                                         \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != (code)) {                                                                        \
            fprintf(stderr, "%s:%d: %s returned %s (%d), expected %s\n", __FILE__, __LINE__,       \
                    #call, cudaGetErrorName(e_), (int)e_, #code);                                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: requirement failed: %s\n", __FILE__, __LINE__, #cond);         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* A gate a host function waits on (no spinning) until gate_open. */
struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
    int entered; /* the host function reached the gate */
};
#define GATE_INIT                                                                                  \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0                                  \
    }

static inline void gate_wait(void *arg)
{
    struct gate *g = (struct gate *)arg;
    pthread_mutex_lock(&g->mu);
    g->entered = 1;
    pthread_cond_broadcast(&g->cv);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static inline void gate_open(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Waits until a host function sits at the gate. */
static inline void gate_entered(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    while (!g->entered)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static inline void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
