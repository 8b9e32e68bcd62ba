/* ncg-sim: N virtual ranks (no NCCL) through the relay tree's real code and protocol on one
 * machine. One root process (node 0's relay and ranks) and a few worker processes hosting the
 * other nodes; every relay (interpose/relay/relay.c) listens on an abstract Unix socket, links to
 * its parent over it (interpose/net/channel.c's peers), and serves its node's virtual ranks
 * over an in-process queue of encoded frames (the client protocol, encoded and decoded like on a
 * socket). Faults: a rank's death, a relay process's death (its ranks reattach to the dead
 * relay's parent). Prints one JSON object (--json). See tests/sim/README.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "channel.h"
#include "ncclguard/shm.h"
#include "relay.h"
#include "verdict.h"
#include "wire.h"

#define TOKEN 0x5eed5eedull
#define RING 1024u /* records a rank keeps (the shim's ring) */
#define COMM0 0x51a0000000000000ull

static struct {
    uint32_t ranks, per_node, comms, fanout, workers;
    double rate, seconds, warm_s, event_s;
    int64_t mismatch_rank, kill_rank, kill_relay;
    uint64_t mismatch_slot;
    int json;
    int64_t stop_relay;
    double hb_s;
    int frames;
    int64_t deadlock_rank;
    double after_s; /* the run goes on this long after the fault */
} A = {1024, 8, 1, 16, 2, 100, 10, 2, 3, -1, -1, -1, 0, 0, -1, 10, 0, -1, 4};

static uint32_t nnodes;
static uint64_t T0, t_event, t_end, w_start, w_end;
static pid_t driver;

/* --deadlock-rank R: from the event on every rank is blocked in slot dl_slot of comm 0 except
 * R, blocked in slot dl_slot of comm 1 first (it takes them in the other order): none
 * completes it, and each sends a WAIT every interval, as blocked processes do. */
static uint64_t dl_slot;

/* Collective calls rank issued on comm c (0-based from COMM0) by time t. */
static uint64_t count_at(uint64_t t);
static uint64_t issued_at(uint32_t rank, uint32_t c, uint64_t t)
{
    if (A.deadlock_rank < 0 || t < t_event)
        return count_at(t);
    int first = (int64_t)rank == A.deadlock_rank ? c == 1 : c == 0; /* the call it is blocked in */
    return dl_slot + (uint64_t)first;
}

static uint64_t now_ns(void)
{
    return ncg_now_ns();
}

static uint32_t parent_of(uint32_t node)
{
    return ncg_relay_parent(node, nnodes, A.fanout);
}

/* ---- the calls: one chained digest per variant (the odd rank's differs from its slot) ---- */

static uint64_t *chain_ok, *chain_odd;
static uint64_t nslots;

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void call_of(uint64_t slot, int odd, struct ncg_call *c)
{
    c->seq = slot;
    c->func = NCG_F_ALLREDUCE;
    c->count = 1024 + slot % 7;
    c->dtype = 7;
    c->redop = 0;
    c->root = -1;
    if (odd && slot == A.mismatch_slot) {
        c->func = NCG_F_BROADCAST;
        c->count = 1;
        c->root = 0;
        c->redop = NCG_REDOP_NONE;
    }
}

static void chains_init(void)
{
    nslots = (uint64_t)(A.rate * (A.seconds + 30)) + 2 * RING;
    chain_ok = malloc(sizeof *chain_ok * nslots);
    chain_odd = malloc(sizeof *chain_odd * nslots);
    uint64_t a = 0, b = 0;
    for (uint64_t s = 0; s < nslots; s++) {
        struct ncg_call c;
        call_of(s, 0, &c);
        a = mix(a ^ mix(c.func * 131 + c.count));
        call_of(s, 1, &c);
        b = mix(b ^ mix(c.func * 131 + c.count));
        chain_ok[s] = a;
        chain_odd[s] = b;
    }
}

/* ---- the process's objects ---- */

struct vr {                     /* a virtual rank: one client process holding one rank */
    uint32_t rank, node, at;    /* at: the node of the relay it talks to */
    uint8_t dead, sock, frozen; /* frozen: its process stopped (--stop-relay) */
    uint64_t rx_ns;             /* its checker was last heard from */
    int relay, conn;            /* in-process link: relay index here and conn id there */
    struct ncg_peer peer;
    uint32_t verdicts;
    uint32_t narrowed; /* QUERYs limited to representatives that reached it */
    uint8_t dirty;     /* its socket has bytes queued, in the flush list */
    uint64_t reports;  /* REPORTs it sent */
    uint64_t got_ns;
    uint8_t kind;
    char subject[NCG_WIRE_STR];
};

enum { C_SOCK = 0, C_RANK = 1, C_RELAY = 2 }; /* a child connection's kind (sconn.local) */
struct sconn {
    uint8_t used, local, closing, dirty; /* dirty: in the flush list */
    int vr;                              /* C_RANK: the virtual rank; C_RELAY: the child relay */
    uint32_t gen;                        /* in-process link: frames for an older one are dropped */
    struct ncg_peer p; /* a socket; in-process, only its REPORT references (tref, rref) */
};

struct sr { /* a relay */
    uint32_t node, up_node;
    struct ncg_relay *r;
    int lfd;
    uint8_t dead, up_ok, frozen, up_dirty;
    uint8_t up_local; /* the link up is in-process: conn up_conn of the parent here */
    int up_conn;      /* (its frames go through the queue; up keeps only REPORT references) */
    uint32_t up_gen;
    struct ncg_peer up;
    struct sconn *c;
    int nc;
    uint64_t busy_ns, busy_w0, busy_w1;
};

