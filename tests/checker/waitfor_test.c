/* Unit tests of the wait-for graph (interpose/judge/waitfor.c): inversions of 2, 3 and 8 ranks,
 * split child and parent, p2p, and the cases that must never be a cycle (threads owning
 * communicators, a lagging rank, a matching send/recv, groups, unknown members). Each case
 * also runs with its waits in reverse order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "waitfor.h"

NCG_CHECK_PROGRAM("waitfor_test");

#define MAXR 16
struct comm {
    uint32_t n;
    struct ncg_wf_member m[MAXR];
};

static void member(struct comm *c, uint32_t r, uint32_t proc, uint32_t tid, uint64_t done)
{
    c->m[r] = (struct ncg_wf_member){1, proc, tid, done};
    if (r + 1 > c->n)
        c->n = r + 1;
}

static struct ncg_wf_wait coll(uint32_t proc, uint32_t tid, uint32_t comm, uint32_t rank,
                               uint64_t slot)
{
    return (struct ncg_wf_wait){proc, tid, comm, rank, 0, slot, -1, 0};
}

static struct ncg_wf_wait p2p(uint32_t proc, uint32_t tid, uint32_t comm, uint32_t rank, uint64_t k,
                              int32_t peer)
{
    return (struct ncg_wf_wait){proc, tid, comm, rank, 1, k, peer, 0};
}

/* Runs the case forwards and backwards; want = expected cycle length (0: none). */
static void check(const char *name, struct ncg_wf_wait *w, size_t nw, struct comm *cs, size_t nc,
                  long want)
{
    struct ncg_wf_comm comms[8];
    for (size_t i = 0; i < nc; i++)
        comms[i] = (struct ncg_wf_comm){cs[i].n, cs[i].m};
    for (int rev = 0; rev < 2; rev++) {
        struct ncg_wf_wait ww[64];
        for (size_t i = 0; i < nw; i++)
            ww[i] = w[rev ? nw - 1 - i : i];
        struct ncg_wf_step st[64];
        long n = ncg_wf_find_cycle(ww, nw, comms, nc, st, 64);
        if (!CHECKF(n == want, "%s%s: cycle of %ld, want %ld", name, rev ? " (reversed)" : "", n,
                    want))
            continue;
        /* Each step waits on a member whose driver thread is the next step's thread. */
        for (long k = 0; k < n; k++) {
            const struct ncg_wf_wait *x = &ww[st[k].wait], *y = &ww[st[(k + 1) % n].wait];
            const struct ncg_wf_member *m = &comms[x->comm].m[st[k].target];
            CHECKF(m->proc == y->proc && m->tid == y->tid, "%s: step %ld does not lead to the next",
                   name, k);
        }
    }
}

/* ---- streams (asynchronous NCCL): ncg_sd_find_cycle ---- */

static struct ncg_sd_call q(uint32_t proc, uint32_t tid, uint8_t stream, uint32_t order,
                            uint32_t comm, uint64_t slot)
{
    return (struct ncg_sd_call){proc, tid, stream, order, comm, 0, slot, 0, 0, proc};
}

static struct ncg_sd_call qp(uint32_t proc, uint8_t stream, uint32_t order, uint32_t comm,
                             uint64_t k, uint32_t src, uint32_t dst)
{
    return (struct ncg_sd_call){proc, 10 + proc, stream, order, comm, 1, k, src, dst, proc};
}

static int same_call(const struct ncg_sd_call *a, const struct ncg_sd_call *b)
{
    return a->comm == b->comm && a->p2p == b->p2p && a->seq == b->seq && a->src == b->src &&
           a->dst == b->dst;
}

