/* ncg-sim's virtual ranks: the calls they issue (one chained digest per variant, the odd
 * rank's differing from its slot) and what a rank's client sends and answers (HELLO, REPORT,
 * WAIT, ANSWER) over its link (sim.h). See tests/sim/README.md. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "hash.h"
#include "sim.h"
#include "straggler.h"

/* ---- the calls: one chained digest per variant (the odd rank's differs from its slot) ---- */

static uint64_t *chain_ok, *chain_odd;
static uint64_t nslots;
uint64_t dl_slot;
uint64_t t_samp;
static uint8_t *sampled; /* comm c's slot s is sampled: bit s of sampled[c * (nslots / 8 + 1)] */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void call_of(uint64_t slot, int odd, struct ncg_call *c)
{
    c->seq = slot;
    c->func = NCG_F_ALLREDUCE;
    c->count = 1024 + slot % 7;
    c->dtype = 7;
    c->redop = 0;
    c->root = -1;
    if (odd && slot == A.mismatch_slot) {
        c->func = NCG_F_BROADCAST;
        c->count = 1;
        c->root = 0;
        c->redop = NCG_REDOP_NONE;
    }
}

/* ---- straggler samples (--slow-rank, --samples) ---- */

/* The slots the shim samples (common/hash.h's ncg_slow_gap with NCCLGUARD_SLOW_SAMPLE, 16 on
 * average): the same slots on every rank, and the shim's. */
static void samples_init(void)
{
    size_t per = nslots / 8 + 1;
    sampled = calloc(per * A.comms, 1);
    for (uint32_t c = 0; c < A.comms; c++)
        for (uint64_t s = ncg_slow_gap(COMM0 + c, 0, ncg_cfg.slow_sample); s < nslots;
             s += ncg_slow_gap(COMM0 + c, s, ncg_cfg.slow_sample))
            sampled[c * per + s / 8] |= (uint8_t)(1u << (s % 8));
}

static int is_sampled(uint32_t c, uint64_t s)
{
    return s < nslots && (sampled[c * (nslots / 8 + 1) + s / 8] >> (s % 8)) & 1;
}

/* A rank's issue-to-completion time of slot s, in us. Ranks arrive at a slot within a jitter
 * of 0-5% of the step (10 ms at 100 calls/s), --slow-rank R slow-pct% of the step later; the
 * collective then completes everywhere at once, 10% of the step after the last arrival. So a
 * rank's duration is that moment minus its arrival: R's is the shortest (it arrives last);
 * without one the shortest moves from slot to slot (the largest jitter). */
static uint32_t dur_us(uint32_t rank, uint64_t s, uint32_t step_us)
{
    uint32_t jit = step_us / 20, late = (uint32_t)(step_us * A.slow_pct / 100);
    uint32_t arrive = jit ? (uint32_t)(mix(((uint64_t)rank << 32) ^ s ^ 0x51ull) % jit) : 0;
    uint32_t last = jit; /* the last arrival: the jitter's bound, or the slow rank */
    if (A.slow_rank >= 0)
        last = late + jit;
    if ((int64_t)rank == A.slow_rank)
        arrive += late;
    return last - arrive + step_us / 10;
}

/* Entry c's samples: the sampled slots in [from, n), thinned to the wire's bound as the agent
 * does (interpose/agent/report.c's slow_samples), each with its time per slot (none in a
 * rank's first sample of the comm: it has no previous one). */
static void vr_samples(struct vr *v, struct ncg_msg_report *r, uint32_t c, uint64_t from,
                       uint64_t n)
{
    uint64_t slot[64];
    size_t idx[64], k = 0;
    if (n - from > 512) /* the shim's ring holds a few: after a long gap, the latest */
        from = n - 512;
    for (uint64_t s = from; s < n && k < 64; s++)
        if (is_sampled(c, s))
            slot[k++] = s;
    k = ncg_sg_thin(slot, k, NCG_WIRE_MAX_SLOW, idx);
    uint32_t step = (uint32_t)(1e6 / A.rate);
    for (size_t j = 0; j < k; j++) {
        int seen = c >= 64 || ((v->samp_seen >> c) & 1);
        r->slow[c][j] = (struct ncg_report_slow){.slot = slot[idx[j]],
                                                 .dur_us = dur_us(v->rank, slot[idx[j]], step),
                                                 .step_us = seen ? step : 0};
        if (c < 64)
            v->samp_seen |= 1ull << c;
    }
    r->nslow[c] = (uint8_t)k;
}

