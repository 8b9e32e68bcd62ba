/* ncg-dsim's in-job agent (interpose/agent/): per process, the drivers of the REAL machines,
 * driven as the agent drives them: the link's (machine/link_sm.h, as agent/link.c and lost.c
 * feed it: the same events with the same observations, its outputs executed) and the exit's
 * (machine/exit_sm.h, as agent/exit.c), a verdict's decision by ncg_verdict_decide (as
 * agent/apply.c), and the checker thread's loop (agent/thread.c: its order of steps). Only the
 * I/O is modelled: sockets (world.c's connections), the messages built from the simulated ranks
 * (agent_io.c: REPORT / WAIT / P2P, ANSWER, GOODBYE, SHUTDOWN; here HELLO and DONE), printing
 * (a delay). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h" /* NCG_ACTION_ABORT, NCG_EXIT_VERDICT */
#include "dsim.h"
#include "local.h"
#include "verdict_sm.h"

static void loop(struct proc *p);
static void agent_wake(struct proc *p);

/* ---- the exit's driver (agent/exit.c) ---- */
static int root_up(const struct proc *p)
{
    return p->id == 0 && W.relay != NULL;
}

static struct ncg_exit_obs obs_hosts(const struct proc *p)
{
    struct ncg_exit_obs o = {.unreg_link = -1};
    o.root_up = root_up(p);
    o.root_flat = p->id == 0;
    o.aborting = p->aborting;
    return o;
}

/* Open connections of the checker here (host_pending: its own link's among them; the sim's
 * connections keep no unsent bytes). */
static int host_pending(const struct proc *p)
{
    int n = 0;
    if (!root_up(p))
        return 0;
    for (uint32_t ci = 0; ci < W.nconn; ci++)
        n += W.conn[ci].open[0] && W.conn[ci].accepted;
    return n;
}

static int link_up(const struct proc *p, int li)
{
    return li == 0 && p->link.state == NCG_LINK_UP;
}

/* Does what the exit's machine said, in its order (agent/exit.c run). 1: the process ended. */
static int xrun(struct proc *p, const struct ncg_exit_out *o)
{
    unsigned w = o->what;
    if ((w & NCG_XO_DONE) && link_up(p, o->done_link)) {
        struct ncg_msg m = {.type = NCG_MSG_DONE, .u.exit.comm_id = o->done_comm};
        trace("process %u: DONE", p->id);
        msg_send(p, &m);
    }
    if (w & NCG_XO_LOG_UNREG)
        trace("process %u: exits before the checker accepted it (%.1f s)", p->id, o->reg_s);
    if (w & NCG_XO_REPORT)
        send_report(p);
    if (w & NCG_XO_GOODBYES) {
        send_goodbye(p, o->bye_flags);
        p->sd_flags = o->bye_flags;
        if (!o->only_bye && p->id == 0)
            host_shutdown(o->bye_flags);
    }
    if (w & NCG_XO_LOG_STAY)
        trace("process %u: hosts the checker of %d other processes; it stays", p->id, o->log_n);
    if (w & NCG_XO_KEEPALIVE) {
        static const struct ncg_msg empty = {.type = NCG_MSG_REPORT};
        p->last_report_ns = W.now;
        msg_send(p, &empty);
    }
    if (w & NCG_XO_DEBUG_STAYED)
        trace("process %u: the checker's host stayed %.2f s", p->id, o->stayed_s);
    if (w & NCG_XO_SD_REBUILD)
        p->sd_flags = 0;
    if (w & NCG_XO_DEBUG_NO_RELEASE) {
        trace("process %u: no exit release within %g s", p->id, o->bound_s);
        /* released by its own bound: fine only when the checker released nobody */
        for (uint32_t i = 0; i < W.nproc; i++)
            if (W.proc[i].released && W.proc[i].released == p->v_comm + 1 && p->conn >= 0)
                violation("process %u waited its whole release bound while process %u was "
                          "released",
                          p->id, i);
    }
    if ((w & NCG_XO_ROOT_LEAVES) && p->id == 0)
        host_shutdown(p->sd_flags);
    if (w & NCG_XO_EXIT_NOW) {
        proc_exit(p, NCG_EXIT_VERDICT, "the abort action");
        return 1;
    }
    if (w & NCG_XO_CLEAN_DONE) {
        proc_exit(p, 0, "clean exit");
        return 1;
    }
    return 0;
}

