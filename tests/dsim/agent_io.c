/* ncg-dsim's agent, its I/O (agent.c drives the machines): the messages a process sends, built
 * from its simulated ranks as report.c, link.c and exit.c build them (REPORT, WAIT, P2P, ANSWER,
 * GOODBYE, the host's SHUTDOWN), and the host's listener and stay view (net/relayhost.c's
 * ncg_rhost_leave and ncg_rhost_stay, over the real relay's view). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsim.h"

void msg_send(struct proc *p, const struct ncg_msg *m)
{
    if (p->conn >= 0 && (p->link.state == NCG_LINK_UP ||
                         (p->link.state == NCG_LINK_HELLO && m->type == NCG_MSG_HELLO)))
        conn_send(p->conn, 0, m);
}

/* The comm ranks process p holds on comm ci (members created and not destroyed). */
int proc_holds(const struct proc *p, uint32_t ci, uint32_t cr)
{
    const struct comm *c = &W.comm[ci];
    uint32_t g = c->grank[cr];
    return g >= p->first_rank && g < p->first_rank + p->nranks && c->m[cr].active;
}

static void destroyed_byes(struct proc *p);

void send_report(struct proc *p)
{
    static struct ncg_msg rep, wt, pp;
    if (p->conn < 0 || p->link.state != NCG_LINK_UP)
        return; /* report.c: for the links up; the records wait for the next */
    memset(&rep, 0, sizeof rep);
    memset(&wt, 0, sizeof wt);
    rep.type = NCG_MSG_REPORT;
    wt.type = NCG_MSG_WAIT;
    for (uint32_t ci = 0; ci < W.ncomm; ci++) {
        const struct comm *c = &W.comm[ci];
        for (uint32_t cr = 0; cr < c->nranks; cr++) {
            if (!proc_holds(p, ci, cr) || c->m[cr].gone || rep.u.report.n == NCG_WIRE_MAX_COMMS)
                continue;
            struct ncg_report_entry *e = &rep.u.report.e[rep.u.report.n++];
            e->comm_id = c->id;
            e->nranks = c->nranks;
            e->rank = cr;
            e->count = c->m[cr].issued;
            e->global_rank = (int32_t)c->grank[cr];
            e->done = e->done_hi = c->m[cr].done;
            e->tid = 100 + c->grank[cr];
        }
    }
    msg_send(p, &rep);
    p->comms_reported |= p->link.state == NCG_LINK_UP && rep.u.report.n;
    for (uint32_t r = 0; r < p->nranks; r++) { /* the calls blocked for an interval */
        const struct rank *rk = &W.rank[p->first_rank + r];
        if (rk->state != R_BLOCKED || W.now - rk->blocked_since < W.ap.interval_ns ||
            wt.u.wait.n == NCG_WIRE_MAX_WAITS)
            continue;
        const struct comm *c = &W.comm[rk->bcomm];
        struct ncg_wait_ent *w = &wt.u.wait.w[wt.u.wait.n++];
        w->comm_id = c->id;
        w->rank = rk->bcrank;
        w->tid = 100 + rk->g;
        w->p2p = rk->bp2p;
        w->call.seq = rk->bslot;
        w->call.func = rk->bfunc;
        w->call.root = rk->bp2p ? (int32_t)rk->bpeer : -1;
        w->call.count = 8;
        snprintf(w->site, sizeof w->site, "rank%u", rk->g);
    }
    if (wt.u.wait.n || p->waited) /* an empty WAIT once clears the last (report.c) */
        msg_send(p, &wt);
    p->waited = wt.u.wait.n != 0;
    for (uint32_t ci = 0; ci < W.ncomm; ci++) { /* p2p records since the last report */
        struct comm *c = &W.comm[ci];
        for (uint32_t cr = 0; cr < c->nranks; cr++) {
            struct member *mb = &c->m[cr];
            if (!proc_holds(p, ci, cr) || mb->p2psent == mb->np2p)
                continue;
            memset(&pp, 0, sizeof pp);
            pp.type = NCG_MSG_P2P;
            pp.u.p2p.comm_id = c->id;
            pp.u.p2p.rank = cr;
            while (mb->p2psent < mb->np2p && pp.u.p2p.n < NCG_WIRE_MAX_P2P) {
                const struct p2prec *s = &mb->p2p[mb->p2psent++];
                struct ncg_p2p_rec *d = &pp.u.p2p.r[pp.u.p2p.n++];
                d->seq = s->seq;
                d->count = s->count;
                d->peer = s->peer;
                d->func = s->func;
                d->dtype = s->dtype;
            }
            msg_send(p, &pp);
        }
    }
    destroyed_byes(p);
}