static struct vr *V;
static uint32_t nv;
static struct sr *R;
static uint32_t nr;
static int ep;
static uint64_t bytes_local;
/* Bytes sent per frame type, [0] node-local (the queue), [1] between relays (--frames). */
static uint64_t bytes_type[2][NCG_MSG_TYPE_MAX_];
static uint64_t verdict_ns, root_verdicts;
static char root_summary[512];
static int is_root_proc;
/* The steady-state window's ends: bytes sent (all, between relays), CPU, relays' busy time. */
struct snap {
    uint64_t bytes, net, reports;
    double cpu;
    uint64_t type[2][NCG_MSG_TYPE_MAX_];
};
static struct snap win0, win1;

/* Relays hosted here by node: a contiguous range [node_lo, node_lo + nr) (run_proc). */
static uint32_t node_lo;
static int relay_index(uint32_t node)
{
    return node >= node_lo && node - node_lo < nr ? (int)(node - node_lo) : -1;
}

/* ---- in-process queue of encoded frames ---- */

/* Where a queued frame goes: a virtual rank; a relay's child connection (from one of its
 * ranks, or from a child relay hosted here); a relay's link up (from its parent hosted here).
 * LQ_EOF_*: the other end closed an in-process relay link (a socket's EOF, after its frames). */
enum { LQ_RANK, LQ_CHILD, LQ_UP, LQ_EOF_CHILD, LQ_EOF_UP };
struct lq_hdr {
    int kind;
    int idx, conn;
    uint32_t gen; /* relay links: the link's generation */
    uint32_t len;
};
static uint8_t *lq;
static size_t lq_len, lq_cap, lq_pos;
static uint64_t bytes_inproc; /* between relays, through the queue */

static void lq_reserve(size_t need)
{
    if (lq_cap - lq_len < need) {
        lq_cap = lq_cap ? lq_cap * 2 : (1u << 20);
        while (lq_cap - lq_len < need)
            lq_cap *= 2;
        lq = realloc(lq, lq_cap);
        if (!lq) {
            fprintf(stderr, "ncg-sim: out of memory\n");
            _exit(2);
        }
    }
}

/* Queues m encoded as on a socket. ref: the sending end's REPORT reference (NULL for frames
 * to ranks). Its bytes count as between relays (net: a relay link) or node-local (a rank's);
 * the caller says which (reading the destination here would be one more cache miss). */
static void lq_push(int kind, int idx, int conn, uint32_t gen, int net, const struct ncg_msg *m,
                    struct ncg_report_ref *ref)
{
    size_t room = 40000;
    long n;
    for (;;) {
        lq_reserve(sizeof(struct lq_hdr) + room);
        n = ncg_wire_encode_ref(m, lq + lq_len + sizeof(struct lq_hdr), room, ref);
        if (n != -ENOSPC || room > NCG_WIRE_MAX_PAYLOAD)
            break;
        room = NCG_WIRE_HDR + NCG_WIRE_MAX_PAYLOAD; /* a large verdict */
    }
    if (n <= 0)
        return;
    struct lq_hdr h = {kind, idx, conn, gen, (uint32_t)n};
    memcpy(lq + lq_len, &h, sizeof h);
    lq_len += sizeof h + (size_t)n;
    *(net ? &bytes_inproc : &bytes_local) += (uint64_t)n;
    bytes_type[net][m->type] += (uint64_t)n;
}

static void lq_eof(int kind, int idx, int conn, uint32_t gen)
{
    lq_reserve(sizeof(struct lq_hdr));
    struct lq_hdr h = {kind, idx, conn, gen, 0};
    memcpy(lq + lq_len, &h, sizeof h);
    lq_len += sizeof h;
}

/* The sockets with bytes queued, as epoll keys (ekey), and the child connections a relay
 * dropped: the loop flushes and closes these after each batch of events instead of walking
 * every socket of the process. */
static uint64_t *fl, *fl_next;
static size_t nfl, capfl, nfl_next, capfl_next;
static uint64_t *drops;
static size_t ndrops, capdrops;

static void list_add(uint64_t **l, size_t *n, size_t *cap, uint64_t key)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        *l = realloc(*l, sizeof **l * *cap);
        if (!*l) {
            fprintf(stderr, "ncg-sim: out of memory\n");
            _exit(2);
        }
    }
    (*l)[(*n)++] = key;
}

/* Queues m on a socket peer, its bytes counted per type; key names the socket for the flush,
 * *dirty its flag (in the flush list once). */
static void net_send(struct ncg_peer *p, const struct ncg_msg *m, uint64_t key, uint8_t *dirty)
{
    size_t before = p->txlen;
    if (ncg_peer_send(p, m) == 0)
        bytes_type[1][m->type] += p->txlen - before;
    if (p->txlen && !*dirty) {
        *dirty = 1;
        list_add(&fl, &nfl, &capfl, key);
    }
}

/* ---- epoll keys ---- */

enum { EK_LISTEN = 1, EK_CHILD = 2, EK_UP = 3, EK_VR = 4 };
static uint64_t ekey(int kind, uint32_t idx, uint32_t conn)
{
    return ((uint64_t)kind << 56) | ((uint64_t)idx << 24) | conn;
}