static int ended(const struct proc *p)
{
    return p->state == P_DEAD || p->state == P_EXITED;
}

static void exit_after_verdict(struct proc *p, int error, int must_exit, uint64_t comm, int li)
{
    struct ncg_exit_verdict v = {error, must_exit, li, link_up(p, li), comm};
    struct ncg_exit_obs o = obs_hosts(p);
    struct ncg_exit_out out = ncg_exit_sm_verdict(&p->xs, &v, &o, W.now);
    xrun(p, &out);
}

static void exit_verdict_while_ending(struct proc *p, uint64_t comm, int li)
{
    struct ncg_exit_out out = ncg_exit_sm_verdict_ending(&p->xs, comm, li, link_up(p, li));
    xrun(p, &out);
}

static void exit_release_got(struct proc *p, uint64_t comm, int li)
{
    struct ncg_exit_obs o = obs_hosts(p);
    ncg_exit_sm_release(&p->xs, comm, li, &o, W.now);
}

static int awaiting_release(const struct proc *p)
{
    return p->xs.abort == NCG_XA_WAITING;
}

static int exit_tick(struct proc *p, int exiting)
{
    struct ncg_exit_sm *m = &p->xs;
    struct ncg_exit_obs o = obs_hosts(p);
    o.exiting = exiting;
    o.hosted_waiting = root_up(p) && ncg_relay_releases_waiting(W.relay);
    o.last_report_ns = p->last_report_ns;
    if (exiting && m->clean <= NCG_XC_LINKS) {
        o.connecting = p->link.state == NCG_LINK_CONNECTING || p->link.state == NCG_LINK_HELLO;
        /* link_unregistered: a link waiting for its WELCOME that carries comms no REPORT told */
        o.unreg_link =
            o.connecting && p->link.state == NCG_LINK_HELLO && !p->comms_reported ? 0 : -1;
    }
    if (ncg_exit_sm_stay_view_due(m, &o, W.now))
        o.stay_ok = host_stay(1000 + p->id, &o.stay) == 0;
    struct ncg_exit_out out = ncg_exit_sm_tick(m, &o, W.now);
    return xrun(p, &out);
}

static int exit_finish(struct proc *p, int exiting)
{
    struct ncg_exit_obs o = obs_hosts(p);
    o.exiting = exiting;
    if (ncg_exit_sm_ending(&p->xs))
        o.pending = host_pending(p);
    struct ncg_exit_out out = ncg_exit_sm_finish(&p->xs, &o, W.now);
    return xrun(p, &out);
}

/* ---- a verdict in this process (agent/apply.c): decided by ncg_verdict_decide ---- */
static void apply_verdict(struct proc *p, const struct ncg_verdict *v, int li)
{
    int finished = p->exiting; /* its clean exit under way: its status is kept */
    if (v->severity == NCG_SEV_ERROR && !finished)
        p->aborting = 1;
    struct ncg_vdecision d = ncg_verdict_decide(v, NCG_ACTION_ABORT, finished);
    if (!d.shown)
        return;
    trace("process %u: VERDICT %s%s on comm %016" PRIx64 " (%s; %s)%s", p->id,
          ncg_verdict_name(v->kind), v->severity == NCG_SEV_WARN ? " warning" : "", v->comm_id,
          v->subject, v->detail, li < 0 ? " decided here" : "");
    check_verdict(p, v, li < 0);
    /* printed and reported (5 to 300 ms): the checker thread does nothing else meanwhile */
    p->pv_error = v->severity == NCG_SEV_ERROR;
    p->pv_exit = d.must_exit;
    p->pv_comm = v->comm_id;
    p->pv_link = li;
    p->busy = 1;
    p->busy_until = W.now + proc_delay(p, rnd_range(5 * MS, 300 * MS));
    ev_push(p->busy_until, EV_PRINTED, p->id, 0);
}

void agent_printed(struct proc *p)
{
    p->busy = 0;
    p->printed = p->reported = 1;
    p->printed_t = W.now;
    trace("process %u: printed and reported", p->id);
    exit_after_verdict(p, p->pv_error, p->pv_exit, p->pv_comm, p->pv_link);
    if (!ended(p))
        loop(p);
    agent_wake(p);
}

