/* SLOW through the relay tree (relay_int.h's rslow): per comm and sampled slot, the samples of
 * this relay's clients and the merged slots of its child relays, gathered by straggler.h's
 * pending table and rule (the flat coordinator's, coord_slow.c); a slot complete beneath a
 * relay (every active client rank and child relay sent it or a later one) or past its deadline
 * goes up in the next RSLOW, merged (aggregates per slot, never per rank); the root feeds the
 * comm's window and issues the SLOW warning down the tree. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "relay_int.h"

/* A slot waits this many intervals for the rest of the subtree (the root: the subtrees' partial
 * slots come after their own deadline). */
#define DEADLINE_IV 5u
#define DEADLINE_IV_ROOT 10u

void ncg_rl_slow_free(struct rcomm *c)
{
    if (c->slow)
        free(c->slow->sg);
    free(c->slow);
    c->slow = NULL;
}

static struct rslow *slow_get(struct ncg_relay *r, struct rcomm *c)
{
    if (c->slow)
        return c->slow;
    struct rslow *s = calloc(1, sizeof *s);
    if (!s)
        return ncg_rl_nomem(r);
    s->sent_rank = -1;
    for (uint32_t i = 0; i < NCG_RL_SLOW_SEEN; i++)
        s->seen[i].rank = -1;
    if (r->p.root) {
        struct ncg_sg_cfg cfg = {r->p.slow_window ? r->p.slow_window : 16, 0.7, r->p.slow_share,
                                 (uint64_t)(r->p.slow_hold_s * 1e9)};
        if (!(s->sg = malloc(sizeof *s->sg))) {
            free(s);
            return ncg_rl_nomem(r);
        }
        ncg_sg_init(s->sg, &cfg);
    }
    return c->slow = s;
}

static int who_known(const struct ncg_sg_who *w)
{
    return w->grank >= 0 || w->pid || w->host[0];
}

/* ---- the root: the window and the warning ---- */

static void seen_put(struct rslow *s, int32_t rank, const struct ncg_sg_who *w)
{
    for (uint32_t i = 0; i < NCG_RL_SLOW_SEEN; i++)
        if (s->seen[i].rank == rank) {
            s->seen[i].who = *w;
            return;
        }
    s->seen[s->seen_next].rank = rank;
    s->seen[s->seen_next].who = *w;
    s->seen_next = (s->seen_next + 1) % NCG_RL_SLOW_SEEN;
}

static void on_event(struct ncg_relay *r, struct rcomm *c, enum ncg_sg_event ev, uint64_t now_ns)
{
    struct rslow *s = c->slow;
    struct ncg_sg *sg = s->sg;
    if (ev != NCG_SG_START && ev != NCG_SG_CHANGE && ev != NCG_SG_END)
        return;
    if (ev == NCG_SG_END) {
        ncg_rl_event(r, "slow: comm %016" PRIx64 ": rank %d no longer holds the others up", c->id,
                     sg->ended);
        struct ncg_vcomm vc = ncg_rl_vcomm(c);
        double lasted = now_ns > sg->since_ns ? (double)(now_ns - sg->since_ns) / 1e9 : 0;
        /* the members' status stops naming it (verdicts.h); s->named is still its who */
        ncg_rl_verdict_issue(r, c,
                             ncg_v_slow_end(&vc, sg->ended, s->named.grank, s->named.pid,
                                            s->named.host[0] ? s->named.host : NULL, lasted));
        return;
    }
    s->named = (struct ncg_sg_who){.grank = -1};
    for (uint32_t i = 0; i < NCG_RL_SLOW_SEEN; i++)
        if (s->seen[i].rank == sg->named)
            s->named = s->seen[i].who;
    /* its node relay told us who it is; when that never reached us, the text says so (NULL) */
    const char *host = s->named.host[0] ? s->named.host : NULL;
    struct ncg_vcomm vc = ncg_rl_vcomm(c);
    double since = now_ns > sg->since_ns ? (double)(now_ns - sg->since_ns) / 1e9 : 0;
    ncg_rl_verdict_issue(r, c,
                         ncg_v_slow(&vc, sg->named, s->named.grank, s->named.pid, host, sg->share,
                                    since, sg->side == NCG_SG_DEVICE));
}

/* ---- gathering, at every relay ---- */

