/* ncg-dsim's world: the PRNG, the event queue and virtual clock, the trace, the simulated
 * connections (FIFO, every frame encoded and decoded with the real codec, seeded delays,
 * partitions, resets, refused accepts), process 0's checker (the real relay root with a flat
 * job's parameters) and the processes' faults and exits. One thread; nothing blocks. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "dsim.h"
#include "relayhost.h"

struct world W;

/* ---- PRNG ---- */
static uint64_t S4[4];
static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}
void rnd_seed(uint64_t seed)
{
    for (int i = 0; i < 4; i++) { /* splitmix64 */
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        S4[i] = z ^ (z >> 31);
    }
}
uint64_t rnd(void)
{
    uint64_t r = rotl(S4[1] * 5, 7) * 9, t = S4[1] << 17;
    S4[2] ^= S4[0];
    S4[3] ^= S4[1];
    S4[1] ^= S4[2];
    S4[0] ^= S4[3];
    S4[2] ^= t;
    S4[3] = rotl(S4[3], 45);
    return r;
}
uint64_t rnd_below(uint64_t n)
{
    return n ? rnd() % n : 0;
}
uint64_t rnd_range(uint64_t lo, uint64_t hi)
{
    return hi <= lo ? lo : lo + rnd_below(hi - lo + 1);
}

/* ---- events ---- */
static struct ev *heap;
static size_t nheap, capheap;
static uint64_t evseq;

void ev_push(uint64_t t, uint8_t kind, uint32_t a, uint32_t b)
{
    if (nheap == capheap) {
        capheap = capheap ? capheap * 2 : 1024;
        heap = realloc(heap, capheap * sizeof *heap);
        if (!heap)
            abort();
    }
    struct ev e = {.t = t < W.now ? W.now : t, .seq = evseq++, .kind = kind, .a = a, .b = b};
    size_t i = nheap++;
    while (i) {
        size_t up = (i - 1) / 2;
        if (heap[up].t < e.t || (heap[up].t == e.t && heap[up].seq < e.seq))
            break;
        heap[i] = heap[up];
        i = up;
    }
    heap[i] = e;
}

static int ev_less(const struct ev *a, const struct ev *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static struct ev ev_pop(void)
{
    struct ev top = heap[0], last = heap[--nheap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const struct ev *best = &last;
        if (l < nheap && ev_less(&heap[l], best)) {
            m = l;
            best = &heap[l];
        }
        if (r < nheap && ev_less(&heap[r], best))
            m = r;
        if (m == i)
            break;
        heap[i] = heap[m];
        i = m;
    }
    if (nheap)
        heap[i] = last;
    return top;
}

/* ---- trace ---- */
#define TRACE_KEEP 400u
static char tr_lines[TRACE_KEEP][200];
static uint64_t tr_n, tr_hash = 0xcbf29ce484222325ull;

void trace(const char *fmt, ...)
{
    char *l = tr_lines[tr_n++ % TRACE_KEEP];
    int o = snprintf(l, 200, "%10.6f ", (double)W.now / 1e9);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l + o, 200 - (size_t)o, fmt, ap);
    va_end(ap);
    for (const char *c = l; *c; c++)
        tr_hash = (tr_hash ^ (uint8_t)*c) * 0x100000001b3ull;
    if (W.verbose > 1)
        fprintf(stderr, "%s\n", l);
}

uint64_t trace_hash(void)
{
    return tr_hash;
}

static void trace_dump(void)
{
    uint64_t from = tr_n > TRACE_KEEP ? tr_n - TRACE_KEEP : 0;
    fprintf(stderr, "ncclguard: ncg-dsim trace (the last %" PRIu64 " of %" PRIu64 " events):\n",
            tr_n - from, tr_n);
    for (uint64_t i = from; i < tr_n; i++)
        fprintf(stderr, "  %s\n", tr_lines[i % TRACE_KEEP]);
}

