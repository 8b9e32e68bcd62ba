/* P2P records through the tree (relay_int.h's state): matched where their two sides meet
 * (p2pmatch.h); what is not matched within about an interval goes up (RP2P), a differing pair
 * goes up as its two records, and the root issues P2P MISMATCH. */
#include <inttypes.h>
#include <string.h>
#include "relay_int.h"

/* Records on their way to the parent, one RP2P frame at a time. */
struct p2p_out {
    struct ncg_relay *r;
    struct ncg_msg_rp2p f;
};

static void p2p_out_flush(struct p2p_out *o)
{
    static struct ncg_msg m;
    if (!o->f.n)
        return;
    m.type = NCG_MSG_RP2P;
    m.u.rp2p = o->f;
    o->r->ops.up(o->r->ops.arg, &m);
    o->r->st.p2p_up += o->f.n;
    o->f.n = 0;
}

static void p2p_out_add(void *arg, const struct ncg_p2pm_rec *e)
{
    struct p2p_out *o = arg;
    if (o->f.n == NCG_WIRE_MAX_P2P)
        p2p_out_flush(o);
    o->f.r[o->f.n++] = (struct ncg_rp2p_rec){(uint32_t)ncg_p2pm_origin(e), e->rec};
}

static void p2p_verdict(struct ncg_relay *r, struct rcomm *c, const struct ncg_p2pm_rec pair[2])
{
    struct ncg_vcomm vc = ncg_rl_vcomm(c);
    ncg_rl_verdict_issue(r, c, ncg_v_p2p(&vc, pair)); /* the flat coordinator's words */
}

/* Records that meet at this relay, each with the comm rank that reported it: a pair that
 * agrees ends here; one that differs is the root's verdict (below the root its two records
 * wait in bad[] for the next tick, which sends them up after the RSTAT that names the comm;
 * the first such pair suffices); the others are held (p2p_tick). */
static void p2p_match(struct ncg_relay *r, struct rcomm *c, const struct ncg_rp2p_rec *in,
                      uint32_t n, uint64_t now_ns)
{
    for (uint32_t i = 0; i < n && !c->done; i++) {
        struct ncg_p2pm_rec pair[2];
        int res = ncg_p2pm_add(&c->p2p, (int32_t)in[i].rank, c->nranks, &in[i].rec, now_ns, pair);
        if (res == NCG_P2PM_EQUAL || res == NCG_P2PM_DIFFER)
            r->st.p2p_matched++;
        if (res == NCG_P2PM_DIFFER && r->p.root) {
            p2p_verdict(r, c, pair);
        } else if (res == NCG_P2PM_DIFFER && !c->nbad) {
            for (int j = 0; j < 2; j++)
                c->bad[j] = (struct ncg_rp2p_rec){(uint32_t)ncg_p2pm_origin(&pair[j]), pair[j].rec};
            c->nbad = 2;
        } else if (res == NCG_P2PM_FULL) {
            ncg_rl_refuse(r, &c->p2p_full,
                          "comm %016" PRIx64
                          ": more than %u p2p records unmatched here; later ones "
                          "refused until some match or age out",
                          c->id, NCG_P2PM_MAX);
        } else if (res == NCG_P2PM_NOMEM) {
            ncg_rl_nomem(r);
        }
    }
}

void ncg_rl_on_p2p(struct ncg_relay *r, int conn, const struct ncg_msg_p2p *p, uint64_t now_ns)
{
    struct rcomm *c = ncg_rl_comm_find(r, p->comm_id);
    if (!c || c->done || p->n > NCG_WIRE_MAX_P2P)
        return;
    int64_t me = -1;
    for (uint32_t i = 0; i < c->nk; i++) {
        const struct rkid *k = &c->k[i];
        if (!k->relay && k->conn == conn && k->state == K_ACTIVE && (me < 0 || k->rank < me) &&
            (p->rank == NCG_BYE_ANYRANK || p->rank == k->rank))
            me = k->rank;
    }
    if (me < 0)
        return; /* not registered (its REPORT comes first) */
    struct ncg_rp2p_rec in[NCG_WIRE_MAX_P2P];
    for (uint32_t i = 0; i < p->n; i++)
        in[i] = (struct ncg_rp2p_rec){(uint32_t)me, p->r[i]};
    p2p_match(r, c, in, p->n, now_ns);
}

void ncg_rl_on_rp2p(struct ncg_relay *r, const struct ncg_msg_rp2p *p, uint64_t now_ns)
{
    struct rcomm *c = ncg_rl_comm_get(r, p->comm_id, p->nranks, -1, 0);
    if (c && !c->done)
        p2p_match(r, c, p->r, p->n, now_ns);
}

void ncg_rl_p2p_tick(struct ncg_relay *r, struct rcomm *c, uint64_t now_ns, int sweep, int up,
                     int all)
{
    if (c->done) {
        ncg_p2pm_clear(&c->p2p);
        c->nbad = 0;
        return;
    }
    if (!c->p2p.n && !c->nbad)
        return;
    if (r->p.root || !r->attached) {
        if (sweep)
            ncg_p2pm_take(&c->p2p, now_ns, NCG_P2PM_AGE_NS, NULL, NULL);
        return;
    }
    if (!up && !all)
        return;
    struct p2p_out o;
    o.r = r;
    o.f.comm_id = c->id;
    o.f.nranks = c->nranks;
    o.f.n = 0;
    for (uint32_t j = 0; j < c->nbad; j++)
        o.f.r[o.f.n++] = c->bad[j];
    c->nbad = 0;
    uint64_t hold = (uint64_t)r->p.interval_ms * 1000000ull;
    ncg_p2pm_take(&c->p2p, all ? UINT64_MAX : now_ns, all ? 0 : hold, p2p_out_add, &o);
    p2p_out_flush(&o);
}
