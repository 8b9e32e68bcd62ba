/* SLOW in the flat coordinator (coord_int.h's state): the members' straggler samples gathered
 * per sampled slot until every active member's is in (straggler.h merges them), fed to the
 * comm's window in slot order; a SLOW warning to every member when the window names a rank or
 * another one, and its end (not printed: their status stops naming it) when the episode ends.
 * Never an error, never an action. */
#include <inttypes.h>
#include <stdlib.h>
#include "coord_int.h"

static uint32_t active_members(const struct ccomm *c)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->nranks; i++)
        n += c->m[i].state == M_ACTIVE;
    return n;
}

static void on_event(struct ncg_coord *co, struct ccomm *c, enum ncg_sg_event ev, uint64_t now_ns)
{
    struct ncg_sg *sg = &c->slow->sg;
    if (ev == NCG_SG_END) { /* the members' status stops naming it (verdicts.h) */
        ncg_co_event(co, "slow: comm %016" PRIx64 ": rank %d no longer holds the others up", c->id,
                     sg->ended);
        const struct cmember *m = &c->m[sg->ended];
        struct ncg_vcomm vc = ncg_co_vcomm(c);
        double lasted = now_ns > sg->since_ns ? (double)(now_ns - sg->since_ns) / 1e9 : 0;
        struct ncg_verdict *v = ncg_v_slow_end(&vc, sg->ended, m->grank, m->pid, m->host, lasted);
        if (!v) {
            ncg_co_nomem(co);
            return;
        }
        ncg_co_verdict_issue(co, c, v);
        return;
    }
    if (ev != NCG_SG_START && ev != NCG_SG_CHANGE)
        return;
    const struct cmember *m = &c->m[sg->named];
    struct ncg_vcomm vc = ncg_co_vcomm(c);
    double since = now_ns > sg->since_ns ? (double)(now_ns - sg->since_ns) / 1e9 : 0;
    struct ncg_verdict *v = ncg_v_slow(&vc, sg->named, m->grank, m->pid, m->host, sg->share, since,
                                       sg->side == NCG_SG_DEVICE);
    if (!v) {
        ncg_co_nomem(co);
        return;
    }
    ncg_co_verdict_issue(co, c, v);
}

/* Feeds the complete slots in slot order, and drops those some active member skipped
 * (straggler.h's rule, the relay tree's too). */
static void settle(struct ncg_coord *co, struct ccomm *c, uint64_t now_ns)
{
    struct cslow *s = c->slow;
    uint32_t want = active_members(c);
    for (;;) {
        int lo = ncg_sg_pend_lowest(&s->pend);
        if (lo < 0)
            return;
        uint64_t slot = s->pend.s[lo].slot;
        int passed = 1; /* every active member sent it or a later one */
        for (uint32_t r = 0; r < c->nranks && passed; r++)
            passed = c->m[r].state != M_ACTIVE || c->m[r].slow_last > slot;
        enum ncg_sg_fate f = ncg_sg_fate(&s->pend.s[lo], want, passed);
        if (f == NCG_SG_HOLD)
            return; /* still coming */
        struct ncg_sg_slot x;
        ncg_sg_pend_pop(&s->pend, lo, &x, NULL);
        if (f == NCG_SG_FEED) {
            on_event(co, c, ncg_sg_feed(&s->sg, &x, now_ns), now_ns);
            if (c->done)
                return;
        }
    }
}

void ncg_co_slow_samples(struct ncg_coord *co, struct ccomm *c, uint32_t rank,
                         const struct ncg_report_slow *smp, uint32_t n, uint64_t now_ns)
{
    if (!c->slow) {
        struct ncg_sg_cfg cfg = {co->p.slow_window ? co->p.slow_window : 16, 0.7, co->p.slow_share,
                                 (uint64_t)(co->p.slow_hold_s * 1e9)};
        if (!(c->slow = calloc(1, sizeof *c->slow))) {
            ncg_co_nomem(co);
            return;
        }
        ncg_sg_init(&c->slow->sg, &cfg);
    }
    struct cmember *mb = &c->m[rank];
    for (uint32_t k = 0; k < n; k++) {
        const struct ncg_report_slow *x = &smp[k];
        struct ncg_sg_slot b;
        ncg_sg_slot_init(&b, x->slot);
        if (x->step_us) /* its first sample has no time per slot yet: the slot is dropped */
            ncg_sg_slot_add(&b, (int32_t)rank, (uint64_t)x->dur_us * 1000,
                            (uint64_t)x->step_us * 1000, x->device);
        ncg_sg_pend_take(&c->slow->pend, &mb->slow_last, &b, NULL, now_ns);
    }
    settle(co, c, now_ns);
}

void ncg_co_slow_tick(struct ncg_coord *co, struct ccomm *c)
{
    struct ncg_sg *sg = &c->slow->sg;
    if (sg->named >= 0 && c->m[sg->named].state != M_ACTIVE)
        on_event(co, c, ncg_sg_forget(sg, sg->named), co->now_ns);
}

double ncg_co_slow_wait_share(const struct ccomm *c, uint32_t rank)
{
    return c->slow ? ncg_sg_wait_share(&c->slow->sg, (int32_t)rank) : -1;
}

void ncg_co_slow_view(const struct ccomm *c, uint64_t now_ns, struct ncg_coord_slow_view *v)
{
    *v = (struct ncg_coord_slow_view){.rank = -1, .global_rank = -1, .host = ""};
    if (!c->slow || c->slow->sg.named < 0 || (uint32_t)c->slow->sg.named >= c->nranks)
        return;
    const struct ncg_sg *sg = &c->slow->sg;
    const struct cmember *m = &c->m[sg->named];
    *v = (struct ncg_coord_slow_view){
        .rank = sg->named,
        .global_rank = m->grank,
        .pid = m->pid,
        .host = m->host,
        .share = sg->share,
        .since_s = now_ns > sg->since_ns ? (double)(now_ns - sg->since_ns) / 1e9 : 0,
        .device = sg->side == NCG_SG_DEVICE};
}