void violation(const char *fmt, ...)
{
    if (W.violation++)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    trace("VIOLATION %s", buf);
    trace_dump();
    fprintf(stderr,
            "ncclguard: ncg-dsim: invariant violated at t=%.6f s: %s\n"
            "ncclguard: ncg-dsim: replay: make sim SEED=%" PRIu64 "%s%s%s (workload %s)\n",
            (double)W.now / 1e9, buf, W.seed, W.args[0] ? " SIM_ARGS='" : "", W.args,
            W.args[0] ? "'" : "", W.workload);
}

/* ---- connections ---- */
int conn_open(uint32_t proc)
{
    if (W.nconn == W.conncap) {
        W.conncap = W.conncap ? W.conncap * 2 : 64;
        W.conn = realloc(W.conn, W.conncap * sizeof *W.conn);
        if (!W.conn)
            abort();
    }
    struct conn *c = &W.conn[W.nconn];
    memset(c, 0, sizeof *c);
    c->proc = proc;
    c->open[0] = c->open[1] = 1;
    return (int)W.nconn++;
}

static void enqueue(int ci, int dir, const uint8_t *b, long n)
{
    struct conn *c = &W.conn[ci];
    struct frame *f = malloc(sizeof *f + (size_t)(n > 0 ? n : 0));
    if (!f)
        abort();
    uint64_t at = W.now + rnd_range(W.delay_lo, W.delay_hi);
    if (at < c->last_at[dir])
        at = c->last_at[dir];
    if (at < c->part_until)
        at = c->part_until;
    c->last_at[dir] = at;
    f->next = NULL;
    f->at = at;
    f->n = n;
    if (n > 0)
        memcpy(f->b, b, (size_t)n);
    if (c->t[dir])
        c->t[dir]->next = f;
    else
        c->h[dir] = f;
    c->t[dir] = f;
    ev_push(at, EV_FRAME, (uint32_t)ci, (uint32_t)dir);
}

/* dir 0: the client's end sends to the host; 1: the host's end to the client. */
void conn_send(int ci, int dir, const struct ncg_msg *m)
{
    static uint8_t buf[NCG_WIRE_HDR + NCG_WIRE_MAX_PAYLOAD];
    struct conn *c = &W.conn[ci];
    if (!c->open[dir ? 0 : 1])
        return;
    long n = ncg_wire_encode_ref(m, buf, sizeof buf, &c->tx[dir]);
    if (n <= 0) {
        violation("conn %d: the codec refused to encode a frame of type %u (%ld)", ci, m->type, n);
        return;
    }
    enqueue(ci, dir, buf, n);
}

static void frames_free(struct conn *c)
{
    for (int d = 0; d < 2; d++) {
        while (c->h[d]) {
            struct frame *f = c->h[d];
            c->h[d] = f->next;
            free(f);
        }
        c->t[d] = NULL;
    }
}

void conn_close_end(int ci, int end)
{
    struct conn *c = &W.conn[ci];
    if (!c->open[end])
        return;
    c->open[end] = 0;
    enqueue(ci, end ? 0 : 1, NULL, 0); /* EOF to the other end, after what was sent */
}

static void host_closed(int ci)
{
    struct conn *c = &W.conn[ci];
    if (W.relay && c->relay_knows) {
        c->relay_knows = 0;
        ncg_relay_closed(W.relay, ci, W.now);
    }
}

void conn_reset(int ci)
{
    struct conn *c = &W.conn[ci];
    if (!c->open[0] && !c->open[1])
        return;
    trace("net: conn %d of process %u reset", ci, c->proc);
    frames_free(c);
    int was[2] = {c->open[0], c->open[1]};
    c->open[0] = c->open[1] = 0;
    if (was[0])
        host_closed(ci);
    if (was[1]) {
        struct proc *p = &W.proc[c->proc];
        if (p->conn == ci && p->state != P_DEAD && p->state != P_EXITED)
            agent_closed(p);
    }
}

/* A process that runs nothing now (stopped): the event waits for its resumption. */
static int deferred(const struct proc *p, const struct ev *e)
{
    if (p->state != P_STOPPED)
        return 0;
    ev_push(p->stop_until + 1, e->kind, e->a, e->b);
    return 1;
}

