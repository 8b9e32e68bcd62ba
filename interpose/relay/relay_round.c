/* The digest rounds through the tree (relay_int.h's state): a QUERY down to every active child,
 * the answers merged into groups per slot on their way up. At the root the rounds are the flat
 * coordinator's (judge/round.c: digest at min(count)-1, narrowing with K spaced digests, then K
 * records), decided on groups instead of per-member answers; the narrowing asks one rank per
 * group of the round that found the difference (chained digests: its members agree on every
 * earlier slot), and relays pass it only towards those ranks. Then MISMATCH. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "relay_int.h"

static void round_done(struct ncg_relay *r, struct rcomm *c);

void ncg_rl_round_check(struct ncg_relay *r, struct rcomm *c)
{
    if (c->q_active && c->nwait == 0)
        round_done(r, c);
}

/* Whether kid k is to hear the round in flight: every kid, or for a round limited to some
 * ranks, a client holding one of them or a child relay whose subtree may hold one. */
static int kid_asked(const struct rcomm *c, const struct rkid *k)
{
    if (!c->nrep || (k->relay && !k->span_known))
        return 1;
    for (uint32_t i = 0; i < c->nrep; i++) {
        if (!k->relay && k->rank == c->rep[i])
            return 1;
        for (uint32_t j = 0; k->relay && j < k->nspan; j++)
            if (c->rep[i] >= k->span[j].lo && c->rep[i] <= k->span[j].hi)
                return 1;
    }
    return 0;
}

void ncg_rl_round_begin(struct ncg_relay *r, struct rcomm *c, const struct ncg_msg_query *q)
{
    free(c->acc);
    if (!(c->acc = calloc(1, sizeof *c->acc))) {
        c->q_active = 0;
        ncg_rl_nomem(r);
        return;
    }
    c->acc->comm_id = c->id;
    c->acc->qid = q->qid;
    c->acc->n = q->n;
    c->qid = q->qid;
    c->rd.mode = q->mode;
    c->rd.qn = q->n;
    memcpy(c->rd.qslot, q->slot, sizeof *q->slot * q->n);
    c->nrep = q->nrep;
    memcpy(c->rep, q->rep, sizeof c->rep);
    c->q_active = 1;
    c->nwait = 0;
    r->st.rounds++;
    r->st.targeted += q->nrep != 0;
    struct ncg_msg m = {.type = NCG_MSG_QUERY};
    m.u.query = *q;
    m.u.query.comm_id = c->id;
    for (uint32_t i = 0; i < c->nk; i++) {
        struct rkid *k = &c->k[i];
        k->waiting = 0;
        if (k->state != K_ACTIVE || (k->relay && !k->active) || !ncg_rl_conn_get(r, k->conn) ||
            !kid_asked(c, k))
            continue;
        k->waiting = 1;
        c->nwait++;
        uint32_t j;
        for (j = 0; j < i; j++)
            if (c->k[j].conn == k->conn && c->k[j].waiting)
                break;
        if (j == i)
            r->ops.send(r->ops.arg, k->conn, &m);
    }
    ncg_rl_round_check(r, c);
}

static void root_query(struct ncg_relay *r, struct rcomm *c)
{
    struct ncg_msg_query q = {
        .comm_id = c->id, .qid = r->next_qid++, .mode = c->rd.mode, .n = c->rd.qn, .nrep = c->nrep};
    memcpy(q.slot, c->rd.qslot, sizeof q.slot);
    memcpy(q.rep, c->rep, sizeof q.rep);
    ncg_rl_round_begin(r, c, &q);
}

/* The plain round's slot 0 differs: if its groups name every rank of the communicator (all
 * answered, none truncated, at most NCG_QUERY_REPS of them), the narrowing rounds ask one rank
 * of each. A rank outside them (one that attached after the round began, a subtree inactive
 * then, a rank gone) may differ earlier than any of them: then every rank is asked, as before. */
