/* SLOW in the flat coordinator (coord_int.h's state): the members' straggler samples gathered
 * per sampled slot until every active member's is in (straggler.h merges them), fed to the
 * comm's window in slot order; a SLOW warning to every member when the window names a rank or
 * another one, an event line when the episode ends. Never an error, never an action. */
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

static void pend_drop(struct cslow *s, uint32_t i)
{
    s->pend[i] = s->pend[--s->npend];
}

static void on_event(struct ncg_coord *co, struct ccomm *c, enum ncg_sg_event ev, uint64_t now_ns)
{
    struct ncg_sg *sg = &c->slow->sg;
    if (ev == NCG_SG_END) {
        ncg_co_event(co, "slow: comm %016" PRIx64 ": rank %d no longer holds the others up", c->id,
                     sg->ended);
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

/* Feeds the complete slots, and drops those some active member will never send (it sent a
 * later one). */
static void settle(struct ncg_coord *co, struct ccomm *c, uint64_t now_ns)
{
    struct cslow *s = c->slow;
    uint32_t want = active_members(c);
    for (;;) {
        /* the lowest pending slot first: the window takes slots in order */
        uint32_t lo = UINT32_MAX;
        for (uint32_t i = 0; i < s->npend; i++)
            if (lo == UINT32_MAX || s->pend[i].slot < s->pend[lo].slot)
                lo = i;
        if (lo == UINT32_MAX)
            return;
        struct ncg_sg_slot *a = &s->pend[lo];
        int never = 1; /* every active member sent a later slot: the missing one skipped it */
        for (uint32_t r = 0; r < c->nranks && never; r++)
            never = c->m[r].state != M_ACTIVE || c->m[r].slow_last > a->slot + 1;
        if (a->n < want && !never)
            return; /* still coming */
        if (a->n >= want && want >= 2) {
            struct ncg_sg_slot x = *a;
            pend_drop(s, lo);
            on_event(co, c, ncg_sg_feed(&s->sg, &x, now_ns), now_ns);
            if (c->done)
                return;
            continue;
        }
        pend_drop(s, lo); /* a member skipped it: never complete */
    }
}

void ncg_co_slow_samples(struct ncg_coord *co, struct ccomm *c, uint32_t rank,
                         const struct ncg_report_slow *smp, uint32_t n, uint64_t now_ns)
{
    if (!c->slow) {
        struct ncg_sg_cfg cfg = {co->p.slow_window ? co->p.slow_window : 16, 0.7, co->p.slow_share};
        if (!(c->slow = calloc(1, sizeof *c->slow))) {
            ncg_co_nomem(co);
            return;
        }
        ncg_sg_init(&c->slow->sg, &cfg);
    }
    struct cslow *s = c->slow;
    struct cmember *mb = &c->m[rank];
    for (uint32_t k = 0; k < n; k++) {
        const struct ncg_report_slow *x = &smp[k];
        if (mb->slow_last && x->slot + 1 <= mb->slow_last)
            continue; /* not after its previous one */
        mb->slow_last = x->slot + 1;
        if (!x->step_us)
            continue; /* its first sample: no time per slot yet (the slot is dropped) */
        uint32_t i;
        for (i = 0; i < s->npend && s->pend[i].slot != x->slot; i++)
            ;
        if (i == s->npend) {
            if (s->npend == NCG_CO_SLOW_PEND) { /* the oldest goes: someone skipped it */
                uint32_t lo = 0;
                for (uint32_t j = 1; j < s->npend; j++)
                    lo = s->pend[j].slot < s->pend[lo].slot ? j : lo;
                pend_drop(s, lo);
                i = s->npend;
            }
            ncg_sg_slot_init(&s->pend[i], x->slot);
            s->npend++;
        }
        ncg_sg_slot_add(&s->pend[i], (int32_t)rank, (uint64_t)x->dur_us * 1000,
                        (uint64_t)x->step_us * 1000, x->device);
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
    if (!c->slow || !c->slow->sg.n)
        return -1;
    const struct ncg_sg *sg = &c->slow->sg;
    uint32_t w = sg->n < sg->cfg.window ? sg->n : sg->cfg.window;
    uint64_t loss = 0, step = 0;
    for (uint32_t i = 0; i < w; i++) { /* the latest w, as the decision takes them */
        const struct ncg_sg_ent *e = &sg->win[(sg->head + NCG_SG_WIN_MAX - 1 - i) % NCG_SG_WIN_MAX];
        step += e->step_ns;
        if (e->who == (int32_t)rank)
            loss += e->loss_ns;
    }
    return step ? (double)loss / (double)step : -1;
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