void send_answer(struct proc *p, const struct ncg_msg_query *q)
{
    static struct ncg_msg m;
    for (uint32_t ci = 0; ci < W.ncomm; ci++) {
        const struct comm *c = &W.comm[ci];
        if (c->id != q->comm_id)
            continue;
        for (uint32_t cr = 0; cr < c->nranks; cr++) {
            if (!proc_holds(p, ci, cr) || c->m[cr].gone)
                continue;
            const struct member *mb = &c->m[cr];
            memset(&m, 0, sizeof m);
            m.type = NCG_MSG_ANSWER;
            m.u.answer.comm_id = q->comm_id;
            m.u.answer.qid = q->qid;
            m.u.answer.rank = cr;
            m.u.answer.n = q->n;
            for (uint32_t k = 0; k < q->n; k++) {
                uint64_t s = q->slot[k];
                struct ncg_answer *a = &m.u.answer.a[k];
                a->call.seq = s;
                if (s >= mb->issued) {
                    a->status = NCG_ANS_NONE;
                } else if (mb->issued - s > NCG_RING_SIM) {
                    a->status = NCG_ANS_GONE;
                } else {
                    const struct rec *r = &mb->ring[s];
                    a->status = NCG_ANS_OK;
                    a->digest = r->digest;
                    a->call.count = r->count;
                    a->call.root = r->root;
                    a->call.func = r->func;
                    a->call.dtype = r->dtype;
                    a->call.redop = r->redop;
                    if (q->mode & NCG_QUERY_RECORDS)
                        snprintf(a->site, sizeof a->site, "work.c:%" PRIu64, s);
                }
            }
            msg_send(p, &m);
        }
    }
}

/* GOODBYE for every comm rank p holds, flagged; the process leaves. */
void send_goodbye(struct proc *p, uint8_t flags)
{
    static struct ncg_msg m;
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_GOODBYE;
    m.u.goodbye.flags = (uint8_t)(flags | NCG_BYE_PROCESS);
    for (uint32_t ci = 0; ci < W.ncomm; ci++)
        for (uint32_t cr = 0; cr < W.comm[ci].nranks; cr++)
            if (proc_holds(p, ci, cr) && !W.comm[ci].m[cr].gone &&
                m.u.goodbye.n < NCG_WIRE_MAX_COMMS) {
                W.comm[ci].m[cr].gone = 1; /* it leaves the agent's comms: no REPORT carries it */
                m.u.goodbye.comm_id[m.u.goodbye.n] = W.comm[ci].id;
                m.u.goodbye.count[m.u.goodbye.n] = W.comm[ci].m[cr].issued;
                m.u.goodbye.rank[m.u.goodbye.n++] = cr;
            }
    msg_send(p, &m);
}

/* A comm rank of p destroyed its communicator alone (a thread rank's early destroy): the
 * GOODBYE names that comm rank (wire v13), the process stays. */
void agent_destroyed(struct proc *p, uint32_t comm, uint32_t crank)
{
    W.comm[comm].m[crank].bye_pending = 1;
    trace("process %u: comm rank %u of comm %u destroyed", p->id, crank, comm);
    if (p->link.state == NCG_LINK_UP)
        send_report(p); /* its counts, then the GOODBYE (send_report's end) */
}

/* The GOODBYEs of comm ranks destroyed alone, once the link is up: then they leave the
 * REPORTs (the agent keeps a removed comm until its GOODBYE went). */
static void destroyed_byes(struct proc *p)
{
    for (uint32_t ci = 0; ci < W.ncomm; ci++)
        for (uint32_t cr = 0; cr < W.comm[ci].nranks; cr++) {
            struct member *mb = &W.comm[ci].m[cr];
            if (!mb->bye_pending || !proc_holds(p, ci, cr))
                continue;
            struct ncg_msg m = {.type = NCG_MSG_GOODBYE};
            m.u.goodbye.n = 1;
            m.u.goodbye.comm_id[0] = W.comm[ci].id;
            m.u.goodbye.count[0] = mb->issued;
            m.u.goodbye.rank[0] = cr;
            msg_send(p, &m);
            mb->bye_pending = 0;
            mb->gone = 1;
        }
}

