/* The wait-for graph (waitfor.h): threads as nodes, an edge per (blocked call, member that has
 * not completed its slot, blocked driver thread of that member), and an iterative depth-first
 * search for one cycle. Pure; collective waits of one slot share a node (O(waits + members)
 * edges per slot). */
#include "waitfor.h"

#include <stdlib.h>

struct edge {
    size_t from, to; /* node indexes */
    size_t a;        /* threads: the blocked call of `from` that waits; streams: the call before */
    size_t b;        /* threads: the comm rank it waits for; streams: the call after */
};

/* Appends an edge, growing the array. 0, or -1 when out of memory. */
static int edge_add(struct edge **e, size_t *ne, size_t *cap, struct edge x)
{
    if (*ne == *cap) {
        size_t n = *cap ? 2 * *cap : 64;
        struct edge *ee = realloc(*e, n * sizeof *ee);
        if (!ee)
            return -1;
        *e = ee;
        *cap = n;
    }
    (*e)[(*ne)++] = x;
    return 0;
}

/* One cycle of the graph of nn nodes and ne edges: writes up to cap of its edges' indexes in
 * order into cyc and returns its length, 0 when there is none, -1 when out of memory.
 * Iterative depth-first search. */
static long find_cycle(const struct edge *e, size_t ne, size_t nn, size_t *cyc, size_t cap)
{
    long found = 0;
    if (!ne || !nn)
        return 0;
    /* Adjacency by source node (counting sort into `order`). */
    size_t *first = calloc(nn + 1, sizeof *first);
    size_t *order = malloc(ne * sizeof *order);
    size_t *stack = malloc(nn * sizeof *stack);
    size_t *via = malloc(nn * sizeof *via);
    size_t *pos = malloc(nn * sizeof *pos);
    uint8_t *color = calloc(nn, 1);
    if (!first || !order || !stack || !via || !pos || !color) {
        found = -1;
        goto out;
    }
    for (size_t k = 0; k < ne; k++)
        first[e[k].from + 1]++;
    for (size_t t = 0; t < nn; t++)
        first[t + 1] += first[t];
    for (size_t k = 0; k < nn; k++)
        pos[k] = first[k];
    for (size_t k = 0; k < ne; k++)
        order[pos[e[k].from]++] = k;
    /* color 1 = on the stack, 2 = done. via[d] = edge taken from stack[d]. */
    for (size_t s = 0; s < nn && !found; s++) {
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
                    cyc[q] = via[i0 + q];
                found = (long)len;
            }
        }
    }
out:
    free(first);
    free(order);
    free(stack);
    free(via);
    free(pos);
    free(color);
    return found;
}

/* A found cycle of len edges (cyc) as steps, where nodes from `aux` on are go-betweens (a
 * collective slot's group, a host thread) entered by one edge and left by the next: each step
 * is an edge out of a node below aux, with (pair[k][1]) the edge leaving the go-between it
 * entered, else SIZE_MAX. Writes up to cap steps; returns how many there are. Pure. */
static long cycle_steps(const struct edge *e, const size_t *cyc, long len, size_t aux,
                        size_t (*pair)[2], size_t cap)
{
    size_t r0 = 0; /* start at an edge out of a node below aux */
    while (e[cyc[r0]].from >= aux)
        r0++;
    long k = 0;
    for (long q = 0; q < len; k++) {
        size_t x = cyc[(r0 + (size_t)q) % (size_t)len], through = e[x].to >= aux;
        if ((size_t)k < cap) {
            pair[k][0] = x;
            pair[k][1] = through ? cyc[(r0 + (size_t)q + 1) % (size_t)len] : SIZE_MAX;
        }
        q += through ? 2 : 1;
    }
    return k;
}

/* The waits sorted by thread: thread t's waits are keys[run[t] .. run[t + 1]). Lookups are
 * binary searches, so a hang where every rank waits costs O(edges log waits), not
 * O(waits^2 * members). */
struct tkey {
    uint32_t proc, tid;
    size_t idx;
};

/* qsort's order of two keys (x0, x1, xi) and (y0, y1, yi): by the first, then the second, then
 * the index (the order a sort keeps the same). */
static int key_order(uint64_t x0, uint64_t x1, size_t xi, uint64_t y0, uint64_t y1, size_t yi)
{
    if (x0 != y0)
        return x0 < y0 ? -1 : 1;
    if (x1 != y1)
        return x1 < y1 ? -1 : 1;
    return xi < yi ? -1 : xi > yi;
}

