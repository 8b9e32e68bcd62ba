/* DEADLOCK through the tree (on relay_int.h's state). A node relay turns each WAIT of its client
 * processes into an RWAIT (the entries, the process's memberships with their driver threads and
 * counts) and sends it up; relays above pass it on unchanged; the root keeps the latest one per
 * process (its node relay, its connection there, its pid) and runs deadlock.h's search over them,
 * as the flat coordinator does over its connections: only the processes with blocked calls take
 * part (a member with none draws no edge in either graph), and a cycle is confirmed by a second
 * sighting after each of its processes sent a newer WAIT. Traffic only while calls wait (a client
 * sends WAITs only then, one empty one after), and little then: a node relay sends a process's WAIT
 * up only when it differs from the last one it sent (every interval while blocked, WAITs mostly
 * repeat), except for two intervals after an RASK, which the root broadcasts down the tree when it
 * first sees a cycle (at most once an interval, again every five while unconfirmed): the processes'
 * next WAITs confirm it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "deadlock.h"
#include "gonewait.h"
#include "relay_int.h"

#define NCG_RELAY_MAX_WAITERS 32768u /* root: processes with blocked calls held */

/* One waiting process at the root: its latest RWAIT, compact (what it carries, not the frame's
 * bounds: a few hundred bytes for a process blocked in one call). */
struct rwaiter {
    uint32_t node, conn, pid; /* its key */
    int32_t grank;
    char host[64];
    uint64_t gen, asked_gen; /* its WAITs so far; that count when the last RASK went down */
    uint32_t nm, nw;
    struct ncg_rwait_mem *m; /* [nm] its memberships */
    struct ncg_wait_ent *w;  /* [nw] its blocked calls */
    uint64_t gw_sig, gw_ns;  /* a wait on a rank that left (gonewait.h), first seen then */
};

/* What the root holds (lazily allocated in struct ncg_relay: r->dl): the records, and an
 * open-addressing index of them by key (0 empty, 1 a removed one, else record + 2). */
struct rdl {
    struct rwaiter *p;
    uint32_t n, cap;
    uint32_t *ix, ixcap, ixdead; /* ixcap: a power of two, at least twice the records */
    uint8_t full;                /* past NCG_RELAY_MAX_WAITERS: said once */
    uint64_t last_check_ns;
    uint64_t asked_ns;          /* the last RASK down */
    uint64_t sweep_ns;          /* then: drop the records that did not answer it (0: none) */
    struct ncg_dl_seen seen[2]; /* [0] blocked threads, [1] stream order */
};

static void rw_clear(struct rwaiter *x)
{
    free(x->m);
    free(x->w);
    x->m = NULL;
    x->w = NULL;
}

void ncg_rl_dl_free(struct ncg_relay *r)
{
    if (!r->dl)
        return;
    for (uint32_t i = 0; i < r->dl->n; i++)
        rw_clear(&r->dl->p[i]);
    free(r->dl->p);
    free(r->dl->ix);
    free(r->dl);
    r->dl = NULL;
}

static uint32_t key_hash(uint32_t node, uint32_t conn, uint32_t pid)
{
    uint64_t h =
        ((uint64_t)node << 32 | conn) * 0x9e3779b97f4a7c15ull ^ pid * 0xc2b2ae3d27d4eb4full;
    return (uint32_t)(h >> 32);
}

/* The index slot of the key: the live one holding it, else the first free one on its probe
 * path (a removed one when met first). At most ixcap probes: with the index never more than
 * half live, a path without an empty slot (removed slots pile up while rebuilds fail for want
 * of memory) still ends at a removed one. */
static uint32_t ix_slot(const struct rdl *d, uint32_t node, uint32_t conn, uint32_t pid)
{
    uint32_t mask = d->ixcap - 1, h = key_hash(node, conn, pid) & mask, tomb = UINT32_MAX;
    for (uint32_t probes = 0;; h = (h + 1) & mask, probes++) {
        uint32_t v = d->ix[h];
        if (v == 0 || probes == d->ixcap)
            return tomb != UINT32_MAX ? tomb : h;
        if (v == 1) {
            if (tomb == UINT32_MAX)
                tomb = h;
            continue;
        }
        const struct rwaiter *x = &d->p[v - 2];
        if (x->node == node && x->conn == conn && x->pid == pid)
            return h;
    }
}

