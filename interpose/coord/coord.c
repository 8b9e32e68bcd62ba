/* The coordinator state machine (coord.h): its tables (coord_int.h: per communicator the
 * members' slot counts and the last verified slot), the members' messages, p2p matching per
 * (sender, receiver, k), liveness, goodbyes, RANK EXITED, LAG, and the tick. The comparison
 * rounds are coord_round.c; verdicts on their way out and the exit release, coord_issue.c; STUCK
 * and DEADLOCK, coord_hang.c; the status view, coord_view.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "coord_int.h"

void *ncg_co_nomem(struct ncg_coord *co)
{
    co->nomem = 1;
    return NULL;
}

int ncg_coord_out_of_memory(const struct ncg_coord *co)
{
    return co->nomem;
}

int ncg_coord_unauthed(const struct ncg_coord *co, int *oldest)
{
    return ncg_conntab_unauthed(&co->conns, oldest);
}

__attribute__((format(printf, 2, 3))) void ncg_co_event(const struct ncg_coord *co, const char *fmt,
                                                        ...)
{
    if (!co->ops.event)
        return;
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    co->ops.event(co->ops.arg, line);
}

const char *ncg_co_conn_who(const struct cconn *cc, char *buf, size_t cap)
{
    if (cc->h.grank >= 0)
        snprintf(buf, cap, "pid %u (global rank %d) on %s", cc->pid, cc->h.grank, cc->host);
    else
        snprintf(buf, cap, "pid %u on %s", cc->pid, cc->host);
    return buf;
}

uint64_t ncg_token_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h ? h : 1;
}

struct ncg_coord *ncg_coord_new(const struct ncg_coord_params *p, const struct ncg_coord_ops *ops)
{
    struct ncg_coord *co = calloc(1, sizeof *co);
    if (!co)
        return NULL;
    co->p = *p;
    co->ops = *ops;
    co->conns.size = sizeof(struct cconn);
    if (co->p.interval_ms == 0)
        co->p.interval_ms = 100;
    if (!co->p.slow_off && !co->p.slow_window && co->p.slow_share == 0) { /* not set: the env */
        co->p.slow_off = !ncg_cfg.slow;
        co->p.slow_window = ncg_cfg.slow_window;
        co->p.slow_share = ncg_cfg.slow_share_pct / 100;
        co->p.slow_hold_s = ncg_cfg.slow_hold_s;
    }
    co->next_qid = 1;
    return co;
}

static void comm_free(struct ccomm *c)
{
    ncg_p2pm_clear(&c->p2p);
    ncg_verdict_free(c->last);
    ncg_release_free(&c->rel);
    free(c->slow);
    free(c->ans);
    free(c->m);
    free(c);
}

void ncg_coord_free(struct ncg_coord *co)
{
    if (!co)
        return;
    for (size_t i = 0; i < co->ncomm; i++)
        comm_free(co->comm[i]);
    free(co->comm);
    for (int i = 0; i < co->conns.n; i++) {
        struct cconn *cc = ncg_conntab_at(&co->conns, i);
        free(cc->waits);
    }
    ncg_conntab_free(&co->conns);
    free(co);
}

void ncg_coord_get_stats(const struct ncg_coord *co, struct ncg_coord_stats *st)
{
    *st = co->st;
}

struct cconn *ncg_co_conn_get(const struct ncg_coord *co, int id)
{
    return ncg_conntab_get(&co->conns, id);
}

/* conn's slot holds no WAITs unless a connection holds it (forget_conn frees them). */
static void forget_waits(struct ncg_coord *co, int conn)
{
    struct cconn *cc = ncg_co_conn_get(co, conn);
    if (cc)
        free(cc->waits);
}

void ncg_coord_connected(struct ncg_coord *co, int conn, uint64_t now_ns)
{
    if (conn < 0)
        return;
    forget_waits(co, conn);
    if (!ncg_conntab_open(&co->conns, conn, now_ns)) {
        ncg_co_nomem(co);
        co->ops.drop(co->ops.arg, conn);
    }
}

struct ccomm *ncg_co_comm_find(struct ncg_coord *co, uint64_t id)
{
    for (size_t i = 0; i < co->ncomm; i++)
        if (co->comm[i]->id == id)
            return co->comm[i];
    return NULL;
}

static void comm_remove(struct ncg_coord *co, size_t i)
{
    comm_free(co->comm[i]);
    co->comm[i] = co->comm[--co->ncomm];
}

