/* ncg-sim's process: its relays and ranks (run_proc), the loop (epoll, the queue, the buckets
 * of reports and ticks), the faults, the steady window's figures and the result sent to the
 * driver. See tests/sim/README.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "http.h"
#include "config.h"
#include "sim.h"
#include "status_tree.h"

struct vr *V;
uint32_t nv;
struct sr *R;
uint32_t nr;
uint32_t node_lo;
int ep;
uint64_t bytes_local;
uint64_t bytes_type[2][NCG_MSG_TYPE_MAX_];
uint64_t verdict_ns, root_verdicts;
char root_summary[512];
int is_root_proc;
uint64_t slow_root_ns, slow_root_n;
char slow_summary[512];

/* The steady-state window's ends: bytes sent (all, between relays), CPU, relays' busy time. */
struct snap {
    uint64_t bytes, net, reports;
    double cpu;
    uint64_t type[2][NCG_MSG_TYPE_MAX_];
};
static struct snap win0, win1;

/* ---- faults ---- */

static void kill_relay(struct sr *s)
{
    s->dead = 1;
    if (s->lfd >= 0) {
        epoll_ctl(ep, EPOLL_CTL_DEL, s->lfd, NULL);
        close(s->lfd);
    }
    if (s->up_ok)
        up_close(s);
    for (int i = 0; i < s->nc; i++)
        if (s->c[i].used)
            child_close(s, i, 0);
    for (uint32_t i = 0; i < nv; i++) {
        struct vr *v = &V[i];
        if (v->sock || v->relay != (int)(s - R) || v->dead)
            continue;
        if (v->rank % A.per_node == 0)
            v->dead = 1; /* the relay's own process */
        else
            vr_reattach(v, s->node);
    }
}

/* The relay's process stops (SIGSTOP, a host cut off): nothing of it runs any more, its
 * sockets stay open. Its node's other ranks and its child relays notice the silence. */
static void freeze_relay(struct sr *s)
{
    s->frozen = 1;
    if (s->lfd >= 0)
        epoll_ctl(ep, EPOLL_CTL_DEL, s->lfd, NULL);
    if (s->up_ok && !s->up_local)
        epoll_ctl(ep, EPOLL_CTL_DEL, s->up.fd, NULL);
    for (int i = 0; i < s->nc; i++) /* in-process links: lq_drain delivers nothing to it */
        if (s->c[i].used && s->c[i].local == C_SOCK)
            epoll_ctl(ep, EPOLL_CTL_DEL, s->c[i].p.fd, NULL);
    for (uint32_t i = 0; i < nv; i++)
        if (!V[i].sock && V[i].relay == (int)(s - R) && V[i].rank % A.per_node == 0)
            V[i].frozen = 1; /* its own rank */
}

static void kill_rank(uint32_t rank)
{
    for (uint32_t i = 0; i < nv; i++) {
        struct vr *v = &V[i];
        if (v->rank != rank || v->dead)
            continue;
        v->dead = 1;
        if (v->sock) {
            epoll_ctl(ep, EPOLL_CTL_DEL, v->peer.fd, NULL);
            ncg_peer_close(&v->peer);
        } else {
            struct sr *s = &R[v->relay];
            child_close(s, v->conn, 1);
        }
    }
}