static void ep_add(int fd, uint64_t key)
{
    struct epoll_event e = {.events = EPOLLIN, .data.u64 = key};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

static void sock_name(uint32_t node, struct sockaddr_un *a, socklen_t *len)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "ncgsim-%d-%u", (int)driver, node);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static int sock_connect(uint32_t node)
{
    struct sockaddr_un a;
    socklen_t len;
    sock_name(node, &a, &len);
    for (int tries = 0; tries < 2000; tries++) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -1;
        if (connect(fd, (struct sockaddr *)&a, len) == 0) {
            ncg_set_nonblock(fd);
            return fd;
        }
        close(fd);
        if (errno != ECONNREFUSED && errno != ENOENT && errno != EAGAIN)
            return -1;
        usleep(1000);
    }
    return -1;
}

/* ---- relays: callbacks ---- */

static struct sr *relay_of(void *arg)
{
    return &R[(uintptr_t)arg];
}

static void op_send(void *arg, int conn, const struct ncg_msg *m)
{
    struct sr *s = relay_of(arg);
    if (conn < 0 || conn >= s->nc || !s->c[conn].used || s->c[conn].closing)
        return;
    struct sconn *c = &s->c[conn];
    if (c->local == C_RANK)
        lq_push(LQ_RANK, c->vr, 0, 0, 0, m, NULL);
    else if (c->local == C_RELAY)
        lq_push(LQ_UP, c->vr, 0, c->gen, 1, m, &c->p.tref);
    else
        net_send(&s->c[conn].p, m, ekey(EK_CHILD, (uint32_t)(s - R), (uint32_t)conn),
                 &s->c[conn].dirty);
}

static void op_drop(void *arg, int conn)
{
    struct sr *s = relay_of(arg);
    if (conn >= 0 && conn < s->nc && s->c[conn].used && !s->c[conn].closing) {
        s->c[conn].closing = 1;
        list_add(&drops, &ndrops, &capdrops, ekey(EK_CHILD, (uint32_t)(s - R), (uint32_t)conn));
    }
}

static void op_up(void *arg, const struct ncg_msg *m)
{
    struct sr *s = relay_of(arg);
    if (s->up_ok && s->up_local)
        lq_push(LQ_CHILD, relay_index(s->up_node), s->up_conn, s->up_gen, 1, m, &s->up.tref);
    else if (s->up_ok)
        net_send(&s->up, m, ekey(EK_UP, (uint32_t)(s - R), 0), &s->up_dirty);
}

static void op_event(void *arg, const char *line)
{
    (void)arg;
    if (!strncmp(line, "verdict:", 8) && !verdict_ns) {
        verdict_ns = now_ns();
        snprintf(root_summary, sizeof root_summary, "%s", line + 9);
    }
    if (!strncmp(line, "verdict:", 8))
        root_verdicts++;
}

static uint32_t link_gen;
static int conn_new(struct sr *s)
{
    for (int i = 0; i < s->nc; i++)
        if (!s->c[i].used) {
            memset(&s->c[i], 0, sizeof s->c[i]);
            s->c[i].used = 1;
            s->c[i].gen = ++link_gen;
            s->c[i].p.fd = -1;
            return i;
        }
    s->c = realloc(s->c, sizeof *s->c * (size_t)(s->nc + 8));
    memset(s->c + s->nc, 0, sizeof *s->c * 8);
    s->nc += 8;
    return conn_new(s);
}

#define BUSY(s, call)                                                                              \
    do {                                                                                           \
        uint64_t t0_ = now_ns();                                                                   \
        call;                                                                                      \
        (s)->busy_ns += now_ns() - t0_;                                                            \
    } while (0)

/* Links relay s to its parent s->up_node: in-process when this process hosts the parent (a
 * child connection of kind C_RELAY there, as if accepted), else through its listener. */
static void up_attach(struct sr *s)
{
    int pi = relay_index(s->up_node);
    if (pi >= 0 && !R[pi].dead) {
        struct sr *ps = &R[pi];
        int c = conn_new(ps);
        ps->c[c].local = C_RELAY;
        ps->c[c].vr = (int)(s - R);
        ncg_peer_init(&s->up, -1); /* fresh REPORT references, as a new socket's */
        s->up_local = 1;
        s->up_conn = c;
        s->up_gen = ps->c[c].gen;
        s->up_ok = 1;
        if (!ps->frozen) /* a stopped parent accepts nothing (its backlog would hold it) */
            BUSY(ps, ncg_relay_connected(ps->r, c, now_ns()));
        BUSY(s, ncg_relay_parent_up(s->r, now_ns()));
        return;
    }
    int fd = sock_connect(s->up_node);
    if (fd < 0) {
        fprintf(stderr, "ncg-sim: relay %u cannot reach node %u\n", s->node, s->up_node);
        return;
    }
    ncg_peer_init(&s->up, fd);
    s->up_ok = 1;
    ep_add(fd, ekey(EK_UP, (uint32_t)(s - R), 0));
    BUSY(s, ncg_relay_parent_up(s->r, now_ns()));
}

/* Closes s's link up (its parent sees EOF after what was sent); no callback. */
static void up_close(struct sr *s)
{
    if (s->up_local)
        lq_eof(LQ_EOF_CHILD, relay_index(s->up_node), s->up_conn, s->up_gen);
    else
        epoll_ctl(ep, EPOLL_CTL_DEL, s->up.fd, NULL);
    ncg_peer_close(&s->up);
    s->up_ok = 0;
    s->up_local = 0;
}

static void up_lost(struct sr *s)
{
    up_close(s);
    BUSY(s, ncg_relay_parent_down(s->r));
    if (s->up_node == 0)
        return;                         /* the root is gone: nothing above it */
    s->up_node = parent_of(s->up_node); /* reattach to the dead relay's parent */
    up_attach(s);
}

