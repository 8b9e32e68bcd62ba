/* The status endpoint's server (http.h): listener and connections as a small state machine
 * (read the head, write the answer, half-close and drain), every socket non-blocking and
 * polled by the coordinator's loop, so a slow or hostile client can cost at most one bounded
 * read or write per round and is cut at its deadline. Answers come from metrics.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "accept.h"
#include "channel.h"
#include "clock.h"
#include "buf.h"
#include "hash.h" /* ncg_token_hash */
#include "http.h"
#include "hostport.h"
#include "http_parse.h"

enum { C_FREE = 0, C_READ, C_RENDER, C_WRITE, C_DRAIN };
enum { P_STATUS = 1, P_METRICS }; /* what a C_RENDER connection waits for */

#define DRAIN_NS 1000000000ull /* after the answer: read and discard for at most 1 s */
#define ACCEPTS_PER_ROUND 32

struct hconn {
    int fd, st;
    uint64_t t0, drain_until;
    char rx[NCG_HTTP_MAX_HEAD];
    size_t rxlen;
    struct ncg_buf tx;
    size_t txoff;
    /* C_RENDER: the answer was not ready; rendered again until then (or its deadline) */
    uint8_t what, head;
    uint64_t asked_ns;
    struct ncg_http_query q;
};

struct ncg_http {
    int lfd;
    uint64_t token;
    struct ncg_accept_state acc; /* the listener's pause (accept.h) */
    char token_hex[17];
    struct ncg_http_source src;
    char addr[300], url[320];
    struct hconn c[NCG_HTTP_MAX_CONNS];
    int pfc[NCG_HTTP_MAX_CONNS + 1]; /* what each pollfd entry is: -1 listener, else conn */
    int npf;
    struct ncg_http_stats st;
};

void ncg_http_token_hex(uint64_t token, char out[17])
{
    if (!token) {
        out[0] = 0;
        return;
    }
    snprintf(out, 17, "%016" PRIx64, token);
}

struct ncg_http *ncg_http_new(const char *spec, uint64_t token, const struct ncg_http_source *src,
                              char *err, size_t errlen)
{
    char host[256];
    struct ncg_hostport hp;
    if (ncg_hostport_parse(spec, NCG_HP_BARE_V6 | NCG_HP_PORT_ZERO, &hp) != 0) {
        snprintf(err, errlen, "expected HOST:PORT, got \"%s\"", spec);
        return NULL;
    }
    snprintf(host, sizeof host, "%.*s", (int)hp.hostlen, hp.host);
    int want = (int)hp.port;
    struct ncg_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    uint16_t port = 0;
    h->lfd = ncg_listen(&port, host, want, err, errlen);
    if (h->lfd < 0) {
        free(h);
        return NULL;
    }
    h->token = token;
    ncg_http_token_hex(token, h->token_hex);
    h->src = *src;
    for (int i = 0; i < NCG_HTTP_MAX_CONNS; i++)
        h->c[i].fd = -1;
    int v6 = strchr(host, ':') != NULL;
    snprintf(h->addr, sizeof h->addr, "%s%s%s:%u", v6 ? "[" : "", host, v6 ? "]" : "", port);
    char name[256] = "";
    if (!strcmp(host, "0.0.0.0") || !strcmp(host, "::") || !host[0])
        if (gethostname(name, sizeof name - 1) != 0)
            name[0] = 0;
    if (name[0])
        snprintf(h->url, sizeof h->url, "http://%s:%u", name, port);
    else
        snprintf(h->url, sizeof h->url, "http://%s", h->addr);
    return h;
}

static void conn_close(struct ncg_http *h, struct hconn *c)
{
    (void)h;
    if (c->fd >= 0)
        close(c->fd);
    ncg_buf_free(&c->tx);
    c->fd = -1;
    c->st = C_FREE;
    c->rxlen = c->txoff = 0;
}

void ncg_http_free(struct ncg_http *h)
{
    if (!h)
        return;
    for (int i = 0; i < NCG_HTTP_MAX_CONNS; i++)
        if (h->c[i].st != C_FREE)
            conn_close(h, &h->c[i]);
    if (h->lfd >= 0)
        close(h->lfd);
    free(h);
}

const char *ncg_http_address(const struct ncg_http *h)
{
    return h->addr;
}

const char *ncg_http_url(const struct ncg_http *h)
{
    return h->url;
}

void ncg_http_get_stats(const struct ncg_http *h, struct ncg_http_stats *st)
{
    *st = h->st;
}

/* ---------- answers ---------- */