/* The blocked collective call the root's own client on conn reported for rank of comm_id at
 * slot k (its latest WAIT), or NULL: STUCK's member lines at a one-node root. */
/* The root's record of its own client on conn, or NULL. */
static const struct rwaiter *own_waiter(const struct ncg_relay *r, int conn)
{
    const struct rdl *d = r->dl;
    const struct rconn *cc = ncg_rl_conn_get(r, conn);
    if (!d || !cc || !d->ixcap)
        return NULL;
    uint32_t h = ix_slot(d, r->p.node, (uint32_t)conn, cc->pid);
    return d->ix[h] >= 2 ? &d->p[d->ix[h] - 2] : NULL;
}

const struct ncg_wait_ent *ncg_rl_dl_wait_of(const struct ncg_relay *r, int conn, uint64_t comm_id,
                                             uint32_t rank)
{
    const struct rwaiter *x = own_waiter(r, conn);
    const struct ncg_wait_ent *p2p = NULL;
    for (uint32_t j = 0; x && j < x->nw; j++) {
        const struct ncg_wait_ent *w = &x->w[j];
        if (w->comm_id != comm_id || w->rank != rank)
            continue; /* (queued too: under asynchronous NCCL the calls on its streams) */
        if (!w->p2p)
            return w;
        p2p = p2p ? p2p : w;
    }
    return p2p;
}

const struct ncg_wait_ent *ncg_rl_dl_wait_at(const struct ncg_relay *r, int conn, uint64_t comm_id,
                                             uint32_t rank, uint64_t k)
{
    const struct rwaiter *x = own_waiter(r, conn);
    for (uint32_t j = 0; x && j < x->nw; j++) {
        const struct ncg_wait_ent *w = &x->w[j];
        if (w->comm_id == comm_id && w->rank == rank && !w->p2p && !w->queued && w->call.seq == k)
            return w;
    }
    return NULL;
}

/* Rebuilds the index for cap records (grown, or rid of removed slots). 0 / -1. */
static int ix_rebuild(struct rdl *d, uint32_t cap)
{
    uint32_t n = 64;
    while (n < 2 * cap)
        n *= 2;
    uint32_t *ix = calloc(n, sizeof *ix);
    if (!ix)
        return -1;
    free(d->ix);
    d->ix = ix;
    d->ixcap = n;
    d->ixdead = 0;
    for (uint32_t i = 0; i < d->n; i++)
        d->ix[ix_slot(d, d->p[i].node, d->p[i].conn, d->p[i].pid)] = i + 2;
    return 0;
}

/* Removes record i (the last one takes its place). */
static void dl_remove(struct rdl *d, uint32_t i)
{
    struct rwaiter *x = &d->p[i];
    d->ix[ix_slot(d, x->node, x->conn, x->pid)] = 1;
    d->ixdead++;
    rw_clear(x);
    if (i != --d->n) {
        d->p[i] = d->p[d->n];
        d->ix[ix_slot(d, d->p[i].node, d->p[i].conn, d->p[i].pid)] = i + 2;
    }
    if (d->ixdead > d->ixcap / 4)
        ix_rebuild(d, d->cap); /* on failure the removed slots stay: lookups still work */
}

/* Root: the latest RWAIT of a process replaces its previous one; an empty one removes it. The
 * caller keeps w. */
