/* The side channel's sockets (channel.h): bounded non-blocking peers and the listener. Free of
 * shim state so the CLI links it alone; the checker's host is relayhost.c, the checker thread
 * that uses it inside a job client.c. */
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

#include "channel.h"
#include "verdict.h"
#include "wire.h"

#define TX_CAP (8u << 20) /* a peer that lets this much pile up is dropped */

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

/* ---------- the listener ---------- */

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

const char *ncg_host_name(void)
{
    static char h[64];
    if (!h[0] && gethostname(h, sizeof h - 1) != 0)
        snprintf(h, sizeof h, "localhost");
    return h;
}
