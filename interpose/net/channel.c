/* The side channel's sockets (channel.h): bounded non-blocking peers, the listener, and the
 * server that drives a coordinator (coord.c) from poll() events; ncg_coord_serve runs one
 * standalone (`ncclguard coord`). Free of shim state so the CLI links it alone; the
 * checker thread that uses it inside a job is client.c. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "accept.h"
#include "channel.h"
#include "config.h"
#include "coord.h"
#include "http.h"
#include "metrics.h"
#include "verdict.h"
#include "wire.h"

#define TX_CAP (8u << 20)   /* a peer that lets this much pile up is dropped */
#define NCG_MAX_UNAUTHED 64 /* connections without a valid HELLO yet */
#define NCG_ACCEPT_BATCH 64 /* accepts per round: the rest of the loop is never starved */

/* ---------- buffered non-blocking peer ---------- */

void ncg_peer_init(struct ncg_peer *p, int fd)
{
    memset(p, 0, sizeof *p);
    p->fd = fd;
}

void ncg_peer_close(struct ncg_peer *p)
{
    if (p->fd >= 0)
        close(p->fd);
    free(p->rx);
    free(p->tx);
    ncg_peer_init(p, -1);
}

/* Queue one message; -1 when the peer's backlog is over TX_CAP (drop it). */
int ncg_peer_send(struct ncg_peer *p, const struct ncg_msg *m)
{
    size_t need = m->type == NCG_MSG_VERDICT   ? NCG_WIRE_HDR + ncg_verdict_wire_size(m->u.verdict)
                  : m->type == NCG_MSG_RANSWER ? 32768 /* 32 slots of 4 groups: < 30 KB */
                                               : 16384;
    if (p->fd < 0)
        return -1;
    if (p->txcap - p->txlen < need) {
        size_t cap = p->txcap ? p->txcap : 16384;
        while (cap - p->txlen < need)
            cap *= 2;
        if (cap > TX_CAP + need)
            return -1;
        uint8_t *n = realloc(p->tx, cap);
        if (!n)
            return -2;
        p->tx = n;
        p->txcap = cap;
    }
    long n = ncg_wire_encode_ref(m, p->tx + p->txlen, p->txcap - p->txlen, &p->tref);
    if (n < 0)
        return -1;
    p->txlen += (size_t)n;
    return 0;
}

/* What a non-blocking send or recv returned (n, with errno), as channel.h says. */
static ssize_t sock_result(ssize_t n)
{
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    return n > 0 ? n : -1;
}

ssize_t ncg_sock_send(int fd, const void *b, size_t n)
{
    ssize_t w;
    do
        w = send(fd, b, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    return sock_result(w);
}

ssize_t ncg_sock_recv(int fd, void *b, size_t n)
{
    ssize_t r;
    do
        r = recv(fd, b, n, MSG_DONTWAIT);
    while (r < 0 && errno == EINTR);
    return sock_result(r);
}

/* Write what the socket takes now; -1 on a broken connection. */
int ncg_peer_flush(struct ncg_peer *p)
{
    while (p->txlen) {
        ssize_t w = ncg_sock_send(p->fd, p->tx, p->txlen);
        if (w <= 0)
            return (int)w;
        memmove(p->tx, p->tx + w, p->txlen - (size_t)w);
        p->txlen -= (size_t)w;
        p->ntx += (uint64_t)w;
    }
    return 0;
}

/* Read what is there, bounded per call so that one busy peer cannot hold the thread that also
 * keeps everyone's liveness; -1 on EOF or error. */
int ncg_peer_fill(struct ncg_peer *p)
{
    for (size_t got = 0; got < NCG_PEER_RX_BUDGET;) {
        if (p->rxcap - p->rxlen < 4096) {
            size_t cap = p->rxcap ? p->rxcap * 2 : 16384;
            if (cap > NCG_WIRE_HDR + NCG_WIRE_MAX_PAYLOAD + 16384)
                return p->rxcap - p->rxlen ? 0 : -1;
            uint8_t *n = realloc(p->rx, cap);
            if (!n)
                return -2;
            p->rx = n;
            p->rxcap = cap;
        }
        ssize_t r = ncg_sock_recv(p->fd, p->rx + p->rxlen, p->rxcap - p->rxlen);
        if (r <= 0)
            return (int)r;
        p->rxlen += (size_t)r;
        p->nrx += (uint64_t)r;
        got += (size_t)r;
        if (p->rxlen < p->rxcap)
            return 0;
    }
    return 0;
}

/* Next decoded message: 1 with *m filled, 0 none yet, -1 malformed. */
int ncg_peer_next(struct ncg_peer *p, struct ncg_msg *m)
{
    if (!p->rxlen)
        return 0;
    long n = ncg_wire_decode_ref(p->rx, p->rxlen, m, &p->rref);
    if (n < 0)
        return -1;
    if (n == 0)
        return 0;
    memmove(p->rx, p->rx + n, p->rxlen - (size_t)n);
    p->rxlen -= (size_t)n;
    return 1;
}

void ncg_set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL, 0);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* ---------- server side: the coordinator behind a listener ---------- */