/* The comm of that id, created when new. A comm kept after its verdict for scrapers starts
 * again when its id registers anew (on_report never passes a process's REPORT after its last
 * goodbye here: that late frame would replace the verdict with a comm of phantom members). */
static struct ccomm *comm_get(struct ncg_coord *co, uint64_t id, uint32_t nranks, uint64_t now_ns)
{
    for (size_t i = 0; i < co->ncomm; i++) {
        struct ccomm *c = co->comm[i];
        if (c->id != id)
            continue;
        if (!c->empty_ns)
            return c->nranks == nranks ? c : NULL;
        comm_remove(co, i); /* kept for scrapers only: the id starts again */
        break;
    }
    if (nranks == 0 || nranks > NCG_WIRE_MAX_RANKS)
        return NULL;
    if (co->ncomm == co->capcomm) {
        size_t n = co->capcomm ? co->capcomm * 2 : 16;
        struct ccomm **nc = realloc(co->comm, sizeof *nc * n);
        if (!nc)
            return ncg_co_nomem(co);
        co->comm = nc;
        co->capcomm = n;
    }
    struct ccomm *c = calloc(1, sizeof *c);
    if (!c)
        return ncg_co_nomem(co);
    c->m = calloc(nranks, sizeof *c->m);
    if (!c->m) {
        free(c);
        return ncg_co_nomem(co);
    }
    for (uint32_t i = 0; i < nranks; i++) {
        c->m[i].conn = -1;
        c->m[i].grank = -1;
    }
    c->id = id;
    c->nranks = nranks;
    c->progress_ns = now_ns;
    co->comm[co->ncomm++] = c;
    return c;
}

/* ---- member events ---- */

static void member_lost(struct ncg_coord *co, int conn, const char *why)
{
    struct cconn *cc = ncg_co_conn_get(co, conn);
    for (size_t ci = 0; ci < co->ncomm; ci++) {
        struct ccomm *c = co->comm[ci];
        int32_t *lost = NULL;
        size_t nl = 0;
        for (uint32_t i = 0; i < c->nranks; i++) {
            if (c->m[i].conn != conn || c->m[i].state != M_ACTIVE)
                continue;
            c->m[i].state = M_DEAD;
            c->m[i].waiting = 0;
            int32_t *nlost = realloc(lost, sizeof *lost * (nl + 1));
            if (nlost) {
                lost = nlost;
                lost[nl++] = (int32_t)i;
            } else {
                ncg_co_nomem(co);
            }
        }
        if (nl && !c->done) {
            char detail[NCG_WIRE_STR];
            if (cc)
                snprintf(detail, sizeof detail, "pid %u on %s%s%s", cc->pid, cc->host,
                         why[0] ? ", " : "", why);
            struct ncg_vcomm vc = ncg_co_vcomm(c);
            struct ncg_verdict *v = ncg_v_rank_died(&vc, lost, nl, cc ? detail : NULL);
            if (v)
                ncg_co_verdict_issue(co, c, v);
        }
        free(lost);
        ncg_co_round_check(co, c);
    }
}

static void forget_conn(struct ncg_coord *co, int conn)
{
    ncg_co_release_mark(co, conn, 0, 1); /* nobody waits for a connection that is gone */
    for (size_t ci = 0; ci < co->ncomm; ci++) {
        struct ccomm *c = co->comm[ci];
        for (uint32_t i = 0; i < c->nranks; i++)
            if (c->m[i].conn == conn) {
                c->m[i].conn = -1;
                c->m[i].waiting = 0;
            }
        ncg_co_round_check(co, c);
    }
    forget_waits(co, conn);
    ncg_conntab_close(&co->conns, conn);
}

static void drop(struct ncg_coord *co, int conn)
{
    struct cconn *cc = ncg_co_conn_get(co, conn);
    if (!cc)
        return;
    co->st.dropped++;
    forget_conn(co, conn);
    co->ops.drop(co->ops.arg, conn);
}

void ncg_coord_closed(struct ncg_coord *co, int conn, uint64_t now_ns)
{
    co->now_ns = now_ns;
    struct cconn *cc = ncg_co_conn_get(co, conn);
    if (!cc)
        return;
    char who[128];
    if (cc->h.authed)
        ncg_co_event(co, "leave: %s (%s)", ncg_co_conn_who(cc, who, sizeof who),
                     cc->bye ? "clean exit" : NCG_DIED_CLOSED);
    if (cc->h.authed && !cc->bye)
        member_lost(co, conn, NCG_DIED_CLOSED);
    forget_conn(co, conn);
}

