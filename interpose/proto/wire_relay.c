/* Codecs of the relay tree's messages (wire_relay.h). Same rules as wire.c: big-endian,
 * bounded, every count and string checked against its bound and the bytes left. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ncclguard/shm.h"
#include "wire.h"
#include "wire_io.h"
#include "verdict.h"

static void put_group(struct ncg_wbuf *w, const struct ncg_rgroup *g)
{
    ncg_put8(w, g->status);
    ncg_put64(w, g->digest);
    ncg_wire_put_call(w, &g->call);
    ncg_wire_put_str(w, g->site, sizeof g->site);
    ncg_put32(w, g->nranks);
    ncg_put8(w, g->truncated);
    ncg_put8(w, g->nrange);
    for (uint32_t i = 0; i < g->nrange && i < NCG_RELAY_RANGES; i++) {
        ncg_put32(w, g->r[i].lo);
        ncg_put32(w, g->r[i].hi);
    }
}

static int get_group(struct ncg_rbuf *r, struct ncg_rgroup *g)
{
    g->status = ncg_get8(r);
    g->digest = ncg_get64(r);
    ncg_wire_get_call(r, &g->call);
    ncg_wire_get_str(r, g->site, sizeof g->site);
    g->nranks = ncg_get32(r);
    g->truncated = ncg_get8(r);
    g->nrange = ncg_get8(r);
    if (g->status == NCG_ANS_NONE || g->status > NCG_ANS_NONE || g->truncated > 1 ||
        g->nrange > NCG_RELAY_RANGES || g->nranks > NCG_WIRE_MAX_RANKS)
        return -1;
    for (uint32_t i = 0; i < g->nrange; i++) {
        g->r[i].lo = ncg_get32(r);
        g->r[i].hi = ncg_get32(r);
        if (g->r[i].lo > g->r[i].hi || g->r[i].hi >= NCG_WIRE_MAX_RANKS)
            return -1;
    }
    return 0;
}

/* RSTAT (v12): a list's rank count and its "more" flag in one byte. */
#define STAT_LOW_MORE 0x80u

/* RSLOW (v10): per slot varints: the slot, n, argmin + 1, side | who << 1, then min, sum and
 * time per slot in microseconds; with who: global rank + 1, pid, host. */
#define RS_SIDE 1u
#define RS_WHO 2u
static int put_rslow(struct ncg_wbuf *w, const struct ncg_msg *m)
{
    const struct ncg_msg_rslow *x = m->u.rslow;
    if (!x || !x->n || x->n > NCG_RSLOW_COMMS)
        return -1;
    ncg_put8(w, (uint8_t)x->n);
    for (uint32_t i = 0; i < x->n; i++) {
        const struct ncg_rslow_ent *e = &x->e[i];
        if (!e->ns || e->ns > NCG_RSLOW_SLOTS)
            return -1;
        ncg_put64(w, e->comm_id);
        ncg_putv(w, e->nranks);
        ncg_put8(w, e->ns);
        for (uint32_t j = 0; j < e->ns; j++) {
            const struct ncg_rslow_slot *s = &e->s[j];
            ncg_putv(w, s->slot);
            ncg_putv(w, s->n);
            ncg_putv(w, (uint64_t)(s->argmin + 1));
            ncg_put8(w, (uint8_t)((s->side ? RS_SIDE : 0) | (s->has_who ? RS_WHO : 0)));
            ncg_putv(w, s->min_ns / 1000);
            ncg_putv(w, s->sum_ns / 1000);
            ncg_putv(w, s->step_ns / 1000);
            if (s->has_who) {
                ncg_putv(w, (uint64_t)(s->grank + 1));
                ncg_putv(w, s->pid);
                ncg_wire_put_str(w, s->host, sizeof s->host);
            }
        }
    }
    return 0;
}