static void child_close(struct sr *s, int conn, int tell)
{
    struct sconn *c = &s->c[conn];
    if (tell)
        BUSY(s, ncg_relay_closed(s->r, conn, now_ns()));
    if (c->local == C_SOCK) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c->p.fd, NULL);
        ncg_peer_close(&c->p);
    } else if (c->local == C_RELAY) { /* the child relay sees EOF after what was sent */
        lq_eof(LQ_EOF_UP, c->vr, 0, c->gen);
    }
    c->used = 0;
}

/* ---- virtual ranks ---- */

static uint64_t count_at(uint64_t t)
{
    if (t <= T0)
        return 0;
    uint64_t n = (uint64_t)((double)(t - T0) / 1e9 * A.rate);
    return n < nslots ? n : nslots - 1;
}

static void vr_send(struct vr *v, const struct ncg_msg *m)
{
    if (v->dead || v->frozen)
        return;
    if (v->sock)
        net_send(&v->peer, m, ekey(EK_VR, (uint32_t)(v - V), 0), &v->dirty);
    else
        lq_push(LQ_CHILD, v->relay, v->conn, 0, 0, m, &v->peer.tref); /* the queue: its link */
}

static void vr_hello(struct vr *v)
{
    struct ncg_msg h = {.type = NCG_MSG_HELLO};
    h.u.hello.token = TOKEN;
    h.u.hello.pid = 100000 + v->rank;
    h.u.hello.global_rank = (int32_t)v->rank;
    snprintf(h.u.hello.host, sizeof h.u.hello.host, "n%u", v->node);
    vr_send(v, &h);
}

/* The messages a virtual rank sends are built in static buffers whose unused tails stay zero:
 * only the header and the n entries sent are written (a struct ncg_msg is 11 KB, and zeroing it
 * per frame was the simulator's own largest cost at scale). */
static void vr_report(struct vr *v, uint64_t t)
{
    static struct ncg_msg m, w;
    m.type = NCG_MSG_REPORT;
    m.u.report.n = A.comms;
    for (uint32_t c = 0; c < A.comms; c++) {
        uint64_t n = issued_at(v->rank, c, t), d = n;
        if (A.deadlock_rank >= 0 && t >= t_event)
            d = dl_slot;
        m.u.report.e[c] = (struct ncg_report_entry){.comm_id = COMM0 + c,
                                                    .nranks = A.ranks,
                                                    .rank = v->rank,
                                                    .count = n,
                                                    .done = d,
                                                    .done_hi = d,
                                                    .global_rank = (int32_t)v->rank,
                                                    .tid = v->rank};
    }
    vr_send(v, &m);
    v->reports++;
    if (A.deadlock_rank >= 0 && t >= t_event + 100000000ull) { /* blocked for an interval */
        w.type = NCG_MSG_WAIT;
        w.u.wait.n = 1;
        struct ncg_wait_ent *e = &w.u.wait.w[0];
        *e = (struct ncg_wait_ent){.comm_id = COMM0 + ((int64_t)v->rank == A.deadlock_rank),
                                   .rank = v->rank,
                                   .tid = v->rank};
        call_of(dl_slot, 0, &e->call);
        snprintf(e->site, sizeof e->site, "train_step+0x5d (sim+0x115d)");
        vr_send(v, &w);
    }
}

static void vr_answer(struct vr *v, const struct ncg_msg_query *q, uint64_t t)
{
    static struct ncg_msg m; /* see vr_report */
    m.type = NCG_MSG_ANSWER;
    m.u.answer.comm_id = q->comm_id;
    m.u.answer.qid = q->qid;
    m.u.answer.rank = v->rank;
    m.u.answer.n = q->n;
    uint64_t n = issued_at(v->rank, (uint32_t)(q->comm_id - COMM0), t);
    int odd = (int64_t)v->rank == A.mismatch_rank && q->comm_id == COMM0;
    for (uint32_t k = 0; k < q->n; k++) {
        struct ncg_answer *a = &m.u.answer.a[k];
        uint64_t s = q->slot[k];
        memset(a, 0, offsetof(struct ncg_answer, site) + 1);
        a->call.seq = s;
        if (s >= n) {
            a->status = NCG_ANS_NONE;
        } else if (n - s > RING) {
            a->status = NCG_ANS_GONE;
        } else {
            a->status = NCG_ANS_OK;
            a->digest = odd && s >= A.mismatch_slot ? chain_odd[s] : chain_ok[s];
            call_of(s, odd, &a->call);
            if (q->mode & NCG_QUERY_RECORDS)
                snprintf(a->site, sizeof a->site, "%s (sim+0x%x)",
                         odd && s == A.mismatch_slot ? "save_checkpoint+0x2c" : "train_step+0x5d",
                         odd && s == A.mismatch_slot ? 0x1c2c : 0x115d);
        }
    }
    vr_send(v, &m);
}

/* t: about now (the queue's clock, read once per relay frame). */
static void vr_rx(struct vr *v, const struct ncg_msg *m, uint64_t t)
{
    if (v->dead || v->frozen)
        return;
    v->rx_ns = t;
    if (m->type == NCG_MSG_QUERY) {
        v->narrowed += m->u.query.nrep != 0;
        vr_answer(v, &m->u.query, t);
    } else if (m->type == NCG_MSG_RVERDICT && m->u.rverdict.v) {
        /* a DEADLOCK has a verdict per comm of its cycle: comm 0's is the one every rank gets */
        if (A.deadlock_rank >= 0 && m->u.rverdict.v->comm_id != COMM0)
            return;
        if (!v->verdicts++) {
            v->got_ns = t;
            v->kind = m->u.rverdict.v->kind;
            snprintf(v->subject, sizeof v->subject, "%s", m->u.rverdict.v->subject);
        }
    }
}