/* Its checker thread prints a verdict (agent.c): what that thread runs (its links, and on the
 * host its checker) waits until it is done. */
static int thread_busy(const struct proc *p, const struct ev *e)
{
    if (!p->busy)
        return 0;
    ev_push(p->busy_until > W.now ? p->busy_until : W.now + 1 * MS, e->kind, e->a, e->b);
    return 1;
}

static void take_head(uint32_t ci, int dir);

static void deliver(const struct ev *e)
{
    struct conn *c = &W.conn[e->a];
    int dir = (int)e->b;
    if (c->skip[dir]) { /* its frame was read at accept (conn_accept) */
        c->skip[dir]--;
        return;
    }
    struct frame *f = c->h[dir];
    if (!f)
        return; /* reset meanwhile */
    struct proc *rx = dir ? &W.proc[c->proc] : &W.proc[0];
    if (rx->state == P_DEAD || rx->state == P_EXITED) {
        c->h[dir] = f->next;
        if (!c->h[dir])
            c->t[dir] = NULL;
        free(f);
        return;
    }
    if (deferred(rx, e) || thread_busy(rx, e))
        return;
    if (dir == 0 && !c->accepted && c->open[0] && !c->backlog) {
        conn_accept((int)e->a); /* TCP: its first bytes come with the handshake's end */
        if (c->skip[0]) {       /* read there, this event's frame among them */
            c->skip[0]--;
            return;
        }
    }
    if (dir == 0 && !c->accepted && c->open[0]) { /* in the backlog: read once accepted */
        ev_push(W.now < W.refuse_until ? W.refuse_until : W.now + 1 * MS, e->kind, e->a, e->b);
        return;
    }
    take_head(e->a, dir);
}

/* The head frame of connection ci in direction dir, read by its receiver. */
static void take_head(uint32_t ci, int dir)
{
    struct conn *c = &W.conn[ci];
    struct frame *f = c->h[dir];
    const struct ev e0 = {.a = ci, .b = (uint32_t)dir}, *e = &e0;
    c->h[dir] = f->next;
    if (!c->h[dir])
        c->t[dir] = NULL;
    if (dir == 0 && (!c->open[0] || !W.relay)) {
        free(f);
        return;
    }
    if (dir == 1 && !c->open[1]) {
        free(f);
        return;
    }
    if (f->n == 0) { /* EOF */
        free(f);
        if (dir == 0) {
            trace("host: conn %u closed by process %u", e->a, c->proc);
            c->open[0] = 0;
            host_closed((int)e->a);
        } else {
            c->open[1] = 0;
            if (W.proc[c->proc].conn == (int)e->a)
                agent_closed(&W.proc[c->proc]);
        }
        return;
    }
    struct ncg_msg m;
    memset(&m, 0, sizeof m);
    long k = ncg_wire_decode_ref(f->b, (size_t)f->n, &m, &c->rx[dir]);
    if (k != f->n) {
        violation("conn %u: a frame the codec encoded (%ld bytes) decoded as %ld", e->a, f->n, k);
        free(f);
        return;
    }
    free(f);
    if (dir == 0) {
        if (W.verbose > 2)
            trace("host <- process %u: type %u", c->proc, m.type);
        if (W.verbose > 2 && m.type == NCG_MSG_GOODBYE)
            for (uint32_t i = 0; i < m.u.goodbye.n; i++)
                trace("  goodbye: comm %016" PRIx64 " rank %u count %" PRIu64,
                      m.u.goodbye.comm_id[i], m.u.goodbye.rank[i], m.u.goodbye.count[i]);
        if (W.verbose > 2 && m.type == NCG_MSG_ANSWER)
            for (uint32_t i = 0; i < m.u.answer.n; i++)
                trace("  answer: qid %u rank %u slot %" PRIu64 " status %u digest %016" PRIx64,
                      m.u.answer.qid, m.u.answer.rank, m.u.answer.a[i].call.seq,
                      m.u.answer.a[i].status, m.u.answer.a[i].digest);
        if (W.verbose > 2 && m.type == NCG_MSG_WAIT)
            for (uint32_t i = 0; i < m.u.wait.n; i++)
                trace("  wait: comm %016" PRIx64 " rank %u p2p %u seq %" PRIu64 " peer %d",
                      m.u.wait.w[i].comm_id, m.u.wait.w[i].rank, m.u.wait.w[i].p2p,
                      m.u.wait.w[i].call.seq, m.u.wait.w[i].call.root);
        if (W.verbose > 2 && m.type == NCG_MSG_REPORT)
            for (uint32_t i = 0; i < m.u.report.n; i++)
                trace("  report: comm %016" PRIx64 " rank %u count %" PRIu64 " done %" PRIu64,
                      m.u.report.e[i].comm_id, m.u.report.e[i].rank, m.u.report.e[i].count,
                      m.u.report.e[i].done);
        c->registered |= m.type == NCG_MSG_REPORT;
        ncg_relay_message(W.relay, (int)e->a, &m, W.now);
        check_step();
    } else {
        agent_rx(&W.proc[c->proc], &m);
    }
    ncg_msg_release(&m);
}