static int get_rslow(struct ncg_rbuf *r, struct ncg_msg *m)
{
    struct ncg_msg_rslow *x = m->u.rslow = calloc(1, sizeof *m->u.rslow);
    if (!x) /* released with the message, also on an error below */
        return -1;
    x->n = ncg_get8(r);
    if (!x->n || x->n > NCG_RSLOW_COMMS)
        return -1;
    for (uint32_t i = 0; i < x->n; i++) {
        struct ncg_rslow_ent *e = &x->e[i];
        e->comm_id = ncg_get64(r);
        e->nranks = (uint32_t)ncg_getv(r, NCG_WIRE_MAX_RANKS);
        e->ns = ncg_get8(r);
        if (r->err || !e->nranks || !e->ns || e->ns > NCG_RSLOW_SLOTS)
            return -1;
        for (uint32_t j = 0; j < e->ns; j++) {
            struct ncg_rslow_slot *s = &e->s[j];
            s->slot = ncg_getv(r, UINT64_MAX);
            s->n = (uint32_t)ncg_getv(r, e->nranks);
            s->argmin = (int32_t)ncg_getv(r, e->nranks) - 1;
            uint8_t fl = ncg_get8(r);
            s->side = fl & RS_SIDE;
            s->has_who = (fl & RS_WHO) != 0;
            s->min_ns = ncg_getv(r, UINT64_MAX / 1000) * 1000;
            s->sum_ns = ncg_getv(r, UINT64_MAX / 1000) * 1000;
            s->step_ns = ncg_getv(r, UINT64_MAX / 1000) * 1000;
            s->grank = -1;
            if (s->has_who) {
                s->grank = (int32_t)ncg_getv(r, (uint64_t)INT32_MAX + 1) - 1;
                s->pid = (uint32_t)ncg_getv(r, UINT32_MAX);
                if (ncg_wire_get_str(r, s->host, sizeof s->host) < 0)
                    return -1;
            }
            if (r->err || !s->n || fl & ~(RS_SIDE | RS_WHO) || s->min_ns > s->sum_ns ||
                (j && s->slot <= e->s[j - 1].slot))
                return -1;
        }
    }
    return r->err ? -1 : 0;
}

/* v12: counts as varints, each against the one it is nearest */
static int put_rstat(struct ncg_wbuf *w, const struct ncg_msg *m)
{
    if (m->u.rstat.n > NCG_RELAY_STAT)
        return -1;
    ncg_put16(w, (uint16_t)m->u.rstat.n);
    for (uint32_t i = 0; i < m->u.rstat.n; i++) {
        const struct ncg_rstat_ent *e = &m->u.rstat.e[i];
        if (e->nown > NCG_RELAY_OWN || e->ngone > NCG_RELAY_GONE || e->nlow > NCG_RELAY_LOW ||
            e->ndlow_l > NCG_RELAY_LOW)
            return -1;
        ncg_put64(w, e->comm_id);
        ncg_putv(w, e->nranks);
        ncg_putv(w, e->known);
        ncg_putv(w, e->active);
        ncg_putv(w, e->min);
        ncg_putz(w, e->max, e->min);
        ncg_put8(w, e->nown);
        ncg_put_ranks(w, e->own, e->nown);
        ncg_put8(w, e->ngone);
        for (uint32_t j = 0; j < e->ngone; j++) {
            ncg_putv(w, e->gone[j].rank);
            ncg_put8(w, e->gone[j].how);
            ncg_putz(w, e->gone[j].count, e->min);
        }
        ncg_putv(w, e->idle_ms);
        ncg_put8(w, (uint8_t)(e->nlow | (e->low_more ? STAT_LOW_MORE : 0u)));
        ncg_put_ranks(w, e->low, e->nlow);
        ncg_putz(w, e->dmin, e->min);
        ncg_putz(w, e->dhi, e->dmin);
        ncg_put8(w, e->sampled);
        ncg_putv(w, e->didle_ms);
        ncg_putv(w, e->ndlow);
        ncg_put8(w, e->ndlow_l);
        ncg_put_ranks(w, e->dlow, e->ndlow_l);
    }
    return 0;
}

static int put_ranswer(struct ncg_wbuf *w, const struct ncg_msg *m)
{
    const struct ncg_msg_ranswer *a = m->u.ranswer;
    if (!a || a->n > NCG_WIRE_MAX_SLOTS)
        return -1;
    ncg_put64(w, a->comm_id);
    ncg_put32(w, a->qid);
    ncg_put16(w, (uint16_t)a->n);
    for (uint32_t i = 0; i < a->n; i++) {
        if (a->s[i].ngroups > NCG_RELAY_GROUPS)
            return -1;
        ncg_put8(w, a->s[i].ngroups);
        ncg_put8(w, a->s[i].more);
        for (uint32_t j = 0; j < a->s[i].ngroups; j++)
            put_group(w, &a->s[i].g[j]);
    }
    return 0;
}

