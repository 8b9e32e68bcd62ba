/* The relay tree's host (relayhost.h): sockets around a relay state machine (relay.c) in the
 * checker thread. Child connections (the node's processes over the Unix name, child relays and
 * directory questions over TCP) share one table, indexed as the relay's conn ids. Below the
 * root the parent link goes: ask the root (RWHERE), connect where it says (RHERE), RHELLO. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "accept.h"
#include "channel.h"
#include "clock.h"
#include "config.h"
#include "http.h"
#include "log.h"
#include "relay.h"
#include "relayhost.h"
#include "status_tree.h"
#include "wire.h"

#define RH_MAX_CONNS 65536           /* child connections (a flat job's root: every process) */
#define RH_ACCEPT_BATCH 64           /* accepts per listener and round */
#define RH_PATIENCE_NS 1000000000ull /* wait this long for the exact parent before an ancestor */
#define RH_RETRY_NS 20000000ull      /* a parent not registered yet: asked again this soon */

enum { P_IDLE = 0, P_ASK_CONNECTING, P_ASKING, P_CONNECTING, P_UP };

struct hconn {
    struct ncg_peer io;
    uint8_t closing; /* 1: the relay dropped it: closed once its queue is flushed; 2: lost */
    uint8_t drain;   /* leaving: once flushed, our side is shut and input discarded until EOF */
    uint8_t tcp;
    char ip[48]; /* where a TCP connection came from (the root's directory) */
};

struct dent {
    uint16_t port; /* 0: not registered */
    char ip[48];
};

struct ncg_rhost {
    struct ncg_rhost_params p;
    struct ncg_relay *r;
    int ufd, tfd;                       /* listeners: the node's Unix name, TCP */
    struct ncg_accept_state uacc, tacc; /* their pauses (accept.h) */
    uint16_t tport;
    struct hconn *c;
    int nc;
    int *map; /* poll entry -> conn id (-1 Unix listener, -2 TCP listener, -3 parent) */
    int nmap;
    /* the parent link (below the root) */
    struct ncg_peer up;
    int pstate;
    uint32_t want;      /* the node whose relay is asked for */
    uint64_t ask_since; /* first question for want */
    uint64_t retry_at;  /* next attempt (P_IDLE) */
    uint64_t root_fail; /* the root unreachable since (0: reachable) */
    uint64_t dial_ns;   /* the current connection attempt (ask or parent) started then */
    uint8_t root_seen;  /* the root answered once */
    struct dent *dir;   /* the root: node -> its relay's address */
    int stopped, left;
    /* the status endpoint (NCCLGUARD_HTTP), its source, and its poll entries this round */
    struct ncg_http *http;
    struct ncg_tree_src ts;
    int http_first, http_n;
};

static void h_send(void *arg, int conn, const struct ncg_msg *m)
{
    struct ncg_rhost *h = arg;
    if (conn >= 0 && conn < h->nc && h->c[conn].io.fd >= 0 && !h->c[conn].closing)
        if (ncg_peer_send(&h->c[conn].io, m) != 0)
            h->c[conn].closing = 2; /* over its backlog: lost */
}

static void h_drop(void *arg, int conn)
{
    struct ncg_rhost *h = arg;
    if (conn >= 0 && conn < h->nc && h->c[conn].io.fd >= 0 && !h->c[conn].closing)
        h->c[conn].closing = 1;
}

static void h_event(void *arg, const char *line)
{
    struct ncg_rhost *h = arg;
    if (h->p.event)
        h->p.event(h->p.event_arg, line);
    else
        ncg_debug(2, "relay of node %u: %s", h->p.relay.node, line);
}

static void h_up(void *arg, const struct ncg_msg *m)
{
    struct ncg_rhost *h = arg;
    if (h->pstate == P_UP)
        ncg_peer_send(&h->up, m);
}

uint32_t ncg_rhost_parent(uint32_t node, uint32_t root, uint32_t nnodes, uint32_t fanout)
{
    if (nnodes == 0 || node >= nnodes || root >= nnodes)
        return root;
    uint32_t rel = (node + nnodes - root) % nnodes;
    return (ncg_relay_parent(rel, nnodes, fanout) + root) % nnodes;
}