/* Runs the case forwards and backwards; want = expected cycle length (0: none). */
static void sd_check(const char *name, const struct ncg_sd_call *c, size_t n, long want)
{
    for (int rev = 0; rev < 2; rev++) {
        struct ncg_sd_call cc[64];
        for (size_t i = 0; i < n; i++)
            cc[i] = c[rev ? n - 1 - i : i];
        struct ncg_sd_step st[64];
        long got = ncg_sd_find_cycle(cc, n, st, 64);
        if (!CHECKF(got == want, "%s%s: cycle of %ld, want %ld", name, rev ? " (reversed)" : "",
                    got, want))
            continue;
        /* Each step: two calls of one thread's stream, in launch order; the later one is the
         * next step's earlier one on another member. */
        for (long k = 0; k < got; k++) {
            const struct ncg_sd_call *b = &cc[st[k].before], *a = &cc[st[k].after];
            const struct ncg_sd_call *nb = &cc[st[(k + 1) % got].before];
            CHECKF(!(b->proc != a->proc || b->tid != a->tid || b->stream != a->stream ||
                     ((a->order - b->order) & NCG_SD_ORDER_MASK) == 0 ||
                     ((a->order - b->order) & NCG_SD_ORDER_MASK) > NCG_SD_ORDER_MASK / 2 ||
                     !same_call(a, nb) || a->proc == nb->proc),
                   "%s%s: step %ld is not a stream order edge into the next", name,
                   rev ? " (reversed)" : "", k);
        }
    }
}

/* Exhaustive: 2 processes, 3 collectives (comms 0-2, slot 0), every launch order and every
 * assignment to 2 streams per process; the oracle is the transitive closure of "before on a
 * stream" (every pair, not only neighbours). */