static int put_rfault(struct ncg_wbuf *w, const struct ncg_msg *m)
{
    if (m->u.rfault.n > NCG_RELAY_DEAD)
        return -1;
    ncg_put64(w, m->u.rfault.comm_id);
    ncg_put32(w, m->u.rfault.nranks);
    ncg_put16(w, (uint16_t)m->u.rfault.n);
    for (uint32_t i = 0; i < m->u.rfault.n; i++)
        ncg_put32(w, m->u.rfault.rank[i]);
    ncg_wire_put_str(w, m->u.rfault.detail, sizeof m->u.rfault.detail);
    return 0;
}

static int put_rverdict(struct ncg_wbuf *w, const struct ncg_msg *m)
{
    const struct ncg_verdict *v = m->u.rverdict.v;
    if (!v || v->nranks != 0 ||
        (v->nfigs && (uint64_t)v->figs[v->nfigs - 1].lo + v->figs[v->nfigs - 1].n >
                         m->u.rverdict.comm_nranks) ||
        (v->kind == NCG_V_SLOW && !ncg_vslow_ok(&v->slow, m->u.rverdict.comm_nranks)))
        return -1;
    ncg_put32(w, m->u.rverdict.comm_nranks);
    if (w->err)
        return 0;
    long n = ncg_verdict_encode(v, w->p + w->len, w->cap - w->len);
    if (n < 0) {
        w->err = 1;
        return 0;
    }
    w->len += (size_t)n;
    return 0;
}

static int put_rfiga(struct ncg_wbuf *w, const struct ncg_msg *m)
{
    const struct ncg_msg_rfiga *a = m->u.rfiga;
    if (!a || a->n > NCG_FIG_MAX_RUNS)
        return -1;
    ncg_put64(w, a->comm_id);
    ncg_put32(w, a->nranks);
    ncg_put32(w, a->qid);
    ncg_figruns_put(w, a->r, a->n);
    return 0;
}

static int put_rp2p(struct ncg_wbuf *w, const struct ncg_msg *m)
{
    if (m->u.rp2p.n > NCG_WIRE_MAX_P2P)
        return -1;
    ncg_put64(w, m->u.rp2p.comm_id);
    ncg_put32(w, m->u.rp2p.nranks);
    ncg_put16(w, (uint16_t)m->u.rp2p.n);
    for (uint32_t i = 0; i < m->u.rp2p.n; i++) {
        const struct ncg_rp2p_rec *x = &m->u.rp2p.r[i];
        ncg_put32(w, x->rank);
        ncg_wire_put_p2p(w, &x->rec);
    }
    return 0;
}

static int put_rwait(struct ncg_wbuf *w, const struct ncg_msg *m)
{
    const struct ncg_msg_rwait *x = m->u.rwait;
    if (!x || x->nm > NCG_WIRE_MAX_COMMS)
        return -1;
    ncg_put32(w, x->node);
    ncg_put32(w, x->conn);
    ncg_put32(w, x->pid);
    ncg_put32(w, (uint32_t)x->grank);
    ncg_wire_put_str(w, x->host, sizeof x->host);
    ncg_put64(w, x->gen);
    ncg_put16(w, (uint16_t)x->nm);
    for (uint32_t i = 0; i < x->nm; i++) {
        ncg_put64(w, x->m[i].comm_id);
        ncg_put32(w, x->m[i].nranks);
        ncg_put32(w, x->m[i].rank);
        ncg_put32(w, x->m[i].tid);
        ncg_put64(w, x->m[i].count);
        ncg_put64(w, x->m[i].done);
    }
    return ncg_wire_put_wait(w, &x->w);
}

