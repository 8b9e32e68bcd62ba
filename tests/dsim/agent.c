/* ncg-dsim's model of the in-job agent (interpose/agent/): per process, the link to the
 * checker (HELLO, REPORT / WAIT / P2P every interval, ANSWER to QUERY) and the exit sequence
 * (a verdict printed and reported, DONE, GOODBYEs, the exit release; a clean exit's GOODBYEs;
 * the checker's host staying while others run; a lost checker). Two decision functions carry
 * the model's choices, events and the time in, actions out: dsim_link_step (the real one:
 * interpose/machine/link_sm.h) and dsim_exit_step (interpose/machine/exit_sm.h). The rest
 * builds and sends the messages those actions name. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dsim.h"

/* ---- the link's decisions ---- */
/* Not connected: retried a second later, or given up once the connect timeout passed. */
static int link_retry(struct link_sm *l, uint64_t now, const struct ncg_agent_params *p)
{
    if (now - l->first_try >= p->link.connect_timeout) {
        l->st = LS_UNGUARDED;
        return LA_UNGUARDED;
    }
    l->st = LS_DOWN;
    l->retry_at = now + p->link.retry;
    return 0;
}

int dsim_link_step(struct link_sm *l, int ev, uint8_t rx_type, uint64_t now,
                   const struct ncg_agent_params *p)
{
    switch (ev) {
    case LE_START:
        if (l->st != LS_IDLE)
            return 0;
        l->st = LS_CONNECTING;
        l->first_try = now;
        return LA_CONNECT;
    case LE_ACCEPTED:
        l->st = LS_HELLO;
        l->last_rx = now;
        return LA_HELLO;
    case LE_REFUSED:
        return link_retry(l, now, p);
    case LE_RX:
        l->last_rx = now;
        if (rx_type == NCG_MSG_WELCOME && l->st == LS_HELLO) {
            l->st = LS_UP;
            return LA_REPORT;
        }
        if (rx_type == NCG_MSG_SHUTDOWN) {
            l->shutdown_seen = 1;
            l->st = LS_UNGUARDED; /* the checker's process left: nobody checks any more */
        }
        return 0;
    case LE_CLOSED:
        if (l->shutdown_seen || l->st == LS_UNGUARDED)
            return 0;
        if (l->st == LS_UP && l->embedded) { /* the checker's host is gone: a rank died */
            l->st = LS_UNGUARDED;
            return LA_LOST;
        }
        l->st = LS_DOWN;
        l->retry_at = now + p->link.retry;
        return 0;
    case LE_TICK:
        if (l->st == LS_DOWN && now >= l->retry_at) {
            if (link_retry(l, now, p))
                return LA_UNGUARDED;
            l->st = LS_CONNECTING;
            return LA_CONNECT;
        }
        if ((l->st == LS_UP || l->st == LS_HELLO) && p->heartbeat_ns &&
            now - l->last_rx > p->heartbeat_ns) {
            l->st = LS_UNGUARDED;
            return l->embedded ? LA_LOST : LA_UNGUARDED;
        }
        return l->st == LS_UP ? LA_REPORT : 0;
    }
    return 0;
}