static uint64_t sock_bytes(void)
{
    uint64_t b = 0;
    for (uint32_t i = 0; i < nr; i++) {
        b += R[i].up.ntx;
        for (int c = 0; c < R[i].nc; c++)
            b += R[i].c[c].p.ntx;
    }
    for (uint32_t i = 0; i < nv; i++)
        b += V[i].peer.ntx;
    return b;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static void snapshot(struct snap *w, int end)
{
    w->net = sock_bytes() + bytes_inproc;
    w->bytes = bytes_local + w->net;
    w->reports = 0;
    for (uint32_t i = 0; i < nv; i++)
        w->reports += V[i].reports;
    w->cpu = cpu_s();
    memcpy(w->type, bytes_type, sizeof w->type);
    for (uint32_t i = 0; i < nr; i++)
        *(end ? &R[i].busy_w1 : &R[i].busy_w0) = R[i].busy_ns;
}

/* ---- --scrape-s: the root's status endpoint, rendered in the root's loop ---- */

/* What the endpoint (net/http.c, served by the relay's own thread: relayhost.c) renders per
 * request, through the same source: the root relay's /metrics (and /status, --scrape-status),
 * each render timed. The HTTP request's parsing and the answer's write are left out: a fixed
 * few system calls per scrape, against a render that reads every comm, child and own rank. */
static struct ncg_tree_src scr_src;
static int scr_on;
static uint64_t scr_next;
static double *scr_ms;
static uint32_t scr_n, scr_cap, scr_not_ready;
static uint64_t scr_metrics_bytes, scr_status_bytes;

static uint64_t scr_asked;  /* a /status waits for the root's figures gather: asked then */
static double scr_acc;      /* ... the render time spent on it so far, in ms */
static double scr_wait_max; /* the longest such wait, request to answer, in ms */

static void scr_done(double ms)
{
    if (scr_n == scr_cap) {
        scr_cap = scr_cap ? scr_cap * 2 : 256;
        scr_ms = realloc(scr_ms, sizeof *scr_ms * scr_cap);
    }
    scr_ms[scr_n++] = ms;
}

/* The root's /status, as the endpoint renders it: again on each pass of the loop while it is
 * not ready (the figures gather in flight), until its deadline. 1: answered. */
static int scrape_status(uint64_t t0)
{
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    struct ncg_buf st = {0};
    int rc =
        ncg_tree_status_render(&scr_src, NULL, t0, (double)wall.tv_sec + wall.tv_nsec / 1e9, &st);
    if (rc == 0)
        scr_status_bytes = st.len;
    ncg_buf_free(&st);
    return rc != NCG_HTTP_NOT_READY || t0 - scr_asked >= NCG_HTTP_RENDER_TIMEOUT_NS;
}

static void scrape(uint64_t t)
{
    int ri = relay_index(0);
    if (ri < 0)
        return;
    if (scr_asked) { /* the last scrape's /status is still waiting: rendered again */
        uint64_t t0 = now_ns();
        int ok = scrape_status(t0);
        scr_acc += (double)(now_ns() - t0) / 1e6;
        if (ok) {
            double w = (double)(now_ns() - scr_asked) / 1e6;
            scr_wait_max = w > scr_wait_max ? w : scr_wait_max;
            scr_asked = 0;
            scr_done(scr_acc);
        }
        return;
    }
    if (t < scr_next)
        return;
    scr_next += (uint64_t)(A.scrape_s * 1e9);
    if (scr_next < t)
        scr_next = t + (uint64_t)(A.scrape_s * 1e9);
    if (!scr_on) {
        struct ncg_http_source src;
        ncg_tree_src_init(&scr_src, R[ri].r, 0, 0, nnodes, A.fanout, &src);
        scr_on = 1;
    }
    uint64_t t0 = now_ns();
    struct ncg_buf b = {0};
    if (ncg_tree_metrics_render(&scr_src, t0, &b) == 0)
        scr_metrics_bytes = b.len;
    ncg_buf_free(&b);
    if (A.scrape_status) {
        scr_asked = t0;
        if (!scrape_status(t0)) {
            scr_not_ready++;
            scr_acc = (double)(now_ns() - t0) / 1e6;
            return;
        }
        scr_asked = 0;
    }
    scr_done((double)(now_ns() - t0) / 1e6);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The loop's timed actions, run at the top of each pass (at least every 5 ms: the loop's
 * epoll_wait never waits past the next bucket): the steady window's ends, the fault and, in
 * the root process, the scrapes of its endpoint (--scrape-s). */
static int killed, w0, w1;
static void timed(uint64_t t)
{
    if (is_root_proc && A.scrape_s > 0) {
        if (!scr_next)
            scr_next = T0 + (uint64_t)(A.scrape_s * 1e9);
        scrape(t);
    }
    if (!w0 && t >= w_start) {
        w0 = 1;
        snapshot(&win0, 0);
    }
    if (!w1 && t >= w_end) {
        w1 = 1;
        snapshot(&win1, 1);
    }
    if (!killed && t_event && t >= t_event && A.stop_relay >= 0) {
        killed = 1;
        int ri = relay_index((uint32_t)A.stop_relay);
        if (ri >= 0)
            freeze_relay(&R[ri]);
    }
    if (!killed && t_event && t >= t_event && (A.kill_rank >= 0 || A.kill_relay >= 0)) {
        killed = 1;
        int64_t kn = A.kill_relay >= 0 ? A.kill_relay : -1;
        if (A.kill_rank >= 0 && A.kill_rank % A.per_node == 0)
            kn = A.kill_rank / A.per_node; /* a node's first rank holds its relay */
        if (kn >= 0) {
            int ri = relay_index((uint32_t)kn);
            if (ri >= 0)
                kill_relay(&R[ri]);
        } else {
            kill_rank((uint32_t)A.kill_rank);
        }
    }
}

/* The ticks' buckets: every 5 ms one of NB buckets runs, its ranks report and its relays (and
 * the root in every bucket) tick, so each does so every 100 ms. A bucket is a contiguous
 * twentieth of this process's ranks and of its relays (in node order): a node's ranks report
 * together, to a relay whose state is then in the cache, and a bucket's relays are those of its
 * ranks (by rank % NB, every bucket would touch every relay: cache misses dominated at 131,072
 * ranks). vb / rb: indexes into V / R grouped by bucket, bucket b at [off[b], off[b + 1]). */
#define NB 20u
static uint32_t *vb, *rb, vb_off[NB + 1], rb_off[NB + 1];

static void bucket_fill(uint32_t n, uint32_t **ix, uint32_t *off, int relays)
{
    *ix = malloc(sizeof **ix * (n + NB)); /* the root relay is in every bucket */
    memset(off, 0, sizeof *off * (NB + 1));
    for (uint32_t b = 0, k = 0; b < NB; b++) {
        off[b] = k;
        for (uint32_t i = 0; i < n; i++)
            if ((relays && R[i].node == 0) || (uint64_t)i * NB / n == b)
                (*ix)[k++] = i;
        off[b + 1] = k;
    }
}

static void buckets(void)
{
    bucket_fill(nv, &vb, vb_off, 0);
    bucket_fill(nr, &rb, rb_off, 1);
}

void run_proc(int wfd, int rel, int proc)
{
    is_root_proc = proc == 0;
    signal(SIGPIPE, SIG_IGN);
    ep = epoll_create1(EPOLL_CLOEXEC);
    /* this process's nodes */
    R = calloc(nnodes, sizeof *R);
    V = calloc(A.ranks, sizeof *V);
    /* Only a relay some node links to listens: its children, and (a relay or a rank whose
     * relay died) reattaching ones, which go to the dead relay's parent, a parent too. */
    uint8_t *has_kids = calloc(nnodes, 1);
    for (uint32_t n = 1; n < nnodes; n++)
        has_kids[parent_of(n)] = 1;
    /* Worker w hosts a contiguous range of nodes 1..nnodes-1: the tree's subtrees are
     * contiguous (ncg_relay_parent), so all but a few links between relays are in-process. */
    uint32_t lo = 0, hi = 1;
    if (proc > 0) {
        lo = 1 + (uint32_t)((uint64_t)(nnodes - 1) * (uint32_t)(proc - 1) / A.workers);
        hi = 1 + (uint32_t)((uint64_t)(nnodes - 1) * (uint32_t)proc / A.workers);
    }
    node_lo = lo;
    for (uint32_t n = lo; n < hi; n++) {
        struct sr *s = &R[nr];
        s->node = n;
        s->up_node = n ? parent_of(n) : 0;
        s->up.fd = -1;
        /* NCCLGUARD_SLOW* as a guarded process reads them; the rest the simulator's own */
        struct ncg_relay_params p = ncg_relay_params_of(&ncg_cfg);
        p.token = TOKEN;
        p.interval_ms = 100;
        p.heartbeat_timeout_s = A.hb_s;
        p.node = n;
        p.root = n == 0;
        p.embedded = 1;
        p.lag_warn_s = 60; /* the in-job checker's default; no LAG error, no STUCK, no exit wait */
        p.lag_abort_s = p.stuck_warn_s = p.stuck_abort_s = p.exit_wait_s = 0;
        p.pid = 100000 + n * A.per_node; /* the node's first rank's process */
        snprintf(p.host, sizeof p.host, "n%u", n);
        struct ncg_relay_ops ops = sim_relay_ops(nr);
        s->r = ncg_relay_new(&p, &ops);
        s->lfd = -1;
        if (has_kids[n]) { /* a leaf's listener would never be connected to: no fd for it */
            struct sockaddr_un a;
            socklen_t len;
            sock_name(n, &a, &len);
            s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            if (bind(s->lfd, (struct sockaddr *)&a, len) < 0 || listen(s->lfd, 512) < 0) {
                perror("ncg-sim: bind/listen");
                _exit(2);
            }
            ep_add(s->lfd, ekey(EK_LISTEN, nr, 0));
        }
        for (uint32_t k = 0; k < A.per_node; k++) {
            uint32_t rank = n * A.per_node + k;
            if (rank >= A.ranks)
                break;
            struct vr *v = &V[nv++];
            v->rank = rank;
            v->node = v->at = n;
            v->relay = (int)nr;
            v->peer.fd = -1;
            v->conn = conn_new(s);
            s->c[v->conn].local = 1;
            s->c[v->conn].vr = (int)(v - V);
            ncg_relay_connected(s->r, v->conn, now_ns());
        }
        nr++;
    }
    free(has_kids);
    while (now_ns() < T0)
        usleep(1000);
    for (uint32_t i = 0; i < nr; i++)
        if (R[i].node)
            up_attach(&R[i]);
    for (uint32_t i = 0; i < nv; i++) {
        V[i].rx_ns = now_ns();
        vr_hello(&V[i]);
    }
    const uint64_t slot_ns = 5000000ull;
    uint64_t next = T0, tick_no = 0;
    buckets();
    struct epoll_event evs[256];
    while (1) {
        uint64_t t = now_ns();
        if (t >= t_end)
            break;
        timed(t);
        int to = t >= next ? 0 : (int)((next - t) / 1000000ull) + 1;
        int n = epoll_wait(ep, evs, 256, to);
        for (int i = 0; i < n; i++) {
            uint64_t k = evs[i].data.u64;
            int kind = (int)(k >> 56);
            uint32_t idx = (uint32_t)((k >> 24) & 0xffffffffu), conn = (uint32_t)(k & 0xffffffu);
            if (kind == EK_LISTEN) {
                struct sr *s = &R[idx];
                for (int j = 0; j < 64 && !s->dead; j++) {
                    int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (fd < 0)
                        break;
                    int c = conn_new(s);
                    ncg_peer_init(&s->c[c].p, fd);
                    ep_add(fd, ekey(EK_CHILD, idx, (uint32_t)c));
                    BUSY(s, ncg_relay_connected(s->r, c, now_ns()));
                }
            } else if (kind == EK_CHILD) {
                struct sr *s = &R[idx];
                if (conn < (uint32_t)s->nc && s->c[conn].used && !s->c[conn].local)
                    peer_read(&s->c[conn].p, kind, idx, conn);
            } else if (kind == EK_UP) {
                if (R[idx].up_ok)
                    peer_read(&R[idx].up, kind, idx, 0);
            } else if (kind == EK_VR) {
                if (V[idx].sock)
                    peer_read(&V[idx].peer, kind, idx, 0);
            }
            lq_drain();
        }
        t = now_ns();
        if (t >= next) { /* one of NB buckets: each rank reports, each relay ticks, every 100 ms */
            uint32_t b = (uint32_t)(tick_no % NB);
            for (uint32_t j = vb_off[b]; j < vb_off[b + 1]; j++) {
                struct vr *v = &V[vb[j]];
                if (v->dead || v->frozen)
                    continue;
                if (v->rx_ns && t - v->rx_ns > (uint64_t)(A.hb_s * 1e9) && v->at) {
                    if (v->sock) { /* silent checker: one level up */
                        epoll_ctl(ep, EPOLL_CTL_DEL, v->peer.fd, NULL);
                        ncg_peer_close(&v->peer);
                        v->sock = 0;
                    }
                    vr_reattach(v, v->at);
                }
                vr_report(v, t);
            }
            for (uint32_t j = rb_off[b]; j < rb_off[b + 1]; j++) {
                struct sr *s = &R[rb[j]];
                if (s->dead || s->frozen)
                    continue;
                BUSY(s, ncg_relay_tick(s->r, t)); /* the root: every 5 ms */
                if (ncg_relay_parent_silent(s->r, t) && s->up_ok)
                    up_lost(s);
            }
            tick_no++;
            next += slot_ns;
            /* Late buckets run at once, one per pass of the loop (the events between them):
             * each rank keeps its 10 REPORTs a second while the process keeps up on average;
             * more than an interval behind, the schedule restarts from now (reports lost,
             * reports_per_rank_per_s says it). */
            if (next + 100000000ull < t)
                next = t + slot_ns;
        }
        lq_drain();
        flush_all();
    }
    if (!w1)
        snapshot(&win1, 1);
    struct result res = {0};
    res.first_ns = UINT64_MAX;
    res.slow_first_ns = UINT64_MAX;
    res.slow_named = -1;
    for (uint32_t i = 0; i < nv; i++) {
        struct vr *v = &V[i];
        if (v->dead || v->frozen)
            continue;
        if (v->slows) {
            res.slow_notified++;
            res.slow_dups += v->slows - 1;
            if (res.slow_named < 0)
                res.slow_named = v->slow_named;
            else if (v->slow_named != res.slow_named)
                res.slow_wrong++;
            res.slow_first_ns = v->slow_ns < res.slow_first_ns ? v->slow_ns : res.slow_first_ns;
            res.slow_last_ns = v->slow_ns > res.slow_last_ns ? v->slow_ns : res.slow_last_ns;
        }
        res.expected++;
        res.narrowed_ranks += v->narrowed != 0;
        if (!v->verdicts)
            continue;
        res.notified++;
        res.dups += v->verdicts - 1;
        if (!res.kind) {
            res.kind = v->kind;
            snprintf(res.subject, sizeof res.subject, "%s", v->subject);
        } else if (v->kind != res.kind || strcmp(v->subject, res.subject)) {
            res.wrong++;
        }
        res.first_ns = v->got_ns < res.first_ns ? v->got_ns : res.first_ns;
        res.last_ns = v->got_ns > res.last_ns ? v->got_ns : res.last_ns;
    }
    double win = (double)(w_end - w_start) / 1e9;
    for (uint32_t i = 0; i < nr; i++) {
        double b = (double)(R[i].busy_w1 - R[i].busy_w0) / 1e9 / win;
        if (b > res.relay_busy_max) {
            res.relay_busy_max = b;
            res.relay_busy_node = R[i].node;
        }
        if (R[i].node == 0) {
            int fan = 0;
            for (int c = 0; c < R[i].nc; c++)
                fan += R[i].c[c].used;
            res.fan_in = (uint32_t)fan;
        }
    }
    res.bytes_win = win1.bytes - win0.bytes;
    res.net_win = win1.net - win0.net;
    res.reports_win = win1.reports - win0.reports;
    for (int d = 0; d < 2; d++)
        for (int t = 0; t < NCG_MSG_TYPE_MAX_; t++)
            res.type_win[d][t] = win1.type[d][t] - win0.type[d][t];
    res.cpu_win = win1.cpu - win0.cpu;
    res.verdict_ns = verdict_ns;
    res.root_verdicts = root_verdicts;
    for (uint32_t i = 0; i < nr; i++)
        if (R[i].node == 0) {
            struct ncg_relay_stats st;
            ncg_relay_get_stats(R[i].r, &st);
            res.verified = st.verified;
            res.root_rounds = st.rounds;
            res.root_narrowed = st.targeted;
        }
    snprintf(res.summary, sizeof res.summary, "%s", root_summary);
    res.slow_root_ns = slow_root_ns;
    res.slow_root_n = slow_root_n;
    snprintf(res.slow_summary, sizeof res.slow_summary, "%s", slow_summary);
    res.scrapes = scr_n;
    res.scrapes_not_ready = scr_not_ready;
    res.status_wait_ms_max = scr_wait_max;
    res.metrics_bytes = scr_metrics_bytes;
    res.status_bytes = scr_status_bytes;
    if (scr_n) {
        qsort(scr_ms, scr_n, sizeof *scr_ms, cmp_d);
        res.scrape_ms_median =
            scr_n % 2 ? scr_ms[scr_n / 2] : (scr_ms[scr_n / 2 - 1] + scr_ms[scr_n / 2]) / 2;
        res.scrape_ms_max = scr_ms[scr_n - 1];
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    res.rss_kb = ru.ru_maxrss;
    if (write(wfd, &res, sizeof res) != (ssize_t)sizeof res)
        _exit(3);
    char c;
    while (read(rel, &c, 1) < 0 && errno == EINTR) /* every process stopped: exit together */
        ;
    _exit(0);
}