static int get_rstat(struct ncg_rbuf *r, struct ncg_msg *m)
{
    m->u.rstat.n = ncg_get16(r);
    if (m->u.rstat.n > NCG_RELAY_STAT)
        return -1;
    for (uint32_t i = 0; i < m->u.rstat.n && !r->err; i++) {
        struct ncg_rstat_ent *e = &m->u.rstat.e[i];
        e->comm_id = ncg_get64(r);
        e->nranks = (uint32_t)ncg_getv(r, NCG_WIRE_MAX_RANKS);
        e->known = (uint32_t)ncg_getv(r, UINT32_MAX);
        e->active = (uint32_t)ncg_getv(r, UINT32_MAX);
        e->min = ncg_getv(r, UINT64_MAX);
        e->max = ncg_getz(r, e->min);
        e->nown = ncg_get8(r);
        if (r->err || e->nranks == 0 || e->known > e->nranks || e->active > e->known ||
            e->min > e->max || e->nown > NCG_RELAY_OWN ||
            ncg_get_ranks(r, e->own, e->nown, e->nranks) < 0)
            return -1;
        e->ngone = ncg_get8(r);
        if (e->ngone > NCG_RELAY_GONE)
            return -1;
        for (uint32_t j = 0; j < e->ngone; j++) {
            e->gone[j].rank = (uint32_t)ncg_getv(r, UINT32_MAX);
            e->gone[j].how = ncg_get8(r);
            e->gone[j].count = ncg_getz(r, e->min);
            if (e->gone[j].rank >= e->nranks ||
                (e->gone[j].how & ~(NCG_BYE_ABORT | NCG_BYE_VERDICT)))
                return -1;
        }
        e->idle_ms = (uint32_t)ncg_getv(r, UINT32_MAX);
        uint8_t low = ncg_get8(r);
        e->nlow = low & (uint8_t)~STAT_LOW_MORE;
        e->low_more = (low & STAT_LOW_MORE) != 0;
        if (e->nlow > NCG_RELAY_LOW || ncg_get_ranks(r, e->low, e->nlow, e->nranks) < 0)
            return -1;
        e->dmin = ncg_getz(r, e->min);
        e->dhi = ncg_getz(r, e->dmin);
        e->sampled = ncg_get8(r);
        e->didle_ms = (uint32_t)ncg_getv(r, UINT32_MAX);
        e->ndlow = (uint32_t)ncg_getv(r, UINT32_MAX);
        e->ndlow_l = ncg_get8(r);
        if (e->dmin > e->dhi || e->sampled > 1 || e->ndlow > e->active ||
            e->ndlow_l > NCG_RELAY_LOW || e->ndlow_l > e->ndlow ||
            ncg_get_ranks(r, e->dlow, e->ndlow_l, e->nranks) < 0)
            return -1;
    }
    return 0;
}

static int get_ranswer(struct ncg_rbuf *r, struct ncg_msg *m)
{
    struct ncg_msg_ranswer *a = calloc(1, sizeof *a);
    if (!a)
        return -1;
    m->u.ranswer = a;
    a->comm_id = ncg_get64(r);
    a->qid = ncg_get32(r);
    a->n = ncg_get16(r);
    if (a->n > NCG_WIRE_MAX_SLOTS)
        return -1;
    for (uint32_t i = 0; i < a->n && !r->err; i++) {
        a->s[i].ngroups = ncg_get8(r);
        a->s[i].more = ncg_get8(r);
        if (a->s[i].ngroups > NCG_RELAY_GROUPS || a->s[i].more > 1)
            return -1;
        for (uint32_t j = 0; j < a->s[i].ngroups; j++)
            if (get_group(r, &a->s[i].g[j]) < 0)
                return -1;
    }
    return 0;
}

static int get_rfault(struct ncg_rbuf *r, struct ncg_msg *m)
{
    m->u.rfault.comm_id = ncg_get64(r);
    m->u.rfault.nranks = ncg_get32(r);
    m->u.rfault.n = ncg_get16(r);
    if (m->u.rfault.n > NCG_RELAY_DEAD || m->u.rfault.nranks == 0 ||
        m->u.rfault.nranks > NCG_WIRE_MAX_RANKS)
        return -1;
    for (uint32_t i = 0; i < m->u.rfault.n; i++)
        if ((m->u.rfault.rank[i] = ncg_get32(r)) >= m->u.rfault.nranks)
            return -1;
    return ncg_wire_get_str(r, m->u.rfault.detail, sizeof m->u.rfault.detail);
}