/* ---- the checker: process 0's relay root ---- */
static void h_send(void *arg, int conn, const struct ncg_msg *m)
{
    (void)arg;
    if (conn >= 0 && (uint32_t)conn < W.nconn && W.conn[conn].open[0]) {
        if (m->type == NCG_MSG_VERDICT || m->type == NCG_MSG_RELEASE)
            trace("host -> process %u: %s%s%s", W.conn[conn].proc,
                  m->type == NCG_MSG_RELEASE ? "RELEASE" : "VERDICT ",
                  m->type == NCG_MSG_VERDICT ? ncg_verdict_name(m->u.verdict->kind) : "",
                  m->type == NCG_MSG_VERDICT && m->u.verdict->severity == NCG_SEV_WARN
                      ? " (warning)"
                      : "");
        if (W.verbose > 2 && m->type == NCG_MSG_QUERY)
            for (uint32_t i = 0; i < m->u.query.n; i++)
                trace("host -> process %u: QUERY qid %u slot %" PRIu64 " nrep %u",
                      W.conn[conn].proc, m->u.query.qid, m->u.query.slot[i], m->u.query.nrep);
        conn_send(conn, 1, m);
    }
}
static void h_drop(void *arg, int conn)
{
    (void)arg;
    if (conn >= 0 && (uint32_t)conn < W.nconn) {
        trace("host: drops conn %d", conn);
        W.conn[conn].relay_knows = 0;
        W.conn[conn].dropped = 1;
        const struct proc *p = &W.proc[W.conn[conn].proc];
        if (p->conn == conn && p->link.state == NCG_LINK_HELLO && W.conn[conn].h[0])
            violation("the checker dropped process %u's connection with its HELLO unread "
                      "(connections without a HELLO past the relay's bound)",
                      p->id);
        conn_close_end(conn, 0);
    }
}
static void h_up(void *arg, const struct ncg_msg *m)
{
    (void)arg;
    (void)m;
    violation("the root relay sent to a parent");
}
static void h_event(void *arg, const char *line)
{
    (void)arg;
    trace("relay: %s", line);
}

static const char *no_env(const char *name, void *arg)
{
    (void)name;
    (void)arg;
    return NULL;
}

/* A flat job's root with the defaults (agent/client.c root_start_locked, net/relayhost.c
 * ncg_rhost_start: the same mapping from ncg_rhost_params_of). */
static void relay_start(void)
{
    struct ncg_config cfg;
    ncg_config_parse(&cfg, no_env, NULL, NULL);
    struct ncg_rhost_params p = ncg_rhost_params_of(&cfg, 0x5eedull, 0, 0, 1, cfg.fanout, 0);
    struct ncg_relay_params rp = p.relay; /* as ncg_rhost_start sets what the host knows */
    rp.root = 1;
    rp.pid = 1000;
    rp.embedded = 1;
    rp.client_verdicts = 1;
    rp.has_global_rank = 1;
    snprintf(rp.host, sizeof rp.host, "sim");
    W.rp = rp;
    W.ap = ncg_agent_params_of(&cfg);
    struct ncg_relay_ops ops = {h_send, h_drop, h_up, h_event, NULL};
    W.relay = ncg_relay_new(&rp, &ops);
    if (!W.relay)
        abort();
}

