/* ncg-sim's links: the in-process queue of encoded frames (a node's ranks to their relay, and
 * relays hosted by one process to each other), the abstract Unix sockets between processes,
 * the relays' callbacks, attaching, losing and closing links, and delivering what arrived.
 * See tests/sim/README.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "sim.h"

int relay_index(uint32_t node)
{
    return node >= node_lo && node - node_lo < nr ? (int)(node - node_lo) : -1;
}

/* ---- in-process queue of encoded frames ---- */

struct lq_hdr {
    int kind;
    int idx, conn;
    uint32_t gen; /* relay links: the link's generation */
    uint32_t len;
};
static uint8_t *lq;
static size_t lq_len, lq_cap, lq_pos;
uint64_t bytes_inproc; /* between relays, through the queue */

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
void lq_push(int kind, int idx, int conn, uint32_t gen, int net, const struct ncg_msg *m,
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
void net_send(struct ncg_peer *p, const struct ncg_msg *m, uint64_t key, uint8_t *dirty)
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

uint64_t ekey(int kind, uint32_t idx, uint32_t conn)
{
    return ((uint64_t)kind << 56) | ((uint64_t)idx << 24) | conn;
}

void ep_add(int fd, uint64_t key)
{
    struct epoll_event e = {.events = EPOLLIN, .data.u64 = key};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

void sock_name(uint32_t node, struct sockaddr_un *a, socklen_t *len)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "ncgsim-%d-%u", (int)driver, node);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int sock_connect(uint32_t node)
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
    if (!strncmp(line, "warning: SLOW", 13) && !slow_root_n++) {
        slow_root_ns = now_ns();
        snprintf(slow_summary, sizeof slow_summary, "%s", line + 9);
    }
}

struct ncg_relay_ops sim_relay_ops(uint32_t idx)
{
    return (struct ncg_relay_ops){op_send, op_drop, op_up, op_event, (void *)(uintptr_t)idx};
}

static uint32_t link_gen;
int conn_new(struct sr *s)
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

/* Links relay s to its parent s->up_node: in-process when this process hosts the parent (a
 * child connection of kind C_RELAY there, as if accepted), else through its listener. */
void up_attach(struct sr *s)
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
void up_close(struct sr *s)
{
    if (s->up_local)
        lq_eof(LQ_EOF_CHILD, relay_index(s->up_node), s->up_conn, s->up_gen);
    else
        epoll_ctl(ep, EPOLL_CTL_DEL, s->up.fd, NULL);
    ncg_peer_close(&s->up);
    s->up_ok = 0;
    s->up_local = 0;
}

void up_lost(struct sr *s)
{
    up_close(s);
    BUSY(s, ncg_relay_parent_down(s->r));
    if (s->up_node == 0)
        return;                         /* the root is gone: nothing above it */
    s->up_node = parent_of(s->up_node); /* reattach to the dead relay's parent */
    up_attach(s);
}

void child_close(struct sr *s, int conn, int tell)
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
void lq_drain(void)
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

void peer_read(struct ncg_peer *p, int kind, uint32_t idx, uint32_t conn)
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
void flush_all(void)
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
