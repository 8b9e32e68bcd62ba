/* The p2p matching table (p2pmatch.h): chained hash buckets keyed by (src, dst, k), one
 * malloc'd node per held record. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "p2pmatch.h"
#include "sigmatch.h"
#include "verdict.h"
#include "ncclguard/signal.h"

#define P2PM_BUCKETS 1024u

struct ncg_p2pm_node {
    struct ncg_p2pm_node *next;
    struct ncg_p2pm_rec e;
};

static uint32_t p2pm_hash(int32_t s, int32_t d, uint64_t k)
{
    uint64_t h = ((uint64_t)(uint32_t)s * 0x9e3779b97f4a7c15ull) ^
                 ((uint64_t)(uint32_t)d * 0xc2b2ae3d27d4eb4full) ^ (k * 0x165667b19e3779f9ull);
    return (uint32_t)(h >> 40) % P2PM_BUCKETS;
}

/* A signal wait's match: the earlier signals it counted were sent and are waited for; drop
 * those still held so they do not wait 60 s for a wait of their own (none comes). */
static void drop_counted(struct ncg_p2pm *t, int32_t src, int32_t dst, const struct ncg_p2p_rec *r)
{
    uint64_t lo, hi;
    ncg_sig_wait_span(r, &lo, &hi);
    for (uint64_t k = lo; k < hi && t->n; k++)
        for (struct ncg_p2pm_node **pp = &t->bucket[p2pm_hash(src, dst, k)], *e; (e = *pp);
             pp = &e->next)
            if (e->e.src == src && e->e.dst == dst && e->e.rec.seq == k &&
                e->e.rec.func == NCG_F_SEND) {
                *pp = e->next;
                free(e);
                t->n--;
                break;
            }
}

int ncg_p2pm_add(struct ncg_p2pm *t, int32_t me, uint32_t nranks, const struct ncg_p2p_rec *r,
                 uint64_t now_ns, struct ncg_p2pm_rec pair[2])
{
    if (r->peer < 0 || (uint32_t)r->peer >= nranks ||
        (r->func != NCG_F_SEND && r->func != NCG_F_RECV))
        return NCG_P2PM_BAD;
    int send = r->func == NCG_F_SEND;
    struct ncg_p2pm_rec mine = {send ? me : r->peer, send ? r->peer : me, now_ns, *r};
    if (!t->bucket && !(t->bucket = calloc(P2PM_BUCKETS, sizeof *t->bucket))) {
        pair[0] = mine;
        return NCG_P2PM_NOMEM;
    }
    uint32_t h = p2pm_hash(mine.src, mine.dst, r->seq);
    struct ncg_p2pm_node **pp = &t->bucket[h], *e;
    for (e = *pp; e; pp = &e->next, e = e->next)
        if (e->e.src == mine.src && e->e.dst == mine.dst && e->e.rec.seq == r->seq)
            break;
    if (e) {
        if (e->e.rec.func == r->func)
            return NCG_P2PM_DUP;
        int differ = !ncg_sig_pair(&e->e.rec, r) &&
                     (e->e.rec.count != r->count || e->e.rec.dtype != r->dtype);
        pair[send ? 0 : 1] = mine;
        pair[send ? 1 : 0] = e->e;
        *pp = e->next;
        free(e);
        t->n--;
        drop_counted(t, mine.src, mine.dst, &pair[1].rec);
        return differ ? NCG_P2PM_DIFFER : NCG_P2PM_EQUAL;
    }
    pair[0] = mine;
    if (t->n >= NCG_P2PM_MAX)
        return NCG_P2PM_FULL;
    if (!(e = malloc(sizeof *e)))
        return NCG_P2PM_NOMEM;
    e->e = mine;
    e->next = t->bucket[h];
    t->bucket[h] = e;
    t->n++;
    return NCG_P2PM_HELD;
}

int ncg_p2pm_held(const struct ncg_p2pm *t, int32_t src, int32_t dst, uint64_t k, uint8_t func)
{
    if (!t || !t->bucket || !t->n)
        return 0;
    for (const struct ncg_p2pm_node *e = t->bucket[p2pm_hash(src, dst, k)]; e; e = e->next)
        if (e->e.src == src && e->e.dst == dst && e->e.rec.seq == k)
            return e->e.rec.func == func;
    return 0;
}

void ncg_p2pm_take(struct ncg_p2pm *t, uint64_t now_ns, uint64_t age_ns,
                   void (*cb)(void *arg, const struct ncg_p2pm_rec *e), void *arg)
{
    if (!t->bucket || !t->n)
        return;
    for (uint32_t b = 0; b < P2PM_BUCKETS; b++)
        for (struct ncg_p2pm_node **pp = &t->bucket[b], *e; (e = *pp);) {
            if (now_ns - e->e.t_ns > age_ns) {
                if (cb)
                    cb(arg, &e->e);
                *pp = e->next;
                free(e);
                t->n--;
            } else {
                pp = &e->next;
            }
        }
}

void ncg_p2pm_clear(struct ncg_p2pm *t)
{
    if (!t->bucket)
        return;
    for (uint32_t b = 0; b < P2PM_BUCKETS; b++)
        for (struct ncg_p2pm_node *e = t->bucket[b], *n; e; e = n) {
            n = e->next;
            free(e);
        }
    free(t->bucket);
    t->bucket = NULL;
    t->n = 0;
}

void ncg_p2pm_verdict(struct ncg_verdict *v, const struct ncg_p2pm_rec pair[2])
{
    int32_t src = pair[0].src, dst = pair[0].dst;
    v->ncalls = 2;
    for (int i = 0; i < 2; i++) {
        const struct ncg_p2p_rec *r = &pair[i].rec;
        struct ncg_vcall *vc = &v->calls[i];
        vc->call.seq = r->seq;
        vc->call.count = r->count;
        vc->call.dtype = r->dtype;
        vc->call.func = r->func;
        vc->call.redop = NCG_REDOP_NONE;
        vc->call.root = r->peer;
        snprintf(vc->ranks, sizeof vc->ranks, "%d", i ? dst : src);
    }
    v->slot = (int64_t)pair[0].rec.seq;
    snprintf(v->subject, sizeof v->subject, "%d,%d", src < dst ? src : dst, src < dst ? dst : src);
    snprintf(v->detail, sizeof v->detail, "send #%" PRIu64 " from rank %d to rank %d",
             ncg_p2p_nth(pair[0].rec.seq), src, dst);
}