void ncg_rhost_unix_addr(uint64_t token, uint32_t node, struct sockaddr_storage *ss, socklen_t *len)
{
    /* FNV-1a over the token and the node: the name is visible in /proc/net/unix, the token
     * (which HELLO must carry) is not. */
    uint64_t x = 0xcbf29ce484222325ull;
    for (int i = 0; i < 12; i++) {
        uint8_t b = i < 8 ? (uint8_t)(token >> (8 * i)) : (uint8_t)(node >> (8 * (i - 8)));
        x = (x ^ b) * 0x100000001b3ull;
    }
    struct sockaddr_un *u = (struct sockaddr_un *)ss;
    memset(ss, 0, sizeof *ss);
    u->sun_family = AF_UNIX;
    int n = snprintf(u->sun_path + 1, sizeof u->sun_path - 1, "ncclguard-%016llx-%u",
                     (unsigned long long)x, node);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

struct ncg_rhost_params ncg_rhost_params_of(const struct ncg_config *cfg, uint64_t token,
                                            uint32_t node, uint32_t root_node, uint32_t nnodes,
                                            uint32_t fanout, int32_t global_rank)
{
    struct ncg_rhost_params p = {.relay = ncg_relay_params_of(cfg),
                                 .root_node = root_node,
                                 .nnodes = nnodes,
                                 .fanout = fanout};
    p.relay.token = token;
    p.relay.node = node;
    p.relay.global_rank = global_rank;
    return p;
}

int ncg_rhost_start(struct ncg_rhost **out, const struct ncg_rhost_params *p, char *err,
                    size_t errlen)
{
    struct sockaddr_storage ua;
    socklen_t ul;
    int ufd = -1;
    if (!p->standalone) {
        ncg_rhost_unix_addr(p->relay.token, p->relay.node, &ua, &ul);
        ufd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (ufd < 0) {
            snprintf(err, errlen, "socket: %s", strerror(errno));
            return -errno;
        }
        if (bind(ufd, (struct sockaddr *)&ua, ul) != 0 || listen(ufd, 1024) != 0) {
            int e = errno;
            close(ufd);
            snprintf(err, errlen, "cannot bind the node's relay socket: %s", strerror(e));
            return e == EADDRINUSE ? -EADDRINUSE : -e;
        }
    }
    uint16_t tport = 0;
    int tfd = ncg_listen(&tport, p->standalone && p->listen_host[0] ? p->listen_host : NULL,
                         p->standalone ? p->listen_port : 0, err, errlen);
    if (tfd < 0) {
        if (ufd >= 0)
            close(ufd);
        return -EIO;
    }
    struct ncg_rhost *h = calloc(1, sizeof *h);
    int root = p->relay.node == p->root_node;
    if (h && root && p->nnodes)
        h->dir = calloc(p->nnodes, sizeof *h->dir);
    if (!h || (root && p->nnodes && !h->dir)) {
        free(h);
        if (ufd >= 0)
            close(ufd);
        close(tfd);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    h->p = *p;
    h->ufd = ufd;
    h->tfd = tfd;
    h->tport = tport;
    h->want = ncg_rhost_parent(p->relay.node, p->root_node, p->nnodes, p->fanout);
    ncg_peer_init(&h->up, -1);
    struct ncg_relay_params rp = p->relay;
    rp.root = (uint8_t)root;
    rp.pid = (uint32_t)getpid();
    rp.embedded = (uint8_t)!p->standalone;
    rp.client_verdicts = 1;
    rp.has_global_rank = (uint8_t)!p->standalone;
    snprintf(rp.host, sizeof rp.host, "%s", ncg_host_name());
    struct ncg_relay_ops ops = {h_send, h_drop, h_up, h_event, h};
    if (!(h->r = ncg_relay_new(&rp, &ops))) {
        ncg_rhost_free(h);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    *out = h;
    return 0;
}

/* Closes after reading what is there: a socket closed with unread input sends a reset, and a
 * reset makes the peer drop what it had received and not yet read (our last frames). */
static void close_gently(struct ncg_peer *p)
{
    char sink[4096];
    while (p->fd >= 0 && recv(p->fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
    ncg_peer_close(p);
}

static void conns_close(struct ncg_rhost *h)
{
    for (int i = 0; i < h->nc; i++)
        close_gently(&h->c[i].io);
    close_gently(&h->up);
    if (h->ufd >= 0)
        close(h->ufd);
    if (h->tfd >= 0)
        close(h->tfd);
    h->ufd = h->tfd = -1;
}

void ncg_rhost_free(struct ncg_rhost *h)
{
    if (!h)
        return;
    conns_close(h);
    ncg_http_free(h->http);
    ncg_tree_src_free(&h->ts);
    ncg_relay_free(h->r);
    free(h->c);
    free(h->map);
    free(h->dir);
    free(h);
}

uint16_t ncg_rhost_port(const struct ncg_rhost *h)
{
    return h->tport;
}

int ncg_rhost_stopped(const struct ncg_rhost *h)
{
    return __atomic_load_n(&h->stopped, __ATOMIC_ACQUIRE); /* any thread */
}

/* ---------- child connections ---------- */

/* One accepted child connection (ncg_accept_fn; arg: the host, or with its low bit set the
 * host and a TCP connection): 0 to accept more, -1 when the table is full. */
static void conn_read(struct ncg_rhost *h, int id, uint64_t now);

static int conn_take(void *arg, int fd, const struct sockaddr_storage *ss, socklen_t sl,
                     uint64_t now)
{
    int tcp = (int)((uintptr_t)arg & 1);
    struct ncg_rhost *h = (struct ncg_rhost *)((uintptr_t)arg & ~(uintptr_t)1);
    (void)sl;
    int id;
    for (id = 0; id < h->nc; id++)
        if (h->c[id].io.fd < 0)
            break;
    if (id == h->nc) {
        int n = h->nc ? h->nc * 2 : 16;
        struct hconn *nc = n <= RH_MAX_CONNS ? realloc(h->c, sizeof *nc * (size_t)n) : NULL;
        if (!nc) {
            close(fd);
            return -1;
        }
        for (int i = h->nc; i < n; i++) {
            memset(&nc[i], 0, sizeof nc[i]);
            ncg_peer_init(&nc[i].io, -1);
        }
        h->c = nc;
        h->nc = n;
    }
    if (tcp)
        ncg_set_nonblock(fd); /* TCP_NODELAY */
    struct hconn *c = &h->c[id];
    ncg_peer_init(&c->io, fd);
    c->closing = 0;
    c->tcp = (uint8_t)tcp;
    c->ip[0] = 0;
    if (tcp && ss->ss_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, c->ip, sizeof c->ip);
    else if (tcp && ss->ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, c->ip, sizeof c->ip);
    ncg_relay_connected(h->r, id, now);
    /* Read at once: a job's process sends its HELLO as it connects, so a backlog accepted after
     * a stall (hundreds at once) holds its HELLOs already; read only after the next accepts,
     * they would count as silent against the relay's cap on connections without a HELLO (the
     * oldest dropped: that process unguarded; docs/simulator.md, finding 3). */
    conn_read(h, id, now);
    return 0;
}

/* The root's directory: registers the asker, answers with the nearest registered relay at or
 * above the node it wants (the root at worst). */
static void on_rwhere(struct ncg_rhost *h, int id, const struct ncg_msg_rwhere *q, uint64_t now)
{
    struct hconn *c = &h->c[id];
    if (!h->dir || q->token != h->p.relay.token || q->node >= h->p.nnodes ||
        q->want >= h->p.nnodes) {
        ncg_relay_closed(h->r, id, now); /* the relay forgets it too (its id is reused) */
        c->closing = 1;
        return;
    }
    if (q->port && c->ip[0] && q->node != h->p.root_node) {
        h->dir[q->node].port = q->port;
        snprintf(h->dir[q->node].ip, sizeof h->dir[q->node].ip, "%s", c->ip);
    }
    uint32_t a = q->want;
    for (uint32_t depth = 0; a != h->p.root_node && !h->dir[a].port && depth < 64; depth++)
        a = ncg_rhost_parent(a, h->p.root_node, h->p.nnodes, h->p.fanout);
    if (a != h->p.root_node && !h->dir[a].port)
        a = h->p.root_node;
    struct ncg_msg m = {.type = NCG_MSG_RHERE};
    m.u.rhere.want = q->want;
    m.u.rhere.found = a;
    m.u.rhere.exact = a == q->want;
    if (a != h->p.root_node) {
        m.u.rhere.port = h->dir[a].port;
        snprintf(m.u.rhere.ip, sizeof m.u.rhere.ip, "%s", h->dir[a].ip);
    }
    ncg_peer_send(&c->io, &m);
}

static void conn_read(struct ncg_rhost *h, int id, uint64_t now)
{
    struct hconn *c = &h->c[id];
    static struct ncg_msg m;
    if (c->drain && h->p.relay.node != h->p.root_node) {
        /* a node relay leaving: its clients' goodbyes still count (its last RSTAT carries
         * them, ncg_rhost_handle), the rest of their last words is not needed, their EOF is */
        int rc = ncg_peer_fill(&c->io), k;
        while ((k = ncg_peer_next(&c->io, &m)) > 0) {
            if (m.type == NCG_MSG_GOODBYE || m.type == NCG_MSG_REPORT)
                ncg_relay_message(h->r, id, &m, now);
            ncg_msg_release(&m);
        }
        if (rc < 0 || k < 0)
            ncg_peer_close(&c->io);
        return;
    }
    if (c->drain) { /* leaving: the peer's last words are not needed, its EOF is */
        char sink[4096];
        ssize_t r;
        while ((r = recv(c->io.fd, sink, sizeof sink, MSG_DONTWAIT)) > 0) {
        }
        if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            ncg_peer_close(&c->io);
        return;
    }
    int rc = ncg_peer_fill(&c->io); /* bounded per call: so is the work below */
    while (!c->closing) {
        int k = ncg_peer_next(&c->io, &m);
        if (k <= 0) {
            if (k < 0)
                rc = -1;
            break;
        }
        if (m.type == NCG_MSG_RWHERE && c->tcp)
            on_rwhere(h, id, &m.u.rwhere, now);
        else
            ncg_relay_message(h->r, id, &m, now);
        ncg_msg_release(&m);
    }
    if (rc < 0 && !c->closing) {
        ncg_relay_closed(h->r, id, now);
        ncg_peer_close(&c->io);
    }
}

/* ---------- the parent link ---------- */

static int dial(const struct sockaddr_storage *ss, socklen_t sl)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    ncg_set_nonblock(fd);
    if (connect(fd, (const struct sockaddr *)ss, sl) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The host stops: m to every child connection, then every socket closed. */
static void stop_with(struct ncg_rhost *h, const struct ncg_msg *m)
{
    for (int i = 0; i < h->nc; i++)
        if (h->c[i].io.fd >= 0) {
            ncg_peer_send(&h->c[i].io, m);
            ncg_peer_flush(&h->c[i].io);
        }
    conns_close(h);
    __atomic_store_n(&h->stopped, 1, __ATOMIC_RELEASE);
}

/* The root is gone: every process beneath is told (NCG_BYE_ROOT: a local RANK DIED of the
 * checker's host, as under the flat checker). */
static void root_lost(struct ncg_rhost *h, const char *why)
{
    ncg_log("the relay of node %u lost the relay tree's root (%s): its processes get a RANK "
            "DIED",
            h->p.relay.node, why);
    struct ncg_msg m = {.type = NCG_MSG_SHUTDOWN};
    m.u.goodbye.flags = NCG_BYE_ROOT;
    stop_with(h, &m);
}

/* The parent cannot be reached, or left: ask again, for its parent (a relay that died is
 * skipped; the root answers with the nearest relay above it that is registered). */
static void parent_lost(struct ncg_rhost *h, uint64_t now, int escalate)
{
    ncg_debug(1, "the relay of node %u lost its parent (the relay of node %u, state %d)",
              h->p.relay.node, h->want, h->pstate);
    if (h->pstate == P_UP)
        ncg_relay_parent_down(h->r);
    ncg_peer_close(&h->up);
    h->pstate = P_IDLE;
    if (escalate && h->want != h->p.root_node)
        h->want = ncg_rhost_parent(h->want, h->p.root_node, h->p.nnodes, h->p.fanout);
    h->ask_since = 0;
    h->retry_at = now;
}

static void root_unreachable(struct ncg_rhost *h, uint64_t now, int refused)
{
    ncg_peer_close(&h->up);
    h->pstate = P_IDLE;
    h->retry_at = now + RH_RETRY_NS;
    if (!h->root_fail)
        h->root_fail = now;
    uint64_t hb = (uint64_t)(h->p.relay.heartbeat_timeout_s * 1e9);
    /* Refused after it answered once: its listener is gone with its process. */
    if (refused && h->root_seen)
        root_lost(h, "it refuses connections: its process is gone");
    else if (hb && now - h->root_fail >= hb)
        root_lost(h, "unreachable for the heartbeat timeout");
}

static void parent_start(struct ncg_rhost *h, uint64_t now)
{
    int fd = dial(&h->p.root_addr, h->p.root_alen);
    if (fd < 0) {
        root_unreachable(h, now, errno == ECONNREFUSED);
        return;
    }
    ncg_peer_init(&h->up, fd);
    h->pstate = P_ASK_CONNECTING;
    h->dial_ns = now;
    if (!h->ask_since)
        h->ask_since = now;
}

static void on_rhere(struct ncg_rhost *h, const struct ncg_msg_rhere *a, uint64_t now)
{
    h->root_fail = 0;
    h->root_seen = 1;
    int patient = now - h->ask_since < RH_PATIENCE_NS;
    if (!a->exact && patient) { /* its parent is not up yet: ask again shortly */
        ncg_peer_close(&h->up);
        h->pstate = P_IDLE;
        h->retry_at = now + RH_RETRY_NS;
        return;
    }
    if (a->found == h->p.root_node || !a->port) { /* the root itself: this connection */
        h->pstate = P_UP;
        ncg_relay_parent_up(h->r, now);
        return;
    }
    ncg_peer_close(&h->up);
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t sl;
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, a->ip, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(a->port);
        sl = sizeof *a4;
    } else if (inet_pton(AF_INET6, a->ip, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(a->port);
        sl = sizeof *a6;
    } else {
        parent_lost(h, now, 1);
        return;
    }
    int fd = dial(&ss, sl);
    if (fd < 0) {
        parent_lost(h, now, 1);
        return;
    }
    ncg_peer_init(&h->up, fd);
    h->pstate = P_CONNECTING;
    h->dial_ns = now;
}

/* The parent sent SHUTDOWN: a relay leaving (reattach), or the root's process exiting cleanly
 * (the checking ends: passed down, then this host stops). */
static void parent_shutdown(struct ncg_rhost *h, const struct ncg_msg_goodbye *g, uint64_t now)
{
    if (g->flags & NCG_BYE_RELAY) {
        parent_lost(h, now, 1);
        return;
    }
    if (g->flags & NCG_BYE_ROOT) {
        root_lost(h, "the parent relay lost it");
        return;
    }
    /* Passed down as it came: its final counts let each client tell a rank of the root's
     * process that left early (RANK EXITED, as under the flat checker). */
    static struct ncg_msg m;
    m.type = NCG_MSG_SHUTDOWN;
    m.u.goodbye = *g;
    stop_with(h, &m);
}

static void parent_io(struct ncg_rhost *h, short rev, uint64_t now)
{
    static struct ncg_msg m;
    if (h->pstate == P_ASK_CONNECTING || h->pstate == P_CONNECTING) {
        int err = 0;
        socklen_t el = sizeof err;
        if (getsockopt(h->up.fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err) {
            if (h->pstate == P_ASK_CONNECTING)
                root_unreachable(h, now, err == ECONNREFUSED);
            else
                parent_lost(h, now, 1);
            return;
        }
        if (!(rev & POLLOUT))
            return;
        if (h->pstate == P_CONNECTING) {
            h->pstate = P_UP;
            ncg_relay_parent_up(h->r, now);
        } else {
            struct ncg_msg q = {.type = NCG_MSG_RWHERE};
            q.u.rwhere.token = h->p.relay.token;
            q.u.rwhere.node = h->p.relay.node;
            q.u.rwhere.want = h->want;
            q.u.rwhere.port = h->tport;
            ncg_peer_send(&h->up, &q);
            h->pstate = P_ASKING;
        }
    }
    if (rev & (POLLIN | POLLHUP | POLLERR)) {
        int rc = ncg_peer_fill(&h->up);
        for (int k; h->up.fd >= 0 && (k = ncg_peer_next(&h->up, &m)) != 0;) {
            if (k < 0) {
                rc = -1;
                break;
            }
            if (h->pstate == P_ASKING && m.type == NCG_MSG_RHERE)
                on_rhere(h, &m.u.rhere, now);
            else if (h->pstate == P_UP && m.type == NCG_MSG_SHUTDOWN)
                parent_shutdown(h, &m.u.goodbye, now);
            else if (h->pstate == P_UP)
                ncg_relay_parent_message(h->r, &m, now);
            ncg_msg_release(&m);
            if (h->stopped)
                return;
        }
        if (rc < 0 && h->up.fd >= 0) {
            if (h->pstate == P_ASKING)
                root_unreachable(h, now, 0);
            else
                parent_lost(h, now, 1);
            return;
        }
    }
    if (h->up.fd >= 0 && h->up.txlen && ncg_peer_flush(&h->up) != 0)
        parent_lost(h, now, 1);
}

/* ---------- the loop ---------- */

int ncg_rhost_pollfds(struct ncg_rhost *h, struct pollfd *pf, int max)
{
    if (h->stopped)
        return 0;
    int need = h->nc + 3 + NCG_HTTP_MAX_CONNS + 1;
    if (h->nmap < need) {
        int *nm = realloc(h->map, sizeof *nm * (size_t)need);
        if (!nm)
            return 0;
        h->map = nm;
        h->nmap = need;
    }
    int n = 0;
    uint64_t now = ncg_now_ns();
    if (h->ufd >= 0 && n < max && ncg_accept_ready(&h->uacc, now)) {
        pf[n] = (struct pollfd){h->ufd, POLLIN, 0};
        h->map[n++] = -1;
    }
    if (h->tfd >= 0 && n < max && ncg_accept_ready(&h->tacc, now)) {
        pf[n] = (struct pollfd){h->tfd, POLLIN, 0};
        h->map[n++] = -2;
    }
    h->http_first = n;
    h->http_n = h->http ? ncg_http_pollfds(h->http, pf + n, max - n) : 0;
    for (int k = 0; k < h->http_n; k++)
        h->map[n++] = -4;
    if (h->up.fd >= 0 && n < max) {
        short ev = POLLIN;
        if (h->pstate == P_ASK_CONNECTING || h->pstate == P_CONNECTING || h->up.txlen)
            ev |= POLLOUT;
        pf[n] = (struct pollfd){h->up.fd, ev, 0};
        h->map[n++] = -3;
    }
    for (int i = 0; i < h->nc && n < max; i++)
        if (h->c[i].io.fd >= 0) {
            pf[n] = (struct pollfd){h->c[i].io.fd,
                                    (short)(POLLIN | (h->c[i].io.txlen ? POLLOUT : 0)), 0};
            h->map[n++] = i;
        }
    return n;
}

void ncg_rhost_handle(struct ncg_rhost *h, const struct pollfd *pf, int n, uint64_t now)
{
    if (h->stopped)
        return;
    if (h->http) /* before the relay's messages change what it renders: either order is fine */
        ncg_http_handle(h->http, pf + h->http_first, n > 0 ? h->http_n : 0, now);
    for (int k = 0; k < n && !h->stopped; k++) {
        if (!pf[k].revents)
            continue;
        int id = h->map[k];
        if (id == -1)
            ncg_accept_round(h->ufd, &h->uacc, RH_ACCEPT_BATCH, now, conn_take, h);
        else if (id == -2)
            ncg_accept_round(h->tfd, &h->tacc, RH_ACCEPT_BATCH, now, conn_take,
                             (void *)((uintptr_t)h | 1));
        else if (id == -3)
            parent_io(h, pf[k].revents, now);
        else if (id == -4)
            continue; /* the endpoint's: handled below */
        else if (id < h->nc && h->c[id].io.fd >= 0 && (!h->c[id].closing || h->c[id].drain) &&
                 (pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
            conn_read(h, id, now);
    }
    if (h->stopped)
        return;
    if (h->left) { /* flush, shut our side, wait for each peer's EOF (the caller's deadline) */
        for (int i = 0; i < h->nc; i++) {
            struct hconn *c = &h->c[i];
            if (c->io.fd < 0)
                continue;
            if (c->io.txlen && ncg_peer_flush(&c->io) != 0)
                ncg_peer_close(&c->io);
            else if (!c->io.txlen && c->drain == 1) {
                shutdown(c->io.fd, SHUT_WR);
                c->drain = 2;
            }
        }
        if (!ncg_rhost_open_conns(h)) {
            if (h->p.relay.node != h->p.root_node && h->pstate == P_UP) {
                ncg_relay_leaving(h->r, now); /* the goodbyes read while draining */
                ncg_peer_flush(&h->up);
            }
            close_gently(&h->up);
            __atomic_store_n(&h->stopped, 1, __ATOMIC_RELEASE);
        }
        return;
    }
    if (h->p.relay.node != h->p.root_node) {
        /* An answer that never comes (a frozen root's or parent's backlog accepts the
         * connection): given up after two seconds, like a refused one. */
        int dialing =
            h->pstate == P_ASK_CONNECTING || h->pstate == P_ASKING || h->pstate == P_CONNECTING;
        if (dialing && now - h->dial_ns > 2000000000ull) {
            if (h->pstate == P_CONNECTING)
                parent_lost(h, now, 1);
            else
                root_unreachable(h, now, 0);
        } else if (h->pstate == P_IDLE && now >= h->retry_at) {
            parent_start(h, now);
        } else if (h->pstate == P_UP && ncg_relay_parent_silent(h->r, now))
            parent_lost(h, now, 1);
        if (h->stopped)
            return;
    }
    ncg_relay_tick(h->r, now);
    if (ncg_relay_out_of_memory(h->r)) { /* its state is partial: no verdict from it */
        if (h->p.relay.node == h->p.root_node)
            ncg_log("the checker in this process ran out of memory and stopped; this job runs "
                    "unguarded");
        else
            ncg_log("the relay of node %u ran out of memory and stopped; the processes beneath "
                    "it run on unguarded",
                    h->p.relay.node);
        struct ncg_msg m = {.type = NCG_MSG_SHUTDOWN};
        m.u.goodbye.flags = NCG_BYE_FAILED;
        stop_with(h, &m);
        return;
    }
    if (h->up.fd >= 0 && h->up.txlen && ncg_peer_flush(&h->up) != 0)
        parent_lost(h, now, 1);
    for (int i = 0; i < h->nc; i++) {
        struct hconn *c = &h->c[i];
        if (c->io.fd < 0)
            continue;
        int broken = c->io.txlen && ncg_peer_flush(&c->io) != 0;
        if ((broken || c->closing == 2) && c->closing != 1) {
            ncg_relay_closed(h->r, i, now);
            ncg_peer_close(&c->io);
        } else if (c->closing == 1 && (!c->io.txlen || broken)) {
            close_gently(&c->io);
        }
    }
}

int ncg_rhost_pending_tx(const struct ncg_rhost *h)
{
    int n = h->up.fd >= 0 && h->up.txlen > 0;
    for (int i = 0; i < h->nc; i++)
        n += h->c[i].io.fd >= 0 && h->c[i].io.txlen > 0;
    return n;
}

int ncg_rhost_releases_waiting(const struct ncg_rhost *h)
{
    return h->r ? ncg_relay_releases_waiting(h->r) : 0;
}

size_t ncg_rhost_left(const struct ncg_rhost *h, struct ncg_relay_left_ent *out, size_t cap)
{
    return ncg_relay_left(h->r, out, cap);
}

int ncg_rhost_open_conns(const struct ncg_rhost *h)
{
    int n = 0;
    for (int i = 0; i < h->nc; i++)
        n += h->c[i].io.fd >= 0;
    return n;
}

/* ncg_rhost_stay's tally over the relay's view, per connection id. */
enum { STAY_NONE, STAY_UNREG, STAY_PROC, STAY_RELAY, STAY_RELAY_BUSY };
struct stay_scan {
    uint32_t self;
    uint64_t now;
    uint8_t *conn; /* STAY_UNREG: another process's, no last goodbye yet; STAY_PROC: the same
                      holding an active rank; STAY_RELAY(_BUSY): a child relay (with active
                      ranks beneath it) */
    int n;
    struct ncg_host_stay *st;
};

static void stay_conn(void *arg, const struct ncg_relay_conn_view *c)
{
    struct stay_scan *x = arg;
    uint64_t since = x->now - (uint64_t)(c->connected_s * 1e9);
    if (since > x->st->newest_ns)
        x->st->newest_ns = since;
    if (c->conn < 0 || c->conn >= x->n)
        return;
    if (c->relay)
        x->conn[c->conn] = STAY_RELAY;
    else if (c->authed && c->pid == x->self)
        x->st->self_pending += !c->bye; /* our own goodbye not read yet */
    else if (!c->bye)
        x->conn[c->conn] = STAY_UNREG;
}

static void stay_comm(void *arg, const struct ncg_relay_comm_view *c)
{
    struct stay_scan *x = arg;
    uint32_t here = 0;
    for (uint32_t i = 0; i < c->nhere; i++) {
        const struct ncg_relay_rank_view *m = &c->here[i];
        if (m->state != 1)
            continue;
        here++;
        if (m->conn >= 0 && m->conn < x->n && x->conn[m->conn] == STAY_UNREG)
            x->conn[m->conn] = STAY_PROC;
    }
    if (c->done)
        return;
    if (c->active > here) /* active ranks beneath child relays */
        for (int k = 0; k < x->n; k++)
            x->conn[k] = x->conn[k] == STAY_RELAY ? STAY_RELAY_BUSY : x->conn[k];
    int unknown = (int)(c->nranks - c->known);
    if (unknown > x->st->unknown)
        x->st->unknown = unknown;
}

int ncg_rhost_stay(struct ncg_rhost *h, uint32_t self_pid, uint64_t now, struct ncg_host_stay *st)
{
    memset(st, 0, sizeof *st);
    if (!h->r || h->stopped || h->left)
        return 0;
    uint8_t *conn = calloc((size_t)h->nc + 1, 1);
    if (!conn)
        return -ENOMEM;
    struct stay_scan x = {self_pid, now, conn, h->nc, st};
    struct ncg_relay_view_ops ops = {stay_conn, stay_comm, &x};
    ncg_relay_view(h->r, now, &ops);
    for (int i = 0; i < h->nc; i++) {
        st->procs += conn[i] == STAY_PROC || conn[i] == STAY_RELAY_BUSY;
        st->unreg += conn[i] == STAY_UNREG;
    }
    free(conn);
    return 0;
}

void ncg_rhost_leave(struct ncg_rhost *h, const struct ncg_msg *sd)
{
    if (h->stopped || h->left)
        return;
    struct ncg_msg relay = {.type = NCG_MSG_SHUTDOWN};
    relay.u.goodbye.flags = NCG_BYE_RELAY;
    const struct ncg_msg *m = h->p.relay.node == h->p.root_node ? sd : &relay;
    /* The connections still in the listeners' backlogs are accepted first and told too: a
     * process whose checker was slow to accept it would otherwise be left without the final
     * counts (its calls past them unjudged) and see a reset instead of a goodbye. */
    uint64_t now = ncg_now_ns();
    if (h->p.relay.node != h->p.root_node) { /* the goodbyes read since the last RSTAT */
        for (int i = 0; i < h->nc; i++)
            if (h->c[i].io.fd >= 0 && !h->c[i].closing)
                conn_read(h, i, now);
        ncg_relay_leaving(h->r, now);
    }
    for (int round = 0; round < 4; round++) {
        struct ncg_accept_state a = {0}, b = {0};
        if (h->ufd >= 0)
            ncg_accept_round(h->ufd, &a, RH_ACCEPT_BATCH, now, conn_take, h);
        if (h->tfd >= 0)
            ncg_accept_round(h->tfd, &b, RH_ACCEPT_BATCH, now, conn_take,
                             (void *)((uintptr_t)h | 1));
    }
    for (int i = 0; i < h->nc; i++)
        if (h->c[i].io.fd >= 0) {
            if (!h->c[i].closing)
                ncg_peer_send(&h->c[i].io, m);
            h->c[i].closing = 1;
            h->c[i].drain = 1;
        }
    if (h->ufd >= 0)
        close(h->ufd);
    if (h->tfd >= 0)
        close(h->tfd);
    h->ufd = h->tfd = -1;
    h->left = 1;
}

struct ncg_http *ncg_rhost_http_start(struct ncg_rhost *h, const char *spec, char *err,
                                      size_t errlen)
{
    if (h->http) {
        snprintf(err, errlen, "already served");
        return NULL;
    }
    struct ncg_http_source src;
    ncg_tree_src_init(&h->ts, h->r, h->p.relay.node, h->p.root_node, h->p.nnodes, h->p.fanout,
                      &src);
    h->http = ncg_http_new(spec, h->p.relay.token, &src, err, errlen);
    return h->http;
}

void ncg_rhost_fork_child(struct ncg_rhost *h)
{
    if (h->http)
        ncg_http_fork_child(h->http);
    for (int i = 0; i < h->nc; i++)
        if (h->c[i].io.fd >= 0)
            close(h->c[i].io.fd);
    if (h->up.fd >= 0)
        close(h->up.fd);
    if (h->ufd >= 0)
        close(h->ufd);
    if (h->tfd >= 0)
        close(h->tfd);
}
