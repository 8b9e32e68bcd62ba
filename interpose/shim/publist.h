/* An append-only list of pointers that application threads add to under a lock and the
 * checker thread reads without one: the comms that use completion events (completion.c) and
 * those with straggler samples (slow.c). Entries are never removed (their owners live as long
 * as the process), so a reader needs no lock: the count is published after the pointer. */
#ifndef NCG_PUBLIST_H
#define NCG_PUBLIST_H

#include <ck_pr.h>
#include <pthread.h>
#include <stdint.h>

#define NCG_PUBLIST_MAX 256u

struct ncg_publist {
    void *e[NCG_PUBLIST_MAX];
    uint32_t n;
    pthread_mutex_t lk;
}; /* a static one: {.lk = PTHREAD_MUTEX_INITIALIZER} */

/* Adds p once: *registered (p's own flag, read by others with acquire) is set when it is in.
 * 1: added now; 0: it was in already; -1: the list is full (p stays out). Any thread; takes
 * the list's lock; no allocation. */
static inline int ncg_publist_add(struct ncg_publist *l, void *p, int *registered)
{
    int rc = 0;
    pthread_mutex_lock(&l->lk);
    if (!__atomic_load_n(registered, __ATOMIC_RELAXED)) {
        rc = -1;
        if (l->n < NCG_PUBLIST_MAX) {
            __atomic_store_n(registered, 1, __ATOMIC_RELEASE);
            ck_pr_store_ptr(&l->e[l->n], p);
            /* The pointer before the count (release): the reader reads entries below the
             * count it loaded (acquire). */
            __atomic_store_n(&l->n, l->n + 1, __ATOMIC_RELEASE);
            rc = 1;
        }
    }
    pthread_mutex_unlock(&l->lk);
    return rc;
}

/* How many entries a reader may read now. Any thread; lock-free. */
static inline uint32_t ncg_publist_count(struct ncg_publist *l)
{
    return __atomic_load_n(&l->n, __ATOMIC_ACQUIRE);
}

/* Entry i (below a count from ncg_publist_count). Any thread; lock-free. */
static inline void *ncg_publist_at(struct ncg_publist *l, uint32_t i)
{
    return ck_pr_load_ptr(&l->e[i]);
}

#endif