static int get_rverdict(struct ncg_rbuf *r, struct ncg_msg *m)
{
    m->u.rverdict.comm_nranks = ncg_get32(r);
    if (r->err || m->u.rverdict.comm_nranks == 0 || m->u.rverdict.comm_nranks > NCG_WIRE_MAX_RANKS)
        return -1;
    m->u.rverdict.v = ncg_verdict_decode(r->p + r->pos, r->cap - r->pos);
    if (!m->u.rverdict.v || m->u.rverdict.v->nranks != 0)
        return -1;
    if (m->u.rverdict.v->nfigs) { /* runs sorted and disjoint: the last ends the highest */
        const struct ncg_figrun *x = &m->u.rverdict.v->figs[m->u.rverdict.v->nfigs - 1];
        if ((uint64_t)x->lo + x->n > m->u.rverdict.comm_nranks)
            return -1;
    }
    if (m->u.rverdict.v->kind == NCG_V_SLOW && /* the named rank within the comm (v11) */
        !ncg_vslow_ok(&m->u.rverdict.v->slow, m->u.rverdict.comm_nranks))
        return -1;
    r->pos = r->cap;
    return 0;
}

static int check_rhere(struct ncg_rbuf *r, struct ncg_msg *m)
{
    (void)r;
    return m->u.rhere.exact > 1 ? -1 : 0;
}

static int get_rp2p(struct ncg_rbuf *r, struct ncg_msg *m)
{
    m->u.rp2p.comm_id = ncg_get64(r);
    m->u.rp2p.nranks = ncg_get32(r);
    m->u.rp2p.n = ncg_get16(r);
    if (m->u.rp2p.nranks == 0 || m->u.rp2p.nranks > NCG_WIRE_MAX_RANKS ||
        m->u.rp2p.n > NCG_WIRE_MAX_P2P)
        return -1;
    for (uint32_t i = 0; i < m->u.rp2p.n; i++) {
        struct ncg_rp2p_rec *x = &m->u.rp2p.r[i];
        x->rank = ncg_get32(r);
        ncg_wire_get_p2p(r, &x->rec);
        if (x->rank >= m->u.rp2p.nranks || x->rec.peer < 0 ||
            (uint32_t)x->rec.peer >= m->u.rp2p.nranks ||
            (x->rec.func != NCG_F_SEND && x->rec.func != NCG_F_RECV))
            return -1;
    }
    return 0;
}

static int get_rwait(struct ncg_rbuf *r, struct ncg_msg *m)
{
    struct ncg_msg_rwait *x = calloc(1, sizeof *x);
    if (!x)
        return -1;
    m->u.rwait = x; /* released with the message, also on an error below */
    x->node = ncg_get32(r);
    x->conn = ncg_get32(r);
    x->pid = ncg_get32(r);
    x->grank = (int32_t)ncg_get32(r);
    if (ncg_wire_get_str(r, x->host, sizeof x->host) < 0)
        return -1;
    x->gen = ncg_get64(r);
    x->nm = ncg_get16(r);
    if (x->nm > NCG_WIRE_MAX_COMMS)
        return -1;
    for (uint32_t i = 0; i < x->nm; i++) {
        struct ncg_rwait_mem *e = &x->m[i];
        e->comm_id = ncg_get64(r);
        e->nranks = ncg_get32(r);
        e->rank = ncg_get32(r);
        e->tid = ncg_get32(r);
        e->count = ncg_get64(r);
        e->done = ncg_get64(r);
        if (e->nranks == 0 || e->nranks > NCG_WIRE_MAX_RANKS || e->rank >= e->nranks)
            return -1;
    }
    return ncg_wire_get_wait(r, &x->w);
}

static int check_rfigq(struct ncg_rbuf *r, struct ncg_msg *m)
{
    if (r->err || m->u.rfigq.nranks == 0 || m->u.rfigq.nranks > NCG_WIRE_MAX_RANKS ||
        m->u.rfigq.lo > m->u.rfigq.hi || m->u.rfigq.hi >= m->u.rfigq.nranks)
        return -1;
    return 0;
}