static void reps_choose(struct rcomm *c)
{
    const struct ncg_rslot *s = &c->acc->s[0];
    uint64_t n = 0;
    c->nrep = 0;
    if (s->more || s->ngroups < 2 || s->ngroups > NCG_QUERY_REPS)
        return;
    for (uint32_t i = 0; i < s->ngroups; i++) {
        if (s->g[i].status != NCG_ANS_OK || s->g[i].truncated || !s->g[i].nrange)
            return;
        n += s->g[i].nranks;
    }
    if (n != c->nranks)
        return;
    for (uint32_t i = 0; i < s->ngroups; i++) {
        const struct ncg_rgroup *g = &s->g[i];
        c->rep[i] = g->r[0].lo;
        c->repg[i].nranks = g->nranks;
        c->repg[i].nrange = g->nrange;
        memcpy(c->repg[i].r, g->r, sizeof g->r);
    }
    c->nrep = (uint8_t)s->ngroups;
}

static int rep_in(const struct ncg_rgroup *g, uint32_t rank)
{
    for (uint32_t i = 0; i < g->nrange; i++)
        if (rank >= g->r[i].lo && rank <= g->r[i].hi)
            return 1;
    return 0;
}

/* A round asked only the representatives: each answer group is made the groups its
 * representatives stand for. 0 when some representative's answer is missing at some slot (it
 * left, or its subtree moved): the round is then to be asked of every rank. */
static int reps_expand(struct rcomm *c)
{
    for (uint32_t k = 0; k < c->acc->n; k++) {
        struct ncg_rslot *s = &c->acc->s[k];
        uint32_t seen = 0;
        if (s->more)
            return 0;
        for (uint32_t j = 0; j < s->ngroups; j++) {
            struct ncg_rgroup *g = &s->g[j], e = *g;
            e.nranks = 0;
            e.nrange = 0;
            e.truncated = 0;
            for (uint32_t i = 0; i < c->nrep; i++) {
                if (!rep_in(g, c->rep[i]))
                    continue;
                struct ncg_rgroup t = {.nrange = c->repg[i].nrange};
                memcpy(t.r, c->repg[i].r, sizeof t.r);
                ncg_rl_ranges_union(&e, &t);
                e.nranks += c->repg[i].nranks;
                seen++;
            }
            if (!e.nranks)
                return 0; /* no representative in it: not this round's answer */
            *g = e;
        }
        if (seen != c->nrep)
            return 0;
    }
    return 1;
}

static int group_cmp(const void *a, const void *b)
{
    const struct ncg_rgroup *x = *(const struct ncg_rgroup *const *)a;
    const struct ncg_rgroup *y = *(const struct ncg_rgroup *const *)b;
    if (x->nranks != y->nranks)
        return x->nranks > y->nranks ? -1 : 1;
    /* equal sizes: the group holding the lowest rank first, as ncg_group_calls orders them (its
     * first-come order is by rank), so that the odd one out reads last */
    uint32_t xl = x->nrange ? x->r[0].lo : UINT32_MAX, yl = y->nrange ? y->r[0].lo : UINT32_MAX;
    return xl < yl ? -1 : xl > yl;
}

/* A round's slot k, for mismatch_calls. */
struct mm_slot {
    const struct rcomm *c;
    uint32_t k;
};

/* Slot k's records differ: the verdict names each distinct call (the coordinator groups members by
 * call, not digest: groups whose digests differ but whose calls read the same are one call). */
