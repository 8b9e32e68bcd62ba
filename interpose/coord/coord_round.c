/* The coordinator's comparison rounds (coord_int.h's state; the steps are judge/round.c's): a
 * QUERY to every active member, their ANSWERs per slot, then the next round or the MISMATCH. */
#include <stdlib.h>
#include <string.h>
#include "coord_int.h"

static void query_send(struct ncg_coord *co, struct ccomm *c)
{
    struct ncg_msg m = {.type = NCG_MSG_QUERY};
    free(c->ans);
    c->ans = calloc((size_t)c->nranks * c->qn, sizeof *c->ans);
    if (!c->ans) {
        c->q_active = 0;
        ncg_co_nomem(co);
        return;
    }
    c->qid = co->next_qid++;
    m.u.query.comm_id = c->id;
    m.u.query.qid = c->qid;
    m.u.query.mode = c->q_mode;
    m.u.query.n = c->qn;
    memcpy(m.u.query.slot, c->qslot, sizeof(uint64_t) * c->qn);
    c->q_active = 1;
    co->st.queries++;
    for (size_t k = 0; k < (size_t)c->nranks * c->qn; k++)
        c->ans[k].status = NCG_ANS_NONE; /* members not asked count as "no answer" */
    for (uint32_t i = 0; i < c->nranks; i++) {
        c->m[i].waiting = 0;
        struct cconn *cc = ncg_co_conn_get(co, c->m[i].conn);
        if (c->m[i].state == M_ACTIVE && cc) {
            c->m[i].waiting = 1;
            if (cc->q_sent != c->qid + 1) /* a process holding k ranks: one QUERY, k ANSWERs */
                co->ops.send(co->ops.arg, c->m[i].conn, &m);
            cc->q_sent = c->qid + 1;
        }
    }
}

/* Slot k of the current round: 1 if every answer is OK and equal, 0 if answers differ,
 * -1 if someone no longer has the slot (or nobody answered). */
static int slot_agrees(struct ccomm *c, uint32_t k)
{
    int have = 0;
    uint64_t d = 0;
    for (uint32_t i = 0; i < c->nranks; i++) {
        const struct ncg_answer *a = &c->ans[(size_t)i * c->qn + k];
        if (a->status == NCG_ANS_NONE)
            continue;
        if (a->status == NCG_ANS_GONE)
            return -1;
        if (have && a->digest != d)
            return 0;
        d = a->digest;
        have++;
    }
    return have >= 2 ? 1 : -1;
}

/* The members' calls at a slot, for ncg_group_calls. */
struct co_calls {
    const struct ncg_call *calls;
    const uint8_t *valid;
    const char *const *sites;
    uint32_t n;
};

static void co_group(void *arg, struct ncg_verdict *v)
{
    const struct co_calls *g = arg;
    ncg_group_calls(v, g->calls, g->valid, g->sites, g->n);
}

static void mismatch_verdict(struct ncg_coord *co, struct ccomm *c, uint32_t k)
{
    struct ncg_call *calls = calloc(c->nranks, sizeof *calls);
    uint8_t *valid = calloc(c->nranks, 1);
    const char **sites = calloc(c->nranks, sizeof *sites);
    if (!calls || !valid || !sites) {
        ncg_co_nomem(co);
        goto out;
    }
    for (uint32_t i = 0; i < c->nranks; i++) {
        const struct ncg_answer *a = &c->ans[(size_t)i * c->qn + k];
        if (a->status != NCG_ANS_OK)
            continue;
        calls[i] = a->call;
        calls[i].seq = c->qslot[k];
        valid[i] = 1;
        sites[i] = a->site;
    }
    struct ncg_vcomm vc = ncg_co_vcomm(c);
    struct co_calls g = {calls, valid, sites, c->nranks};
    struct ncg_verdict *v = ncg_v_mismatch(&vc, c->qslot[k], co_group, &g, 0);
    if (!v) {
        ncg_co_nomem(co);
        goto out;
    }
    ncg_co_verdict_issue(co, c, v);
out:
    free(calls);
    free(valid);
    free(sites);
}

static int round_agrees(void *arg, uint32_t k)
{
    return slot_agrees(arg, k);
}

/* Every outstanding answer is in (or its member is gone): decide and start the next step
 * (round.c, shared with the relay tree's root). */
static void round_done(struct ncg_coord *co, struct ccomm *c)
{
    struct ncg_round rd = {c->vc, c->lo, c->hi, c->q_narrow, c->q_mode, c->qn, {0}};
    uint32_t k = 0;
    memcpy(rd.qslot, c->qslot, sizeof rd.qslot);
    c->q_active = 0;
    int next = ncg_round_done(&rd, round_agrees, c, &k);
    c->vc = rd.vc;
    c->lo = rd.lo;
    c->hi = rd.hi;
    c->q_narrow = rd.narrow;
    c->q_mode = rd.mode;
    c->qn = rd.qn;
    memcpy(c->qslot, rd.qslot, sizeof c->qslot);
    if (next == NCG_ROUND_MISMATCH)
        mismatch_verdict(co, c, k);
    else if (next == NCG_ROUND_ASK)
        query_send(co, c);
}

void ncg_co_round_check(struct ncg_coord *co, struct ccomm *c)
{
    if (!c->q_active)
        return;
    for (uint32_t i = 0; i < c->nranks; i++)
        if (c->m[i].waiting)
            return;
    round_done(co, c);
}

void ncg_co_round_start(struct ncg_coord *co, struct ccomm *c)
{
    uint64_t mn = UINT64_MAX;
    int n = 0;
    for (uint32_t i = 0; i < c->nranks; i++)
        if (c->m[i].state == M_ACTIVE) {
            n++;
            if (c->m[i].count < mn)
                mn = c->m[i].count;
        }
    if (n < 2 || mn == UINT64_MAX || mn <= c->vc)
        return;
    c->q_narrow = 0;
    c->q_mode = 0;
    c->qn = 1;
    c->qslot[0] = mn - 1;
    query_send(co, c);
}

void ncg_co_on_answer(struct ncg_coord *co, int conn, const struct ncg_msg_answer *a)
{
    struct ccomm *c = ncg_co_comm_find(co, a->comm_id);
    if (!c || !c->q_active || a->qid != c->qid || a->n != c->qn || a->rank >= c->nranks)
        return;
    struct cmember *mb = &c->m[a->rank];
    if (mb->conn != conn || !mb->waiting)
        return;
    memcpy(&c->ans[(size_t)a->rank * c->qn], a->a, sizeof *a->a * c->qn);
    for (uint32_t k = 0; k < c->qn; k++) {
        struct ncg_answer *x = &c->ans[(size_t)a->rank * c->qn + k];
        x->site[sizeof x->site - 1] = 0;
        if (x->status == NCG_ANS_OK && x->call.seq != c->qslot[k])
            x->status = NCG_ANS_GONE; /* answered another slot: unusable */
    }
    mb->waiting = 0;
    ncg_co_round_check(co, c);
}
