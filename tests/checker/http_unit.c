/* Unit tests of the status endpoint (issue 12): the request parser (valid forms, every
 * truncation of valid requests, every refusal with its status), the renderers over a
 * checker (a relay root of one node) fed simulated members (/metrics line grammar, every rank
 * present, /status JSON parses with the CLI's reader), and the server's state machine over loopback
 * with a fake clock (routes, 401, 400, slowloris deadline, the connection cap). Prints "ok"; exit
 * 0. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "hash.h"
#include "http.h"
#include "http_parse.h"
#include "json.h"
#include "relay.h"
#include "status_tree.h"

NCG_CHECK_PROGRAM("http_unit");

static struct ncg_http_req R;
static long P(const char *s)
{
    return ncg_http_parse(s, strlen(s), &R);
}

static void test_parse_valid(void)
{
    const char *g = "GET /metrics?a=b HTTP/1.1\r\nHost: h:1\r\nAuthorization:  bearer  ab12 \r\n"
                    "Connection: keep-alive, close\r\n\r\nTRAILING";
    long n = P(g);
    CHECK(n == (long)(strstr(g, "TRAILING") - g));
    CHECK(R.method == NCG_HTTP_GET && R.minor == 1 && !strcmp(R.path, "/metrics"));
    CHECK(!strcmp(R.query, "a=b") && R.has_host && R.has_auth && R.close);
    CHECK(!strcmp(R.auth_scheme, "bearer") && !strcmp(R.auth_cred, "ab12"));
    /* every proper prefix of a valid head: "need more", never an answer or an error */
    size_t hl = (size_t)n;
    for (size_t k = 0; k < hl; k++)
        CHECK(ncg_http_parse(g, k, &R) == 0);
    CHECK(P("HEAD / HTTP/1.0\n\n") == 17 && R.method == NCG_HTTP_HEAD && R.minor == 0);
    CHECK(!R.has_host && !R.has_auth && !R.close);          /* 1.0 needs no Host */
    CHECK(P("\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n") > 0); /* a leading empty line is ignored */
    CHECK(P("DELETE /status HTTP/1.1\r\nHost: a\r\n\r\n") > 0 && R.method == NCG_HTTP_OTHER);
    CHECK(P("GET /s HTTP/1.1\r\nHost: a\r\nContent-Length: 00\r\n\r\n") > 0);
    CHECK(P("GET /s HTTP/1.1\r\nhOsT:a\r\nX-Empty:\r\n\r\n") > 0);
}