static void on_report(struct ncg_coord *co, int conn, const struct ncg_msg_report *r,
                      uint64_t now_ns)
{
    struct cconn *cc = ncg_co_conn_get(co, conn);
    if (!cc || cc->bye) /* its process said its last goodbye: nothing it reports counts */
        return;
    for (uint32_t k = 0; k < r->n; k++) {
        const struct ncg_report_entry *e = &r->e[k];
        struct ccomm *c = comm_get(co, e->comm_id, e->nranks, now_ns);
        if (!c || e->rank >= c->nranks)
            continue;
        struct cmember *mb = &c->m[e->rank];
        if (mb->state == M_UNKNOWN) {
            mb->report_ns = now_ns;
            mb->state = M_ACTIVE;
            mb->conn = conn;
            mb->grank = e->global_rank >= 0 ? e->global_rank : cc->h.grank;
            mb->count = e->count;
            mb->progress_ns = mb->rate_t0 = now_ns;
            mb->rate_c0 = e->count;
            mb->pid = cc->pid;
            memcpy(mb->host, cc->host, sizeof mb->host);
            mb->done = e->done;
            mb->done_hi = e->done_hi;
            mb->sampled = (e->flags & NCG_REP_SAMPLED) != 0;
            mb->tid = e->tid;
            c->progress_ns = c->dprogress_ns = now_ns;
            if (c->done && c->last) { /* too late for the verdict: it still concerns this rank */
                struct ncg_msg m = {.type = NCG_MSG_VERDICT};
                m.u.verdict = c->last;
                co->ops.send(co->ops.arg, conn, &m);
                ncg_co_release_late(co, c, conn);
            }
            continue;
        }
        if (mb->conn != conn || mb->state != M_ACTIVE)
            continue; /* someone else's rank, or already gone: ignore */
        mb->report_ns = now_ns;
        if (e->count > mb->count) {
            mb->count = e->count;
            c->progress_ns = mb->progress_ns = now_ns;
        }
        if (e->done > mb->done || e->done_hi > mb->done_hi) {
            c->dprogress_ns = now_ns; /* completion moved (or what bounds it did) */
            mb->done = e->done > mb->done ? e->done : mb->done;
        }
        mb->done_hi = e->done_hi > mb->done ? e->done_hi : mb->done;
        mb->sampled = (e->flags & NCG_REP_SAMPLED) != 0;
        mb->tid = e->tid;
        if (r->nslow[k] && !c->done && !co->p.slow_off)
            ncg_co_slow_samples(co, c, e->rank, r->slow[k], r->nslow[k], now_ns);
    }
}

static void gw_member(const void *arg, uint32_t i, struct ncg_gw_member *out)
{
    const struct cmember *m = &((const struct ccomm *)arg)->m[i];
    out->left = m->state == M_GONE ? NCG_GW_LEFT : m->state == M_DEAD ? NCG_GW_DIED : NCG_GW_HERE;
    out->done = m->done;
}

/* The calls conn's threads wait in (its latest WAIT) that can only complete with a member that
 * left (gonewait.h): RANK EXITED of that member once NCG_GW_SIGHTINGS WAITs in a row carried
 * the same wait. A member that died had its RANK DIED when its connection was lost. */
static void check_gone_waits(struct ncg_coord *co, int conn)
{
    struct cconn *cc = ncg_co_conn_get(co, conn);
    for (uint32_t j = 0; j < cc->nwaits; j++) {
        const struct ncg_wait_ent *e = &cc->waits[j];
        struct ccomm *c = ncg_co_comm_find(co, e->comm_id);
        if (!c || c->done || e->rank >= c->nranks || c->m[e->rank].conn != conn ||
            c->m[e->rank].state != M_ACTIVE)
            continue;
        int32_t who = ncg_gw_target(e, c->nranks, gw_member, c);
        if (who < 0 || c->m[who].state != M_GONE)
            continue;
        uint64_t sig = ncg_gw_sig(c->id, e, who);
        cc->gw_seen = sig == cc->gw_sig ? cc->gw_seen + 1 : 1;
        cc->gw_sig = sig;
        if (cc->gw_seen < NCG_GW_SIGHTINGS)
            return;
        struct ncg_vcomm vc = ncg_co_vcomm(c);
        struct ncg_verdict *v = ncg_v_exited_wait(&vc, who, c->m[who].count, c->m[who].how, e);
        if (v)
            ncg_co_verdict_issue(co, c, v);
        cc->gw_seen = 0;
        return;
    }
    cc->gw_seen = 0;
}