static void relay_stop(void)
{
    if (!W.relay)
        return;
    ncg_relay_free(W.relay);
    W.relay = NULL;
    for (uint32_t i = 0; i < W.nconn; i++)
        if (W.conn[i].open[0]) {
            W.conn[i].relay_knows = 0;
            conn_close_end((int)i, 0);
        }
}

/* ---- processes ---- */
uint64_t proc_delay(const struct proc *p, uint64_t d)
{
    return p->slow_until > W.now ? d * p->slow_factor : d;
}

static void launcher_saw(int status, int local)
{
    if (status == 0 || W.first_exit_nonzero)
        return;
    W.first_exit_nonzero = 1;
    W.first_exit_t = W.now;
    W.first_exit_local = local;
    if (W.launcher == L_MPIRUN)
        ev_push(W.now + rnd_range(0, 20 * MS), EV_KILLALL, 0, 0);
    else if (W.launcher == L_TORCHRUN)
        ev_push((W.now / (5 * SEC) + 1) * 5 * SEC, EV_KILLALL, 0, 0);
}

static void proc_gone(struct proc *p)
{
    if (p->conn >= 0)
        conn_close_end(p->conn, 1);
    if (p->id == 0)
        relay_stop();
}

void proc_exit(struct proc *p, int status, const char *why)
{
    if (p->state == P_DEAD || p->state == P_EXITED)
        return;
    trace("process %u exits %d (%s)", p->id, status, why);
    if (status != 0)
        check_exit_nonzero(p);
    if (p->id == 0 && status == 0) /* its checker leaves with it: a farewell to everyone */
        for (uint32_t ci = 0; ci < W.nconn; ci++) {
            const struct proc *q = &W.proc[W.conn[ci].proc];
            if (W.conn[ci].open[0] && !W.conn[ci].sd_sent && q->conn == (int)ci && q->id &&
                q->state != P_DEAD && q->state != P_EXITED && !q->exiting) {
                violation("the checker's host exits cleanly without a SHUTDOWN to process %u "
                          "(its connection %s): a reset instead of the final counts",
                          q->id, W.conn[ci].accepted ? "accepted" : "in the listener's backlog");
                break;
            }
        }
    p->state = P_EXITED;
    W.nlive--;
    p->exit_status = status;
    p->exit_t = W.now;
    proc_gone(p);
    launcher_saw(status, p->v_local);
}

void proc_crash(struct proc *p)
{
    if (p->state == P_DEAD || p->state == P_EXITED)
        return;
    trace("process %u crashes", p->id);
    p->state = P_DEAD;
    W.nlive--;
    p->exit_t = W.now;
    proc_gone(p);
}

static void killall(void)
{
    trace("launcher: ends every process left");
    for (uint32_t i = 0; i < W.nproc; i++)
        if (W.proc[i].state != P_DEAD && W.proc[i].state != P_EXITED) {
            check_killed(&W.proc[i]);
            proc_crash(&W.proc[i]);
        }
}