static void test_parse_refused(void)
{
    /* complete first lines that are wrong: refused at once, without waiting for the head */
    CHECK(P("GARBAGE\r\n") == -400);
    CHECK(P("GET\r\n") == -400);
    CHECK(P("GET  / HTTP/1.1\r\n") == -400);
    CHECK(P("GET http://x/ HTTP/1.1\r\n") == -400);
    CHECK(P("GET * HTTP/1.1\r\n") == -400);
    CHECK(P("GET / HTTP/1.1 \r\n") == -400);
    CHECK(P("GET / HTTP/1.1x\r\n") == -400);
    CHECK(P("GET / http/1.1\r\n") == -400);
    CHECK(P("G(T / HTTP/1.1\r\n") == -400);
    CHECK(P("GET / HTTP/2.0\r\n") == -505);
    CHECK(P("GET / HTTP/1.2\r\n") == -505);
    CHECK(P("GET /a\x01 HTTP/1.1\r\n") == -400);
    CHECK(P("GET /a\rb HTTP/1.1\r\n") == -400); /* bare CR */
    CHECK(P("GET /\0 HTTP/1.1\r\n") == 0 || 1); /* (strlen stops at the NUL) */
    CHECK(ncg_http_parse("GET /\0 HTTP/1.1\r\n", 17, &R) == -400);
    static char big[NCG_HTTP_MAX_HEAD + 600];
    memset(big, 'a', sizeof big);
    memcpy(big, "GET /", 5);
    memcpy(big + 5 + NCG_HTTP_MAX_TARGET, " HTTP/1.1\r\n", 11);
    CHECK(ncg_http_parse(big, 5 + NCG_HTTP_MAX_TARGET + 11, &R) == -414);
    /* fields */
    CHECK(P("GET / HTTP/1.1\r\n\r\n") == -400); /* 1.1 without Host */
    CHECK(P("GET / HTTP/1.1\r\nHost : a\r\n") == -400);
    CHECK(P("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n") == -400);
    CHECK(P("GET / HTTP/1.1\r\nNoColon\r\n") == -400);
    CHECK(P("GET / HTTP/1.1\r\n: v\r\n") == -400);
    CHECK(P("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n") == -400);
    CHECK(P("GET / HTTP/1.1\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n") == -400);
    CHECK(P("GET / HTTP/1.1\r\nContent-Length: 5\r\n") == -400);
    CHECK(P("GET / HTTP/1.1\r\nContent-Length: \r\n") == -400);
    CHECK(P("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n") == -501);
    CHECK(P("GET / HTTP/1.1\r\nX: a\x7f\r\n") == -400);
    CHECK(P("GET / HTTP/1.1\r\nAuthorization: VeryLongSchemeName x\r\n") == -400);
    /* sizes */
    char many[4096] = "GET / HTTP/1.1\r\n";
    for (unsigned i = 0; i <= NCG_HTTP_MAX_HEADERS; i++)
        strcat(many, "X: y\r\n");
    CHECK(P(many) == -431);
    memset(big, 'a', sizeof big);
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    CHECK(ncg_http_parse(big, NCG_HTTP_MAX_HEAD - 1, &R) == 0); /* still possible */
    CHECK(ncg_http_parse(big, NCG_HTTP_MAX_HEAD, &R) == -431);  /* incomplete at the bound */
    memcpy(big + NCG_HTTP_MAX_HEAD + 10, "\r\n\r\n", 4);
    CHECK(ncg_http_parse(big, NCG_HTTP_MAX_HEAD + 14, &R) == -431);
    char la[600] = "GET / HTTP/1.1\r\nAuthorization: Bearer ";
    memset(la + strlen(la), 'k', NCG_HTTP_MAX_AUTH);
    strcat(la, "\r\n");
    CHECK(P(la) == -431);
    CHECK(!strcmp(ncg_http_reason(431), "Request Header Fields Too Large"));
    CHECK(!strcmp(ncg_http_reason(999), ""));
}

/* ---- a coordinator with simulated members ---- */

static void nop_send(void *a, int c, const struct ncg_msg *m)
{
    (void)a, (void)c, (void)m;
}
static void nop_drop(void *a, int c)
{
    (void)a, (void)c;
}

#define SEC 1000000000ull
static struct ncg_msg M;

static void nop_up(void *a, const struct ncg_msg *m)
{
    (void)a, (void)m;
}

/* A checker (a relay root of one node) with nranks single-rank processes connected, and the
 * endpoint's source over it. */
static struct ncg_relay *sim(int nranks, uint64_t now, struct ncg_tree_src *ts,
                             struct ncg_http_source *src)
{
    struct ncg_relay_params p = {.token = 0,
                                 .interval_ms = 100,
                                 .heartbeat_timeout_s = 10,
                                 .root = 1,
                                 .pid = 1,
                                 .host = "sim",
                                 .embedded = 1,
                                 .client_verdicts = 1,
                                 .lag_warn_s = 60,
                                 .global_rank = -1};
    struct ncg_relay_ops ops = {.send = nop_send, .drop = nop_drop, .up = nop_up};
    struct ncg_relay *co = ncg_relay_new(&p, &ops);
    for (int r = 0; r < nranks; r++) {
        ncg_relay_connected(co, r, now);
        memset(&M, 0, sizeof M);
        M.type = NCG_MSG_HELLO;
        M.u.hello.pid = 100 + (uint32_t)r;
        M.u.hello.global_rank = r;
        snprintf(M.u.hello.host, sizeof M.u.hello.host, "node%d\"x", r / 8);
        ncg_relay_message(co, r, &M, now);
    }
    struct ncg_http_source dummy;
    ncg_tree_src_init(ts, co, 0, 0, 1, 2, src ? src : &dummy);
    return co;
}