/* The relay this rank talked to died: connect to that relay's parent, as a client. */
static void vr_reattach(struct vr *v, uint32_t dead_node)
{
    if (dead_node == 0)
        return;
    v->at = parent_of(dead_node);
    v->rx_ns = now_ns();
    int fd = sock_connect(v->at);
    if (fd < 0)
        return;
    ncg_peer_init(&v->peer, fd);
    v->sock = 1;
    ep_add(fd, ekey(EK_VR, (uint32_t)(v - V), 0));
    vr_hello(v);
    vr_report(v, now_ns());
}

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

/* ---- the loop ---- */

static void dispatch_child(struct sr *s, int conn, const struct ncg_msg *m)
{
    if (!s->dead && conn < s->nc && s->c[conn].used)
        BUSY(s, ncg_relay_message(s->r, conn, m, now_ns()));
}

/* The receiving end's state of a queued frame, as a socket's reader would see it: NULL when
 * nothing reads it any more (the receiver closed that link, died or is stopped). *ref gets the
 * receiving end's REPORT reference. */
static struct sr *lq_dest(const struct lq_hdr *h, struct ncg_report_ref **ref)
{
    *ref = NULL;
    if (h->kind == LQ_RANK)
        return NULL;
    struct sr *s = &R[h->idx];
    if (s->dead || s->frozen)
        return NULL;
    if (h->kind == LQ_CHILD || h->kind == LQ_EOF_CHILD) {
        struct sconn *c = &s->c[h->conn];
        if (h->conn >= s->nc || !c->used || (h->gen && c->gen != h->gen))
            return NULL;
        *ref = &c->p.rref;
    } else {
        if (!s->up_ok || !s->up_local || s->up_gen != h->gen)
            return NULL;
        *ref = &s->up.rref;
    }
    return s;
}

/* Delivers the queued frames, those queued meanwhile included. The clock is read once per
 * frame to a relay (its handler's start and busy time) and not for frames to ranks (they take
 * the last reading: clock_gettime per frame was a tenth of the simulator at 131,072 ranks). */
static void lq_drain(void)
{
    uint64_t t = now_ns();
    int fresh = 1; /* t was read just now: no rank's work since */
    while (lq_pos < lq_len) {
        struct lq_hdr h;
        memcpy(&h, lq + lq_pos, sizeof h);
        const uint8_t *b = lq + lq_pos + sizeof h;
        lq_pos += sizeof h + h.len;
        struct ncg_report_ref *ref;
        struct sr *s = lq_dest(&h, &ref);
        if (h.kind == LQ_EOF_CHILD || h.kind == LQ_EOF_UP) {
            if (s && h.kind == LQ_EOF_CHILD)
                child_close(s, h.conn, 1);
            else if (s)
                up_lost(s);
            fresh = 0;
            continue;
        }
        struct ncg_msg m;
        if ((s || h.kind == LQ_RANK) && ncg_wire_decode_ref(b, h.len, &m, ref) == (long)h.len) {
            if (h.kind == LQ_RANK) {
                vr_rx(&V[h.idx], &m, t);
                fresh = 0;
            } else {
                if (!fresh)
                    t = now_ns();
                if (h.kind == LQ_CHILD)
                    ncg_relay_message(s->r, h.conn, &m, t);
                else
                    ncg_relay_parent_message(s->r, &m, t);
                uint64_t t1 = now_ns();
                s->busy_ns += t1 - t;
                t = t1;
                fresh = 1;
            }
            ncg_msg_release(&m);
        }
        if (lq_pos == lq_len) /* everything consumed: reuse the buffer from its start */
            break;
    }
    lq_pos = lq_len = 0;
}

static void peer_read(struct ncg_peer *p, int kind, uint32_t idx, uint32_t conn)
{
    int rc = ncg_peer_fill(p);
    struct ncg_msg m;
    while (p->fd >= 0 && ncg_peer_next(p, &m) == 1) {
        if (kind == EK_CHILD) {
            dispatch_child(&R[idx], (int)conn, &m);
        } else if (kind == EK_UP) {
            struct sr *s = &R[idx];
            if (!s->dead)
                BUSY(s, ncg_relay_parent_message(s->r, &m, now_ns()));
        } else {
            vr_rx(&V[idx], &m, now_ns());
        }
        ncg_msg_release(&m);
    }
    if (rc < 0 && p->fd >= 0) {
        if (kind == EK_CHILD) {
            child_close(&R[idx], (int)conn, 1);
        } else if (kind == EK_UP) {
            if (!R[idx].dead)
                up_lost(&R[idx]);
        } else {
            struct vr *v = &V[idx];
            epoll_ctl(ep, EPOLL_CTL_DEL, v->peer.fd, NULL);
            ncg_peer_close(&v->peer);
            v->sock = 0;
            if (!v->dead) /* the relay it had reattached to died too: one level up */
                vr_reattach(v, v->at);
        }
    }
}

/* Flushes the sockets in the flush list (a socket the kernel would not take whole stays in it)
 * and closes the connections relays dropped. */