static void mismatch_calls(void *arg, struct ncg_verdict *v)
{
    const struct mm_slot *m = arg;
    const struct rcomm *c = m->c;
    uint32_t k = m->k;
    const struct ncg_rslot *s = &c->acc->s[k];
    const struct ncg_rgroup *g[NCG_RELAY_GROUPS];
    struct ncg_rgroup byc[NCG_RELAY_GROUPS]; /* the groups merged per distinct call */
    const struct ncg_rgroup *bys[NCG_RELAY_GROUPS];
    uint32_t ng = 0, nc = 0;
    for (uint32_t i = 0; i < s->ngroups; i++)
        if (s->g[i].status == NCG_ANS_OK)
            g[ng++] = &s->g[i];
    qsort(g, ng, sizeof *g, group_cmp);
    for (uint32_t i = 0; i < ng; i++) {
        uint32_t j;
        for (j = 0; j < nc; j++)
            if (ncg_call_same(&byc[j].call, &g[i]->call))
                break;
        if (j == nc) {
            byc[nc++] = *g[i];
            continue;
        }
        ncg_rl_ranges_union(&byc[j], g[i]);
        byc[j].nranks += g[i]->nranks;
    }
    for (uint32_t i = 0; i < nc; i++)
        bys[i] = &byc[i];
    qsort(bys, nc, sizeof *bys, group_cmp);
    struct ncg_rgroup others = {.status = NCG_ANS_OK};
    for (uint32_t i = 0; i < nc && i < NCG_WIRE_MAX_CALLS; i++) {
        struct ncg_vcall *vc = &v->calls[v->ncalls++];
        vc->call = bys[i]->call;
        vc->call.seq = c->rd.qslot[k];
        ncg_rgroup_ranks(bys[i], vc->ranks, sizeof vc->ranks);
        snprintf(vc->site, sizeof vc->site, "%s", bys[i]->site);
        if (i) {
            ncg_rl_ranges_union(&others, bys[i]);
            others.nranks += bys[i]->nranks;
        }
    }
    if (nc > 1)
        ncg_rgroup_ranks(&others, v->subject, sizeof v->subject);
}

static void mismatch_verdict(struct ncg_relay *r, struct rcomm *c, uint32_t k)
{
    struct ncg_vcomm vc = ncg_rl_vcomm(c);
    struct mm_slot m = {c, k};
    ncg_rl_verdict_issue(
        r, c, ncg_v_mismatch(&vc, c->rd.qslot[k], mismatch_calls, &m, c->acc->s[k].more));
}

static int root_agrees(void *arg, uint32_t k)
{
    return ncg_rslot_agrees(&((struct rcomm *)arg)->acc->s[k]);
}

/* The root's decision on a finished round: the coordinator's (round.c), on merged groups. */
static void root_decide(struct ncg_relay *r, struct rcomm *c)
{
    uint32_t k = 0;
    int plain = !c->rd.narrow;
    if (c->nrep && !reps_expand(c)) {
        c->nrep = 0; /* a representative did not answer: the same slots, of every rank */
        root_query(r, c);
        return;
    }
    int next = ncg_round_done(&c->rd, root_agrees, c, &k);
    if (c->vknown >= c->nranks && c->rd.vc > c->vall)
        c->vall = c->rd.vc; /* asked of every member */
    if (next == NCG_ROUND_ASK && plain)
        reps_choose(c);
    if (next == NCG_ROUND_MISMATCH)
        mismatch_verdict(r, c, k);
    else if (next == NCG_ROUND_ASK)
        root_query(r, c);
    if (next != NCG_ROUND_ASK)
        c->nrep = 0;
}

static void round_done(struct ncg_relay *r, struct rcomm *c)
{
    c->q_active = 0;
    if (r->p.root) {
        root_decide(r, c);
        return;
    }
    if (r->attached) {
        struct ncg_msg m = {.type = NCG_MSG_RANSWER};
        m.u.ranswer = c->acc;
        r->ops.up(r->ops.arg, &m);
    }
}

/* Unverified slots below which plain rounds come every other interval: a quarter of the
 * shim's ring, so a difference found is narrowed while every member still holds its slots. */
#define PACE_SLOTS (NCG_COLL_RING / 4)