static void on_wait(struct ncg_coord *co, int conn, const struct ncg_msg_wait *w)
{
    struct cconn *cc = ncg_co_conn_get(co, conn);
    struct ncg_wait_ent *n = NULL;
    if (w->n && !(n = malloc(sizeof *n * w->n)))
        return;
    if (w->n)
        memcpy(n, w->w, sizeof *n * w->n);
    free(cc->waits);
    cc->waits = n;
    cc->nwaits = w->n;
    cc->wait_gen++;
    check_gone_waits(co, conn);
}

static void p2p_verdict(struct ncg_coord *co, struct ccomm *c, const struct ncg_p2pm_rec pair[2])
{
    struct ncg_vcomm vc = ncg_co_vcomm(c);
    struct ncg_verdict *v = ncg_v_p2p(&vc, pair);
    if (!v)
        return;
    ncg_co_verdict_issue(co, c, v);
}

static void on_p2p(struct ncg_coord *co, int conn, const struct ncg_msg_p2p *p, uint64_t now_ns)
{
    struct ccomm *c = ncg_co_comm_find(co, p->comm_id);
    if (!c || c->done)
        return;
    int32_t me = -1;
    for (uint32_t i = 0; i < c->nranks; i++)
        if (c->m[i].conn == conn && c->m[i].state == M_ACTIVE &&
            (p->rank == NCG_BYE_ANYRANK || p->rank == i)) {
            me = (int32_t)i;
            break;
        }
    if (me < 0)
        return;
    for (uint32_t k = 0; k < p->n && !c->done; k++) {
        struct ncg_p2pm_rec pair[2];
        int res = ncg_p2pm_add(&c->p2p, me, c->nranks, &p->r[k], now_ns, pair);
        if (res == NCG_P2PM_DIFFER)
            p2p_verdict(co, c, pair);
        else if (res == NCG_P2PM_NOMEM)
            ncg_co_nomem(co);
        /* NCG_P2PM_FULL: unmatched records age out in the sweep */
    }
}

static void on_goodbye(struct ncg_coord *co, int conn, const struct ncg_msg_goodbye *g)
{
    for (uint32_t k = 0; k < g->n; k++) {
        struct ccomm *c = ncg_co_comm_find(co, g->comm_id[k]);
        if (!c)
            continue;
        for (uint32_t i = 0; i < c->nranks; i++)
            if (c->m[i].conn == conn && c->m[i].state == M_ACTIVE &&
                (g->rank[k] == NCG_BYE_ANYRANK || g->rank[k] == i)) {
                c->m[i].state = M_GONE;
                c->m[i].waiting = 0;
                c->m[i].how = g->flags & (NCG_BYE_ABORT | NCG_BYE_VERDICT);
                if (g->count[k] > c->m[i].count)
                    c->m[i].count = g->count[k];
                break; /* one rank per entry */
            }
        ncg_co_round_check(co, c);
    }
    if (g->flags & NCG_BYE_PROCESS) {
        ncg_co_conn_get(co, conn)->bye = 1;
        for (size_t ci = 0; ci < co->ncomm; ci++) {
            struct ccomm *c = co->comm[ci];
            for (uint32_t i = 0; i < c->nranks; i++)
                if (c->m[i].conn == conn && c->m[i].state == M_ACTIVE) {
                    c->m[i].state = M_GONE;
                    c->m[i].waiting = 0;
                    c->m[i].how = g->flags & NCG_BYE_VERDICT;
                }
            ncg_co_round_check(co, c);
        }
    }
}