void ncg_server_send(void *arg, int conn, const struct ncg_msg *m)
{
    struct ncg_server *s = arg;
    if (conn < 0 || conn >= s->npc || s->pc[conn].fd < 0 || s->dead[conn])
        return;
    int rc = ncg_peer_send(&s->pc[conn], m);
    if (rc == -2)
        s->nomem = 1;
    else if (rc != 0)
        s->dead[conn] = 2; /* backlog: closed as lost */
}

void ncg_server_drop(void *arg, int conn)
{
    struct ncg_server *s = arg;
    if (conn >= 0 && conn < s->npc)
        s->dead[conn] = 1;
}

int ncg_listen(uint16_t *port, const char *host, int want, char *err, size_t errlen)
{
    int fd = -1;
    if (host && host[0]) {
        struct addrinfo hints = {0}, *res = NULL;
        char ps[16];
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE;
        snprintf(ps, sizeof ps, "%d", want);
        int rc = getaddrinfo(host, ps, &hints, &res);
        if (rc != 0) {
            snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
            return -1;
        }
        for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
            fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0)
                continue;
            int one = 1;
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (bind(fd, a->ai_addr, a->ai_addrlen) != 0) {
                close(fd);
                fd = -1;
            }
        }
        freeaddrinfo(res);
    } else {
        struct sockaddr_in6 a6 = {0};
        a6.sin6_family = AF_INET6;
        a6.sin6_addr = in6addr_any;
        a6.sin6_port = htons((uint16_t)want);
        fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0) {
            int zero = 0, one = 1;
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (bind(fd, (struct sockaddr *)&a6, sizeof a6) != 0) {
                close(fd);
                fd = -1;
            }
        }
        if (fd < 0) { /* no IPv6: plain IPv4 */
            struct sockaddr_in a4 = {0};
            a4.sin_family = AF_INET;
            a4.sin_addr.s_addr = htonl(INADDR_ANY);
            a4.sin_port = htons((uint16_t)want);
            fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            int one = 1;
            if (fd >= 0)
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (fd >= 0 && bind(fd, (struct sockaddr *)&a4, sizeof a4) != 0) {
                close(fd);
                fd = -1;
            }
        }
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot bind port %d: %s", want, strerror(errno));
        return -1;
    }
    if (listen(fd, 1024) != 0) {
        snprintf(err, errlen, "listen: %s", strerror(errno));
        close(fd);
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                           : ((struct sockaddr_in *)&ss)->sin_port);
    ncg_set_nonblock(fd);
    return fd;
}