static void report(struct ncg_relay *co, int r, int nranks, uint64_t count, uint64_t now)
{
    memset(&M, 0, sizeof M);
    M.type = NCG_MSG_REPORT;
    M.u.report.n = 1;
    M.u.report.e[0] = (struct ncg_report_entry){
        0xabcdef0123456789ull, (uint32_t)nranks, (uint32_t)r, count, r, count, 0, count, 0};
    ncg_relay_message(co, r, &M, now);
    ncg_relay_tick(co, now);
}

/* The Prometheus text grammar, line by line: HELP/TYPE comments, then samples
 * name{label="value",...} number, each family's samples after its TYPE line. */
static int prom_ok(const char *t, int *samples)
{
    char fam[128] = "";
    *samples = 0;
    for (const char *l = t; *l;) {
        const char *e = strchr(l, '\n');
        if (!e)
            return 0;
        if (!strncmp(l, "# HELP ", 7) || !strncmp(l, "# TYPE ", 7)) {
            if (!strncmp(l, "# TYPE ", 7))
                sscanf(l + 7, "%127s", fam);
        } else {
            size_t k = 0;
            while (l + k < e && (l[k] == '_' || (l[k] >= 'a' && l[k] <= 'z')))
                k++;
            if (strncmp(l, fam, strlen(fam)) || strncmp(l, "ncclguard_", 10))
                return 0;
            const char *v = l + k;
            if (*v == '{') {
                for (v++; *v != '}';) {
                    while ((*v >= 'a' && *v <= 'z') || *v == '_')
                        v++;
                    if (*v++ != '=' || *v++ != '"')
                        return 0;
                    while (*v != '"') {
                        if (*v == '\\')
                            v++;
                        if (*v == '\n')
                            return 0;
                        v++;
                    }
                    v++;
                    if (*v == ',')
                        v++;
                }
                v++;
            }
            char *end;
            if (*v++ != ' ')
                return 0;
            strtod(v, &end);
            if (end != e)
                return 0;
            (*samples)++;
        }
        l = e + 1;
    }
    return 1;
}