/* Equal in constant time for strings of equal length (the token is not leaked by timing). */
static int same_secret(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = la != lb;
    for (size_t i = 0; i < la && i < lb; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

static int authorized(const struct ncg_http *h, const struct ncg_http_req *r)
{
    if (!h->token)
        return 1;
    if (!r->has_auth || strcasecmp(r->auth_scheme, "Bearer") != 0 || !r->auth_cred[0])
        return 0;
    return same_secret(r->auth_cred, h->token_hex) || ncg_token_hash(r->auth_cred) == h->token;
}

static void answer(struct ncg_http *h, struct hconn *c, int status, const char *ctype,
                   const char *extra, const char *body, size_t blen, int head_only)
{
    struct ncg_buf *b = &c->tx;
    ncg_buf_printf(b,
                   "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                   "Cache-Control: no-store\r\nConnection: close\r\n%s\r\n",
                   status, ncg_http_reason(status), ctype, blen, extra ? extra : "");
    if (!head_only)
        ncg_buf_add(b, body, blen);
    h->st.status[status / 100 < 6 ? status / 100 : 0]++;
    c->st = C_WRITE;
    c->txoff = 0;
}

static void answer_text(struct ncg_http *h, struct hconn *c, int status, const char *extra,
                        const char *text, int head_only)
{
    answer(h, c, status, "text/plain; charset=utf-8", extra, text, strlen(text), head_only);
}

/* Renders what c asked for (c->what, c->q) and answers; not ready yet: c waits in C_RENDER
 * (0 returned), else 1 (answered). */
static int render(struct ncg_http *h, struct hconn *c, uint64_t now)
{
    struct ncg_buf body = {0};
    int rc;
    if (c->what == P_STATUS) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        rc = h->src.status(h->src.arg, &c->q, now, (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9,
                           &body);
    } else {
        rc = h->src.metrics(h->src.arg, now, &body);
    }
    if (rc == NCG_HTTP_NOT_READY && now - c->asked_ns < NCG_HTTP_RENDER_TIMEOUT_NS) {
        ncg_buf_free(&body);
        c->st = C_RENDER;
        return 0;
    }
    if (rc == 0)
        answer(h, c, 200,
               c->what == P_STATUS ? "application/json"
                                   : "text/plain; version=0.0.4; charset=utf-8",
               NULL, body.p, body.len, c->head);
    else if (rc == NCG_HTTP_NOT_READY)
        answer_text(h, c, 503, "Retry-After: 1\r\n", "not ready: try again\n", c->head);
    else
        answer_text(h, c, 500, NULL, "out of memory\n", c->head);
    ncg_buf_free(&body);
    return 1;
}

static void route(struct ncg_http *h, struct hconn *c, const struct ncg_http_req *r, uint64_t now)
{
    int head = r->method == NCG_HTTP_HEAD;
    h->st.requests++;
    if (r->method == NCG_HTTP_OTHER) {
        answer_text(h, c, 405, "Allow: GET, HEAD\r\n", "method not allowed (read-only)\n", 0);
        return;
    }
    if (!authorized(h, r)) {
        answer_text(h, c, 401, "WWW-Authenticate: Bearer realm=\"ncclguard\"\r\n",
                    "unauthorized: send Authorization: Bearer <token>\n", head);
        return;
    }
    memset(&c->q, 0, sizeof c->q);
    c->head = (uint8_t)head;
    c->asked_ns = now;
    if (!strcmp(r->path, "/healthz")) {
        answer_text(h, c, 200, NULL, "ok\n", head);
    } else if (!strcmp(r->path, "/status")) {
        char err[160];
        if (h->src.status_query && r->query[0] &&
            ncg_http_query_parse(r->query, &c->q, err, sizeof err - 1) != 0) {
            strcat(err, "\n");
            answer_text(h, c, 400, NULL, err, head);
            return;
        }
        c->what = P_STATUS;
        render(h, c, now);
    } else if (!strcmp(r->path, "/metrics")) {
        c->what = P_METRICS;
        render(h, c, now);
    } else if (!strcmp(r->path, "/")) {
        answer_text(h, c, 200, NULL, "ncclguard status endpoint: /status /metrics /healthz\n",
                    head);
    } else {
        answer_text(h, c, 404, NULL, "not found: /status /metrics /healthz\n", head);
    }
}

/* One unsigned number of at most max, all of s[0, n): 0 or -1. */
static int query_num(const char *s, size_t n, int base, uint64_t max, uint64_t *out)
{
    if (n == 0 || n > 20)
        return -1;
    char tmp[24], *end;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    if (tmp[0] == '-' || tmp[0] == '+' || tmp[0] == ' ')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(tmp, &end, base);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

int ncg_http_query_parse(const char *qs, struct ncg_http_query *q, char *err, size_t errlen)
{
    memset(q, 0, sizeof *q);
    for (const char *p = qs; *p;) {
        size_t n = strcspn(p, "&");
        const char *eq = memchr(p, '=', n);
        size_t kl = eq ? (size_t)(eq - p) : n;
        const char *v = eq ? eq + 1 : p + n;
        size_t vl = eq ? n - kl - 1 : 0;
        uint64_t lo, hi;
        if (kl == 5 && !strncmp(p, "ranks", 5)) {
            const char *dash = memchr(v, '-', vl);
            size_t l1 = dash ? (size_t)(dash - v) : vl;
            if (query_num(v, l1, 10, UINT32_MAX, &lo) != 0 ||
                query_num(dash ? dash + 1 : v, dash ? vl - l1 - 1 : vl, 10, UINT32_MAX, &hi) != 0 ||
                lo > hi) {
                snprintf(err, errlen, "bad ranks=%.*s: expected LO-HI (comm ranks, LO <= HI)",
                         (int)(vl < 40 ? vl : 40), v);
                return -EINVAL;
            }
            q->has_ranks = 1;
            q->lo = (uint32_t)lo;
            q->hi = (uint32_t)hi;
        } else if (kl == 4 && !strncmp(p, "comm", 4)) {
            if (vl > 16 || query_num(v, vl, 16, UINT64_MAX, &lo) != 0) {
                snprintf(err, errlen, "bad comm=%.*s: expected a communicator id (16 hex digits)",
                         (int)(vl < 40 ? vl : 40), v);
                return -EINVAL;
            }
            q->has_comm = 1;
            q->comm = lo;
        } else if (n) {
            snprintf(err, errlen, "unknown query parameter \"%.*s\": ranks=LO-HI, comm=ID",
                     (int)(kl < 40 ? kl : 40), p);
            return -EINVAL;
        }
        p += n + (p[n] == '&');
    }
    return 0;
}

/* ---------- connection steps ---------- */

static void conn_write(struct ncg_http *h, struct hconn *c, uint64_t now)
{
    while (c->txoff < c->tx.len) {
        ssize_t w = ncg_sock_send(c->fd, c->tx.p + c->txoff, c->tx.len - c->txoff);
        if (w == 0)
            return;
        if (w < 0) {
            conn_close(h, c);
            return;
        }
        c->txoff += (size_t)w;
    }
    /* All sent: half-close, then read what the client still sends until it closes, so that
     * closing with unread bytes does not reset the connection under the answer. */
    ncg_buf_free(&c->tx);
    shutdown(c->fd, SHUT_WR);
    c->st = C_DRAIN;
    c->drain_until = now + DRAIN_NS;
}

/* Input while the answer is not ready (one request per connection): read and dropped; the
 * client's EOF or an error closes the connection. */
static void conn_discard(struct ncg_http *h, struct hconn *c)
{
    char sink[1024];
    ssize_t r = recv(c->fd, sink, sizeof sink, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK))
        conn_close(h, c);
}

static void conn_read(struct ncg_http *h, struct hconn *c, uint64_t now)
{
    if (c->st == C_DRAIN) {
        char sink[4096];
        for (int k = 0; k < 4; k++) {
            ssize_t r = recv(c->fd, sink, sizeof sink, MSG_DONTWAIT);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return;
            if (r <= 0)
                break;
        }
        conn_close(h, c); /* EOF, an error, or a client that keeps talking */
        return;
    }
    ssize_t r = ncg_sock_recv(c->fd, c->rx + c->rxlen, sizeof c->rx - c->rxlen);
    if (r == 0)
        return;
    if (r < 0) {
        conn_close(h, c); /* gone before a complete request: nothing to answer */
        return;
    }
    c->rxlen += (size_t)r;
    static struct ncg_http_req req; /* the coordinator's thread only */
    long n = ncg_http_parse(c->rx, c->rxlen, &req);
    if (n == 0)
        return;
    if (n < 0)
        answer_text(h, c, (int)-n, NULL, "bad request\n", 0);
    else
        route(h, c, &req, now);
    if (c->st == C_WRITE)
        conn_write(h, c, now);
}

/* One accepted connection (ncg_accept_fn): over the cap it is answered 503 and closed. */
static int take(void *arg, int fd, const struct sockaddr_storage *from, socklen_t fromlen,
                uint64_t now)
{
    struct ncg_http *h = arg;
    (void)from;
    (void)fromlen;
    h->st.accepted++;
    int i;
    for (i = 0; i < NCG_HTTP_MAX_CONNS; i++)
        if (h->c[i].st == C_FREE)
            break;
    if (i == NCG_HTTP_MAX_CONNS) {
        static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                   "Connection: close\r\nRetry-After: 1\r\n\r\n";
        ssize_t w = send(fd, busy, sizeof busy - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)w;
        close(fd);
        h->st.refused++;
        h->st.status[5]++;
        return 0;
    }
    struct hconn *c = &h->c[i];
    memset(&c->tx, 0, sizeof c->tx);
    c->fd = fd;
    c->st = C_READ;
    c->t0 = now;
    c->rxlen = c->txoff = 0;
    return 0;
}

int ncg_http_pollfds(struct ncg_http *h, struct pollfd *pf, int max)
{
    int n = 0;
    h->npf = 0;
    if (h->lfd >= 0 && n < max && ncg_accept_ready(&h->acc, ncg_now_ns())) {
        pf[n] = (struct pollfd){h->lfd, POLLIN, 0};
        h->pfc[n++] = -1;
    }
    for (int i = 0; i < NCG_HTTP_MAX_CONNS && n < max; i++) {
        struct hconn *c = &h->c[i];
        if (c->st == C_FREE)
            continue;
        pf[n] = (struct pollfd){c->fd, (short)(c->st == C_WRITE ? POLLOUT : POLLIN), 0};
        h->pfc[n++] = i;
    }
    h->npf = n;
    return n;
}

void ncg_http_handle(struct ncg_http *h, const struct pollfd *pf, int n, uint64_t now)
{
    for (int k = 0; k < n && k < h->npf; k++) {
        if (!pf[k].revents)
            continue;
        if (h->pfc[k] < 0) {
            ncg_accept_round(h->lfd, &h->acc, ACCEPTS_PER_ROUND, now, take, h);
            continue;
        }
        struct hconn *c = &h->c[h->pfc[k]];
        if (c->st == C_FREE || c->fd != pf[k].fd)
            continue;
        if (c->st == C_WRITE)
            conn_write(h, c, now);
        else if (c->st == C_RENDER)
            conn_discard(h, c);
        else
            conn_read(h, c, now);
    }
    h->npf = 0;
    for (int i = 0; i < NCG_HTTP_MAX_CONNS; i++) {
        struct hconn *c = &h->c[i];
        if (c->st == C_FREE)
            continue;
        if (c->st == C_RENDER) {
            if (render(h, c, now))
                conn_write(h, c, now);
        } else if (c->st == C_READ && now - c->t0 > NCG_HTTP_HEAD_TIMEOUT_NS) {
            h->st.timeouts++;
            answer_text(h, c, 408, NULL, "request timeout\n", 0);
            conn_write(h, c, now);
        } else if ((c->st == C_DRAIN && now > c->drain_until) ||
                   (c->st != C_FREE && now - c->t0 > NCG_HTTP_LIFE_TIMEOUT_NS)) {
            if (c->st == C_WRITE)
                h->st.timeouts++;
            conn_close(h, c);
        }
    }
}

void ncg_http_fork_child(struct ncg_http *h)
{
    for (int i = 0; i < NCG_HTTP_MAX_CONNS; i++)
        if (h->c[i].fd >= 0)
            close(h->c[i].fd);
    if (h->lfd >= 0)
        close(h->lfd);
}

/* ---------- the job file ---------- */

int ncg_http_write_job_file(const struct ncg_http *h, const char *dir, const char *host,
                            uint32_t pid, int32_t global_rank, const char *role, int32_t node,
                            char *path, size_t pathlen, char *err, size_t errlen)
{
    char tmp[4400];
    if (snprintf(path, pathlen, "%s/ncclguard-job.%s.%u.json", dir, host, pid) >= (int)pathlen ||
        snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        snprintf(err, errlen, "path too long");
        return -ENAMETOOLONG;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(e));
        return -e;
    }
    struct ncg_buf b = {0};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ncg_buf_printf(&b,
                   "{\"format\":\"ncclguard-job\",\"version\":1,\"url\":\"%s\",\"address\":\"%s\","
                   "\"token\":\"%s\",\"host\":\"%s\",\"pid\":%u,\"global_rank\":%d,"
                   "\"role\":\"%s\",\"node\":%d,\"time_unix\":%.3f}\n",
                   h->url, h->addr, h->token_hex, host, pid, global_rank, role, node,
                   (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
    int rc = 0;
    if (b.oom || write(fd, b.p, b.len) != (ssize_t)b.len)
        rc = b.oom ? -ENOMEM : -(errno ? errno : EIO);
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    ncg_buf_free(&b);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc != 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(-rc));
        unlink(tmp);
    }
    return rc;
}