static void fault(const struct fault *f)
{
    struct proc *p = &W.proc[f->a];
    if (p->state == P_DEAD || p->state == P_EXITED)
        return;
    if ((f->kind == F_CRASH || f->kind == F_RESET) && W.ex.kind && !W.ex.armed &&
        !(p->conn >= 0 && W.conn[p->conn].registered) && !p->warned_unguarded) {
        /* the workload's fault: once the victim is registered (a death before it registered
         * is a known gap, docs/simulator.md) */
        ev_push(W.now + 50 * MS, EV_FAULT, (uint32_t)(f - W.fault), 0);
        return;
    }
    if ((f->kind == F_CRASH || f->kind == F_RESET) && W.ex.kind && !W.ex.armed &&
        p->app_done_t) { /* it was leaving already: no fault to find; a healthy run */
        trace("fault: process %u had finished; the run is checked as healthy", p->id);
        W.ex.kind = NCG_V_NONE;
        return;
    }
    switch (f->kind) {
    case F_CRASH:
        check_fault_armed();
        proc_crash(p);
        break;
    case F_STOP:
        trace("process %u stopped for %u ms", p->id, f->b);
        if (p->state == P_ALIVE) {
            p->state = P_STOPPED;
            p->stop_until = W.now + f->b * MS;
            ev_push(p->stop_until, EV_RESUME, p->id, 0);
        }
        break;
    case F_STARVE:
        trace("process %u starved for %u ms", p->id, f->b);
        p->slow_until = W.now + f->b * MS;
        p->slow_factor = 10;
        break;
    case F_RESET:
        check_fault_armed();
        if (p->conn >= 0)
            conn_reset(p->conn);
        break;
    case F_PARTITION:
        if (p->id == 0) { /* its link is to its own checker, in its own thread */
            trace("process 0: its own link cannot be partitioned");
            break;
        }
        trace("process %u partitioned for %u ms", p->id, f->b);
        if (p->conn >= 0)
            W.conn[p->conn].part_until = W.now + f->b * MS;
        break;
    case F_EXIT:
        trace("process %u: its application returns early", p->id);
        for (uint32_t r = 0; r < p->nranks; r++) {
            struct rank *rk = &W.rank[p->first_rank + r];
            if (rk->state != R_FINISHED)
                rk->pc = rk->nprog - 1; /* its next step is the end */
            if (rk->state == R_RUN)
                ev_push(W.now, EV_RANK, p->first_rank + r, 0);
        }
        check_fault_armed();
        break;
    }
}

/* The host's checker accepts connection ci (from the backlog). */
void conn_accept(int ci)
{
    struct conn *c = &W.conn[ci];
    if (!W.relay || c->accepted || !c->open[0])
        return;
    c->accepted = 1;
    c->relay_knows = 1;
    W.last_connect_t = W.now;
    trace("host: accepts conn %d of process %u", ci, c->proc);
    ncg_relay_connected(W.relay, ci, W.now);
    /* read at once, as ncg_rhost's accept does: the HELLO that came with the connection is not
     * left to count as a silence against the relay's cap on connections without one */
    while (c->h[0] && c->h[0]->at <= W.now && c->open[0] && c->accepted && W.relay) {
        c->skip[0]++;
        take_head((uint32_t)ci, 0);
    }
}

/* A connect answered: refused when nobody listens (the host gone, or its checker left); else
 * the kernel completes it and the process sends its HELLO, while the checker accepts it from
 * the backlog at once, or once it runs again (stopped) and has descriptors (refuse_until). */
static void connect_answer(struct proc *p)
{
    if (p->state == P_DEAD || p->state == P_EXITED)
        return;
    if (!W.relay || W.host_left) {
        trace("process %u: connect refused", p->id);
        agent_connected(p, 0);
        return;
    }
    int ci = conn_open(p->id);
    p->conn = ci;
    trace("process %u: connected (conn %d)", p->id, ci);
    /* accepted as its HELLO arrives (deliver), unless the checker cannot accept now: then it
     * waits in the listener's backlog, and the backlog is accepted at once (EV_ACCEPT) */
    if (W.now < W.refuse_until || W.proc[0].state != P_ALIVE || W.proc[0].busy) {
        W.conn[ci].backlog = 1;
        ev_push(W.refuse_until, EV_ACCEPT, (uint32_t)ci, 0);
    }
    agent_connected(p, 1);
}

/* The event's process runs it now: neither gone, nor stopped (then it waits). */
static int runs(const struct proc *p, const struct ev *e)
{
    return p->state != P_DEAD && p->state != P_EXITED && !deferred(p, e);
}