static void sd_exhaustive(void)
{
    static const int perm[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                   {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int p0 = 0; p0 < 6; p0++)
        for (int p1 = 0; p1 < 6; p1++)
            for (int sm = 0; sm < 64; sm++) {
                struct ncg_sd_call c[6];
                int reach[3][3] = {{0}};
                size_t n = 0;
                for (int pr = 0; pr < 2; pr++) {
                    const int *pm = perm[pr ? p1 : p0];
                    for (int i = 0; i < 3; i++) {
                        uint8_t stream = (uint8_t)(1 + ((sm >> (pr * 3 + i)) & 1));
                        c[n++] = q((uint32_t)pr, 10, stream, (uint32_t)i + 1, (uint32_t)pm[i], 0);
                        for (int j = 0; j < i; j++)
                            if (((sm >> (pr * 3 + j)) & 1) == ((sm >> (pr * 3 + i)) & 1))
                                reach[pm[j]][pm[i]] = 1;
                    }
                }
                for (int k = 0; k < 3; k++)
                    for (int i = 0; i < 3; i++)
                        for (int j = 0; j < 3; j++)
                            reach[i][j] |= reach[i][k] && reach[k][j];
                int cyc = reach[0][0] || reach[1][1] || reach[2][2];
                struct ncg_sd_step st[8];
                long got = ncg_sd_find_cycle(c, n, st, 8);
                /* a cycle among 3 calls over 2 processes has 2 or 3 steps */
                CHECKF(!(cyc ? got < 2 || got > 3 : got != 0),
                       "streams exhaustive p=%d,%d streams=%x: cycle of %ld, want %s", p0, p1, sm,
                       got, cyc ? "one" : "none");
            }
}

/* ---- streams with host waits: ncg_sd_find_cycle_hosts ---- */

/* Two ranks (process = rank = comm rank, driving thread 10 + rank) of comms 0 and 1, their
 * counts given; want = the cycle's length. Each step through a host names a member that has not
 * issued the step's next call, whose driving thread is that host. */
static int sh_open = 1; /* what the checker's table says of every unissued send/recv side */
static int sh_p2p_open(const void *arg, uint32_t src, uint32_t dst, uint64_t seq, uint32_t missing)
{
    (void)arg, (void)src, (void)dst, (void)seq, (void)missing;
    return sh_open;
}

static void sh_check(const char *name, const struct ncg_sd_call *c, size_t n,
                     const struct ncg_sd_host *h, size_t nh, const uint64_t cnt[2][2], long want)
{
    struct ncg_sd_member m[2][2];
    struct ncg_sd_comm cm[2];
    for (uint32_t k = 0; k < 2; k++) {
        for (uint32_t r = 0; r < 2; r++)
            m[k][r] = (struct ncg_sd_member){1, r, 10 + r, cnt[k][r]};
        cm[k] = (struct ncg_sd_comm){2, m[k], sh_p2p_open, NULL};
    }
    struct ncg_sd_step st[16];
    long got = ncg_sd_find_cycle_hosts(c, n, h, nh, cm, 2, st, 16);
    if (!CHECKF(got == want, "%s: cycle of %ld, want %ld", name, got, want))
        return;
    for (long k = 0; k < got; k++) {
        const struct ncg_sd_call *b = &c[st[k].before], *a = &c[st[k].after];
        const struct ncg_sd_call *nb = &c[st[(k + 1) % got].before];
        if (st[k].host == SIZE_MAX)
            continue;
        const struct ncg_sd_host *x = &h[st[k].host];
        CHECKF(b->proc == x->proc && same_call(a, nb) && m[a->comm][st[k].rank].proc == x->proc,
               "%s: step %ld through a host does not hold together", name, k);
    }
}

static void sh_cases(void)
{
    /* rank 0: AllReduce (comm 0, slot 4) then Send #0 to 1 on its stream; rank 1: Recv #0 from 0,
     * then waits for its stream before its AllReduce */
    struct ncg_sd_call cp[] = {q(0, 10, 1, 1, 0, 4), qp(0, 1, 2, 0, 0, 0, 1),
                               qp(1, 1, 1, 0, 0, 0, 1)};
    struct ncg_sd_host h1 = {1, 11, 1, 0, 0};
    const uint64_t c41[2][2] = {{5, 4}, {0, 0}}, c55[2][2] = {{5, 5}, {0, 0}};
    sh_check("collective against a receive, host waits", cp, 3, &h1, 1, c41, 2);
    sh_check("the same without the host wait", cp, 3, NULL, 0, c41, 0);
    /* rank 1 issued the AllReduce already: it is queued (no edge through the host) */
    sh_check("issued: no host edge", cp, 3, &h1, 1, c55, 0);
    /* rank 1's host waits on another stream than the receive's */
    struct ncg_sd_host h1s = {1, 11, 2, 0, 0};
    sh_check("host waits on another stream", cp, 3, &h1s, 1, c41, 0);
    struct ncg_sd_host h1a = {1, 11, NCG_SD_ALL_STREAMS, 0, 0};
    sh_check("host waits on every stream", cp, 3, &h1a, 1, c41, 2);
    /* an event recorded before the receive was enqueued (order 0 < 1): not waited for */
    struct ncg_sd_host h1e = {1, 11, 1, 11, 0}, h1f = {1, 11, 1, 11, 1};
    sh_check("event before the receive", cp, 3, &h1e, 1, c41, 0);
    sh_check("event after the receive", cp, 3, &h1f, 1, c41, 2);
    /* a host wait of a thread that drives nothing */
    struct ncg_sd_host h9 = {1, 99, 1, 0, 0};
    sh_check("another thread waits", cp, 3, &h9, 1, c41, 0);
    /* send on comm 0, its receive on comm 1 (a duplicate), both hosts wait */
    struct ncg_sd_call dup[] = {qp(0, 1, 1, 0, 0, 0, 1), qp(1, 1, 1, 1, 0, 0, 1)};
    struct ncg_sd_host hh[] = {{0, 10, 1, 0, 0}, {1, 11, 1, 0, 0}};
    const uint64_t c0[2][2] = {{0, 0}, {0, 0}};
    sh_check("send and receive on two comms", dup, 2, hh, 2, c0, 2);
    sh_check("only one host waits", dup, 2, hh, 1, c0, 0);
    /* the matching receive is posted on the same comm: a pair, no cycle */
    struct ncg_sd_call pair[] = {qp(0, 1, 1, 0, 0, 0, 1), qp(1, 1, 1, 0, 0, 0, 1)};
    sh_check("a posted pair", pair, 2, hh, 2, c0, 0);
    /* receive against receive, both hosts waiting: each waits for the other's send */
    struct ncg_sd_call rr[] = {qp(0, 1, 1, 0, 0, 1, 0), qp(1, 1, 1, 0, 0, 0, 1)};
    rr[0].rank = 0, rr[1].rank = 1;
    sh_check("receive against receive", rr, 2, hh, 2, c0, 2);
    /* the other sides were reported (their records matched): completed, not unissued, however
     * stale the entries listing the first sides (a healthy ring seen mid-flight) */
    sh_open = 0;
    sh_check("other sides reported", rr, 2, hh, 2, c0, 0);
    sh_check("other side reported, two comms", dup, 2, hh, 2, c0, 0);
    sh_open = 1;
}

static void sd_cases(void)
{
    /* two ranks, world (comm 0) and a split child (comm 1) inverted on one stream each */
    struct ncg_sd_call inv[] = {q(0, 10, 1, 7, 0, 20), q(0, 10, 1, 8, 1, 20), q(1, 11, 1, 3, 1, 20),
                                q(1, 11, 1, 4, 0, 20)};
    sd_check("inversion, 2 ranks", inv, 4, 2);
    /* the same calls, rank 1's second comm on another stream: they overlap, no deadlock */
    struct ncg_sd_call ovl[] = {q(0, 10, 1, 7, 0, 20), q(0, 10, 2, 8, 1, 20), q(1, 11, 2, 3, 1, 20),
                                q(1, 11, 1, 4, 0, 20)};
    sd_check("different streams overlap", ovl, 4, 0);
    /* rank 1's calls from two threads (threads owning comms): no order between them */
    struct ncg_sd_call thr[] = {q(0, 10, 1, 7, 0, 20), q(0, 10, 1, 8, 1, 20), q(1, 11, 1, 3, 1, 20),
                                q(1, 12, 1, 4, 0, 20)};
    sd_check("two threads, one stream index", thr, 4, 0);
    /* a consistent order, with more calls queued behind */
    struct ncg_sd_call ok[] = {q(0, 10, 1, 1, 0, 5), q(0, 10, 1, 2, 1, 5), q(0, 10, 1, 3, 0, 6),
                               q(1, 11, 1, 1, 0, 5), q(1, 11, 1, 2, 1, 5), q(1, 11, 1, 3, 0, 6)};
    sd_check("consistent order", ok, 6, 0);
    /* rank 0 launches both in one group: they run together, rank 1's order is fine */
    struct ncg_sd_call grp[] = {q(0, 10, 1, 7, 0, 20), q(0, 10, 1, 7, 1, 20), q(1, 11, 1, 3, 1, 20),
                                q(1, 11, 1, 4, 0, 20)};
    sd_check("a group runs its calls together", grp, 4, 0);
    /* a group after the inverted pair still orders after both */
    struct ncg_sd_call grp2[] = {q(0, 10, 1, 6, 2, 0),  q(0, 10, 1, 7, 0, 20),
                                 q(0, 10, 1, 7, 3, 0),  q(0, 10, 1, 8, 1, 20),
                                 q(1, 11, 1, 3, 1, 20), q(1, 11, 1, 4, 0, 20)};
    sd_check("inversion through a group", grp2, 6, 2);
    /* three ranks, three comms in a ring: 0: A B; 1: B C; 2: C A */
    struct ncg_sd_call ring3[] = {q(0, 10, 1, 1, 0, 0), q(0, 10, 1, 2, 1, 0), q(1, 11, 1, 1, 1, 0),
                                  q(1, 11, 1, 2, 2, 0), q(2, 12, 1, 1, 2, 0), q(2, 12, 1, 2, 0, 0)};
    sd_check("ring of 3", ring3, 6, 3);
    /* 8 ranks: rank r takes comm r then comm r+1 (mod 8) */
    struct ncg_sd_call ring8[16];
    for (uint32_t r = 0; r < 8; r++) {
        ring8[2 * r] = q(r, 10 + r, 1, 1, r, 0);
        ring8[2 * r + 1] = q(r, 10 + r, 1, 2, (r + 1) % 8, 0);
    }
    sd_check("ring of 8", ring8, 16, 8);
    /* p2p: rank 0 sends to 1 on world then all-reduces the child; rank 1 all-reduces the child
     * first, then receives */
    struct ncg_sd_call pp[] = {qp(0, 1, 1, 0, 0, 0, 1), q(0, 10, 1, 2, 1, 3), q(1, 11, 1, 1, 1, 3),
                               qp(1, 1, 2, 0, 0, 0, 1)};
    sd_check("send against a collective", pp, 4, 2);
    /* the matching halves of two different pairs are different calls */
    struct ncg_sd_call pp2[] = {qp(0, 1, 1, 0, 0, 0, 1), q(0, 10, 1, 2, 1, 3), q(1, 11, 1, 1, 1, 3),
                                qp(1, 1, 2, 0, 1, 0, 1)};
    sd_check("another pair's receive", pp2, 4, 0);
    /* unknown streams order nothing */
    struct ncg_sd_call unk[] = {q(0, 10, 0, 7, 0, 20), q(0, 10, 0, 8, 1, 20), q(1, 11, 1, 3, 1, 20),
                                q(1, 11, 1, 4, 0, 20)};
    sd_check("unknown stream", unk, 4, 0);
    /* launch orders wrap at 24 bits: 0xffffff comes before 1 */
    struct ncg_sd_call wr[] = {q(0, 10, 1, 0xffffff, 0, 20), q(0, 10, 1, 1, 1, 20),
                               q(1, 11, 1, 5, 1, 20), q(1, 11, 1, 6, 0, 20)};
    sd_check("wrapped orders, inverted", wr, 4, 2);
    struct ncg_sd_call wr2[] = {q(0, 10, 1, 0xffffff, 0, 20), q(0, 10, 1, 1, 1, 20),
                                q(1, 11, 1, 5, 0, 20), q(1, 11, 1, 6, 1, 20)};
    sd_check("wrapped orders, consistent", wr2, 4, 0);
    sd_check("nothing", NULL, 0, 0);
    sd_exhaustive();
}

/* At scale: nw threads (one per process) of comms A and B of nr ranks (members 0..nw-1
 * known), every one blocked in A's slot 20 except `odd` of them, blocked in B's slot 20
 * first (none completed either). odd = 0: no cycle; odd > 0: cycles of 2 (an odd thread and
 * an A one wait on each other), whose steps lead each to the next. The graph's size grows with
 * waits + members (one node per slot's waits): this also bounds its time. */
static void scale_case(uint32_t nw, uint32_t nr, uint32_t odd)
{
    struct ncg_wf_member *ma = calloc(nr, sizeof *ma), *mb = calloc(nr, sizeof *mb);
    struct ncg_wf_wait *w = calloc(nw, sizeof *w);
    for (uint32_t i = 0; i < nw; i++) {
        ma[i] = mb[i] = (struct ncg_wf_member){1, i, 1000 + i, 20};
        w[i] = coll(i, 1000 + i, i < odd ? 1 : 0, i, 20);
    }
    struct ncg_wf_comm comms[2] = {{nr, ma}, {nr, mb}};
    struct ncg_wf_step st[64];
    long n = ncg_wf_find_cycle(w, nw, comms, 2, st, 64);
    CHECKF(n == (odd ? 2 : 0), "scale %u waits, %u ranks, %u odd: cycle of %ld", nw, nr, odd, n);
    for (long k = 0; k < n && n <= 64; k++) {
        const struct ncg_wf_wait *x = &w[st[k].wait], *y = &w[st[(k + 1) % n].wait];
        const struct ncg_wf_member *m = &comms[x->comm].m[st[k].target];
        CHECKF(!(m->proc != y->proc || m->tid != y->tid || x->comm == y->comm),
               "scale %u odd: step %ld does not lead to the next", odd, k);
    }
    free(ma);
    free(mb);
    free(w);
}

int main(void)
{
    struct comm c[4];
    struct ncg_wf_wait w[64];
    size_t nw;

    /* 2 ranks: rank 0 in WORLD slot 0 then DUP, rank 1 in DUP slot 0 then WORLD. */
    memset(c, 0, sizeof c);
    member(&c[0], 0, 0, 100, 0), member(&c[0], 1, 1, 200, 0); /* completed counts */
    member(&c[1], 0, 0, 100, 0), member(&c[1], 1, 1, 200, 0);
    w[0] = coll(0, 100, 0, 0, 0), w[1] = coll(1, 200, 1, 1, 0);
    check("inversion 2 ranks", w, 2, c, 2, 2);
    /* the same on GPU streams: each rank has issued both comms' calls (queued behind its
     * first), the counts of issued calls are equal, the heads of the streams differ */
    check("asynchronous inversion", w, 2, c, 2, 2);

    /* the same, but the DUP comm is driven by a second thread on rank 0: no deadlock */
    c[1].m[0].tid = 101;
    check("threads own communicators", w, 2, c, 2, 0);

    /* healthy: both ranks in WORLD slot 0 (the same call on both) */
    memset(c, 0, sizeof c);
    member(&c[0], 0, 0, 100, 0), member(&c[0], 1, 1, 200, 0);
    w[0] = coll(0, 100, 0, 0, 0), w[1] = coll(1, 200, 0, 1, 0);
    check("healthy slot", w, 2, c, 1, 0);

    /* LAG: rank 1 pauses before the barrier (not blocked): rank 0 waits, no cycle */
    w[0] = coll(0, 100, 0, 0, 0);
    check("lag is not a deadlock", w, 1, c, 1, 0);

    /* unknown member: no edge to it */
    memset(c, 0, sizeof c);
    member(&c[0], 0, 0, 100, 0);
    c[0].n = 2;
    member(&c[1], 0, 0, 100, 0), member(&c[1], 1, 1, 200, 0);
    w[0] = coll(0, 100, 0, 0, 0), w[1] = coll(1, 200, 1, 1, 0);
    check("unknown member", w, 2, c, 2, 0);

    /* 3 ranks, 3 comms in a ring: r0 on A then B, r1 on B then C, r2 on C then A */
    memset(c, 0, sizeof c);
    member(&c[0], 0, 0, 1, 1), member(&c[0], 1, 2, 3, 0); /* A = {r0, r2} */
    member(&c[1], 0, 1, 2, 1), member(&c[1], 1, 0, 1, 0); /* B = {r1, r0} */
    member(&c[2], 0, 2, 3, 1), member(&c[2], 1, 1, 2, 0); /* C = {r2, r1} */
    w[0] = coll(0, 1, 0, 0, 0), w[1] = coll(1, 2, 1, 0, 0), w[2] = coll(2, 3, 2, 0, 0);
    check("3-cycle", w, 3, c, 3, 3);
    /* break it: r2 drives A from another thread (free to issue A's slot) */
    c[0].m[1].tid = 4;
    check("3 comms, one thread-owned", w, 3, c, 3, 0);

    /* 8 ranks: split child DUP = {0, 1}; rank 0 in WORLD then DUP, rank 1 in DUP then WORLD,
     * ranks 2-7 in WORLD (waiting on rank 1, not part of the cycle) */
    memset(c, 0, sizeof c);
    for (uint32_t r = 0; r < 8; r++)
        member(&c[0], r, r, 1000 + r, 5);
    member(&c[1], 0, 0, 1000, 5), member(&c[1], 1, 1, 1001, 5);
    nw = 0;
    for (uint32_t r = 0; r < 8; r++)
        w[nw++] = r == 1 ? coll(1, 1001, 1, 1, 5) : coll(r, 1000 + r, 0, r, 5);
    check("8 ranks, split child and parent", w, nw, c, 2, 2);

    /* p2p: rank 0 sends to rank 1 on A, then AllReduce on B; rank 1 AllReduce on B first */
    memset(c, 0, sizeof c);
    member(&c[0], 0, 0, 100, 0), member(&c[0], 1, 1, 200, 0);
    member(&c[1], 0, 0, 100, 0), member(&c[1], 1, 1, 200, 0);
    w[0] = p2p(0, 100, 0, 0, 0, 1), w[1] = coll(1, 200, 1, 1, 0);
    check("p2p then collective", w, 2, c, 2, 2);
    /* the matching recv is posted: the pair completes */
    w[1] = p2p(1, 200, 0, 1, 0, 0);
    check("matching send/recv", w, 2, c, 2, 0);
    /* p2p both ways on two comms: r0 sends on A to r1, r1 sends on B to r0 */
    memset(c, 0, sizeof c);
    member(&c[0], 0, 0, 100, 0), member(&c[0], 1, 1, 200, 0);
    member(&c[1], 0, 0, 100, 0), member(&c[1], 1, 1, 200, 0);
    w[0] = p2p(0, 100, 0, 0, 0, 1), w[1] = p2p(1, 200, 1, 1, 0, 0);
    check("p2p across two comms", w, 2, c, 2, 2);

    /* directions known (wire): a send against the peer's recv of the same k is a pair; a
     * receive against a receive, a send against a send, or the other k are not */
    memset(c, 0, sizeof c);
    member(&c[0], 0, 0, 100, 0), member(&c[0], 1, 1, 200, 0);
    w[0] = p2p(0, 100, 0, 0, 0, 1), w[1] = p2p(1, 200, 0, 1, 0, 0);
    w[0].dir = NCG_WF_SEND, w[1].dir = NCG_WF_RECV;
    check("send and its recv", w, 2, c, 1, 0);
    w[0].dir = NCG_WF_RECV;
    check("recv against recv", w, 2, c, 1, 2);
    w[0].dir = w[1].dir = NCG_WF_SEND;
    check("send against send", w, 2, c, 1, 2);
    w[1].dir = NCG_WF_RECV, w[1].seq = 1;
    check("send #0 against recv #1", w, 2, c, 1, 2);

    /* a group: rank 0 blocked in {A slot 0, B slot 0} (issued both), rank 1 blocked in A
     * slot 0 and has not issued B yet: rank 1's A completes, no cycle */
    memset(c, 0, sizeof c);
    member(&c[0], 0, 0, 100, 0), member(&c[0], 1, 1, 200, 0);
    member(&c[1], 0, 0, 100, 0), member(&c[1], 1, 1, 200, 0);
    w[0] = coll(0, 100, 0, 0, 0), w[1] = coll(0, 100, 1, 0, 0), w[2] = coll(1, 200, 0, 1, 0);
    check("group over two comms", w, 3, c, 2, 0);

    /* several ranks in one process, one thread each (InitAll-like): thread ids differ */
    memset(c, 0, sizeof c);
    member(&c[0], 0, 7, 1, 0), member(&c[0], 1, 7, 2, 0);
    member(&c[1], 0, 7, 1, 0), member(&c[1], 1, 7, 2, 0);
    w[0] = coll(7, 1, 0, 0, 0), w[1] = coll(7, 2, 1, 1, 0);
    check("one process, two threads", w, 2, c, 2, 2);

    /* empty input, out-of-range comm index and rank */
    check("nothing", w, 0, c, 2, 0);
    w[0] = coll(0, 1, 9, 0, 0), w[1] = coll(0, 1, 0, 9, 0);
    check("bad indexes", w, 2, c, 2, 0);

    /* exhaustive: 2 ranks x 2 comms x every (completed, blocked-on) combination; a cycle
     * exactly when the ranks are blocked on different comms, each on a slot the other has not
     * completed (a rank is blocked only in a slot it has not completed itself). */
    for (int b0 = 0; b0 < 3; b0++)
        for (int b1 = 0; b1 < 3; b1++)
            for (int mask = 0; mask < 16; mask++) {
                memset(c, 0, sizeof c);
                uint64_t dn[2][2] = {{mask & 1, (mask >> 1) & 1},
                                     {(mask >> 2) & 1, (mask >> 3) & 1}}; /* [comm][rank] */
                for (int k = 0; k < 2; k++)
                    for (uint32_t r = 0; r < 2; r++)
                        member(&c[k], r, r, 10 + r, dn[k][r]);
                nw = 0;
                int blk[2] = {b0, b1}; /* 0: not blocked, 1: on comm 0, 2: on comm 1 */
                for (uint32_t r = 0; r < 2; r++)
                    if (blk[r] && !dn[blk[r] - 1][r])
                        w[nw++] = coll(r, 10 + r, (uint32_t)blk[r] - 1, r, 0);
                int want = 0;
                if (nw == 2 && blk[0] != blk[1] && !dn[blk[0] - 1][1] && !dn[blk[1] - 1][0])
                    want = 2;
                char name[64];
                snprintf(name, sizeof name, "exhaustive b=%d,%d mask=%x", b0, b1, mask);
                check(name, w, nw, c, 2, want);
            }

    sd_cases();
    sh_cases();
    scale_case(4096, 16384, 0);
    scale_case(4096, 16384, 1);
    scale_case(4096, 16384, 2048);
    scale_case(16384, 16384, 13);

    return ncg_check_done();
}