static void on_verdict(struct proc *p, const struct ncg_verdict *v)
{
    if (!ncg_exit_sm_ending(&p->xs))
        apply_verdict(p, v, 0);
    else if (v->severity == NCG_SEV_ERROR) { /* one diagnostic is enough */
        trace("process %u: VERDICT %s while ending: DONE", p->id, ncg_verdict_name(v->kind));
        p->nverdicts++;
        exit_verdict_while_ending(p, v->comm_id, 0);
    }
}

/* A local verdict on comm ci (agent/lost.c: the checker can send none). */
static void local_verdict(struct proc *p, uint8_t kind, uint32_t ci)
{
    struct ncg_verdict v;
    memset(&v, 0, sizeof v);
    v.kind = kind;
    v.severity = NCG_SEV_ERROR;
    v.comm_id = W.comm[ci].id;
    snprintf(v.subject, sizeof v.subject, "%s", kind == NCG_V_RANK_DIED ? "0" : "the checker");
    apply_verdict(p, &v, -1);
}

/* The members p holds on its link (all of them: one link per process). */
#define FOR_HELD(p, ci, cr)                                                                        \
    for (uint32_t ci = 0; ci < W.ncomm; ci++)                                                      \
        for (uint32_t cr = 0; cr < W.comm[ci].nranks; cr++)                                        \
            if (proc_holds(p, ci, cr) && !W.comm[ci].m[cr].gone)

/* ncg_lost_clock_start */
static void lost_clock_start(struct proc *p)
{
    FOR_HELD(p, ci, cr)
    {
        W.comm[ci].m[cr].lost_cnt = W.comm[ci].m[cr].issued;
        W.comm[ci].m[cr].lost_prog_ns = W.now;
    }
}

/* ncg_lost_rank_died: a local RANK DIED per comm (the first ends the process) */
static void lost_rank_died(struct proc *p)
{
    trace("process %u: its checker's host is gone: RANK DIED (decided here)", p->id);
    FOR_HELD(p, ci, cr)
    {
        if (ncg_exit_sm_ending(&p->xs) || p->busy)
            return;
        local_verdict(p, NCG_V_RANK_DIED, ci);
    }
}

/* ncg_lost_check: CHECKER LOST of a comm that made no progress for the heartbeat timeout */
static int lost_check(struct proc *p)
{
    uint64_t hb = W.ap.heartbeat_ns;
    int n = 0;
    uint32_t first = 0;
    FOR_HELD(p, ci, cr)
    {
        struct member *mb = &W.comm[ci].m[cr];
        if (mb->issued != mb->lost_cnt || !mb->lost_prog_ns) {
            mb->lost_cnt = mb->issued;
            mb->lost_prog_ns = W.now;
        } else if (hb && W.now - mb->lost_prog_ns >= hb) {
            if (!n++)
                first = ci;
        }
    }
    if (n && !ncg_exit_sm_ending(&p->xs) && !p->busy) {
        trace("process %u: CHECKER LOST (decided here)", p->id);
        local_verdict(p, NCG_V_CHECKER_LOST, first);
    }
    return n > 0;
}

/* A SHUTDOWN's counts (link.c take_bye): a comm's first entry is the leaving process's own,
 * the later ones the members that left before it. */
static void take_bye(struct proc *p, const struct ncg_msg_goodbye *g)
{
    FOR_HELD(p, ci, cr)
    {
        struct member *mb = &W.comm[ci].m[cr];
        if (!mb->has_peer)
            ncg_sd_facts_reset(&mb->sd);
        if (ncg_sd_facts_take(&mb->sd, g, W.comm[ci].id))
            mb->has_peer = 1;
    }
}

/* report.c exited_locally: a comm whose link is not up, RANK EXITED judged here from what the
 * checker's SHUTDOWN said; NULL while nothing is certain. */
static struct ncg_verdict *exited_locally(struct proc *p, uint32_t ci, uint32_t cr)
{
    struct member *mb = &W.comm[ci].m[cr];
    const struct ncg_sd_facts *sd = &mb->sd;
    uint64_t final = mb->has_peer ? sd->final : UINT64_MAX;
    uint64_t left = mb->has_peer ? sd->left : UINT64_MAX;
    struct ncg_local_self self = {W.comm[ci].id, W.comm[ci].nranks, (int32_t)cr,
                                  (int32_t)p->first_rank, mb->issued};
    struct ncg_local_gone gone = {mb->has_peer ? sd->rank : -1, sd->gone_rank, sd->gone_count,
                                  sd->ngone};
    struct ncg_verdict *v =
        ncg_local_rank_exited(&self, final, left, sd->verdict, 0,
                              mb->has_peer && (sd->rank >= 0 || sd->ngone) ? &gone : NULL);
    uint64_t done = mb->done;
    if (final == UINT64_MAX || done != mb->sd_done || !mb->sd_done_ns) {
        mb->sd_done = done;
        mb->sd_done_ns = W.now;
    }
    double idle = (double)(W.now - mb->sd_done_ns) / 1e9;
    if (!v && final != UINT64_MAX && idle * 1e9 >= 3.0 * (double)W.ap.interval_ns && idle >= 0.3)
        v = ncg_local_exited_wait(&self, done, idle, final, sd->verdict, 0);
    if (v) {
        mb->has_peer = 0;
        mb->sd.ngone = 0;
    }
    return v;
}