static int tkey_cmp(const void *pa, const void *pb)
{
    const struct tkey *a = pa, *b = pb;
    return key_order(a->proc, a->tid, a->idx, b->proc, b->tid, b->idx);
}

/* The thread index of (proc, tid), SIZE_MAX when it waits in nothing. */
static size_t thread_of(const struct tkey *keys, size_t nw, uint32_t proc, uint32_t tid,
                        const size_t *th)
{
    size_t lo = 0, hi = nw;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (keys[mid].proc < proc || (keys[mid].proc == proc && keys[mid].tid < tid))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < nw && keys[lo].proc == proc && keys[lo].tid == tid ? th[keys[lo].idx] : SIZE_MAX;
}

/* 1 when thread t is blocked in a call other than x's own counterpart (the same collective
 * slot, or the matching half of x's send/recv, the same k-th pair in the other direction:
 * those complete together with x). */
static int blocked_elsewhere(const struct ncg_wf_wait *w, const struct tkey *keys,
                             const size_t *run, size_t t, const struct ncg_wf_wait *x, uint32_t m)
{
    int other = 0;
    for (size_t k = run[t]; k < run[t + 1]; k++) {
        const struct ncg_wf_wait *y = &w[keys[k].idx];
        /* Blocked in x's counterpart too (alone or in a group with other calls): it takes part
         * in x, which can complete. */
        if (x->p2p && y->p2p && y->comm == x->comm && y->rank == m && y->peer == (int32_t)x->rank &&
            (!x->dir || !y->dir || (x->dir != y->dir && x->seq == y->seq)))
            return 0;
        if (!x->p2p && !y->p2p && y->comm == x->comm && y->seq == x->seq)
            return 0;
        other = 1;
    }
    return other;
}

/* A collective wait by its (comm, slot) group. */
struct gkey {
    uint32_t comm;
    uint64_t seq;
    size_t idx;
};

static int gkey_cmp(const void *pa, const void *pb)
{
    const struct gkey *a = pa, *b = pb;
    return key_order(a->comm, a->seq, a->idx, b->comm, b->seq, b->idx);
}