static void dl_keep(struct ncg_relay *r, const struct ncg_msg_rwait *w)
{
    if (!r->dl && !(r->dl = calloc(1, sizeof *r->dl))) {
        ncg_rl_nomem(r);
        return;
    }
    struct rdl *d = r->dl;
    if (!d->ix && ix_rebuild(d, 16) != 0) {
        ncg_rl_nomem(r);
        return;
    }
    uint32_t h = ix_slot(d, w->node, w->conn, w->pid), i = d->ix[h] >= 2 ? d->ix[h] - 2 : d->n;
    if (w->w.n == 0) {
        if (i < d->n)
            dl_remove(d, i);
        return;
    }
    if (i == d->n) {
        if (d->n == NCG_RELAY_MAX_WAITERS) {
            ncg_rl_refuse(r, &d->full,
                          "DEADLOCK: more than %u processes with blocked calls; the others are "
                          "left out of the wait-for graph",
                          NCG_RELAY_MAX_WAITERS);
            return;
        }
        if (d->n == d->cap) {
            uint32_t cap = d->cap ? d->cap * 2 : 16;
            struct rwaiter *p = realloc(d->p, sizeof *p * cap);
            if (!p) {
                ncg_rl_nomem(r);
                return;
            }
            d->p = p;
            d->cap = cap;
            if (2 * cap > d->ixcap && ix_rebuild(d, cap) != 0) {
                ncg_rl_nomem(r);
                return;
            }
            h = ix_slot(d, w->node, w->conn, w->pid);
        }
        d->p[d->n] = (struct rwaiter){.node = w->node, .conn = w->conn, .pid = w->pid};
        d->ix[h] = d->n + 2;
        d->n++;
    }
    struct rwaiter *x = &d->p[i];
    struct ncg_rwait_mem *m = malloc(sizeof *m * (w->nm ? w->nm : 1));
    struct ncg_wait_ent *e = malloc(sizeof *e * w->w.n);
    if (!m || !e) {
        free(m);
        free(e);
        ncg_rl_nomem(r);
        return;
    }
    memcpy(m, w->m, sizeof *m * w->nm);
    memcpy(e, w->w.w, sizeof *e * w->w.n);
    rw_clear(x);
    x->grank = w->grank;
    snprintf(x->host, sizeof x->host, "%s", w->host);
    x->gen = w->gen; /* gw_sig stays: the same wait again is the same sighting */
    x->nm = w->nm;
    x->nw = w->w.n;
    x->m = m;
    x->w = e;
}

/* RASK (from the parent, or the root's own): every WAIT goes up for two intervals, and the
 * child relays are told. */
void ncg_rl_dl_ask(struct ncg_relay *r, uint64_t now_ns)
{
    r->ask_until_ns = now_ns + 2ull * r->p.interval_ms * 1000000ull;
    struct ncg_msg m = {.type = NCG_MSG_RASK};
    for (int i = 0; i < r->conns.n; i++) {
        const struct rconn *cc = ncg_conntab_at(&r->conns, i);
        if (cc->h.used && cc->h.authed && cc->relay)
            r->ops.send(r->ops.arg, i, &m);
    }
}

/* What a WAIT says, with the memberships it goes up with (never 0). */
static uint64_t rwait_sig(const struct ncg_msg_rwait *w)
{
    uint64_t h = 0xcbf29ce484222325ull;
#define MIX(x) (h = (h ^ (uint64_t)(x)) * 0x100000001b3ull)
    for (uint32_t i = 0; i < w->w.n; i++) {
        const struct ncg_wait_ent *e = &w->w.w[i];
        MIX(e->comm_id);
        MIX(e->rank);
        MIX(e->tid);
        MIX(e->p2p | (uint32_t)e->queued << 1 | (uint32_t)e->stream << 2);
        MIX(e->order);
        MIX(e->call.seq);
        MIX(e->call.func);
        MIX(e->call.root);
    }
    MIX(w->w.n);
    for (uint32_t i = 0; i < w->nm; i++) {
        MIX(w->m[i].comm_id);
        MIX(w->m[i].rank);
        MIX(w->m[i].tid);
        MIX(w->m[i].count);
        MIX(w->m[i].done);
    }
#undef MIX
    return h ? h : 1;
}