static void test_render(void)
{
    enum { N = 64 };
    uint64_t t = 5 * SEC;
    struct ncg_tree_src ts;
    struct ncg_relay *co = sim(N, t, &ts, NULL);
    for (int r = 0; r < N; r++)
        report(co, r, N, 10, t);
    struct ncg_buf b = {0};
    CHECK(ncg_tree_metrics_render(&ts, t, &b) == 0); /* the rates' first window */
    ncg_buf_free(&b);
    t += 2 * SEC;
    for (int r = 0; r < N; r++)
        report(co, r, N, r == 7 ? 12 : 30, t); /* rank 7 behind */
    CHECK(ncg_tree_metrics_render(&ts, t + SEC / 2, &b) == 0);
    int ns = 0;
    CHECK(prom_ok(b.p, &ns));
    if (getenv("HTTP_UNIT_DUMP"))
        fputs(b.p, stderr);
    CHECK(ns > 6 * N);
    char line[160];
    for (int r = 0; r < N; r++) {
        snprintf(line, sizeof line,
                 "ncclguard_calls_issued_total{comm=\"abcdef0123456789\",rank=\"%d\"} %d\n", r,
                 r == 7 ? 12 : 30);
        CHECK(strstr(b.p, line) != NULL);
    }
    CHECK(strstr(b.p, "ncclguard_comm_lag_calls{comm=\"abcdef0123456789\"} 18\n"));
    CHECK(strstr(b.p, "ncclguard_comm_slowest_rank{comm=\"abcdef0123456789\"} 7\n"));
    CHECK(strstr(b.p, "host=\"node0\\\"x\"")); /* label values escaped */
    CHECK(strstr(b.p, "ncclguard_calls_per_second{comm=\"abcdef0123456789\",rank=\"0\"} 8.000\n"));
    ncg_buf_free(&b);

    CHECK(ncg_tree_status_render(&ts, NULL, t, 1.5e9, &b) == 0);
    size_t at = 0;
    struct ncg_json *j = ncg_cli_json_parse(b.p, b.len, &at);
    CHECK(j != NULL);
    if (!j)
        fprintf(stderr, "status at %zu: %.80s\n", at, b.p + (at > 20 ? at - 20 : 0));
    if (j) {
        const struct ncg_json *cs = ncg_cli_json_get(j, "communicators");
        CHECK(cs && cs->type == NCG_JSON_ARRAY && cs->n == 1);
        if (cs && cs->n == 1) {
            const struct ncg_json *c = cs->kids[0];
            CHECK(!strcmp(ncg_cli_json_s(c, "id", ""), "abcdef0123456789"));
            CHECK(ncg_cli_json_n(c, "lag_calls", -1) == 18);
            const struct ncg_json *bh = ncg_cli_json_get(c, "behind");
            CHECK(bh && bh->n == 1 && bh->kids[0]->num == 7);
            const struct ncg_json *ms = ncg_cli_json_get(c, "members");
            CHECK(ms && ms->n == N);
        }
        const struct ncg_json *hs = ncg_cli_json_get(j, "hosts");
        CHECK(hs && hs->n == N / 8);
        ncg_cli_json_free(j);
    }
    ncg_buf_free(&b);
    /* a death shows as a verdict by kind and on the communicator */
    ncg_relay_closed(co, 3, t);
    ncg_relay_tick(co, t);
    CHECK(ncg_tree_metrics_render(&ts, t, &b) == 0);
    CHECK(strstr(b.p, "ncclguard_verdicts_total{kind=\"RANK_DIED\"} 1\n"));
    CHECK(strstr(b.p, "ncclguard_comm_verdict{comm=\"abcdef0123456789\",kind=\"RANK_DIED\"} 1\n"));
    CHECK(strstr(b.p, "ncclguard_rank_state{comm=\"abcdef0123456789\",rank=\"3\"} 3\n"));
    CHECK(prom_ok(b.p, &ns));
    ncg_buf_free(&b);
    /* /status: the dead rank counted and its row dead, the verdict with its subject */
    CHECK(ncg_tree_status_render(&ts, NULL, t, 1.5e9, &b) == 0);
    CHECK(strstr(b.p, "\"dead\":1,") != NULL);
    CHECK(strstr(b.p, "{\"rank\":3,\"global_rank\":3,\"state\":\"dead\"") != NULL);
    CHECK(strstr(b.p, "\"name\":\"RANK DIED\"") != NULL);
    ncg_buf_free(&b);
    ncg_tree_src_free(&ts);
    ncg_relay_free(co);
}

/* ---- the server over loopback, with a fake clock ---- */

static struct ncg_http *H;
static void pump(uint64_t now, int rounds)
{
    struct pollfd pf[NCG_HTTP_MAX_CONNS + 1];
    for (int i = 0; i < rounds; i++) {
        int n = ncg_http_pollfds(H, pf, NCG_HTTP_MAX_CONNS + 1);
        int rc = poll(pf, (nfds_t)n, 5);
        ncg_http_handle(H, pf, rc > 0 ? n : 0, now);
    }
}

static int dial(void)
{
    const char *a = ncg_http_address(H);
    int port = atoi(strrchr(a, ':') + 1);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    return fd;
}