void ncg_coord_message(struct ncg_coord *co, int conn, const struct ncg_msg *m, uint64_t now_ns)
{
    co->now_ns = now_ns;
    struct cconn *cc = ncg_co_conn_get(co, conn);
    if (!cc)
        return;
    if (!cc->h.authed) {
        if (m->type != NCG_MSG_HELLO || (co->p.token && m->u.hello.token != co->p.token)) {
            if (m->type != NCG_MSG_HELLO)
                ncg_co_event(co, "refused connection %d: its first message is not a HELLO", conn);
            else
                ncg_co_event(co, "refused pid %u on %s (connection %d): wrong token",
                             m->u.hello.pid, m->u.hello.host, conn);
            drop(co, conn);
            return;
        }
        cc->h.authed = 1;
        cc->pid = m->u.hello.pid;
        cc->h.grank = m->u.hello.global_rank;
        snprintf(cc->host, sizeof cc->host, "%s", m->u.hello.host);
        cc->h.last_rx_ns = now_ns;
        struct ncg_msg w = {.type = NCG_MSG_WELCOME};
        w.u.welcome.pid = co->p.pid;
        w.u.welcome.global_rank = co->p.global_rank;
        w.u.welcome.embedded = co->p.embedded;
        snprintf(w.u.welcome.host, sizeof w.u.welcome.host, "%s", co->p.host);
        co->ops.send(co->ops.arg, conn, &w);
        char who[128];
        ncg_co_event(co, "join: %s (connection %d)", ncg_co_conn_who(cc, who, sizeof who), conn);
        return;
    }
    cc->h.last_rx_ns = now_ns;
    switch (m->type) {
    case NCG_MSG_REPORT:
        on_report(co, conn, &m->u.report, now_ns);
        break;
    case NCG_MSG_ANSWER:
        ncg_co_on_answer(co, conn, &m->u.answer);
        break;
    case NCG_MSG_P2P:
        on_p2p(co, conn, &m->u.p2p, now_ns);
        break;
    case NCG_MSG_GOODBYE:
        on_goodbye(co, conn, &m->u.goodbye);
        break;
    case NCG_MSG_WAIT:
        on_wait(co, conn, &m->u.wait);
        break;
    case NCG_MSG_DONE:
        ncg_co_release_mark(co, conn, m->u.exit.comm_id, 0);
        break;
    default: /* a second HELLO, or coordinator-to-client types: misuse */
        drop(co, conn);
        break;
    }
}

static void check_exited(struct ncg_coord *co, struct ccomm *c)
{
    uint64_t mx = 0;
    int any_gone = 0;
    for (uint32_t i = 0; i < c->nranks; i++) {
        if (c->m[i].state == M_ACTIVE || c->m[i].state == M_GONE)
            mx = c->m[i].count > mx ? c->m[i].count : mx;
        any_gone |= c->m[i].state == M_GONE;
    }
    if (!any_gone)
        return;
    int32_t *who = malloc(sizeof *who * c->nranks);
    size_t n = 0;
    uint64_t fin = 0;
    if (!who) {
        ncg_co_nomem(co);
        return;
    }
    int how = -1; /* how the ranks left, when they all left the same way */
    for (uint32_t i = 0; i < c->nranks; i++)
        if (c->m[i].state == M_GONE && c->m[i].count < mx) {
            fin = c->m[i].count;
            who[n++] = (int32_t)i;
            how = how == -1 || how == c->m[i].how ? c->m[i].how : 0;
        }
    if (n) {
        struct ncg_vcomm vc = ncg_co_vcomm(c);
        struct ncg_verdict *v = ncg_v_exited(&vc, who, n, fin, mx, how);
        if (v)
            ncg_co_verdict_issue(co, c, v);
    }
    free(who);
}

static void check_lag(struct ncg_coord *co, struct ccomm *c, uint64_t now_ns)
{
    uint64_t mn = UINT64_MAX, mx = 0;
    for (uint32_t i = 0; i < c->nranks; i++) {
        if (c->m[i].state == M_UNKNOWN)
            return; /* not every member known yet */
        if (c->m[i].state != M_ACTIVE)
            continue;
        mn = c->m[i].count < mn ? c->m[i].count : mn;
        mx = c->m[i].count > mx ? c->m[i].count : mx;
    }
    double idle = (double)(now_ns - c->progress_ns) / 1e9;
    int due = ncg_v_lag_due(mn, mx, idle, co->p.lag_warn_s, co->p.lag_abort_s, &c->lag_warned);
    if (!due)
        return;
    int32_t *who = malloc(sizeof *who * c->nranks);
    if (!who) {
        ncg_co_nomem(co);
        return;
    }
    size_t n = 0;
    for (uint32_t i = 0; i < c->nranks; i++)
        if (c->m[i].state == M_ACTIVE && c->m[i].count == mn)
            who[n++] = (int32_t)i;
    struct ncg_vcomm vc = ncg_co_vcomm(c);
    struct ncg_verdict *v = ncg_v_lag(&vc, who, n, 0, due == 2, mn, mx, idle);
    free(who);
    if (!v) {
        ncg_co_nomem(co);
        return;
    }
    c->lag_warned = 1;
    ncg_co_verdict_issue(co, c, v);
}