void ncg_rl_root_round_start(struct ncg_relay *r, struct rcomm *c, uint64_t now_ns)
{
    uint64_t iv = (uint64_t)r->p.interval_ms * 1000000ull;
    if (c->round_ns && now_ns - c->round_ns < iv - iv / 8)
        return;                          /* a tick a little early still counts */
    struct dfig f = ncg_rl_comm_dfig(c); /* relay_hang.c */
    uint64_t mn = f.mn;
    if (!c->seen_ns)
        c->seen_ns = now_ns;
    /* Subtrees attach one after another (parents are looked up): a round waits up to a
     * second for every rank, so that a verdict names the whole communicator. */
    if (f.known < c->nranks && now_ns - c->seen_ns < 1000000000ull)
        return;
    /* A slot is verified only on every member: one known since the rounds that verified slots
     * only on the others began has those slots compared now (digests are chained: the next
     * plain round covers them, and a difference is narrowed from vall). */
    if (f.known > c->vknown) {
        c->vknown = f.known;
        c->rd.vc = c->vall;
    }
    if (f.active < 2 || mn == UINT64_MAX || mn <= c->rd.vc)
        return;
    if (c->round_ns && now_ns - c->round_ns < 2 * iv - iv / 8 && mn - c->rd.vc <= PACE_SLOTS)
        return;
    c->round_ns = now_ns;
    ncg_round_plain(&c->rd, mn - 1);
    c->nrep = 0;
    root_query(r, c);
}

static void answer_group(struct rcomm *c, uint32_t slot, const struct ncg_answer *a, uint32_t rank)
{
    struct ncg_rgroup g = {0};
    if (a->status == NCG_ANS_NONE)
        return;
    g.status =
        a->status == NCG_ANS_OK && a->call.seq == c->rd.qslot[slot] ? NCG_ANS_OK : NCG_ANS_GONE;
    if (g.status == NCG_ANS_OK) {
        g.digest = a->digest;
        g.call = a->call;
        snprintf(g.site, sizeof g.site, "%.*s", (int)sizeof g.site - 1, a->site);
    }
    g.nranks = 1;
    g.nrange = 1;
    g.r[0].lo = g.r[0].hi = rank;
    ncg_rslot_merge(&c->acc->s[slot], &g);
}

void ncg_rl_on_answer(struct ncg_relay *r, int conn, const struct ncg_msg_answer *a)
{
    struct rcomm *c = ncg_rl_comm_find(r, a->comm_id);
    if (!c || !c->q_active || a->qid != c->qid || a->n != c->rd.qn || a->rank >= c->nranks)
        return;
    struct rkid *k = ncg_rl_kid_find(c, conn, 0, a->rank);
    if (!k || !k->waiting)
        return;
    for (uint32_t s = 0; s < c->rd.qn; s++)
        answer_group(c, s, &a->a[s], a->rank);
    k->waiting = 0;
    c->nwait--;
    ncg_rl_round_check(r, c);
}

void ncg_rl_on_ranswer(struct ncg_relay *r, int conn, const struct ncg_msg_ranswer *a)
{
    struct rcomm *c = ncg_rl_comm_find(r, a->comm_id);
    if (!c || !c->q_active || a->qid != c->qid || a->n != c->rd.qn)
        return;
    struct rkid *k = ncg_rl_kid_find(c, conn, 1, 0);
    if (!k || !k->waiting)
        return;
    struct ncg_rgroup span = {0}; /* the ranks that answered beneath k */
    for (uint32_t s = 0; s < c->rd.qn; s++) {
        for (uint32_t j = 0; j < a->s[s].ngroups; j++) {
            ncg_rslot_merge(&c->acc->s[s], &a->s[s].g[j]);
            ncg_rl_ranges_union(&span, &a->s[s].g[j]);
        }
        c->acc->s[s].more |= a->s[s].more;
        span.truncated |= a->s[s].more;
    }
    if (!c->nrep) { /* a round of every rank: where the representatives of later ones are */
        k->span_known = !span.truncated;
        k->nspan = span.nrange;
        memcpy(k->span, span.r, sizeof k->span);
    }
    k->waiting = 0;
    c->nwait--;
    ncg_rl_round_check(r, c);
}