/* A client's WAIT: as an RWAIT, to the root's table (at the root) or up. */
void ncg_rl_on_wait(struct ncg_relay *r, int conn, const struct ncg_msg_wait *wt, uint64_t now_ns)
{
    struct rconn *cc = ncg_rl_conn_get(r, conn);
    if (!cc || (!r->p.root && !r->attached))
        return; /* the next WAIT (an interval on) goes up once the parent is back */
    struct ncg_msg_rwait *w = calloc(1, sizeof *w);
    if (!w) {
        ncg_rl_nomem(r);
        return;
    }
    w->node = r->p.node;
    w->conn = (uint32_t)conn;
    w->pid = cc->pid;
    w->grank = cc->h.grank;
    snprintf(w->host, sizeof w->host, "%s", cc->host);
    w->gen = ++cc->wait_gen;
    /* one membership per rank the process holds (a process driving several ranks of a comm
     * from its threads: each rank its own driver thread in the graph) */
    for (size_t ci = 0; ci < r->ncomm && w->nm < NCG_WIRE_MAX_COMMS; ci++) {
        const struct rcomm *c = r->comm[ci];
        for (uint32_t i = 0; i < c->nk && w->nm < NCG_WIRE_MAX_COMMS; i++) {
            const struct rkid *k = &c->k[i];
            if (k->conn == conn && !k->relay && k->state == K_ACTIVE)
                w->m[w->nm++] =
                    (struct ncg_rwait_mem){c->id, c->nranks, k->rank, k->tid, k->max, k->dmin};
        }
    }
    w->w = *wt;
    uint64_t sig = rwait_sig(w);
    if (sig == cc->wait_sig && now_ns >= r->ask_until_ns) {
        free(w); /* the same as the last one: nothing new up there */
        return;
    }
    cc->wait_sig = sig;
    if (r->p.root) {
        dl_keep(r, w);
        free(w);
        return;
    }
    struct ncg_msg m = {.type = NCG_MSG_RWAIT};
    m.u.rwait = w;
    r->ops.up(r->ops.arg, &m);
    free(w);
}

/* A child relay's RWAIT: kept (root) or passed up. */
void ncg_rl_on_rwait(struct ncg_relay *r, struct ncg_msg_rwait *w)
{
    if (r->p.root) {
        dl_keep(r, w);
    } else if (r->attached) {
        struct ncg_msg m = {.type = NCG_MSG_RWAIT};
        m.u.rwait = w;
        r->ops.up(r->ops.arg, &m);
    }
}

/* One membership of a waiting process (root_check_deadlock sorts them by comm). */
struct mref {
    uint64_t comm_id;
    uint32_t proc, mem; /* the process's index in the table, the membership's in its RWAIT */
};

static int mref_cmp(const void *a, const void *b)
{
    const struct mref *x = a, *y = b;
    if (x->comm_id != y->comm_id)
        return x->comm_id < y->comm_id ? -1 : 1;
    return x->proc < y->proc ? -1 : x->proc > y->proc;
}

/* 1 when some comm of w is still checked at the root (not ended by a verdict). */
static int rwait_live(const struct ncg_relay *r, const struct rwaiter *w)
{
    for (uint32_t j = 0; j < w->nm; j++) {
        const struct rcomm *c = ncg_rl_comm_find((struct ncg_relay *)r, w->m[j].comm_id);
        if (c && !c->done)
            return 1;
    }
    return 0;
}

/* w is the record of a process connected to this relay itself (its own client): kept while
 * connected, its latest WAIT being what /status shows as its members' last call also after a
 * verdict (ncg_rl_dl_wait_of). */
static int own_client(const struct ncg_relay *r, const struct rwaiter *w)
{
    const struct rconn *cc = ncg_rl_conn_get(r, (int)w->conn);
    return w->node == r->p.node && cc && !cc->relay && cc->pid == w->pid;
}

/* Root: RASK down the tree; three intervals later the records whose process sent no WAIT
 * since are dropped (it died, or its relay did: every live blocked process answers an RASK). */
static void root_ask(struct ncg_relay *r, uint64_t now_ns)
{
    struct rdl *d = r->dl;
    d->asked_ns = now_ns;
    d->sweep_ns = now_ns + 3ull * r->p.interval_ms * 1000000ull;
    for (uint32_t i = 0; i < d->n; i++)
        d->p[i].asked_gen = d->p[i].gen;
    ncg_rl_dl_ask(r, now_ns);
}

/* Root, each tick (at most twice an interval): forget processes none of whose comms is still
 * checked (a verdict ended them), or that did not answer the last RASK, then one check per
 * graph; a cycle seen for the first time asks the tree for fresh WAITs (RASK). */