/* ---- the exit's decisions ---- */
int dsim_exit_step(struct exit_sm *x, int ev, uint64_t arg, uint64_t now, int hosting_others,
                   const struct ncg_agent_params *p)
{
    switch (ev) {
    case XE_VERDICT:
    case XE_LOCAL:
        if (x->st == XS_RUN || x->st == XS_STAY || x->st == XS_CLEAN || x->st == XS_REGISTER) {
            x->clean_after = x->st != XS_RUN;
            x->st = XS_PRINTING;
            x->local = ev == XE_LOCAL;
            x->comm = arg;
            return XA_PRINT;
        }
        /* ending already: one diagnostic is enough; answered with DONE so it holds nobody */
        return ev == XE_VERDICT && x->st == XS_RELEASE_WAIT ? XA_DONE : 0;
    case XE_PRINTED:
        if (x->st != XS_PRINTING)
            return 0;
        if (x->clean_after) { /* the host that had finished: status kept, stays on */
            x->st = XS_STAY;
            return x->local ? 0 : XA_DONE;
        }
        if (x->local || !p->exit.wait_release) {
            x->st = XS_GONE;
            return XA_GOODBYE_V | XA_EXIT86;
        }
        x->st = XS_RELEASE_WAIT;
        x->until = now + p->exit.release_bound;
        return XA_DONE | XA_GOODBYE_V;
    case XE_RELEASE:
        if (x->st == XS_RELEASE_WAIT && arg == x->comm) {
            if (hosting_others) { /* the host: its clients' connections close first */
                x->until = now + p->exit.abort_flush + p->exit.abort_past;
                x->st = XS_CLEAN; /* reused: waiting to exit 86 */
                x->local = 2;
                return 0;
            }
            x->st = XS_GONE;
            return XA_EXIT86;
        }
        return 0;
    case XE_LINKGONE:
        if (x->st == XS_RELEASE_WAIT) {
            x->st = XS_GONE;
            return XA_EXIT86;
        }
        return 0;
    case XE_APPDONE:                       /* arg: 1 the link is up, 2 it is still connecting */
        if (x->st == XS_RUN && arg == 2) { /* the checker must learn that we left: wait */
            x->st = XS_REGISTER;
            x->until = now + p->exit.register_wait;
            return 0;
        }
        if (x->st == XS_RUN) {
            x->st = hosting_others ? XS_STAY : XS_CLEAN;
            x->until = now + p->exit.clean_deadline;
            return XA_GOODBYE;
        }
        return 0;
    case XE_TICK:
        if (x->st == XS_REGISTER && (arg == 1 || now >= x->until)) {
            x->st = hosting_others ? XS_STAY : XS_CLEAN;
            return arg == 1 ? XA_GOODBYE : 0;
        }
        if (x->st == XS_RELEASE_WAIT && now >= x->until) {
            x->timed_out = 1;
            x->st = XS_GONE;
            return XA_EXIT86;
        }
        if (x->st == XS_CLEAN && x->local == 2) {
            if (hosting_others != 2 && (!hosting_others || now >= x->until)) {
                x->st = XS_GONE;
                return XA_EXIT86;
            }
            return 0;
        }
        if (x->st == XS_CLEAN) {
            x->st = XS_GONE;
            return XA_EXIT0;
        }
        if (x->st == XS_STAY && !hosting_others) {
            x->st = XS_GONE;
            return XA_EXIT0;
        }
        return 0;
    }
    return 0;
}

/* ---- messages ---- */
static void send(struct proc *p, const struct ncg_msg *m)
{
    if (p->conn >= 0 && (p->link.st == LS_UP || m->type == NCG_MSG_HELLO))
        conn_send(p->conn, 0, m);
}

/* The comm ranks process p holds on comm ci (members created and not destroyed). */
static int holds(const struct proc *p, uint32_t ci, uint32_t cr)
{
    const struct comm *c = &W.comm[ci];
    uint32_t g = c->grank[cr];
    return g >= p->first_rank && g < p->first_rank + p->nranks && c->m[cr].active;
}

static void destroyed_byes(struct proc *p);