/* report.c's report while the link is not up: the first comm judged exited here is applied. */
static void report_down(struct proc *p)
{
    struct ncg_verdict *v = NULL;
    FOR_HELD(p, ci, cr)
    {
        if (!v)
            v = exited_locally(p, ci, cr);
    }
    if (!v)
        return;
    if (!ncg_exit_sm_ending(&p->xs) && !p->busy)
        apply_verdict(p, v, -1);
    ncg_verdict_free(v);
}

/* ---- the link's driver (agent/link.c ncg_link_drive) ---- */
static void link_close(struct proc *p)
{
    if (p->conn >= 0)
        conn_close_end(p->conn, 1);
    p->conn = -1;
}

static void say(struct proc *p, int k, int why, int was)
{
    static const char *const words[] = {
        [NCG_LSAY_UNREACHABLE] = "cannot reach the checker: running unguarded",
        [NCG_LSAY_UNREACHABLE_WHY] = "cannot reach the checker (why): running unguarded",
        [NCG_LSAY_REFUSED] = "the checker refused this process (wrong NCCLGUARD_TOKEN?)",
        [NCG_LSAY_CLOSED_EARLY] = "the checker closed before accepting this process: unguarded",
        [NCG_LSAY_LEFT_EXITING] = "(debug) the checker left before accepting this exiting one",
        [NCG_LSAY_LOST] = "lost the checker: retrying, CHECKER LOST if comms stall",
        [NCG_LSAY_SHUT_DOWN] = "the standalone checker shut down: retrying",
        [NCG_LSAY_FAILED] = "the checker stopped (out of memory): running unguarded",
        [NCG_LSAY_BYE] = "(debug) the checker shut down",
        [NCG_LSAY_NOMEM] = "out of memory: running unguarded",
        [NCG_LSAY_FALLBACK] = "(debug) reporting to the root",
        [NCG_LSAY_TREE_UNREACHABLE] = "cannot reach its node relay: unguarded meanwhile",
        [NCG_LSAY_ATTACHED] = "(debug) attached",
        [NCG_LSAY_RECONNECTED] = "reconnected to the checker",
    };
    trace("process %u: link says: %s (why %d)", p->id, words[k], why);
    switch (k) {
    case NCG_LSAY_REFUSED:
    case NCG_LSAY_CLOSED_EARLY:
        /* a refusal: the checker closed after our HELLO; its process must have (issue 35: a
         * stopped or slow checker is not a refusal, and no wrong cause may be named) */
        if (W.relay && !W.host_left && !(was >= 0 && W.conn[was].dropped))
            violation("process %u: '%s' while the checker's process %s", p->id, words[k],
                      W.proc[0].state == P_STOPPED ? "is stopped" : "runs");
        /* fall through */
    case NCG_LSAY_UNREACHABLE:
    case NCG_LSAY_UNREACHABLE_WHY:
    case NCG_LSAY_FAILED:
    case NCG_LSAY_NOMEM:
    case NCG_LSAY_SHUT_DOWN:
    case NCG_LSAY_TREE_UNREACHABLE:
        p->warned_unguarded = 1;
        break;
    default:
        break;
    }
}

static void send_hello(struct proc *p)
{
    struct ncg_msg m = {.type = NCG_MSG_HELLO};
    m.u.hello.token = W.rp.token;
    m.u.hello.pid = 1000 + p->id;
    m.u.hello.global_rank = (int32_t)p->first_rank;
    snprintf(m.u.hello.host, sizeof m.u.hello.host, "sim");
    msg_send(p, &m);
}