/* One accepted connection (ncg_accept_fn): 0 to accept more, -1 out of memory. */
static int srv_take(void *arg, int fd, const struct sockaddr_storage *from, socklen_t fromlen,
                    uint64_t now)
{
    struct ncg_server *s = arg;
    (void)from;
    (void)fromlen;
    /* Unauthenticated connections are capped (they also time out, coord.c): the oldest
     * makes room, so a flood cannot lock the ranks out for long. */
    int oldest, nun = ncg_coord_unauthed(s->co, &oldest);
    if (nun >= NCG_MAX_UNAUTHED && oldest >= 0 && oldest < s->npc && s->pc[oldest].fd >= 0) {
        ncg_coord_closed(s->co, oldest, now);
        ncg_peer_close(&s->pc[oldest]);
        s->dead[oldest] = 0;
    }
    ncg_set_nonblock(fd);
    int id;
    for (id = 0; id < s->npc; id++)
        if (s->pc[id].fd < 0 && !s->dead[id])
            break;
    if (id == s->npc) {
        int n = s->npc ? s->npc * 2 : 32;
        struct ncg_peer *np = realloc(s->pc, sizeof *np * (size_t)n);
        if (np)
            s->pc = np;
        uint8_t *nd = np ? realloc(s->dead, (size_t)n) : NULL;
        if (!np || !nd) {
            close(fd);
            s->nomem = 1;
            return -1;
        }
        s->dead = nd;
        for (int i = s->npc; i < n; i++) {
            ncg_peer_init(&s->pc[i], -1);
            s->dead[i] = 0;
        }
        s->npc = n;
    }
    ncg_peer_init(&s->pc[id], fd);
    ncg_coord_connected(s->co, id, now);
    if (s->bye)
        ncg_peer_send(&s->pc[id], s->bye);
    return 0;
}

void ncg_server_farewell(struct ncg_server *s, const struct ncg_msg *bye, uint64_t now)
{
    if (s->failed)
        return;
    s->bye = bye;
    for (int i = 0; i < s->npc; i++)
        if (s->pc[i].fd >= 0)
            ncg_peer_send(&s->pc[i], bye);
    if (s->lfd >= 0 && !s->nomem) /* the backlog, whatever the pause (bounded rounds) */
        for (int r = 0; r < 16 && !s->nomem; r++) {
            int before = ncg_server_open_conns(s);
            struct ncg_accept_state a = {0};
            ncg_accept_round(s->lfd, &a, NCG_ACCEPT_BATCH, now, srv_take, s);
            if (ncg_server_open_conns(s) == before)
                break;
        }
}

/* Messages dispatched per connection and round: a flood from one peer waits its turn, the
 * round's tick (pings, liveness) comes on time. */
#define SRV_MSGS_PER_ROUND 256

/* Reads and dispatches what conn id has (bounded); closes it on EOF or garbage. */
static void srv_read(struct ncg_server *s, int id, uint64_t now, int fill)
{
    struct ncg_peer *p = &s->pc[id];
    static struct ncg_msg m;
    int rc = fill ? ncg_peer_fill(p) : 0;
    p->more = 0;
    for (int done = 0;; done++) {
        if (done == SRV_MSGS_PER_ROUND) {
            p->more = 1; /* the rest next round, before poll waits */
            break;
        }
        int k = ncg_peer_next(p, &m);
        if (k <= 0) {
            if (k < 0)
                rc = -1;
            break;
        }
        ncg_coord_message(s->co, id, &m, now);
        ncg_msg_release(&m);
        if (s->dead[id])
            return;
    }
    if (rc == -2) {
        s->nomem = 1; /* ours, not the peer's: no death (srv_fail) */
    } else if (rc < 0) {
        ncg_coord_closed(s->co, id, now);
        ncg_peer_close(p);
    }
}

/* The checker cannot go on (an allocation failed, so its state is incomplete): every client
 * gets a SHUTDOWN with NCG_BYE_FAILED before its connection closes, so that nobody reads the
 * close as the death of this process; then everything is closed and the server stays down.
 * The frame is encoded on the stack and queued only where the buffer has room: no allocation. */