static void flush_all(void)
{
    uint64_t *l = fl;
    size_t n = nfl;
    fl = fl_next, nfl = nfl_next, fl_next = l, nfl_next = 0; /* sends from here go to fl */
    size_t cap = capfl;
    capfl = capfl_next, capfl_next = cap;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = l[i];
        int kind = (int)(k >> 56);
        uint32_t idx = (uint32_t)((k >> 24) & 0xffffffffu), conn = (uint32_t)(k & 0xffffffu);
        struct ncg_peer *p;
        uint8_t *flag;
        if (kind == EK_VR) {
            p = &V[idx].peer, flag = &V[idx].dirty;
        } else {
            struct sr *s = &R[idx];
            if (kind == EK_UP)
                p = &s->up, flag = &s->up_dirty;
            else if (conn < (uint32_t)s->nc && s->c[conn].used && !s->c[conn].local)
                p = &s->c[conn].p, flag = &s->c[conn].dirty;
            else
                continue;
            if (s->dead || s->frozen)
                continue; /* nothing of it runs any more */
        }
        if (!*flag)
            continue; /* an entry for a connection since closed */
        *flag = 0;
        if (p->fd < 0 || !p->txlen)
            continue;
        int rc = ncg_peer_flush(p);
        if (kind == EK_UP && rc < 0)
            up_lost(&R[idx]);
        else if (p->fd >= 0 && p->txlen && !*flag) { /* the kernel took part: again next time */
            *flag = 1;
            list_add(&fl, &nfl, &capfl, k);
        }
    }
    nfl_next = 0;
    for (size_t i = 0; i < ndrops; i++) {
        uint64_t k = drops[i];
        struct sr *s = &R[(k >> 24) & 0xffffffffu];
        int c = (int)(k & 0xffffffu);
        if (s->dead || s->frozen || c >= s->nc || !s->c[c].used || !s->c[c].closing)
            continue;
        if (!s->c[c].local && s->c[c].p.txlen)
            ncg_peer_flush(&s->c[c].p);
        child_close(s, c, 0);
    }
    ndrops = 0;
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

struct result {
    uint64_t expected, notified, dups, wrong;
    uint64_t first_ns, last_ns;
    uint8_t kind;
    char subject[NCG_WIRE_STR];
    uint64_t verdict_ns, root_verdicts, verified;
    uint64_t narrowed_ranks;             /* virtual ranks a narrowing QUERY reached */
    uint64_t root_rounds, root_narrowed; /* the root's rounds, of which for representatives */
    char summary[512];
    double relay_busy_max;
    uint32_t relay_busy_node;
    uint64_t bytes_win, net_win, reports_win;
    uint64_t type_win[2][NCG_MSG_TYPE_MAX_];
    double cpu_win;
    long rss_kb;
    uint32_t fan_in;
};

/* The loop's timed actions, run at the top of each pass (at least every 5 ms: the loop's
 * epoll_wait never waits past the next bucket): the steady window's ends and the fault. A
 * periodic action of the root process (e.g. scraping the root's /metrics once a second) goes
 * here, guarded by is_root_proc, with its own due time. */