static int get_rfiga(struct ncg_rbuf *r, struct ncg_msg *m)
{
    struct ncg_msg_rfiga *a = calloc(1, sizeof *a);
    struct ncg_figset s = {0};
    if (!a)
        return -1;
    m->u.rfiga = a; /* released with the message, also on an error below */
    a->comm_id = ncg_get64(r);
    a->nranks = ncg_get32(r);
    a->qid = ncg_get32(r);
    if (r->err || a->nranks == 0 || a->nranks > NCG_WIRE_MAX_RANKS ||
        ncg_figruns_get(r, &s, NCG_FIG_MAX_RUNS, a->nranks) < 0) {
        ncg_figset_free(&s);
        return -1;
    }
    a->n = s.n;
    if (s.n) /* an empty answer's set has no array */
        memcpy(a->r, s.r, sizeof *s.r * s.n);
    ncg_figset_free(&s);
    return 0;
}

/* The fixed-layout messages' fields. */
#define RF_(type, m) NCG_WF(struct ncg_msg_##type, m)
#define RS_(type, m) NCG_WS(struct ncg_msg_##type, m)
static const struct ncg_wfield rhello_f[] = {RF_(rhello, token), RF_(rhello, pid),
                                             RF_(rhello, node), RS_(rhello, host)};
static const struct ncg_wfield rwhere_f[] = {RF_(rwhere, token), RF_(rwhere, node),
                                             RF_(rwhere, want), RF_(rwhere, port)};
static const struct ncg_wfield rhere_f[] = {RF_(rhere, want), RF_(rhere, found), RF_(rhere, exact),
                                            RF_(rhere, port), RS_(rhere, ip)};
static const struct ncg_wfield rfigq_f[] = {RF_(rfigq, comm_id), RF_(rfigq, nranks),
                                            RF_(rfigq, qid), RF_(rfigq, lo), RF_(rfigq, hi)};
#undef RF_
#undef RS_

/* The relay tree's codecs by type (wire_io.h). */
static const struct ncg_wcodec codec[NCG_MSG_TYPE_MAX_] = {
    [NCG_MSG_RHELLO] = {NCG_WFIELDS(rhello_f), NULL, NULL},
    [NCG_MSG_RSTAT] = {NULL, 0, put_rstat, get_rstat},
    [NCG_MSG_RANSWER] = {NULL, 0, put_ranswer, get_ranswer},
    [NCG_MSG_RFAULT] = {NULL, 0, put_rfault, get_rfault},
    [NCG_MSG_RVERDICT] = {NULL, 0, put_rverdict, get_rverdict},
    [NCG_MSG_RWHERE] = {NCG_WFIELDS(rwhere_f), NULL, NULL},
    [NCG_MSG_RHERE] = {NCG_WFIELDS(rhere_f), NULL, check_rhere},
    [NCG_MSG_RP2P] = {NULL, 0, put_rp2p, get_rp2p},
    [NCG_MSG_RWAIT] = {NULL, 0, put_rwait, get_rwait},
    [NCG_MSG_RASK] = {NULL, 0, ncg_wire_put_nothing, ncg_wire_get_nothing},
    [NCG_MSG_RFIGQ] = {NCG_WFIELDS(rfigq_f), NULL, check_rfigq},
    [NCG_MSG_RFIGA] = {NULL, 0, put_rfiga, get_rfiga},
    [NCG_MSG_RSLOW] = {NULL, 0, put_rslow, get_rslow},
};

const struct ncg_wcodec *ncg_wire_relay_codec(uint8_t type)
{
    return type < NCG_MSG_TYPE_MAX_ && (codec[type].f || codec[type].put) ? &codec[type] : NULL;
}

void ncg_wire_relay_release(struct ncg_msg *m)
{
    if (m->type == NCG_MSG_RANSWER) {
        free(m->u.ranswer);
        m->u.ranswer = NULL;
    } else if (m->type == NCG_MSG_RWAIT) {
        free(m->u.rwait);
        m->u.rwait = NULL;
    } else if (m->type == NCG_MSG_RFIGA) {
        free(m->u.rfiga);
        m->u.rfiga = NULL;
    } else if (m->type == NCG_MSG_RSLOW) {
        free(m->u.rslow);
        m->u.rslow = NULL;
    } else if (m->type == NCG_MSG_RVERDICT && m->u.rverdict.v) {
        ncg_verdict_free(m->u.rverdict.v);
        m->u.rverdict.v = NULL;
    }
}