void chains_init(void)
{
    nslots = (uint64_t)(A.rate * (A.seconds + 30)) + 2 * RING;
    chain_ok = malloc(sizeof *chain_ok * nslots);
    chain_odd = malloc(sizeof *chain_odd * nslots);
    uint64_t a = 0, b = 0;
    for (uint64_t s = 0; s < nslots; s++) {
        struct ncg_call c;
        call_of(s, 0, &c);
        a = mix(a ^ mix(c.func * 131 + c.count));
        call_of(s, 1, &c);
        b = mix(b ^ mix(c.func * 131 + c.count));
        chain_ok[s] = a;
        chain_odd[s] = b;
    }
    samples_init();
}

/* ---- virtual ranks ---- */
/* Collective calls rank issued on comm c (0-based from COMM0) by time t. */
uint64_t issued_at(uint32_t rank, uint32_t c, uint64_t t)
{
    if (A.deadlock_rank < 0 || t < t_event)
        return count_at(t);
    int first = (int64_t)rank == A.deadlock_rank ? c == 1 : c == 0; /* the call it is blocked in */
    return dl_slot + (uint64_t)first;
}

uint64_t count_at(uint64_t t)
{
    if (t <= T0)
        return 0;
    uint64_t n = (uint64_t)((double)(t - T0) / 1e9 * A.rate);
    return n < nslots ? n : nslots - 1;
}

static void vr_send(struct vr *v, const struct ncg_msg *m)
{
    if (v->dead || v->frozen)
        return;
    if (v->sock)
        net_send(&v->peer, m, ekey(EK_VR, (uint32_t)(v - V), 0), &v->dirty);
    else
        lq_push(LQ_CHILD, v->relay, v->conn, 0, 0, m, &v->peer.tref); /* the queue: its link */
}

void vr_hello(struct vr *v)
{
    struct ncg_msg h = {.type = NCG_MSG_HELLO};
    h.u.hello.token = TOKEN;
    h.u.hello.pid = 100000 + v->rank;
    h.u.hello.global_rank = (int32_t)v->rank;
    snprintf(h.u.hello.host, sizeof h.u.hello.host, "n%u", v->node);
    vr_send(v, &h);
}

/* The messages a virtual rank sends are built in static buffers whose unused tails stay zero:
 * only the header and the n entries sent are written (a struct ncg_msg is 11 KB, and zeroing it
 * per frame was the simulator's own largest cost at scale). */
void vr_report(struct vr *v, uint64_t t)
{
    static struct ncg_msg m, w;
    m.type = NCG_MSG_REPORT;
    m.u.report.n = A.comms;
    for (uint32_t c = 0; c < A.comms; c++) {
        uint64_t n = issued_at(v->rank, c, t), d = n;
        if (A.deadlock_rank >= 0 && t >= t_event)
            d = dl_slot;
        m.u.report.e[c] = (struct ncg_report_entry){.comm_id = COMM0 + c,
                                                    .nranks = A.ranks,
                                                    .rank = v->rank,
                                                    .count = n,
                                                    .done = d,
                                                    .done_hi = d,
                                                    .global_rank = (int32_t)v->rank,
                                                    .tid = v->rank};
        m.u.report.nslow[c] = 0;
        if (t_samp && t >= t_samp && A.deadlock_rank < 0) {
            uint64_t from = v->samp_from, first = count_at(t_samp);
            vr_samples(v, &m.u.report, c, from > first ? from : first, n);
        }
    }
    v->samp_from = issued_at(v->rank, 0, t);
    vr_send(v, &m);
    v->reports++;
    if (A.deadlock_rank >= 0 && t >= t_event + 100000000ull) { /* blocked for an interval */
        w.type = NCG_MSG_WAIT;
        w.u.wait.n = 1;
        struct ncg_wait_ent *e = &w.u.wait.w[0];
        *e = (struct ncg_wait_ent){.comm_id = COMM0 + ((int64_t)v->rank == A.deadlock_rank),
                                   .rank = v->rank,
                                   .tid = v->rank};
        call_of(dl_slot, 0, &e->call);
        snprintf(e->site, sizeof e->site, "train_step+0x5d (sim+0x115d)");
        vr_send(v, &w);
    }
}