long ncg_wf_find_cycle(const struct ncg_wf_wait *w, size_t nw, const struct ncg_wf_comm *comms,
                       size_t ncomms, struct ncg_wf_step *steps, size_t cap)
{
    long found = 0;
    size_t nth = 0, ne = 0, cape = 0;
    size_t *th = calloc(nw ? nw : 1, sizeof *th);
    size_t *run = malloc(sizeof *run * (nw + 1));
    struct tkey *keys = malloc(sizeof *keys * (nw ? nw : 1));
    struct gkey *gk = NULL;
    struct edge *e = NULL;
    if (!th || !run || !keys) {
        found = -1;
        goto out;
    }
    for (size_t i = 0; i < nw; i++)
        keys[i] = (struct tkey){w[i].proc, w[i].tid, i};
    qsort(keys, nw, sizeof *keys, tkey_cmp);
    for (size_t k = 0; k < nw; k++) { /* thread index of each wait, numbered in key order */
        if (!k || keys[k].proc != keys[k - 1].proc || keys[k].tid != keys[k - 1].tid)
            run[nth++] = k;
        th[keys[k].idx] = nth - 1;
    }
    run[nth] = nw;
    /* Collective waits grouped by (comm, slot): every wait of a group has the same targets
     * (the members that have not completed the slot and whose driver thread is blocked in
     * another call), so each group is one extra node, with an edge from each of its waiting
     * threads and one to each target's thread: a hang where every rank waits in one slot costs
     * O(waits + members) edges and time, not O(waits * members). A target is never a thread of
     * the group (blocked in this very slot, it is not blocked elsewhere). P2P waits: one edge
     * to the peer's thread. */
    gk = malloc(sizeof *gk * (nw ? nw : 1));
    if (!gk) {
        found = -1;
        goto out;
    }
    size_t ng = 0, ngroups = 0;
    for (size_t i = 0; i < nw; i++) {
        const struct ncg_wf_wait *x = &w[i];
        if (x->comm >= ncomms || x->rank >= comms[x->comm].nranks)
            continue;
        if (!x->p2p) {
            gk[ng++] = (struct gkey){x->comm, x->seq, i};
            continue;
        }
        const struct ncg_wf_comm *c = &comms[x->comm];
        if (x->peer < 0 || (uint32_t)x->peer >= c->nranks)
            continue;
        uint32_t m = (uint32_t)x->peer;
        const struct ncg_wf_member *mb = &c->m[m];
        if (m == x->rank || !mb->known)
            continue; /* itself, or unknown */
        size_t t = thread_of(keys, nw, mb->proc, mb->tid, th);
        if (t == SIZE_MAX || t == th[i] || !blocked_elsewhere(w, keys, run, t, x, m))
            continue; /* its driver thread is free to issue the call, or is this thread */
        if (edge_add(&e, &ne, &cape, (struct edge){th[i], t, i, m}) != 0) {
            found = -1;
            goto out;
        }
    }
    qsort(gk, ng, sizeof *gk, gkey_cmp);
    for (size_t a = 0, b; a < ng; a = b) {
        for (b = a + 1; b < ng && gk[b].comm == gk[a].comm && gk[b].seq == gk[a].seq; b++)
            ;
        size_t node = nth + ngroups++;
        const struct ncg_wf_wait *x = &w[gk[a].idx];
        const struct ncg_wf_comm *c = &comms[x->comm];
        for (size_t k = a; k < b; k++)
            if (edge_add(&e, &ne, &cape, (struct edge){th[gk[k].idx], node, gk[k].idx, 0}) != 0) {
                found = -1;
                goto out;
            }
        for (uint32_t m = 0; m < c->nranks; m++) {
            const struct ncg_wf_member *mb = &c->m[m];
            if (!mb->known || mb->done > x->seq)
                continue; /* unknown, or it has completed the slot already */
            size_t t = thread_of(keys, nw, mb->proc, mb->tid, th);
            if (t == SIZE_MAX || !blocked_elsewhere(w, keys, run, t, x, m))
                continue; /* its driver thread is free to issue the call */
            if (edge_add(&e, &ne, &cape, (struct edge){node, t, SIZE_MAX, m}) != 0) {
                found = -1;
                goto out;
            }
        }
    }
    if (ne) {
        /* a step through a group is two edges: the wait into it, the target out of it */
        size_t ecap = 2 * cap + 2, *cyc = malloc(sizeof *cyc * ecap);
        size_t(*pair)[2] = malloc(sizeof *pair * (cap ? cap : 1));
        long len = cyc && pair ? find_cycle(e, ne, nth + ngroups, cyc, ecap) : -1;
        found = len;
        if (len > 0 && (size_t)len <= ecap) {
            found = cycle_steps(e, cyc, len, nth, pair, cap);
            for (long k = 0; k < found && (size_t)k < cap; k++) {
                const struct edge *x = &e[pair[k][0]];
                /* through a group: the edge out of it names the target */
                uint32_t target = (uint32_t)(pair[k][1] == SIZE_MAX ? x : &e[pair[k][1]])->b;
                steps[k] = (struct ncg_wf_step){x->a, target};
            }
        } /* else a cycle longer than cap steps can tell: len (over cap) says so */
        free(cyc);
        free(pair);
    }
out:
    free(th);
    free(run);
    free(keys);
    free(gk);
    free(e);
    return found;
}

/* ---- streams (asynchronous NCCL) ---- */

/* Calls sorted by keys computed before the sort (qsort has no context argument; no global
 * holds one): up to five keys, then the call's index. */
struct sd_key {
    uint64_t k[5];
    size_t i;
};

static int sd_key_cmp(const void *pa, const void *pb)
{
    const struct sd_key *a = pa, *b = pb;
    for (int j = 0; j < 5; j++)
        if (a->k[j] != b->k[j])
            return a->k[j] < b->k[j] ? -1 : 1;
    return 0;
}

/* The launch order of x relative to base (24-bit wrapping). */
static uint32_t sd_rel(const struct ncg_sd_call *x, uint32_t base)
{
    return (x->order - base) & NCG_SD_ORDER_MASK;
}

enum sd_by { SD_BY_CALL, SD_BY_STREAM, SD_BY_REL };

/* idx[0..n) (indices into c) sorted by: the call (comm, p2p, seq, src, dst: one call on every
 * member), the stream (proc, tid, stream, order), or the launch order relative to base. keys:
 * scratch for n entries (filled: keys[i] is idx[i]'s after the sort). */