/* The host leaves: its SHUTDOWN (the counts of those who left) to every client. */
void host_shutdown(uint8_t flags)
{
    static struct ncg_msg m;
    static struct ncg_relay_left_ent left[NCG_WIRE_MAX_COMMS];
    if (!W.relay)
        return;
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_SHUTDOWN;
    m.u.goodbye.flags = (uint8_t)(flags | NCG_BYE_PROCESS);
    /* exit.c exit_sd_build: a comm's first entry is the host process's own (the comm rank held
     * there with the lowest count; UINT64_MAX: none held), then the members that left before */
    struct ncg_msg_goodbye *g = &m.u.goodbye;
    const struct proc *h = &W.proc[0];
    for (uint32_t ci = 0; ci < W.ncomm; ci++)
        for (uint32_t cr = 0; cr < W.comm[ci].nranks; cr++) {
            if (!proc_holds(h, ci, cr))
                continue;
            uint32_t j = 0;
            while (j < g->n && g->comm_id[j] != W.comm[ci].id)
                j++;
            if (j < g->n && W.comm[ci].m[cr].issued < g->count[j]) {
                g->count[j] = W.comm[ci].m[cr].issued;
                g->rank[j] = cr;
            } else if (j == g->n && g->n < NCG_WIRE_MAX_COMMS) {
                g->comm_id[g->n] = W.comm[ci].id;
                g->rank[g->n] = cr;
                g->count[g->n++] = W.comm[ci].m[cr].issued;
            }
        }
    size_t n = ncg_relay_left(W.relay, left, NCG_WIRE_MAX_COMMS);
    for (size_t i = 0; i < n; i++) {
        int own = 0;
        for (uint32_t j = 0; j < g->n; j++)
            own |= g->comm_id[j] == left[i].comm_id;
        if (!own && g->n + 2 <= NCG_WIRE_MAX_COMMS) {
            g->comm_id[g->n] = left[i].comm_id;
            g->rank[g->n] = NCG_BYE_ANYRANK;
            g->count[g->n++] = UINT64_MAX;
        } else if (!own) {
            continue;
        }
        if (g->n < NCG_WIRE_MAX_COMMS) {
            g->comm_id[g->n] = left[i].comm_id;
            g->rank[g->n] = left[i].rank;
            g->count[g->n++] = left[i].count;
        }
    }
    if (W.host_left)
        return;
    /* ncg_rhost_leave: the connections still in the listener's backlog are accepted first and
     * told too (unless --no-backlog-farewell: the load failure it fixed), then every connection,
     * its own process's link's too, gets the SHUTDOWN and is closed once drained */
    trace("host: SHUTDOWN to its clients");
    if (!W.no_backlog_farewell)
        host_accept_backlog();
    for (uint32_t ci = 0; ci < W.nconn; ci++)
        if (W.conn[ci].open[0] && W.conn[ci].accepted) {
            conn_send((int)ci, 1, &m);
            W.conn[ci].sd_sent = 1;
            conn_close_end((int)ci, 0);
        }
    W.host_left = 1;
}

/* ---- the host's view (net/relayhost.c ncg_rhost_stay, over the same relay view) ---- */
enum { STAY_NONE, STAY_UNREG, STAY_PROC };
struct stay_scan {
    uint32_t self;
    uint8_t *conn;
    struct ncg_exit_stay_view *st;
};

static void stay_conn(void *arg, const struct ncg_relay_conn_view *c)
{
    struct stay_scan *x = arg;
    uint64_t since = W.now - (uint64_t)(c->connected_s * 1e9);
    if (since > x->st->newest_ns)
        x->st->newest_ns = since;
    if (c->conn < 0 || (uint32_t)c->conn >= W.nconn)
        return;
    if (c->authed && c->pid == x->self)
        x->st->self_pending += !c->bye; /* our own goodbye not read yet */
    else if (!c->bye && !c->relay)
        x->conn[c->conn] = STAY_UNREG;
}

static void stay_comm(void *arg, const struct ncg_relay_comm_view *c)
{
    struct stay_scan *x = arg;
    for (uint32_t i = 0; i < c->nhere; i++) {
        const struct ncg_relay_rank_view *m = &c->here[i];
        if (m->state == 1 && m->conn >= 0 && (uint32_t)m->conn < W.nconn &&
            x->conn[m->conn] == STAY_UNREG)
            x->conn[m->conn] = STAY_PROC;
    }
    if (c->done)
        return;
    int unknown = (int)(c->nranks - c->known);
    if (unknown > x->st->unknown)
        x->st->unknown = unknown;
}

/* 0 and the view, as ncg_rhost_stay gives it (a checker that left: an empty view). */
int host_stay(uint32_t self_pid, struct ncg_exit_stay_view *st)
{
    memset(st, 0, sizeof *st);
    if (!W.relay || W.host_left)
        return 0;
    uint8_t *conn = calloc(W.nconn + 1, 1);
    if (!conn)
        abort();
    struct stay_scan x = {self_pid, conn, st};
    struct ncg_relay_view_ops ops = {stay_conn, stay_comm, &x};
    ncg_relay_view(W.relay, W.now, &ops);
    for (uint32_t i = 0; i < W.nconn; i++) {
        st->procs += conn[i] == STAY_PROC;
        st->unreg += conn[i] == STAY_UNREG;
    }
    free(conn);
    return 0;
}

/* The host's listener: connections the kernel completed that the checker has not accepted yet
 * (a stopped host, descriptors exhausted) are accepted now. */
void host_accept_backlog(void)
{
    for (uint32_t ci = 0; ci < W.nconn; ci++)
        if (!W.conn[ci].accepted && W.conn[ci].open[0])
            conn_accept((int)ci);
}