static void srv_fail(struct ncg_server *s)
{
    static struct ncg_msg m;
    uint8_t frame[256];
    m.type = NCG_MSG_SHUTDOWN;
    m.u.goodbye.flags = NCG_BYE_FAILED;
    m.u.goodbye.n = 0;
    long n = ncg_wire_encode(&m, frame, sizeof frame);
    for (int i = 0; i < s->npc; i++) {
        struct ncg_peer *p = &s->pc[i];
        if (p->fd < 0)
            continue;
        if (n > 0 && p->txcap - p->txlen >= (size_t)n) {
            memcpy(p->tx + p->txlen, frame, (size_t)n);
            p->txlen += (size_t)n;
        } else if (n > 0 && p->txlen == 0) {
            ssize_t w = send(p->fd, frame, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
            (void)w;
        }
        ncg_peer_flush(p); /* best effort: the frames are small, the socket buffer takes them */
        ncg_peer_close(p);
        s->dead[i] = 0;
    }
    if (s->lfd >= 0)
        close(s->lfd);
    s->lfd = -1;
    __atomic_store_n(&s->failed, 1, __ATOMIC_RELEASE); /* read by ncg_channel_listen's caller */
}

/* Closes connections the coordinator dropped, and lost ones (backlog). */
static void srv_reap(struct ncg_server *s, uint64_t now)
{
    for (int i = 0; i < s->npc; i++) {
        if (!s->dead[i])
            continue;
        if (s->dead[i] == 2)
            ncg_coord_closed(s->co, i, now);
        s->dead[i] = 0;
        ncg_peer_close(&s->pc[i]);
    }
}

int ncg_server_pollfds(struct ncg_server *s, struct pollfd *pf, int *map, int max)
{
    int n = 0;
    if (s->lfd >= 0 && n < max && ncg_accept_ready(&s->acc, ncg_now_ns())) {
        pf[n] = (struct pollfd){s->lfd, POLLIN, 0};
        map[n++] = -1;
    }
    for (int i = 0; i < s->npc && n < max; i++)
        if (s->pc[i].fd >= 0) {
            pf[n] =
                (struct pollfd){s->pc[i].fd, (short)(POLLIN | (s->pc[i].txlen ? POLLOUT : 0)), 0};
            map[n++] = i;
        }
    for (int k = s->http ? ncg_http_pollfds(s->http, pf + n, max - n) : 0; k > 0; k--)
        map[n++] = -2; /* last, contiguous: handed back as one slice */
    return n;
}

void ncg_server_handle(struct ncg_server *s, struct pollfd *pf, int *map, int n, uint64_t now)
{
    if (s->failed)
        return;
    int http_first = n; /* the endpoint's sockets come last, contiguous */
    for (int k = 0; k < n; k++)
        if (map[k] == -2) {
            http_first = k;
            break;
        }
    for (int k = 0; k < n && !s->nomem; k++) {
        if (!pf[k].revents || map[k] == -2)
            continue;
        if (map[k] < 0) {
            ncg_accept_round(s->lfd, &s->acc, NCG_ACCEPT_BATCH, now, srv_take, s);
            continue;
        }
        int id = map[k];
        if (s->pc[id].fd < 0 || s->dead[id])
            continue;
        if (pf[k].revents & (POLLIN | POLLHUP | POLLERR))
            srv_read(s, id, now, 1);
    }
    for (int i = 0; i < s->npc && !s->nomem; i++) /* messages left from the last round */
        if (s->pc[i].fd >= 0 && s->pc[i].more && !s->dead[i])
            srv_read(s, i, now, 0);
    if (!s->nomem && now - s->last_tick_ns >= (uint64_t)s->interval_ms * 500000ull) {
        s->last_tick_ns = now;
        ncg_coord_tick(s->co, now);
    }
    if (s->nomem || ncg_coord_out_of_memory(s->co)) {
        srv_fail(s);
        return;
    }
    for (int i = 0; i < s->npc; i++)
        if (s->pc[i].fd >= 0 && !s->dead[i] && s->pc[i].txlen && ncg_peer_flush(&s->pc[i]) != 0)
            s->dead[i] = 2;
    srv_reap(s, now);
    if (s->http)
        ncg_http_handle(s->http, pf + http_first, n - http_first, now);
}

int ncg_server_busy(const struct ncg_server *s)
{
    for (int i = 0; i < s->npc; i++)
        if (s->pc[i].fd >= 0 && s->pc[i].more)
            return 1;
    return 0;
}

int ncg_server_pending_tx(const struct ncg_server *s)
{
    int n = 0;
    for (int i = 0; i < s->npc; i++)
        n += s->pc[i].fd >= 0 && s->pc[i].txlen > 0;
    return n;
}

int ncg_server_open_conns(const struct ncg_server *s)
{
    int n = 0;
    for (int i = 0; i < s->npc; i++)
        n += s->pc[i].fd >= 0;
    return n;
}

/* ncg_server_stay's tally over the coordinator's view: per connection id, 1 another
 * process's connection that has not said its last goodbye, 2 the same holding a member. */
struct stay_scan {
    uint32_t self;
    uint64_t now;
    uint8_t *conn;
    int n;
    struct ncg_server_stay *st;
};

static void stay_conn(void *arg, const struct ncg_coord_conn_view *c)
{
    struct stay_scan *x = arg;
    uint64_t since = x->now - (uint64_t)(c->connected_s * 1e9);
    if (since > x->st->newest_ns)
        x->st->newest_ns = since;
    if (c->authed && c->pid == x->self)
        x->st->self_pending += !c->bye; /* our own goodbye not read yet */
    else if (!c->bye && c->conn >= 0 && c->conn < x->n)
        x->conn[c->conn] = 1;
}

static void stay_comm(void *arg, const struct ncg_coord_comm_view *c)
{
    struct stay_scan *x = arg;
    int unknown = 0;
    for (uint32_t i = 0; i < c->nranks; i++) {
        const struct ncg_coord_member_view *m = &c->m[i];
        if (m->state == 1 && m->conn >= 0 && m->conn < x->n && x->conn[m->conn])
            x->conn[m->conn] = 2;
        unknown += m->state == 0;
    }
    if (!c->done && unknown > x->st->unknown)
        x->st->unknown = unknown;
}

int ncg_server_stay(struct ncg_server *s, uint32_t self_pid, uint64_t now,
                    struct ncg_server_stay *st)
{
    static uint8_t *conn;
    static int cap;
    memset(st, 0, sizeof *st);
    if (!s->co)
        return 0;
    if (s->npc > cap) {
        uint8_t *n = realloc(conn, (size_t)s->npc);
        if (!n)
            return -ENOMEM;
        conn = n;
        cap = s->npc;
    }
    if (s->npc)
        memset(conn, 0, (size_t)s->npc);
    struct stay_scan x = {self_pid, now, conn, s->npc, st};
    struct ncg_coord_view_ops ops = {stay_conn, stay_comm, &x};
    ncg_coord_view(s->co, now, &ops);
    for (int i = 0; i < s->npc; i++) {
        st->procs += conn[i] == 2;
        st->unreg += conn[i] == 1;
    }
    return 0;
}

/* ---------- standalone coordinator ---------- */

const char *ncg_host_name(void)
{
    static char h[64];
    if (!h[0] && gethostname(h, sizeof h - 1) != 0)
        snprintf(h, sizeof h, "localhost");
    return h;
}

void ncg_coord_params_init(struct ncg_coord_params *cp, const struct ncg_config *cfg,
                           uint64_t token, int embedded, int32_t global_rank)
{
    *cp = (struct ncg_coord_params){.token = token,
                                    .interval_ms = cfg->interval_ms ? cfg->interval_ms : 100,
                                    .heartbeat_timeout_s = cfg->heartbeat_timeout_s,
                                    .lag_warn_s = cfg->lag_warn_s,
                                    .lag_abort_s = cfg->lag_abort_s,
                                    .stuck_warn_s = cfg->stuck_warn_s,
                                    .stuck_abort_s = cfg->stuck_abort_s,
                                    .exit_wait_s = cfg->exit_wait_s,
                                    .embedded = (uint8_t)embedded,
                                    .global_rank = global_rank,
                                    .pid = (uint32_t)getpid()};
    snprintf(cp->host, sizeof cp->host, "%s", ncg_host_name());
}

static void coord_warn(const char *line, void *arg)
{
    (void)arg;
    fprintf(stderr, "%s\n", line);
}

/* The standalone coordinator's log: one stderr line per event, with the wall-clock time. */
static void coord_log(void *arg, const char *line)
{
    (void)arg;
    struct timespec ts;
    struct tm tm;
    char when[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(stderr, "ncclguard: coord: %s.%03ld UTC %s\n", when, ts.tv_nsec / 1000000L, line);
}

int ncg_coord_serve(const char *listen_host, int port, const char *token_or_null,
                    volatile int *stop, char *err, size_t errlen)
{
    return ncg_coord_serve_http(listen_host, port, token_or_null, NULL, stop, err, errlen);
}

int ncg_coord_serve_http(const char *listen_host, int port, const char *token_or_null,
                         const char *http_spec, volatile int *stop, char *err, size_t errlen)
{
    struct ncg_server s = {.lfd = -1};
    uint16_t p = 0;
    s.lfd = ncg_listen(&p, listen_host, port, err, errlen);
    if (s.lfd < 0)
        return -1;
    /* The same parsing and checks as in the ranks (bad values: one line, the default). */
    struct ncg_config cfg;
    ncg_config_parse(&cfg, ncg_env_process, coord_warn, NULL);
    struct ncg_coord_params cp;
    ncg_coord_params_init(&cp, &cfg, token_or_null ? ncg_token_hash(token_or_null) : 0, 0, -1);
    struct ncg_coord_ops ops = {ncg_server_send, ncg_server_drop, &s, coord_log};
    s.co = ncg_coord_new(&cp, &ops);
    s.interval_ms = cp.interval_ms;
    if (!s.co) {
        snprintf(err, errlen, "out of memory");
        close(s.lfd);
        return -1;
    }
    fprintf(stderr, "ncclguard: checker listening on %s:%u%s\n",
            listen_host && *listen_host ? listen_host : "*", p,
            token_or_null ? " (token required)" : "");
    struct ncg_http_source src;
    ncg_coord_http_source(s.co, &src);
    if (http_spec && !(s.http = ncg_http_new(http_spec, cp.token, &src, err, errlen))) {
        ncg_coord_free(s.co);
        close(s.lfd);
        return -1;
    }
    if (s.http)
        fprintf(stderr, "ncclguard: status endpoint on %s (/status /metrics /healthz)%s\n",
                ncg_http_url(s.http), token_or_null ? " (token required)" : "");
    enum { MAXFD = 8192 };
    struct pollfd *pf = calloc(MAXFD, sizeof *pf);
    int *map = calloc(MAXFD, sizeof *map);
    if (!pf || !map) {
        snprintf(err, errlen, "out of memory");
        free(pf);
        free(map);
        ncg_http_free(s.http);
        ncg_coord_free(s.co);
        close(s.lfd);
        return -1;
    }
    while (!*stop && !s.failed) {
        int n = ncg_server_pollfds(&s, pf, map, MAXFD);
        int rc = poll(pf, (nfds_t)n, ncg_server_busy(&s) ? 0 : (int)s.interval_ms / 2 + 1);
        if (rc < 0 && errno != EINTR)
            break;
        ncg_server_handle(&s, pf, map, rc > 0 ? n : 0, ncg_now_ns());
    }
    if (s.failed) {
        fprintf(stderr, "ncclguard: the checker ran out of memory and stopped; its clients run "
                        "on unguarded\n");
        snprintf(err, errlen, "out of memory");
    } else {
        ncg_coord_shutdown(s.co);
    }
    for (int i = 0; i < s.npc; i++)
        if (s.pc[i].fd >= 0) {
            ncg_peer_flush(&s.pc[i]);
            ncg_peer_close(&s.pc[i]);
        }
    free(s.pc);
    free(s.dead);
    free(pf);
    free(map);
    ncg_http_free(s.http);
    ncg_coord_free(s.co);
    close(s.lfd);
    return s.failed ? -1 : 0;
}