static void run_event(const struct ev *e)
{
    switch (e->kind) {
    case EV_TICK: { /* the one queued (a wake queues a sooner one: the other is stale) */
        struct proc *p = &W.proc[e->a];
        if (e->t != p->next_tick || p->state == P_DEAD || p->state == P_EXITED)
            return;
        if (p->state == P_STOPPED || p->busy) {
            p->next_tick = p->state == P_STOPPED ? p->stop_until + 1 : p->busy_until;
            ev_push(p->next_tick, EV_TICK, p->id, 0);
            return;
        }
        agent_tick(p);
        break;
    }
    case EV_ACCEPT: { /* the host's checker thread runs it */
        struct proc *h = &W.proc[0];
        if (!W.relay || h->state == P_DEAD || h->state == P_EXITED)
            break;
        if (h->state == P_STOPPED)
            ev_push(h->stop_until + 1, EV_ACCEPT, e->a, 0);
        else if (h->busy)
            ev_push(h->busy_until > W.now ? h->busy_until : W.now + 1 * MS, EV_ACCEPT, e->a, 0);
        else
            conn_accept((int)e->a);
        break;
    }
    case EV_ATEXIT: {
        struct proc *p = &W.proc[e->a];
        if (runs(p, e))
            agent_atexit(p);
        break;
    }
    case EV_RANK: {
        struct rank *r = &W.rank[e->a];
        if (runs(&W.proc[r->proc], e))
            rank_step(r);
        break;
    }
    case EV_FRAME:
        deliver(e);
        break;
    case EV_HOSTTICK: {
        if (W.relay && runs(&W.proc[0], e) && !thread_busy(&W.proc[0], e)) {
            ncg_relay_tick(W.relay, W.now);
            check_step();
            ev_push(W.now + proc_delay(&W.proc[0], W.ap.interval_ns), EV_HOSTTICK, 0, 0);
        }
        break;
    }
    case EV_FAULT:
        fault(&W.fault[e->a]);
        break;
    case EV_PRINTED: {
        if (runs(&W.proc[e->a], e))
            agent_printed(&W.proc[e->a]);
        break;
    }
    case EV_CONNECT:
        connect_answer(&W.proc[e->a]);
        break;
    case EV_KILLALL:
        killall();
        break;
    case EV_RESUME: {
        struct proc *p = &W.proc[e->a];
        if (p->state == P_STOPPED && p->stop_until <= W.now) {
            p->state = P_ALIVE;
            trace("process %u resumed", p->id);
        }
        break;
    }
    }
}

void world_init(void)
{
    relay_start();
    W.nlive = W.nproc;
    for (uint32_t i = 0; i < W.nproc; i++) {
        struct proc *p = &W.proc[i];
        p->conn = -1;
        ncg_exit_sm_init(&p->xs, &W.ap);
        p->next_tick = rnd_range(1, 50 * MS);
        ev_push(p->next_tick, EV_TICK, i, 0);
    }
    ev_push(W.ap.interval_ns, EV_HOSTTICK, 0, 0);
    for (uint32_t i = 0; i < W.nfault; i++)
        ev_push(W.fault[i].at, EV_FAULT, i, 0);
    for (uint32_t r = 0; r < W.nranks; r++)
        ev_push(rnd_range(1 * MS, 30 * MS), EV_RANK, r, 0);
}

int world_run(void)
{
    while (nheap && !W.violation) {
        struct ev e = ev_pop();
        if (e.t > W.end_t)
            break;
        W.now = e.t;
        W.events++;
        run_event(&e);
        if (!W.nlive)
            break;
    }
    if (!W.violation)
        check_end();
    return W.violation != 0;
}

void world_free(void)
{
    if (W.relay)
        ncg_relay_free(W.relay);
    W.relay = NULL;
    for (uint32_t i = 0; i < W.nconn; i++)
        frames_free(&W.conn[i]);
    free(W.conn);
    free(heap);
    heap = NULL;
    nheap = capheap = 0;
    evseq = 0;
    tr_n = 0;
    tr_hash = 0xcbf29ce484222325ull;
    work_free();
    memset(&W, 0, sizeof W);
}