static void send_report(struct proc *p)
{
    static struct ncg_msg rep, wt, pp;
    memset(&rep, 0, sizeof rep);
    memset(&wt, 0, sizeof wt);
    rep.type = NCG_MSG_REPORT;
    wt.type = NCG_MSG_WAIT;
    for (uint32_t ci = 0; ci < W.ncomm; ci++) {
        const struct comm *c = &W.comm[ci];
        for (uint32_t cr = 0; cr < c->nranks; cr++) {
            if (!holds(p, ci, cr) || c->m[cr].gone || rep.u.report.n == NCG_WIRE_MAX_COMMS)
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
    send(p, &rep);
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
        send(p, &wt);
    p->waited = wt.u.wait.n != 0;
    for (uint32_t ci = 0; ci < W.ncomm; ci++) { /* p2p records since the last report */
        struct comm *c = &W.comm[ci];
        for (uint32_t cr = 0; cr < c->nranks; cr++) {
            struct member *mb = &c->m[cr];
            if (!holds(p, ci, cr) || mb->p2psent == mb->np2p)
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
            send(p, &pp);
        }
    }
    destroyed_byes(p);
}

static void answer(struct proc *p, const struct ncg_msg_query *q)
{
    static struct ncg_msg m;
    for (uint32_t ci = 0; ci < W.ncomm; ci++) {
        const struct comm *c = &W.comm[ci];
        if (c->id != q->comm_id)
            continue;
        for (uint32_t cr = 0; cr < c->nranks; cr++) {
            if (!holds(p, ci, cr) || c->m[cr].gone)
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
            send(p, &m);
        }
    }
}

/* GOODBYE for every comm rank p holds, flagged; the process leaves. */
static void goodbye(struct proc *p, uint8_t flags)
{
    static struct ncg_msg m;
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_GOODBYE;
    m.u.goodbye.flags = (uint8_t)(flags | NCG_BYE_PROCESS);
    for (uint32_t ci = 0; ci < W.ncomm; ci++)
        for (uint32_t cr = 0; cr < W.comm[ci].nranks; cr++)
            if (holds(p, ci, cr) && !W.comm[ci].m[cr].gone && m.u.goodbye.n < NCG_WIRE_MAX_COMMS) {
                W.comm[ci].m[cr].gone = 1; /* it leaves the agent's comms: no REPORT carries it */
                m.u.goodbye.comm_id[m.u.goodbye.n] = W.comm[ci].id;
                m.u.goodbye.count[m.u.goodbye.n] = W.comm[ci].m[cr].issued;
                m.u.goodbye.rank[m.u.goodbye.n++] = cr;
            }
    send(p, &m);
}

/* A comm rank of p destroyed its communicator alone (a thread rank's early destroy): the
 * GOODBYE names that comm rank (wire v13), the process stays. */
void agent_destroyed(struct proc *p, uint32_t comm, uint32_t crank)
{
    W.comm[comm].m[crank].bye_pending = 1;
    trace("process %u: comm rank %u of comm %u destroyed", p->id, crank, comm);
    if (p->link.st == LS_UP)
        send_report(p); /* its counts, then the GOODBYE (send_report's end) */
}

/* The GOODBYEs of comm ranks destroyed alone, once the link is up: then they leave the
 * REPORTs (the agent keeps a removed comm until its GOODBYE went). */
static void destroyed_byes(struct proc *p)
{
    for (uint32_t ci = 0; ci < W.ncomm; ci++)
        for (uint32_t cr = 0; cr < W.comm[ci].nranks; cr++) {
            struct member *mb = &W.comm[ci].m[cr];
            if (!mb->bye_pending || !holds(p, ci, cr))
                continue;
            struct ncg_msg m = {.type = NCG_MSG_GOODBYE};
            m.u.goodbye.n = 1;
            m.u.goodbye.comm_id[0] = W.comm[ci].id;
            m.u.goodbye.count[0] = mb->issued;
            m.u.goodbye.rank[0] = cr;
            send(p, &m);
            mb->bye_pending = 0;
            mb->gone = 1;
        }
}

/* The host leaves: its SHUTDOWN (the counts of those who left) to every client. */
static void host_shutdown(uint8_t flags)
{
    static struct ncg_msg m;
    static struct ncg_relay_left_ent left[NCG_WIRE_MAX_COMMS];
    if (!W.relay)
        return;
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_SHUTDOWN;
    m.u.goodbye.flags = (uint8_t)(flags | NCG_BYE_PROCESS);
    size_t n = ncg_relay_left(W.relay, left, NCG_WIRE_MAX_COMMS);
    for (size_t i = 0; i < n; i++) {
        m.u.goodbye.comm_id[i] = left[i].comm_id;
        m.u.goodbye.count[i] = left[i].count;
        m.u.goodbye.rank[i] = left[i].rank;
    }
    m.u.goodbye.n = (uint32_t)n;
    trace("host: SHUTDOWN to its clients");
    for (uint32_t ci = 0; ci < W.nconn; ci++)
        if (W.conn[ci].open[0] && W.conn[ci].proc != 0)
            conn_send((int)ci, 1, &m);
}

static void count_open(void *arg, const struct ncg_relay_conn_view *c)
{
    int *n = arg;
    *n += c->authed && !c->bye && !c->relay && c->pid != W.rp.pid;
}

static void count_unregistered(void *arg, const struct ncg_relay_comm_view *c)
{
    int *n = arg;
    *n += c->known < c->nranks;
}

/* Other processes the host's checker still serves: connected and not said their last goodbye,
 * or, while members of its comms were never registered, any that may still connect (until
 * nobody new connected for the heartbeat timeout: docs/checker.md, "The checker's host leaves
 * last"). */
int agent_hosting_others(void)
{
    int n = 0, unreg = 0;
    if (!W.relay)
        return 0;
    struct ncg_relay_view_ops ops = {count_open, NULL, &n};
    ncg_relay_view(W.relay, W.now, &ops);
    if (n)
        return n;
    ops = (struct ncg_relay_view_ops){NULL, count_unregistered, &unreg};
    ncg_relay_view(W.relay, W.now, &ops);
    return unreg && W.now - W.last_connect_t < W.ap.heartbeat_ns;
}

static int hosting(const struct proc *p)
{
    if (p->id != 0 || !W.relay)
        return 0;
    if (p->xs.st == XS_RELEASE_WAIT || (p->xs.st == XS_CLEAN && p->xs.local == 2)) {
        int open = 0; /* an abort: until the others' connections closed */
        for (uint32_t ci = 0; ci < W.nconn; ci++)
            open += W.conn[ci].open[0] && W.conn[ci].proc != 0;
        /* released, it holds its exit while a release it holds for others (a late member's)
         * waits, up to the release bound from its own release (exit_sm.c's hold): 2 */
        const __typeof__(W.ap.exit) *xp = &W.ap.exit;
        if (p->xs.st == XS_CLEAN && ncg_relay_releases_waiting(W.relay) &&
            W.now + xp->abort_flush + xp->abort_past < p->xs.until + xp->release_bound)
            return 2;
        return open || ncg_relay_releases_waiting(W.relay);
    }
    /* ... and while a release it holds for others still waits, at most the release bound
     * (docs/checker.md, "The exit release": the host keeps its SHUTDOWN and its exit) */
    if (ncg_relay_releases_waiting(W.relay)) {
        if (!W.hold_since)
            W.hold_since = W.now;
        if (W.now - W.hold_since < W.ap.exit.release_bound)
            return 1;
    } else {
        W.hold_since = 0;
    }
    return agent_hosting_others();
}

static void exit_do(struct proc *p, int acts)
{
    if (acts & XA_PRINT) {
        uint64_t d = rnd_range(5 * MS, 300 * MS);
        ev_push(W.now + proc_delay(p, d), EV_PRINTED, p->id, 0);
    }
    if (acts & XA_DONE) {
        struct ncg_msg m = {.type = NCG_MSG_DONE, .u.exit.comm_id = p->xs.comm};
        trace("process %u: DONE", p->id);
        send(p, &m);
    }
    if (acts & XA_GOODBYE_V) {
        goodbye(p, NCG_BYE_VERDICT);
        if (p->id == 0 && (acts & XA_EXIT86))
            host_shutdown(NCG_BYE_VERDICT);
    }
    if (acts & XA_GOODBYE) {
        if (p->link.st == LS_UP)
            send_report(p);
        goodbye(p, 0);
    }
    if ((acts & XA_EXIT86) && p->id == 0 && !(acts & XA_GOODBYE_V))
        host_shutdown(NCG_BYE_VERDICT);
    if ((acts & XA_EXIT0) && p->id == 0)
        host_shutdown(0);
    if ((acts & XA_EXIT86) && p->xs.timed_out) {
        /* released by its own bound: fine only when the checker released nobody */
        for (uint32_t i = 0; i < W.nproc; i++)
            if (W.proc[i].released == p->xs.comm + 1 && p->conn >= 0)
                violation("process %u waited its whole release bound while process %u was "
                          "released",
                          p->id, i);
    }
    if (acts & XA_EXIT86)
        proc_exit(p, 86, "the abort action");
    else if (acts & XA_EXIT0)
        proc_exit(p, 0, "clean exit");
}

static void link_do(struct proc *p, int acts)
{
    if (acts & LA_CONNECT) {
        trace("process %u: connects", p->id);
        ev_push(W.now + rnd_range(W.delay_lo, W.delay_hi), EV_CONNECT, p->id, 0);
    }
    if (acts & LA_HELLO) {
        struct ncg_msg m = {.type = NCG_MSG_HELLO};
        m.u.hello.token = W.rp.token;
        m.u.hello.pid = 1000 + p->id;
        m.u.hello.global_rank = (int32_t)p->first_rank;
        snprintf(m.u.hello.host, sizeof m.u.hello.host, "sim");
        send(p, &m);
    }
    if ((acts & LA_REPORT) && p->xs.st != XS_GONE && p->xs.st != XS_CLEAN)
        send_report(p);
    if (acts & LA_UNGUARDED) {
        trace("process %u: cannot reach the checker; running unguarded", p->id);
        p->warned_unguarded = 1;
    }
    if (acts & LA_LOST) {
        trace("process %u: its checker's host is gone: RANK DIED (decided here)", p->id);
        struct ncg_verdict v;
        memset(&v, 0, sizeof v);
        v.kind = NCG_V_RANK_DIED;
        v.severity = NCG_SEV_ERROR;
        v.comm_id = W.comm[0].id;
        snprintf(v.subject, sizeof v.subject, "0");
        check_verdict(p, &v, 1);
        exit_do(p, dsim_exit_step(&p->xs, XE_LOCAL, v.comm_id, W.now, hosting(p), &W.ap));
    }
}

/* The link as the exit sees it: 1 up, 2 still connecting (it must register us), 0 neither. */
static uint64_t link_arg(const struct proc *p)
{
    if (p->link.st == LS_UP)
        return 1;
    return p->link.st == LS_IDLE || p->link.st == LS_CONNECTING || p->link.st == LS_HELLO ||
                   p->link.st == LS_DOWN
               ? 2
               : 0;
}

void agent_tick(struct proc *p)
{
    if (p->link.st == LS_IDLE)
        link_do(p, dsim_link_step(&p->link, LE_START, 0, W.now, &W.ap));
    else
        link_do(p, dsim_link_step(&p->link, LE_TICK, 0, W.now, &W.ap));
    if (p->state == P_ALIVE || p->state == P_STOPPED)
        exit_do(p, dsim_exit_step(&p->xs, XE_TICK, link_arg(p), W.now, hosting(p), &W.ap));
}

void agent_connected(struct proc *p, int accepted)
{
    link_do(p, dsim_link_step(&p->link, accepted ? LE_ACCEPTED : LE_REFUSED, 0, W.now, &W.ap));
}

void agent_rx(struct proc *p, const struct ncg_msg *m)
{
    if (m->type == NCG_MSG_WELCOME)
        p->link.embedded = m->u.welcome.embedded;
    link_do(p, dsim_link_step(&p->link, LE_RX, m->type, W.now, &W.ap));
    switch (m->type) {
    case NCG_MSG_QUERY:
        if (p->link.st == LS_UP && p->xs.st != XS_GONE)
            answer(p, &m->u.query);
        break;
    case NCG_MSG_VERDICT: {
        const struct ncg_verdict *v = m->u.verdict;
        trace("process %u: VERDICT %s%s on comm %016" PRIx64 " (%s; %s)", p->id,
              ncg_verdict_name(v->kind), v->severity == NCG_SEV_WARN ? " warning" : "", v->comm_id,
              v->subject, v->detail);
        check_verdict(p, v, 0);
        if (v->severity == NCG_SEV_ERROR)
            exit_do(p, dsim_exit_step(&p->xs, XE_VERDICT, v->comm_id, W.now, hosting(p), &W.ap));
        break;
    }
    case NCG_MSG_RELEASE:
        trace("process %u: RELEASE", p->id);
        p->released = m->u.exit.comm_id + 1;
        if (p->xs.st == XS_PRINTING) { /* the agent's thread prints: it reads this after */
            if (p->nheld < 8)
                p->held[p->nheld++] = m->u.exit.comm_id;
            break;
        }
        exit_do(p, dsim_exit_step(&p->xs, XE_RELEASE, m->u.exit.comm_id, W.now, hosting(p), &W.ap));
        break;
    case NCG_MSG_SHUTDOWN:
        trace("process %u: SHUTDOWN from the checker's host", p->id);
        exit_do(p, dsim_exit_step(&p->xs, XE_LINKGONE, 0, W.now, hosting(p), &W.ap));
        break;
    }
}

void agent_closed(struct proc *p)
{
    trace("process %u: its link closed", p->id);
    p->conn = -1;
    if (p->xs.st == XS_GONE || p->xs.st == XS_CLEAN)
        return;
    link_do(p, dsim_link_step(&p->link, LE_CLOSED, 0, W.now, &W.ap));
    if (p->state == P_ALIVE || p->state == P_STOPPED)
        exit_do(p, dsim_exit_step(&p->xs, XE_LINKGONE, 0, W.now, hosting(p), &W.ap));
}

void agent_printed(struct proc *p)
{
    p->printed = p->reported = 1;
    p->printed_t = W.now;
    trace("process %u: printed and reported", p->id);
    exit_do(p, dsim_exit_step(&p->xs, XE_PRINTED, 0, W.now, hosting(p), &W.ap));
    for (uint32_t i = 0; i < p->nheld && p->state == P_ALIVE; i++)
        exit_do(p, dsim_exit_step(&p->xs, XE_RELEASE, p->held[i], W.now, hosting(p), &W.ap));
    p->nheld = 0;
}

void agent_app_done(struct proc *p)
{
    trace("process %u: its application returns", p->id);
    p->app_done_t = W.now;
    exit_do(p, dsim_exit_step(&p->xs, XE_APPDONE, link_arg(p), W.now, hosting(p), &W.ap));
}