struct gw_gone {
    const struct ncg_rgone *g;
    uint32_t n;
    const struct rcomm *c; /* its ranks' completed counts, where every one is a client here */
};

static void gw_member(const void *arg, uint32_t i, struct ncg_gw_member *out)
{
    const struct gw_gone *x = arg;
    out->left = NCG_GW_HERE;
    out->done = 0;
    for (uint32_t j = 0; j < x->n; j++)
        if (x->g[j].rank == i)
            out->left = NCG_GW_LEFT;
    for (uint32_t k = 0; x->c && k < x->c->nk; k++)
        if (!x->c->k[k].relay && x->c->k[k].rank == i)
            out->done = x->c->k[k].dmin;
}

/* Every rank of c is a client of this relay (a flat job's root): what it knows of each rank's
 * completed count is exact, so a wait in a collective slot a departed rank never completed is
 * judged too. */
static int all_clients_here(const struct rcomm *c)
{
    for (uint32_t i = 0; i < c->nk; i++)
        if (c->k[i].relay)
            return 0;
    return 1;
}

/* At the root: a waiting process's send/recv whose peer left (the ranks that left, as
 * root_check_exited knows them), or its collective slot that a rank which left never completed
 * where every rank is a client here (beneath child relays the tree does not carry a departed
 * rank's completed count: the counts' rule there), is RANK EXITED once its record has said so
 * for NCG_GW_SIGHTINGS intervals (a node relay sends a WAIT up only when it changed: the
 * record standing is the wait going on). */
static void root_gone_waits(struct ncg_relay *r, struct rdl *d, uint64_t now_ns)
{
    uint64_t hold = (uint64_t)NCG_GW_SIGHTINGS * r->p.interval_ms * 1000000ull;
    for (uint32_t i = 0; i < d->n; i++) {
        struct rwaiter *x = &d->p[i];
        uint64_t sig = 0;
        for (uint32_t j = 0; j < x->nw && !sig; j++) {
            const struct ncg_wait_ent *e = &x->w[j];
            struct rcomm *c = ncg_rl_comm_find(r, e->comm_id);
            if (!c || c->done || (!e->p2p && !all_clients_here(c)))
                continue;
            struct ncg_rgone g[NCG_RELAY_DEAD];
            struct gw_gone gg = {g, ncg_rl_gone(c, g, NULL), all_clients_here(c) ? c : NULL};
            int32_t who = gg.n ? ncg_gw_target(e, c->nranks, gw_member, &gg) : -1;
            if (who < 0)
                continue;
            sig = ncg_gw_sig(c->id, e, who);
            if (sig != x->gw_sig) {
                x->gw_sig = sig;
                x->gw_ns = now_ns;
            } else if (now_ns - x->gw_ns >= hold) {
                const struct ncg_rgone *w = NULL;
                for (uint32_t k = 0; k < gg.n; k++)
                    if (g[k].rank == (uint32_t)who)
                        w = &g[k];
                struct ncg_vcomm vc = ncg_rl_vcomm(c);
                ncg_rl_verdict_issue(r, c, ncg_v_exited_wait(&vc, who, w->count, w->how, e));
            }
        }
        if (!sig)
            x->gw_sig = 0;
    }
}

