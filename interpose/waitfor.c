/* The wait-for graph (waitfor.h): threads as nodes, an edge per (blocked call, member that has
 * not completed its slot, blocked driver thread of that member), and an iterative depth-first
 * search for one cycle. Pure; O(waits * members) edges. */
#include "waitfor.h"

#include <stdlib.h>

struct edge {
    size_t from, to; /* thread indexes */
    size_t wait;     /* the blocked call of `from` that waits */
    uint32_t target; /* the comm rank it waits for */
};

static size_t thread_of(const struct ncg_wf_wait *w, size_t nw, uint32_t proc, uint32_t tid,
                        const size_t *th)
{
    for (size_t i = 0; i < nw; i++)
        if (w[i].proc == proc && w[i].tid == tid)
            return th[i];
    return SIZE_MAX;
}

/* 1 when thread (proc, tid) is blocked in a call other than x's own counterpart (the same
 * collective slot, or the matching half of x's send/recv: those complete together with x). */
static int blocked_elsewhere(const struct ncg_wf_wait *w, size_t nw, const struct ncg_wf_wait *x,
                             uint32_t proc, uint32_t tid, uint32_t m)
{
    int other = 0;
    for (size_t j = 0; j < nw; j++) {
        const struct ncg_wf_wait *y = &w[j];
        if (y->proc != proc || y->tid != tid)
            continue;
        /* Blocked in x's counterpart too (alone or in a group with other calls): it takes part
         * in x, which can complete. */
        if (x->p2p && y->p2p && y->comm == x->comm && y->rank == m && y->peer == (int32_t)x->rank)
            return 0;
        if (!x->p2p && !y->p2p && y->comm == x->comm && y->seq == x->seq)
            return 0;
        other = 1;
    }
    return other;
}

long ncg_wf_find_cycle(const struct ncg_wf_wait *w, size_t nw, const struct ncg_wf_comm *comms,
                       size_t ncomms, struct ncg_wf_step *steps, size_t cap)
{
    long found = 0;
    size_t nth = 0, ne = 0, cape = 0;
    size_t *th = calloc(nw ? nw : 1, sizeof *th);
    struct edge *e = NULL;
    size_t *first = NULL, *stack = NULL, *via = NULL, *pos = NULL;
    uint8_t *color = NULL;
    if (!th)
        return -1;
    for (size_t i = 0; i < nw; i++) { /* thread index of each wait */
        size_t j;
        for (j = 0; j < i; j++)
            if (w[j].proc == w[i].proc && w[j].tid == w[i].tid)
                break;
        th[i] = j < i ? th[j] : nth++;
    }
    for (size_t i = 0; i < nw; i++) {
        const struct ncg_wf_wait *x = &w[i];
        if (x->comm >= ncomms || x->rank >= comms[x->comm].nranks)
            continue;
        const struct ncg_wf_comm *c = &comms[x->comm];
        uint32_t lo = 0, hi = c->nranks;
        if (x->p2p) {
            if (x->peer < 0 || (uint32_t)x->peer >= c->nranks)
                continue;
            lo = (uint32_t)x->peer;
            hi = lo + 1;
        }
        for (uint32_t m = lo; m < hi; m++) {
            const struct ncg_wf_member *mb = &c->m[m];
            if (m == x->rank || !mb->known || (!x->p2p && mb->done > x->seq))
                continue; /* itself, unknown, or it has completed the slot already */
            size_t t = thread_of(w, nw, mb->proc, mb->tid, th);
            if (t == SIZE_MAX || t == th[i] || !blocked_elsewhere(w, nw, x, mb->proc, mb->tid, m))
                continue; /* its driver thread is free to issue the call, or is this thread */
            if (ne == cape) {
                size_t n = cape ? 2 * cape : 64;
                struct edge *ee = realloc(e, n * sizeof *ee);
                if (!ee) {
                    found = -1;
                    goto out;
                }
                e = ee;
                cape = n;
            }
            e[ne++] = (struct edge){th[i], t, i, m};
        }
    }
    if (!ne)
        goto out;
    /* Adjacency by source thread (counting sort into `order`). */
    first = calloc(nth + 1, sizeof *first);
    size_t *order = malloc(ne * sizeof *order);
    stack = malloc(nth * sizeof *stack);
    via = malloc(nth * sizeof *via);
    pos = malloc(nth * sizeof *pos);
    color = calloc(nth, 1);
    if (!first || !order || !stack || !via || !pos || !color) {
        free(order);
        found = -1;
        goto out;
    }
    for (size_t k = 0; k < ne; k++)
        first[e[k].from + 1]++;
    for (size_t t = 0; t < nth; t++)
        first[t + 1] += first[t];
    for (size_t k = 0, *fill = pos; k < nth; k++)
        fill[k] = first[k];
    for (size_t k = 0; k < ne; k++)
        order[pos[e[k].from]++] = k;
    /* Iterative DFS; color 1 = on the stack, 2 = done. via[d] = edge taken from stack[d]. */
    for (size_t s = 0; s < nth && !found; s++) {
        if (color[s])
            continue;
        size_t d = 0;
        stack[0] = s;
        pos[s] = first[s];
        color[s] = 1;
        while (d != SIZE_MAX && !found) {
            size_t u = stack[d];
            if (pos[u] == first[u + 1]) {
                color[u] = 2;
                d = d ? d - 1 : SIZE_MAX;
                continue;
            }
            size_t k = order[pos[u]++];
            size_t v = e[k].to;
            via[d] = k;
            if (color[v] == 0) {
                color[v] = 1;
                pos[v] = first[v];
                stack[++d] = v;
            } else if (color[v] == 1) { /* back edge: the cycle is stack[i..d] -> v */
                size_t i0 = 0;
                while (stack[i0] != v)
                    i0++;
                size_t len = d - i0 + 1;
                for (size_t q = 0; q < len && q < cap; q++)
                    steps[q] = (struct ncg_wf_step){e[via[i0 + q]].wait, e[via[i0 + q]].target};
                found = (long)len;
            }
        }
    }
    free(order);
out:
    free(th);
    free(e);
    free(first);
    free(stack);
    free(via);
    free(pos);
    free(color);
    return found;
}