static void sd_sort(size_t *idx, size_t n, const struct ncg_sd_call *c, enum sd_by by,
                    uint32_t base, struct sd_key *keys)
{
    for (size_t i = 0; i < n; i++) {
        const struct ncg_sd_call *x = &c[idx[i]];
        struct sd_key *k = &keys[i];
        *k = (struct sd_key){.i = idx[i]};
        if (by == SD_BY_CALL) {
            k->k[0] = x->comm, k->k[1] = x->p2p, k->k[2] = x->seq, k->k[3] = x->src;
            k->k[4] = x->dst;
        } else if (by == SD_BY_STREAM) {
            k->k[0] = x->proc, k->k[1] = x->tid, k->k[2] = x->stream, k->k[3] = x->order;
        } else {
            k->k[0] = sd_rel(x, base);
        }
    }
    qsort(keys, n, sizeof *keys, sd_key_cmp);
    for (size_t i = 0; i < n; i++)
        idx[i] = keys[i].i;
}

/* 1 when host x waits for call y: on its process, on the stream it waits for, and (an event)
 * launched by the event's recorder no later than the event. */
static int host_waits_for(const struct ncg_sd_host *x, const struct ncg_sd_call *y)
{
    if (y->proc != x->proc || !y->stream ||
        (x->stream != NCG_SD_ALL_STREAMS && x->stream != y->stream))
        return 0;
    if (!x->rec_tid)
        return 1;
    return y->tid == x->rec_tid &&
           ((x->order - y->order) & NCG_SD_ORDER_MASK) <= NCG_SD_ORDER_MASK / 2;
}

/* The host wait of (proc, tid), or SIZE_MAX. */
static size_t host_of(const struct ncg_sd_host *h, size_t nh, uint32_t proc, uint32_t tid)
{
    for (size_t i = 0; i < nh; i++)
        if (h[i].proc == proc && h[i].tid == tid)
            return i;
    return SIZE_MAX;
}

long ncg_sd_find_cycle(const struct ncg_sd_call *c, size_t n, struct ncg_sd_step *steps, size_t cap)
{
    return ncg_sd_find_cycle_hosts(c, n, NULL, 0, NULL, 0, steps, cap);
}

/* Per (process, thread, stream) in launch order: every call of a launch waits for every call of
 * the launch before it (a group's calls share one launch and run together). The edges between
 * the calls' nodes (node[]) into e; bys and keys are scratch of n. 0, or -1 out of memory. */
static int stream_edges(const struct ncg_sd_call *c, size_t n, const size_t *node, size_t *bys,
                        struct sd_key *keys, struct edge **e, size_t *ne, size_t *cape)
{
    sd_sort(bys, n, c, SD_BY_STREAM, 0, keys);
    for (size_t g0 = 0, g1; g0 < n; g0 = g1) {
        const struct ncg_sd_call *hd = &c[bys[g0]];
        for (g1 = g0 + 1; g1 < n && c[bys[g1]].proc == hd->proc && c[bys[g1]].tid == hd->tid &&
                          c[bys[g1]].stream == hd->stream;
             g1++)
            ;
        if (!hd->stream || g1 - g0 < 2)
            continue; /* unknown stream: orders nothing */
        /* Orders wrap at 24 bits: when the group spans more than half the range, the calls
         * with small orders came after the wrap. */
        uint32_t lo = c[bys[g0]].order, hi = c[bys[g1 - 1]].order, base = lo;
        if (hi - lo > NCG_SD_ORDER_MASK / 2)
            for (size_t q = g0; q < g1; q++)
                if (c[bys[q]].order > NCG_SD_ORDER_MASK / 2) {
                    base = c[bys[q]].order;
                    break;
                }
        sd_sort(bys + g0, g1 - g0, c, SD_BY_REL, base, keys);
        /* launches [u0, u1) then [u1, u2) */
        for (size_t u0 = g0, u1, u2; u0 < g1; u0 = u1) {
            for (u1 = u0 + 1; u1 < g1 && c[bys[u1]].order == c[bys[u0]].order; u1++)
                ;
            for (u2 = u1; u2 < g1 && c[bys[u2]].order == c[bys[u1]].order; u2++)
                ;
            for (size_t p = u0; p < u1; p++)
                for (size_t q = u1; q < u2; q++) {
                    if (node[bys[p]] == node[bys[q]])
                        continue; /* the same call twice: a malformed report, no order */
                    if (edge_add(e, ne, cape,
                                 (struct edge){node[bys[p]], node[bys[q]], bys[p], bys[q]}) != 0)
                        return -1;
                }
        }
    }
    return 0;
}