void ncg_rl_check_deadlock(struct ncg_relay *r, uint64_t now_ns)
{
    struct rdl *d = r->dl;
    uint64_t iv = (uint64_t)r->p.interval_ms * 1000000ull;
    if (!d || now_ns - d->last_check_ns < iv / 2)
        return;
    d->last_check_ns = now_ns;
    int sweep = d->sweep_ns && now_ns >= d->sweep_ns;
    if (sweep)
        d->sweep_ns = 0;
    for (uint32_t i = 0; i < d->n;)
        if (own_client(r, &d->p[i])
                ? 0
                : !rwait_live(r, &d->p[i]) || (sweep && d->p[i].gen == d->p[i].asked_gen))
            dl_remove(d, i);
        else
            i++;
    if (d->n < 1)
        return;
    root_gone_waits(r, d, now_ns);
    struct ncg_dl_tables t;
    if (ncg_dl_tables_new(&t, d->n, r->ncomm) < 0) {
        ncg_rl_nomem(r);
        return;
    }
    struct rcomm **cm = calloc(r->ncomm ? r->ncomm : 1, sizeof *cm); /* dc index -> its comm */
    struct mref *ref = NULL;
    size_t nc = 0;
    if (!cm) {
        ncg_rl_nomem(r);
        goto out;
    }
    for (uint32_t i = 0; i < d->n; i++) {
        const struct rwaiter *w = &d->p[i];
        t.p[i] = (struct ncg_dl_proc){w->pid, w->host, w->w, w->nw};
        t.gen[i] = w->gen;
    }
    /* The comms some waiting process is in, with those processes as their known members: the
     * memberships sorted by comm, each comm looked up once. */
    size_t nref = 0;
    for (uint32_t i = 0; i < d->n; i++)
        nref += d->p[i].nm;
    if (!(ref = malloc(sizeof *ref * (nref ? nref : 1)))) {
        ncg_rl_nomem(r);
        goto out;
    }
    nref = 0;
    for (uint32_t i = 0; i < d->n; i++)
        for (uint32_t j = 0; j < d->p[i].nm; j++)
            ref[nref++] = (struct mref){d->p[i].m[j].comm_id, i, j};
    qsort(ref, nref, sizeof *ref, mref_cmp);
    for (size_t a = 0, b; a < nref; a = b) {
        for (b = a + 1; b < nref && ref[b].comm_id == ref[a].comm_id; b++)
            ;
        struct rcomm *c = ncg_rl_comm_find(r, ref[a].comm_id);
        if (!c || c->done || nc == r->ncomm)
            continue;
        struct ncg_dl_member *m = calloc(c->nranks, sizeof *m);
        if (!m) {
            ncg_rl_nomem(r);
            goto out;
        }
        for (size_t k = a; k < b; k++) {
            const struct rwaiter *w = &d->p[ref[k].proc];
            const struct ncg_rwait_mem *x = &w->m[ref[k].mem];
            if (x->nranks == c->nranks && x->rank < c->nranks)
                m[x->rank] =
                    (struct ncg_dl_member){1, ref[k].proc, x->tid, w->grank, x->count, x->done};
        }
        t.mm[nc] = m;
        cm[nc] = c;
        /* Its unmatched send/recv records are all here when no child relay holds a rank of it
         * (a flat job's root): then a send/recv may wait for a host thread (ncg_sd_comm).
         * Beneath child relays they are matched below and only some come up. */
        int all_here = 1;
        for (uint32_t i = 0; i < c->nk && all_here; i++)
            all_here = !c->k[i].relay;
        t.dc[nc++] = (struct ncg_dl_comm){c->id, c->nranks, m, 0, all_here ? &c->p2p : NULL};
    }
    for (int streams = 0; streams < 2; streams++) {
        int found = ncg_dl_find(t.p, d->n, t.dc, nc, streams, t.f, t.notes);
        if (found < 0)
            ncg_rl_nomem(r);
        if (found != 1) {
            d->seen[streams].sig = 0;
            continue;
        }
        int first = t.f->sig != d->seen[streams].sig;
        if (!ncg_dl_confirmed(&d->seen[streams], t.f, t.gen)) {
            if (now_ns - d->asked_ns >= (first ? iv : 5 * iv))
                root_ask(r, now_ns); /* their next WAITs, changed or not, confirm it */
            continue;
        }
        for (long i = 0; i < t.f->n; i++) { /* one verdict per comm of the cycle */
            size_t k = t.f->step[i].comm;
            struct rcomm *c = cm[k];
            if (c->done)
                continue;
            struct ncg_vcomm vc = ncg_rl_vcomm(c);
            struct ncg_verdict *v = ncg_v_deadlock(&vc, t.f, t.dc, k, t.notes);
            if (!v) {
                ncg_rl_nomem(r);
                goto out;
            }
            ncg_rl_verdict_issue(r, c, v);
        }
    }
out:
    ncg_dl_tables_free(&t);
    free(cm);
    free(ref);
}