/* open_conn: a TCP connect under way (its answer comes as EV_CONNECT, world.c). */
static int open_conn(struct proc *p)
{
    trace("process %u: connects", p->id);
    ev_push(W.now + rnd_range(W.delay_lo, W.delay_hi), EV_CONNECT, p->id, 0);
    return NCG_CONN_INPROGRESS;
}

static unsigned link_drive(struct proc *p, struct ncg_link_ev ev)
{
    unsigned all = 0;
    for (;;) {
        struct ncg_link_do d = ncg_link_sm_step(&p->link, &ev, &W.ap);
        int was = p->conn;
        all |= d.act;
        if (d.act & NCG_LA_CLOSE)
            link_close(p);
        if (d.say)
            say(p, d.say, d.why, was);
        if (d.act & NCG_LA_LOST_CLOCK)
            lost_clock_start(p);
        if (d.act & NCG_LA_RELEASE_ALL)
            exit_release_got(p, 0, 0);
        if (d.act & NCG_LA_RANK_DIED)
            lost_rank_died(p);
        if ((d.act & NCG_LA_CHECK_LOST) && lost_check(p)) {
            struct ncg_link_ev acted = {.type = NCG_LEV_ACTED, .now = ev.now};
            ncg_link_sm_step(&p->link, &acted, &W.ap);
        }
        if (d.act & NCG_LA_REPORT_NOW)
            p->last_report_ns = 0;
        if (d.act & NCG_LA_HELLO)
            send_hello(p);
        if (d.act & NCG_LA_CONNECT)
            ev = (struct ncg_link_ev){.type = NCG_LEV_CONNECT, .now = ev.now, .conn = open_conn(p)};
        else
            return all; /* a flat job's link never becomes a node relay */
    }
}

/* A loss's event with what the machine observes of this process (link.c ev_lost). */
static struct ncg_link_ev ev_lost(const struct proc *p, int type)
{
    return (struct ncg_link_ev){.type = type,
                                .now = W.now,
                                .exiting = p->exiting,
                                .releasing = (uint8_t)awaiting_release(p)};
}

/* The connect's answer (world.c): accepted by the kernel (the checker may accept it later),
 * or refused. */
void agent_connected(struct proc *p, int accepted)
{
    if (p->link.state != NCG_LINK_CONNECTING)
        return;
    link_drive(p, (struct ncg_link_ev){.type = accepted ? NCG_LEV_WRITABLE : NCG_LEV_CONNECT_ERR,
                                       .now = W.now});
    loop(p);
    agent_wake(p);
}

void agent_rx(struct proc *p, const struct ncg_msg *m)
{
    struct ncg_link_ev ev = {.type = NCG_LEV_MESSAGE, .now = W.now};
    switch (m->type) {
    case NCG_MSG_WELCOME:
        ev.type = NCG_LEV_WELCOME;
        ev.embedded = m->u.welcome.embedded;
        link_drive(p, ev);
        break;
    case NCG_MSG_QUERY:
        if (link_drive(p, ev) & NCG_LA_ACCEPT)
            send_answer(p, &m->u.query);
        break;
    case NCG_MSG_VERDICT:
        if (link_drive(p, ev) & NCG_LA_ACCEPT)
            on_verdict(p, m->u.verdict);
        break;
    case NCG_MSG_RELEASE:
        trace("process %u: RELEASE", p->id);
        p->released = m->u.exit.comm_id + 1;
        link_drive(p, ev);
        exit_release_got(p, m->u.exit.comm_id, 0);
        break;
    case NCG_MSG_SHUTDOWN:
        trace("process %u: SHUTDOWN from the checker's host", p->id);
        ev = ev_lost(p, NCG_LEV_SHUTDOWN);
        ev.flags = m->u.goodbye.flags;
        if (link_drive(p, ev) & NCG_LA_TAKE_BYE)
            take_bye(p, &m->u.goodbye);
        break;
    default:
        link_drive(p, ev);
        break;
    }
    if (!ended(p) && !p->busy)
        loop(p);
    agent_wake(p);
}

/* Its connection closed (EOF, a reset): link.c ncg_link_lost. */
void agent_closed(struct proc *p)
{
    trace("process %u: its link closed", p->id);
    struct ncg_link_ev ev = ev_lost(p, NCG_LEV_CLOSED);
    ev.why = NCG_WHY_CLOSED;
    link_drive(p, ev);
    p->conn = -1;
    if (!ended(p) && !p->busy)
        loop(p);
    agent_wake(p);
}