static int killed, w0, w1;
static void timed(uint64_t t)
{
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

static void run_proc(int wfd, int rel, int proc)
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
        struct ncg_relay_params p = {0};
        p.token = TOKEN;
        p.interval_ms = 100;
        p.heartbeat_timeout_s = A.hb_s;
        p.node = n;
        p.root = n == 0;
        p.embedded = 1;
        p.lag_warn_s = 60;               /* the coordinator's defaults */
        p.pid = 100000 + n * A.per_node; /* the node's first rank's process */
        snprintf(p.host, sizeof p.host, "n%u", n);
        struct ncg_relay_ops ops = {op_send, op_drop, op_up, op_event, (void *)(uintptr_t)nr};
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
    for (uint32_t i = 0; i < nv; i++) {
        struct vr *v = &V[i];
        if (v->dead || v->frozen)
            continue;
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

static void usage(void)
{
    fprintf(stderr,
            "usage: ncg-sim --ranks N --per-node K [--comms C] [--rate CALLS_PER_S] [--seconds T]\n"
            "               [--fanout F] [--workers W] [--heartbeat-s H] [--stop-relay NODE]\n"
            "               [--frames] [--event-s S (3)] [--after-s S (4)]\n"
            "               [--mismatch-rank R --mismatch-slot S | --kill-rank R | --kill-relay "
            "NODE |\n"
            "                --deadlock-rank R] --json\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int have_seconds = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (!strcmp(a, name) && v && ++i)
        if (OPT("--ranks"))
            A.ranks = (uint32_t)atol(v);
        else if (OPT("--per-node"))
            A.per_node = (uint32_t)atol(v);
        else if (OPT("--comms"))
            A.comms = (uint32_t)atol(v);
        else if (OPT("--rate"))
            A.rate = atof(v);
        else if (OPT("--seconds")) {
            A.seconds = atof(v);
            have_seconds = 1;
        } else if (OPT("--fanout"))
            A.fanout = (uint32_t)atol(v);
        else if (OPT("--workers"))
            A.workers = (uint32_t)atol(v);
        else if (OPT("--mismatch-rank"))
            A.mismatch_rank = atol(v);
        else if (OPT("--mismatch-slot"))
            A.mismatch_slot = (uint64_t)atoll(v);
        else if (OPT("--kill-rank"))
            A.kill_rank = atol(v);
        else if (OPT("--kill-relay"))
            A.kill_relay = atol(v);
        else if (OPT("--stop-relay"))
            A.stop_relay = atol(v);
        else if (OPT("--deadlock-rank"))
            A.deadlock_rank = atol(v);
        else if (OPT("--event-s"))
            A.event_s = atof(v);
        else if (OPT("--after-s"))
            A.after_s = atof(v);
        else if (OPT("--heartbeat-s"))
            A.hb_s = atof(v);
        else if (!strcmp(a, "--json"))
            A.json = 1;
        else if (!strcmp(a, "--frames"))
            A.frames = 1;
        else
            usage();
#undef OPT
    }
    if (A.ranks < 2 || A.ranks > NCG_WIRE_MAX_RANKS || !A.per_node || !A.comms ||
        A.comms > NCG_WIRE_MAX_COMMS || A.fanout < 2 || !A.workers || A.rate <= 0 ||
        A.event_s < A.warm_s || A.after_s < 1)
        usage();
    nnodes = (A.ranks + A.per_node - 1) / A.per_node;
    if (A.workers > nnodes - 1 && nnodes > 1)
        A.workers = nnodes - 1;
    if (nnodes == 1)
        A.workers = 0;
    int faults = (A.mismatch_rank >= 0) + (A.kill_rank >= 0) + (A.kill_relay >= 0) +
                 (A.stop_relay >= 0) + (A.deadlock_rank >= 0);
    if (A.deadlock_rank >= 0 && A.comms < 2)
        A.comms = 2; /* the cycle needs two communicators */
    if (faults > 1 || (A.mismatch_rank >= (int64_t)A.ranks) || A.kill_rank >= (int64_t)A.ranks ||
        A.deadlock_rank >= (int64_t)A.ranks || A.kill_relay >= (int64_t)nnodes ||
        A.kill_relay == 0 || A.stop_relay >= (int64_t)nnodes || A.stop_relay == 0 || A.hb_s < 1 ||
        (A.kill_rank >= 0 && A.kill_rank < (int64_t)A.per_node && A.kill_rank % A.per_node == 0)) {
        fprintf(stderr,
                "ncg-sim: one fault at a time; the root (node 0, rank 0) cannot be killed\n");
        return 2;
    }
    if (A.mismatch_rank >= 0 && !A.mismatch_slot)
        A.mismatch_slot = (uint64_t)(A.rate * A.event_s);
    if (faults && !have_seconds)
        A.seconds = 0;
    chains_init();
    driver = getpid();
    /* File descriptors: a worker holds about two per relay (its link up, its end of a child's
     * link) plus the listeners of relays with children; raise the hard limit where allowed
     * (root), else take the soft limit up to it. */
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rlim_t want = 2 * (rlim_t)nnodes / (A.workers ? A.workers : 1) + nnodes / A.fanout + 1024;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
        struct rlimit up = {want, want};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl = up;
    }
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want)
        fprintf(stderr,
                "ncg-sim: %lu file descriptors may be too few for %u relays in %u workers "
                "(ulimit -n; or more --workers)\n",
                (unsigned long)rl.rlim_cur, nnodes, A.workers);
    T0 = now_ns() + 300000000ull + (uint64_t)nnodes * 20000ull;
    w_start = T0 + (uint64_t)(A.warm_s * 1e9);
    if (A.mismatch_rank >= 0)
        t_event = T0 + (uint64_t)((double)A.mismatch_slot / A.rate * 1e9);
    else if (faults)
        t_event = T0 + (uint64_t)(A.event_s * 1e9);
    dl_slot = count_at(t_event);
    if (faults) {
        w_end = t_event > w_start + 500000000ull ? t_event : w_start + 500000000ull;
        t_end = t_event + (uint64_t)(A.after_s * 1e9); /* the targets are 2 and 3 s */
        if (A.stop_relay >= 0)                         /* found by the heartbeat */
            t_end += (uint64_t)(A.hb_s * 1e9);
        if (A.seconds > 0 && T0 + (uint64_t)(A.seconds * 1e9) > t_end)
            t_end = T0 + (uint64_t)(A.seconds * 1e9);
    } else {
        t_end = T0 + (uint64_t)(A.seconds * 1e9);
        w_end = t_end - 200000000ull;
        if (w_end <= w_start)
            w_start = T0, w_end = t_end;
    }
    int nproc = 1 + (int)A.workers, pfd[64][2], rel[2];
    pid_t pids[64];
    if (nproc > 64 || pipe(rel) < 0)
        usage();
    for (int p = 0; p < nproc; p++) {
        if (pipe(pfd[p]) < 0)
            return 2;
        pids[p] = fork();
        if (pids[p] == 0) {
            close(pfd[p][0]);
            close(rel[1]);
            run_proc(pfd[p][1], rel[0], p);
        }
        close(pfd[p][1]);
    }
    struct result tot = {0}, root = {0};
    tot.first_ns = UINT64_MAX;
    int bad = 0;
    double relay_max = 0;
    uint32_t relay_max_node = 0;
    for (int p = 0; p < nproc; p++) {
        struct result r;
        ssize_t got = read(pfd[p][0], &r, sizeof r);
        if (got != (ssize_t)sizeof r) {
            bad = 1;
            continue;
        }
        if (p == 0)
            root = r;
        tot.expected += r.expected;
        tot.notified += r.notified;
        tot.narrowed_ranks += r.narrowed_ranks;
        tot.dups += r.dups;
        tot.wrong += r.wrong;
        tot.bytes_win += r.bytes_win;
        tot.net_win += r.net_win;
        tot.reports_win += r.reports_win;
        tot.cpu_win += r.cpu_win;
        for (int d = 0; d < 2; d++)
            for (int t = 0; t < NCG_MSG_TYPE_MAX_; t++)
                tot.type_win[d][t] += r.type_win[d][t];
        if (r.notified) {
            if (!tot.kind) {
                tot.kind = r.kind;
                memcpy(tot.subject, r.subject, sizeof tot.subject);
            } else if (r.kind != tot.kind || strcmp(r.subject, tot.subject)) {
                tot.wrong += r.notified;
            }
            tot.first_ns = r.first_ns < tot.first_ns ? r.first_ns : tot.first_ns;
            tot.last_ns = r.last_ns > tot.last_ns ? r.last_ns : tot.last_ns;
        }
        if (p && r.relay_busy_max > relay_max) {
            relay_max = r.relay_busy_max;
            relay_max_node = r.relay_busy_node;
        }
    }
    close(rel[1]);
    for (int p = 0; p < nproc; p++)
        waitpid(pids[p], NULL, 0);
    if (bad) {
        fprintf(stderr, "ncg-sim: a simulator process failed\n");
        return 2;
    }
    double win = (double)(w_end - w_start) / 1e9;
    double first = root.verdict_ns ? (double)root.verdict_ns : (double)tot.first_ns;
    char detect[32] = "null", alln[32] = "null";
    if (tot.notified && t_event) {
        snprintf(detect, sizeof detect, "%.3f", (first - (double)t_event) / 1e9);
        snprintf(alln, sizeof alln, "%.3f", ((double)tot.last_ns - (double)t_event) / 1e9);
    }
    char verdict[40] = "null";
    if (tot.notified)
        snprintf(verdict, sizeof verdict, "\"%s\"", ncg_verdict_key(tot.kind));
    uint32_t depth = 0; /* the deepest node's levels below the root */
    for (uint32_t m = 1; m < nnodes; m++) {
        uint32_t d = 0;
        for (uint32_t n = m; n; n = parent_of(n))
            d++;
        depth = d > depth ? d : depth;
    }
    printf("{\"ranks\": %u, \"per_node\": %u, \"comms\": %u, \"rate\": %.0f, \"nodes\": %u, "
           "\"fanout\": %u, \"depth\": %u, \"processes\": %d, \"verdict\": %s, "
           "\"named_ranks\": %s%s%s, \"detect_s\": %s, \"all_notified_s\": %s, "
           "\"notified\": %" PRIu64 ", \"expected\": %" PRIu64 ", \"duplicates\": %" PRIu64
           ", \"disagreeing\": %" PRIu64 ", \"root_verdicts\": %" PRIu64
           ", \"verified_slots\": %" PRIu64 ", \"issued_slots\": %" PRIu64
           ", \"root_cpu_s_per_s\": %.4f, \"root_relay_busy_s_per_s\": %.4f, "
           "\"relay_cpu_s_per_s_max\": %.4f, \"relay_max_node\": %u, "
           "\"reports_per_rank_per_s\": %.2f, \"sim_cpu_s_per_s\": %.3f, "
           "\"bytes_per_rank_per_s\": %.1f, \"net_bytes_per_rank_per_s\": %.1f, \"root_rss_kb\": "
           "%ld, \"fan_in\": %u, \"root_rounds\": %" PRIu64 ", \"root_narrowing_rounds\": %" PRIu64
           ", \"narrowed_ranks\": %" PRIu64 ", "
           "\"window_s\": %.2f, \"summary\": \"%s\"",
           A.ranks, A.per_node, A.comms, A.rate, nnodes, A.fanout, depth, nproc, verdict,
           tot.notified ? "\"" : "", tot.notified ? tot.subject : "null", tot.notified ? "\"" : "",
           detect, alln, tot.notified, tot.expected, tot.dups, tot.wrong, root.root_verdicts,
           root.verified, count_at(t_end) * A.comms, root.cpu_win / win, root.relay_busy_max,
           relay_max, relay_max_node, (double)tot.reports_win / A.ranks / win, tot.cpu_win / win,
           (double)tot.bytes_win / A.ranks / win, (double)tot.net_win / A.ranks / win, root.rss_kb,
           root.fan_in, root.root_rounds, root.root_narrowed, tot.narrowed_ranks, win,
           root.summary);
    if (A.frames) { /* per frame type: [node-local, between relays] bytes per rank and second */
        static const char *const name[NCG_MSG_TYPE_MAX_] = {
            "?",        "HELLO",  "WELCOME",  "REPORT", "QUERY",  "ANSWER", "P2P",     "GOODBYE",
            "VERDICT",  "PING",   "SHUTDOWN", "WAIT",   "RHELLO", "RSTAT",  "RANSWER", "RFAULT",
            "RVERDICT", "RWHERE", "RHERE",    "RP2P",   "RWAIT",  "RASK",   "DONE",    "RELEASE"};
        _Static_assert(NCG_MSG_RELEASE + 1 == NCG_MSG_TYPE_MAX_, "a frame type without a name");
        printf(", \"frames\": {");
        const char *sep = "";
        for (int t = 0; t < NCG_MSG_TYPE_MAX_; t++) {
            if (!tot.type_win[0][t] && !tot.type_win[1][t])
                continue;
            printf("%s\"%s\": [%.1f, %.1f]", sep, name[t],
                   (double)tot.type_win[0][t] / A.ranks / win,
                   (double)tot.type_win[1][t] / A.ranks / win);
            sep = ", ";
        }
        printf("}");
    }
    printf("}\n");
    return 0;
}