static void vr_answer(struct vr *v, const struct ncg_msg_query *q, uint64_t t)
{
    static struct ncg_msg m; /* see vr_report */
    m.type = NCG_MSG_ANSWER;
    m.u.answer.comm_id = q->comm_id;
    m.u.answer.qid = q->qid;
    m.u.answer.rank = v->rank;
    m.u.answer.n = q->n;
    uint64_t n = issued_at(v->rank, (uint32_t)(q->comm_id - COMM0), t);
    int odd = (int64_t)v->rank == A.mismatch_rank && q->comm_id == COMM0;
    for (uint32_t k = 0; k < q->n; k++) {
        struct ncg_answer *a = &m.u.answer.a[k];
        uint64_t s = q->slot[k];
        memset(a, 0, offsetof(struct ncg_answer, site) + 1);
        a->call.seq = s;
        if (s >= n) {
            a->status = NCG_ANS_NONE;
        } else if (n - s > RING) {
            a->status = NCG_ANS_GONE;
        } else {
            a->status = NCG_ANS_OK;
            a->digest = odd && s >= A.mismatch_slot ? chain_odd[s] : chain_ok[s];
            call_of(s, odd, &a->call);
            if (q->mode & NCG_QUERY_RECORDS)
                snprintf(a->site, sizeof a->site, "%s (sim+0x%x)",
                         odd && s == A.mismatch_slot ? "save_checkpoint+0x2c" : "train_step+0x5d",
                         odd && s == A.mismatch_slot ? 0x1c2c : 0x115d);
        }
    }
    vr_send(v, &m);
}

/* t: about now (the queue's clock, read once per relay frame). */
void vr_rx(struct vr *v, const struct ncg_msg *m, uint64_t t)
{
    if (v->dead || v->frozen)
        return;
    v->rx_ns = t;
    if (m->type == NCG_MSG_QUERY) {
        v->narrowed += m->u.query.nrep != 0;
        vr_answer(v, &m->u.query, t);
    } else if (m->type == NCG_MSG_RVERDICT && m->u.rverdict.v &&
               m->u.rverdict.v->kind == NCG_V_SLOW) { /* a warning: the job goes on */
        if (!v->slows++) {
            v->slow_ns = t;
            v->slow_named = (int32_t)atoi(m->u.rverdict.v->subject);
        }
    } else if (m->type == NCG_MSG_RVERDICT && m->u.rverdict.v) {
        /* a DEADLOCK has a verdict per comm of its cycle: comm 0's is the one every rank gets */
        if (A.deadlock_rank >= 0 && m->u.rverdict.v->comm_id != COMM0)
            return;
        if (!v->verdicts++) {
            v->got_ns = t;
            v->kind = m->u.rverdict.v->kind;
            snprintf(v->subject, sizeof v->subject, "%s", m->u.rverdict.v->subject);
        }
    }
}

/* The relay this rank talked to died: connect to that relay's parent, as a client. */
void vr_reattach(struct vr *v, uint32_t dead_node)
{
    if (dead_node == 0)
        return;
    v->at = parent_of(dead_node);
    v->rx_ns = now_ns();
    int fd = sock_connect(v->at);
    if (fd < 0)
        return;
    ncg_peer_init(&v->peer, fd);
    v->sock = 1;
    ep_add(fd, ekey(EK_VR, (uint32_t)(v - V), 0));
    vr_hello(v);
    vr_report(v, now_ns());
}