void ncg_coord_tick(struct ncg_coord *co, uint64_t now_ns)
{
    uint64_t hb = (uint64_t)(co->p.heartbeat_timeout_s * 1e9);
    ncg_conntab_resume(&co->conns, co->last_tick_ns, now_ns, hb, 1); /* we were not running */
    co->last_tick_ns = co->now_ns = now_ns;
    for (int i = 0; i < co->conns.n; i++) {
        struct cconn *cc = ncg_conntab_at(&co->conns, i);
        enum ncg_conn_due due = ncg_conn_due(&cc->h, now_ns, hb);
        if (due == NCG_CONN_NO_HELLO) {
            ncg_co_event(co, "refused connection %d: no HELLO within 5 s", i);
            drop(co, i);
        } else if (due == NCG_CONN_SILENT) {
            char why[96], who[128];
            ncg_v_silent(why, sizeof why, now_ns - cc->h.last_rx_ns);
            ncg_co_event(co, "leave: %s (%s)", ncg_co_conn_who(cc, who, sizeof who), why);
            if (!cc->bye)
                member_lost(co, i, why);
            drop(co, i);
        }
    }
    int sweep = now_ns - co->last_sweep_ns > 1000000000ull;
    if (sweep)
        co->last_sweep_ns = now_ns;
    for (size_t ci = 0; ci < co->ncomm;) {
        struct ccomm *c = co->comm[ci];
        int live = 0, unknown = 0;
        for (uint32_t i = 0; i < c->nranks; i++) {
            live += c->m[i].state == M_ACTIVE;
            unknown += c->m[i].state == M_UNKNOWN;
        }
        ncg_co_release_check(co, c); /* its deadline */
        if (!live && !unknown && c->rel.state != NCG_REL_WAITING) {
            if (c->done && c->last) { /* its verdict stays visible a while */
                if (!c->empty_ns)
                    c->empty_ns = now_ns;
                if (now_ns - c->empty_ns < NCG_CO_KEEP_NS) {
                    ci++;
                    continue;
                }
            }
            comm_remove(co, ci);
            continue;
        }
        if (!c->done)
            check_exited(co, c);
        if (!c->done)
            check_lag(co, c, now_ns);
        if (!c->done)
            ncg_co_check_stuck(co, c, now_ns);
        if (!c->done && c->slow)
            ncg_co_slow_tick(co, c);
        if (!c->done && !c->q_active)
            ncg_co_round_start(co, c);
        if (sweep)
            ncg_p2pm_take(&c->p2p, now_ns, NCG_P2PM_AGE_NS, NULL, NULL);
        ci++;
    }
    ncg_co_check_deadlock(co);
    ncg_co_check_deadlock_streams(co);
    /* Pings let clients tell a frozen coordinator from a quiet one. */
    uint64_t ping_every = 500000000ull;
    if (now_ns - co->last_ping_ns >= ping_every) {
        co->last_ping_ns = now_ns;
        struct ncg_msg m = {.type = NCG_MSG_PING};
        for (int i = 0; i < co->conns.n; i++)
            if (ncg_conntab_authed(&co->conns, i))
                co->ops.send(co->ops.arg, i, &m);
    }
}

void ncg_coord_shutdown(struct ncg_coord *co)
{
    struct ncg_msg m = {.type = NCG_MSG_SHUTDOWN};
    for (int i = 0; i < co->conns.n; i++)
        if (ncg_conntab_authed(&co->conns, i))
            co->ops.send(co->ops.arg, i, &m);
}

size_t ncg_coord_left(const struct ncg_coord *co, uint64_t *ids, uint64_t *counts, size_t cap)
{
    size_t n = 0;
    for (size_t ci = 0; ci < co->ncomm && n < cap; ci++) {
        const struct ccomm *c = co->comm[ci];
        uint64_t low = UINT64_MAX;
        for (uint32_t i = 0; i < c->nranks; i++)
            if (c->m[i].state == M_GONE && c->m[i].count < low)
                low = c->m[i].count;
        if (c->done || low == UINT64_MAX)
            continue;
        ids[n] = c->id;
        counts[n++] = low;
    }
    return n;
}