long ncg_sd_find_cycle_hosts(const struct ncg_sd_call *c, size_t n, const struct ncg_sd_host *h,
                             size_t nh, const struct ncg_sd_comm *comms, size_t ncomms,
                             struct ncg_sd_step *steps, size_t cap)
{
    long found = 0;
    size_t ne = 0, cape = 0, nn = 0;
    struct edge *e = NULL;
    size_t *byk = malloc(sizeof *byk * (n ? n : 1)), *node = malloc(sizeof *node * (n ? n : 1));
    size_t *bys = malloc(sizeof *bys * (n ? n : 1));
    struct sd_key *keys = malloc(sizeof *keys * (n ? n : 1));
    size_t ecap = 2 * cap + 2, *cyc = malloc(sizeof *cyc * ecap); /* a host step is two edges */
    size_t(*pair)[2] = malloc(sizeof *pair * (cap ? cap : 1));
    if (!byk || !node || !bys || !keys || !cyc || !pair) {
        found = -1;
        goto out;
    }
    /* One node per distinct call: the same slot of a comm (or the same send/recv pair) is one
     * call on every member. */
    for (size_t i = 0; i < n; i++)
        byk[i] = bys[i] = i;
    sd_sort(byk, n, c, SD_BY_CALL, 0, keys);
    for (size_t i = 0; i < n; i++) {
        if (i && sd_key_cmp(&keys[i - 1], &keys[i]) != 0)
            nn++;
        node[byk[i]] = nn;
    }
    nn += n != 0;
    if (stream_edges(c, n, node, bys, keys, &e, &ne, &cape) != 0) {
        found = -1;
        goto out;
    }
    /* Host nodes nn + i, in the streams' sense (an edge from what must complete first): the
     * calls host i waits for come before it; host i comes before a call that a member has not
     * issued when that member drives the call's comm from host i's thread. */
    for (size_t i = 0; i < nh; i++)
        for (size_t y = 0; y < n; y++)
            if (host_waits_for(&h[i], &c[y]) &&
                edge_add(&e, &ne, &cape, (struct edge){node[y], nn + i, y, 0}) != 0) {
                found = -1;
                goto out;
            }
    for (size_t a = 0, b; nh && a < n; a = b) { /* per call: byk's runs of one node */
        for (b = a + 1; b < n && node[byk[b]] == node[byk[a]]; b++)
            ;
        const struct ncg_sd_call *x = &c[byk[a]];
        if (x->comm >= ncomms)
            continue;
        const struct ncg_sd_comm *cm = &comms[x->comm];
        for (uint32_t r = 0; r < cm->nranks; r++) {
            const struct ncg_sd_member *m = &cm->m[r];
            if (!m->known || (x->p2p && r != x->src && r != x->dst) ||
                (!x->p2p && m->count > x->seq))
                continue; /* unknown, not a party to it, or issued it */
            int issued = 0;
            for (size_t q = a; q < b && x->p2p; q++)
                issued |= c[byk[q]].rank == r && c[byk[q]].proc == m->proc;
            if (x->p2p && !issued)
                issued = !cm->p2p_open || !cm->p2p_open(cm->arg, x->src, x->dst, x->seq, r);
            size_t hi = issued ? SIZE_MAX : host_of(h, nh, m->proc, m->tid);
            if (hi != SIZE_MAX &&
                edge_add(&e, &ne, &cape, (struct edge){nn + hi, node[byk[a]], byk[a], r}) != 0) {
                found = -1;
                goto out;
            }
        }
    }
    long len = find_cycle(e, ne, nn + nh, cyc, ecap);
    found = len;
    if (len > 0 && (size_t)len <= ecap) {
        found = cycle_steps(e, cyc, len, nn, pair, cap);
        for (long k = 0; k < found && (size_t)k < cap; k++) {
            const struct edge *x = &e[pair[k][0]];
            struct ncg_sd_step st = {x->a, x->b, SIZE_MAX, 0};
            if (pair[k][1] != SIZE_MAX) { /* into a host: the next edge leaves it to its call */
                const struct edge *y = &e[pair[k][1]];
                st = (struct ncg_sd_step){x->a, y->a, x->to - nn, (uint32_t)y->b};
            }
            steps[k] = st;
        }
    }
out:
    free(pair);
    free(byk);
    free(node);
    free(bys);
    free(keys);
    free(cyc);
    free(e);
    return found;
}