/* ---- the checker thread's loop (agent/thread.c), one pass ---- */
static void loop(struct proc *p)
{
    uint64_t now = W.now, hb = W.ap.heartbeat_ns;
    if (p->last_loop && hb && now - p->last_loop > hb / 2) /* we were stopped, not the checker */
        link_drive(p, (struct ncg_link_ev){.type = NCG_LEV_RESUMED, .now = now});
    p->last_loop = now;
    int exiting = p->exiting;
    if (exit_tick(p, exiting))
        return;
    if (!p->link_made) { /* ncg_resolve_links: the link made with its first comm */
        p->link_made = 1;
        ncg_link_sm_init(&p->link, 0, 0, 0, 1, 0, now);
        link_drive(p, (struct ncg_link_ev){.type = NCG_LEV_START, .now = now});
    }
    if (!exiting && !ncg_exit_sm_ending(&p->xs) && !p->busy)
        link_drive(p, (struct ncg_link_ev){.type = NCG_LEV_TICK, .now = now});
    if (p->busy || ended(p))
        return;
    if (!exiting && now - p->last_report_ns >= W.ap.interval_ns) {
        p->last_report_ns = now;
        if (ncg_exit_sm_ending(&p->xs)) { /* its GOODBYEs went: liveness only */
            static const struct ncg_msg empty = {.type = NCG_MSG_REPORT};
            msg_send(p, &empty);
        } else if (p->link.state != NCG_LINK_UP) {
            report_down(p);
        } else {
            send_report(p);
        }
    }
    struct ncg_link_ev ck = ev_lost(p, NCG_LEV_CLOCK);
    ck.exiting = (uint8_t)exiting;
    link_drive(p, ck);
    if (p->busy || ended(p))
        return;
    exit_finish(p, exiting);
}

/* The checker thread's next wake (thread.c's poll timeout): the report interval, a link's
 * retry, 10 ms while an exit is under way. */
static uint64_t next_wake(const struct proc *p)
{
    uint64_t next = p->last_report_ns + W.ap.interval_ns, w = ncg_link_sm_wake_ns(&p->link);
    if (next <= W.now)
        next = W.now + 1 * MS;
    if (w != UINT64_MAX && w > W.now && w < next)
        next = w + 1 * MS;
    if (ncg_exit_sm_fast(&p->xs, p->exiting, W.now) && next > W.now + 10 * MS)
        next = W.now + 10 * MS;
    return next;
}

/* The thread woken (ncg_wake_thread), or its poll timeout sooner than the tick queued. */
static void agent_wake(struct proc *p)
{
    if (ended(p))
        return;
    uint64_t t = W.now + proc_delay(p, next_wake(p) - W.now);
    if (!p->next_tick || t < p->next_tick || p->next_tick <= W.now) {
        p->next_tick = t;
        ev_push(t, EV_TICK, p->id, 0);
    }
}

void agent_tick(struct proc *p)
{
    p->next_tick = 0;
    if (!p->busy)
        loop(p);
    agent_wake(p);
}

/* The application returns (ncg_exit_at_exit): the checker thread's clean exit runs; the
 * exiting thread waits for it (EV_ATEXIT: its timed waits, as exit.c's waiter). */
void agent_app_done(struct proc *p)
{
    trace("process %u: its application returns", p->id);
    p->app_done_t = W.now;
    p->exiting = 1;
    ev_push(W.now + 800 * MS, EV_ATEXIT, p->id, 0);
    if (!p->busy)
        loop(p);
    agent_wake(p);
}

/* The at-exit waiter's timeout (ncg_exit_at_exit): extend while the host stays, once while an
 * abort, a hold or a registration is under way; then the process exits, with the verdict's
 * status past every bound of an abort under way. */
void agent_atexit(struct proc *p)
{
    if (p->xs.staying) {
        ev_push(W.now + 1 * SEC, EV_ATEXIT, p->id, 0);
        return;
    }
    if (!p->atexit_ext && (p->aborting || p->xs.holding || p->xs.registering)) {
        p->atexit_ext = 1;
        ev_push(W.now + 5 * SEC + 2 * (W.ap.exit.release_bound / SEC) * SEC, EV_ATEXIT, p->id, 0);
        return;
    }
    if (p->aborting)
        proc_exit(p, NCG_EXIT_VERDICT, "the at-exit waiter past every bound of an abort");
    else
        proc_exit(p, 0, "the at-exit waiter gave up waiting for the clean exit");
}