/* Active ranks beneath (the rule's `want`), and whether every active kid sent slot or later. */
static uint32_t want_of(const struct rcomm *c, uint64_t slot, int *passed)
{
    uint32_t want = 0;
    *passed = 1;
    for (uint32_t i = 0; i < c->nk; i++) {
        const struct rkid *k = &c->k[i];
        if (k->state != K_ACTIVE || (k->relay && !k->active))
            continue;
        want += k->relay ? k->active : 1;
        if (!k->slow_last || k->slow_last <= slot)
            *passed = 0;
    }
    return want;
}

/* Below the root: a complete slot waits for the next RSLOW (the oldest goes when full). A slot
 * not after the last one waiting is dropped: a slot sent partial past its deadline can come
 * again (a late kid's figures open it anew), and an RSLOW entry's slots must increase (the
 * decoder refuses the whole frame otherwise); the parent would ignore it anyway, as it ignores
 * a kid's slot not after its previous one. */
static void out_add(struct rslow *s, const struct ncg_sg_slot *a, const struct ncg_sg_who *w)
{
    if (s->nout && a->slot <= s->out[s->nout - 1].slot)
        return;
    if (s->nout == NCG_RSLOW_SLOTS) {
        memmove(s->out, s->out + 1, sizeof *s->out * (NCG_RSLOW_SLOTS - 1));
        memmove(s->outw, s->outw + 1, sizeof *s->outw * (NCG_RSLOW_SLOTS - 1));
        s->nout--;
    }
    s->out[s->nout] = *a;
    s->outw[s->nout++] = *w;
}

/* The pending slots, lowest first, while the rule lets them go: fed to the window (root) or
 * sent up (below). */
static void settle(struct ncg_relay *r, struct rcomm *c, uint64_t now_ns)
{
    struct rslow *s = c->slow;
    uint64_t dl =
        (uint64_t)(r->p.root ? DEADLINE_IV_ROOT : DEADLINE_IV) * r->p.interval_ms * 1000000ull;
    for (;;) {
        int lo = ncg_sg_pend_lowest(&s->pend);
        if (lo < 0)
            return;
        int passed;
        uint32_t want = want_of(c, s->pend.s[lo].slot, &passed);
        passed |= now_ns - s->pend.t_ns[lo] >= dl;
        enum ncg_sg_fate f = ncg_sg_fate(&s->pend.s[lo], want, passed);
        if (f == NCG_SG_HOLD)
            return;
        struct ncg_sg_slot a;
        struct ncg_sg_who w;
        ncg_sg_pend_pop(&s->pend, lo, &a, &w);
        if (!r->p.root) {
            if (a.n) /* partial past its deadline too: the parent sees the subtree passed it */
                out_add(s, &a, &w);
            continue;
        }
        if (f != NCG_SG_FEED)
            continue;
        if (a.argmin >= 0 && who_known(&w))
            seen_put(s, a.argmin, &w);
        on_event(r, c, ncg_sg_feed(s->sg, &a, now_ns), now_ns);
        if (c->done)
            return;
    }
}

void ncg_rl_slow_report(struct ncg_relay *r, struct rcomm *c, struct rkid *k,
                        const struct ncg_report_slow *smp, uint32_t n, uint64_t now_ns)
{
    struct rslow *s = slow_get(r, c);
    if (!s)
        return;
    const struct rconn *cc = ncg_rl_conn_get(r, k->conn);
    struct ncg_sg_who w = {.grank = k->grank, .pid = cc ? cc->pid : 0};
    if (cc)
        snprintf(w.host, sizeof w.host, "%s", cc->host);
    for (uint32_t i = 0; i < n; i++) {
        struct ncg_sg_slot b;
        ncg_sg_slot_init(&b, smp[i].slot);
        if (smp[i].step_us) /* a rank's first sample: no time per slot yet (coord_slow.c) */
            ncg_sg_slot_add(&b, (int32_t)k->rank, (uint64_t)smp[i].dur_us * 1000,
                            (uint64_t)smp[i].step_us * 1000, smp[i].device);
        ncg_sg_pend_take(&s->pend, &k->slow_last, &b, &w, now_ns);
    }
    settle(r, c, now_ns);
}