/* Sends req, pumps the server, returns the whole answer (static). */
static const char *ask(const char *req, uint64_t now)
{
    static char resp[1 << 20];
    int fd = dial();
    pump(now, 2);
    CHECK(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
    size_t n = 0;
    for (int i = 0; i < 400 && n < sizeof resp - 1; i++) {
        pump(now, 1);
        ssize_t r = recv(fd, resp + n, sizeof resp - 1 - n, MSG_DONTWAIT);
        if (r == 0)
            break;
        if (r > 0)
            n += (size_t)r;
    }
    resp[n] = 0;
    close(fd);
    pump(now, 2);
    return resp;
}

static void test_server(void)
{
    uint64_t t = 100 * SEC;
    struct ncg_tree_src ts;
    struct ncg_http_source src;
    struct ncg_relay *co = sim(4, t, &ts, &src);
    for (int r = 0; r < 4; r++)
        report(co, r, 4, 5, t);
    char err[200];
    uint64_t tok = 0x0123456789abcdefull;
    H = ncg_http_new("127.0.0.1:0", tok, &src, err, sizeof err);
    CHECK(H != NULL);
    if (!H)
        return;
    const char *a = "Authorization: Bearer 0123456789abcdef\r\n";
    char req[512];
    snprintf(req, sizeof req, "GET /healthz HTTP/1.1\r\nHost: x\r\n%s\r\n", a);
    CHECK(!strncmp(ask(req, t), "HTTP/1.1 200 OK\r\n", 17));
    CHECK(strstr(ask(req, t), "\r\n\r\nok\n"));
    snprintf(req, sizeof req, "GET /metrics HTTP/1.1\r\nHost: x\r\n%s\r\n", a);
    const char *m = ask(req, t);
    CHECK(strstr(m, "Content-Type: text/plain; version=0.0.4"));
    CHECK(strstr(m, "ncclguard_calls_issued_total{comm=\"abcdef0123456789\",rank=\"3\"} 5\n"));
    snprintf(req, sizeof req, "HEAD /status HTTP/1.1\r\nHost: x\r\n%s\r\n", a);
    m = ask(req, t);
    CHECK(!strncmp(m, "HTTP/1.1 200 OK\r\n", 17) && strstr(m, "\r\n\r\n")[4] == 0);
    const char *unauth = ask("GET /status HTTP/1.1\r\nHost: x\r\n\r\n", t);
    CHECK(!strncmp(unauth, "HTTP/1.1 401 ", 13) && !strstr(unauth, "communicators"));
    CHECK(!strncmp(ask("GET /status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer 0123456789abcdee"
                       "\r\n\r\n",
                       t),
                   "HTTP/1.1 401 ", 13));
    CHECK(!strncmp(ask("GET /status HTTP/1.1\r\nHost: x\r\nAuthorization: Basic 0123456789abcdef"
                       "\r\n\r\n",
                       t),
                   "HTTP/1.1 401 ", 13));
    CHECK(!strncmp(ask("BLAH\r\n\r\n", t), "HTTP/1.1 400 ", 13));
    snprintf(req, sizeof req, "PUT /status HTTP/1.1\r\nHost: x\r\n%s\r\n", a);
    CHECK(!strncmp(ask(req, t), "HTTP/1.1 405 ", 13));
    snprintf(req, sizeof req, "GET /nope HTTP/1.1\r\nHost: x\r\n%s\r\n", a);
    CHECK(!strncmp(ask(req, t), "HTTP/1.1 404 ", 13));
    /* slowloris: a head that never completes is answered 408 at its deadline, then closed */
    int slow = dial();
    pump(t, 2);
    CHECK(write(slow, "GET /status HTTP/1.1\r\nHo", 24) == 24);
    pump(t + NCG_HTTP_HEAD_TIMEOUT_NS - SEC, 3);
    char buf[512];
    CHECK(recv(slow, buf, sizeof buf, MSG_DONTWAIT) < 0); /* nothing yet */
    pump(t + NCG_HTTP_HEAD_TIMEOUT_NS + SEC, 3);
    ssize_t r = recv(slow, buf, sizeof buf - 1, MSG_DONTWAIT);
    CHECK(r > 12 && !strncmp(buf, "HTTP/1.1 408 ", 13));
    close(slow);
    pump(t + NCG_HTTP_HEAD_TIMEOUT_NS + 3 * SEC, 2);
    /* the cap: NCG_HTTP_MAX_CONNS idle connections, the next one gets 503 */
    int idle[NCG_HTTP_MAX_CONNS];
    for (int i = 0; i < NCG_HTTP_MAX_CONNS; i++)
        idle[i] = dial();
    pump(t + 10 * SEC, 3);
    int extra = dial();
    pump(t + 10 * SEC, 3);
    r = recv(extra, buf, sizeof buf - 1, 0);
    CHECK(r > 12 && !strncmp(buf, "HTTP/1.1 503 ", 13));
    close(extra);
    for (int i = 0; i < NCG_HTTP_MAX_CONNS; i++)
        close(idle[i]);
    pump(t + 30 * SEC, 3);
    struct ncg_http_stats st;
    ncg_http_get_stats(H, &st);
    CHECK(st.refused == 1 && st.timeouts >= 1 && st.status[2] >= 4 && st.status[4] >= 5);
    /* the token as a string hashed (coord --token secret) also works */
    ncg_http_free(H);
    H = ncg_http_new("127.0.0.1:0", ncg_token_hash("secret"), &src, err, sizeof err);
    CHECK(
        !strncmp(ask("GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret\r\n\r\n", t),
                 "HTTP/1.1 200 ", 13));
    ncg_http_free(H);
    /* no token: no header needed */
    H = ncg_http_new("127.0.0.1:0", 0, &src, err, sizeof err);
    CHECK(!strncmp(ask("GET /healthz HTTP/1.0\r\n\r\n", t), "HTTP/1.1 200 ", 13));
    ncg_http_free(H);
    CHECK(ncg_http_new("nosuchhost.invalid:0", 0, &src, err, sizeof err) == NULL && err[0]);
    ncg_tree_src_free(&ts);
    ncg_relay_free(co);
}

/* A fake source: /status is not ready for its first `late` renders (or never: late < 0), and
 * echoes the query it was given; /metrics one line. */
static int fake_late, fake_calls;
static int fake_status(void *arg, const struct ncg_http_query *q, uint64_t now_ns, double t,
                       struct ncg_buf *out)
{
    (void)arg;
    (void)now_ns;
    (void)t;
    if (fake_late < 0 || fake_calls++ < fake_late)
        return NCG_HTTP_NOT_READY;
    ncg_buf_printf(out, "{\"ranks\":%d,\"lo\":%u,\"hi\":%u,\"comm\":%d,\"id\":\"%016" PRIx64 "\"}",
                   q->has_ranks, q->lo, q->hi, q->has_comm, q->comm);
    return 0;
}
static int fake_metrics(void *arg, uint64_t now_ns, struct ncg_buf *out)
{
    (void)arg;
    (void)now_ns;
    ncg_buf_printf(out, "fake 1\n");
    return 0;
}

/* Sends req and pumps the server at clock now (several rounds) without reading; then reads
 * what came. */
static const char *ask_at(const char *req, uint64_t t0, uint64_t step, int rounds)
{
    static char resp[65536];
    int fd = dial();
    pump(t0, 2);
    CHECK(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
    size_t n = 0;
    for (int i = 0; i < rounds && n < sizeof resp - 1; i++) {
        pump(t0 + (uint64_t)i * step, 1);
        ssize_t r = recv(fd, resp + n, sizeof resp - 1 - n, MSG_DONTWAIT);
        if (r == 0)
            break;
        if (r > 0)
            n += (size_t)r;
    }
    resp[n] = 0;
    close(fd);
    pump(t0 + (uint64_t)rounds * step, 2);
    return resp;
}

static void test_source(void)
{
    struct ncg_http_query q;
    char err[160];
    CHECK(ncg_http_query_parse("ranks=4-7", &q, err, sizeof err) == 0 && q.has_ranks && q.lo == 4 &&
          q.hi == 7 && !q.has_comm);
    CHECK(ncg_http_query_parse("comm=00000000000000ff&ranks=3", &q, err, sizeof err) == 0 &&
          q.has_comm && q.comm == 0xff && q.lo == 3 && q.hi == 3);
    CHECK(ncg_http_query_parse("", &q, err, sizeof err) == 0 && !q.has_ranks && !q.has_comm);
    CHECK(ncg_http_query_parse("ranks=7-4", &q, err, sizeof err) == -EINVAL && strstr(err, "7-4"));
    CHECK(ncg_http_query_parse("ranks=-1", &q, err, sizeof err) == -EINVAL);
    CHECK(ncg_http_query_parse("ranks=a-b", &q, err, sizeof err) == -EINVAL);
    CHECK(ncg_http_query_parse("ranks=", &q, err, sizeof err) == -EINVAL);
    CHECK(ncg_http_query_parse("comm=xyz", &q, err, sizeof err) == -EINVAL);
    CHECK(ncg_http_query_parse("comm=00000000000000ff0", &q, err, sizeof err) == -EINVAL);
    CHECK(ncg_http_query_parse("rank=1", &q, err, sizeof err) == -EINVAL && strstr(err, "rank"));

    struct ncg_http_source src = {fake_status, fake_metrics, NULL, 1};
    H = ncg_http_new("127.0.0.1:0", 0, &src, err, sizeof err);
    CHECK(H != NULL);
    if (!H)
        return;
    uint64_t t = 500 * SEC;
    /* ready at once: the query reaches the render */
    fake_late = 0;
    fake_calls = 0;
    const char *a = ask_at("GET /status?ranks=2-5&comm=ab HTTP/1.1\r\nHost: x\r\n\r\n", t, 0, 50);
    CHECK(!strncmp(a, "HTTP/1.1 200 ", 13) &&
          strstr(a, "{\"ranks\":1,\"lo\":2,\"hi\":5,\"comm\":1,\"id\":\"00000000000000ab\"}"));
    /* a bad query: 400 with one line naming it, nothing rendered */
    fake_calls = 0;
    a = ask_at("GET /status?ranks=9-1 HTTP/1.1\r\nHost: x\r\n\r\n", t, 0, 50);
    CHECK(!strncmp(a, "HTTP/1.1 400 ", 13) && strstr(a, "\r\n\r\nbad ranks=9-1") &&
          fake_calls == 0);
    /* not ready for three renders: the connection waits, rendered again at each handle() */
    fake_late = 3;
    fake_calls = 0;
    a = ask_at("GET /status HTTP/1.1\r\nHost: x\r\n\r\n", t, SEC / 10, 50);
    CHECK(!strncmp(a, "HTTP/1.1 200 ", 13) && strstr(a, "\"ranks\":0") && fake_calls == 4);
    /* never ready: 503 at the deadline, not before */
    fake_late = -1;
    int fd = dial();
    pump(t, 2);
    const char *req = "GET /status HTTP/1.1\r\nHost: x\r\n\r\n";
    CHECK(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
    pump(t, 3);
    pump(t + NCG_HTTP_RENDER_TIMEOUT_NS - SEC, 3);
    char buf[512];
    CHECK(recv(fd, buf, sizeof buf, MSG_DONTWAIT) < 0); /* still waiting */
    pump(t + NCG_HTTP_RENDER_TIMEOUT_NS + SEC / 10, 3);
    ssize_t r = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
    CHECK(r > 12 && !strncmp(buf, "HTTP/1.1 503 ", 13));
    close(fd);
    /* a client gone while waiting: its connection is freed */
    fd = dial();
    pump(t + 20 * SEC, 2);
    CHECK(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
    pump(t + 20 * SEC, 3);
    close(fd);
    pump(t + 20 * SEC, 3);
    struct pollfd pf[NCG_HTTP_MAX_CONNS + 1];
    CHECK(ncg_http_pollfds(H, pf, NCG_HTTP_MAX_CONNS + 1) == 1); /* the listener only */
    /* /metrics from the source */
    a = ask_at("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", t + 30 * SEC, 0, 50);
    CHECK(strstr(a, "\r\n\r\nfake 1\n"));
    ncg_http_free(H);
}

int main(void)
{
    test_source();
    test_parse_valid();
    test_parse_refused();
    test_render();
    test_server();
    return ncg_check_done();
}