void ncg_rl_on_rslow(struct ncg_relay *r, int conn, const struct ncg_msg_rslow *m, uint64_t now_ns)
{
    for (uint32_t e = 0; e < m->n; e++) {
        const struct ncg_rslow_ent *x = &m->e[e];
        struct rcomm *c = ncg_rl_comm_find(r, x->comm_id);
        struct rkid *k = c && c->nranks == x->nranks ? ncg_rl_kid_find(c, conn, 1, 0) : NULL;
        if (!k || c->done || !slow_get(r, c)) /* a subtree's comm comes with its RSTAT first */
            continue;
        for (uint32_t j = 0; j < x->ns; j++) {
            const struct ncg_rslow_slot *y = &x->s[j];
            if (y->argmin >= (int32_t)c->nranks || y->n > c->nranks)
                continue;
            if (y->has_who) {
                k->sw_rank = y->argmin;
                k->sw = (struct ncg_sg_who){.grank = y->grank, .pid = y->pid};
                snprintf(k->sw.host, sizeof k->sw.host, "%s", y->host);
            }
            struct ncg_sg_slot b = {.slot = y->slot,
                                    .n = y->n,
                                    .argmin = y->argmin,
                                    .side = y->side,
                                    .min_ns = y->min_ns,
                                    .sum_ns = y->sum_ns,
                                    .step_ns = y->step_ns};
            struct ncg_sg_who none = {.grank = -1};
            int same = y->argmin >= 0 && y->argmin == k->sw_rank;
            ncg_sg_pend_take(&c->slow->pend, &k->slow_last, &b, same ? &k->sw : &none, now_ns);
        }
        settle(r, c, now_ns);
    }
}

void ncg_rl_slow_tick(struct ncg_relay *r, struct rcomm *c, uint64_t now_ns)
{
    settle(r, c, now_ns);
    struct ncg_sg *sg = c->slow->sg;
    if (!sg || sg->named < 0 || c->done)
        return;
    int gone = 0; /* the named rank left (its goodbye, here or in a child relay's RSTAT) */
    for (uint32_t i = 0; i < c->nk && !gone; i++) {
        const struct rkid *k = &c->k[i];
        gone = !k->relay && k->state == K_GONE && k->rank == (uint32_t)sg->named;
        for (uint32_t j = 0; k->relay && j < k->ngone && !gone; j++)
            gone = k->gone[j].rank == (uint32_t)sg->named;
    }
    if (gone)
        on_event(r, c, ncg_sg_forget(sg, sg->named), now_ns);
}

void ncg_rl_slow_parent_up(struct ncg_relay *r)
{
    for (size_t ci = 0; ci < r->ncomm; ci++)
        if (r->comm[ci]->slow)
            r->comm[ci]->slow->sent_rank = -1;
}

void ncg_rl_slow_flush(struct ncg_relay *r)
{
    static struct ncg_msg_rslow m; /* 30 KiB: not on the stack; one relay thread */
    struct ncg_msg msg = {.type = NCG_MSG_RSLOW};
    msg.u.rslow = &m;
    m.n = 0;
    for (size_t ci = 0; ci < r->ncomm; ci++) {
        struct rcomm *c = r->comm[ci];
        struct rslow *s = c->slow;
        if (!s || !s->nout)
            continue;
        struct ncg_rslow_ent *e = &m.e[m.n];
        e->comm_id = c->id;
        e->nranks = c->nranks;
        e->ns = (uint8_t)s->nout;
        for (uint32_t j = 0; j < s->nout; j++) {
            const struct ncg_sg_slot *a = &s->out[j];
            const struct ncg_sg_who *w = &s->outw[j];
            struct ncg_rslow_slot *y = &e->s[j];
            *y = (struct ncg_rslow_slot){.slot = a->slot,
                                         .n = a->n,
                                         .argmin = a->argmin,
                                         .side = a->side,
                                         .min_ns = a->min_ns,
                                         .sum_ns = a->sum_ns,
                                         .step_ns = a->step_ns,
                                         .grank = -1};
            /* who only when it changed: the parent keeps the last one per child and comm */
            if (a->argmin >= 0 && who_known(w) &&
                (a->argmin != s->sent_rank || memcmp(w, &s->sent, sizeof *w) != 0)) {
                y->has_who = 1;
                y->grank = w->grank;
                y->pid = w->pid;
                memcpy(y->host, w->host, sizeof y->host);
                s->sent_rank = a->argmin;
                s->sent = *w;
            }
        }
        s->nout = 0;
        if (++m.n == NCG_RSLOW_COMMS) {
            r->ops.up(r->ops.arg, &msg);
            m.n = 0;
        }
    }
    if (m.n)
        r->ops.up(r->ops.arg, &msg);
}
