/* The status endpoint's cost to the checker (make bench, BENCHMARKS.md): the checker (a relay
 * root of one node, as in a flat job) fed R
 * simulated ranks (HELLO + REPORT each, one communicator of R ranks), its HTTP server on
 * loopback, and a forked client that scrapes PATH S times back to back with the token. The
 * server side (accept, parse, render, send, close) runs in this thread alone, so its
 * CLOCK_THREAD_CPUTIME_ID over the run divided by S is the checker's CPU per scrape; at one
 * scrape per second that is the share of a core. Usage: httpbench [RANKS] [SCRAPES] */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"
#include "http.h"
#include "relay.h"
#include "status_tree.h"

static void nop_send(void *a, int c, const struct ncg_msg *m)
{
    (void)a, (void)c, (void)m;
}
static void nop_drop(void *a, int c)
{
    (void)a, (void)c;
}
static void nop_up(void *a, const struct ncg_msg *m)
{
    (void)a, (void)m;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The client (child process): S requests for path, each on a new connection, read to EOF. */
static void client(int port, const char *path, int scrapes, size_t *bytes)
{
    char req[256];
    snprintf(req, sizeof req,
             "GET %s HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer 00000000000abcde\r\n\r\n",
             path);
    static char buf[1 << 16];
    for (int i = 0; i < scrapes; i++) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
            write(fd, req, strlen(req)) != (ssize_t)strlen(req))
            _exit(1);
        size_t n = 0;
        ssize_t r;
        char head[13] = "";
        while ((r = read(fd, buf, sizeof buf)) > 0) {
            if (!n)
                memcpy(head, buf, r >= 12 ? 12 : (size_t)r);
            n += (size_t)r;
        }
        close(fd);
        if (i == 0 && bytes)
            *bytes = n;
        if (i == 0 && (n < 12 || memcmp(head, "HTTP/1.1 200", 12) != 0))
            _exit(2);
    }
}

static void run(struct ncg_relay *co, int ranks, const char *path, int scrapes)
{
    char err[200];
    struct ncg_http_source src;
    struct ncg_tree_src ts;
    ncg_tree_src_init(&ts, co, 0, 0, 1, 2, &src);
    struct ncg_http *h = ncg_http_new("127.0.0.1:0", 0xabcde, &src, err, sizeof err);
    if (!h) {
        fprintf(stderr, "httpbench: %s\n", err);
        exit(1);
    }
    int port = atoi(strrchr(ncg_http_address(h), ':') + 1);
    int pfd[2];
    if (pipe(pfd) != 0)
        exit(1);
    pid_t pid = fork();
    if (pid == 0) {
        size_t bytes = 0;
        client(port, path, scrapes, &bytes);
        if (write(pfd[1], &bytes, sizeof bytes) != sizeof bytes)
            _exit(1);
        _exit(0);
    }
    close(pfd[1]);
    struct pollfd pf[NCG_HTTP_MAX_CONNS + 2];
    double c0 = cpu_s();
    uint64_t t0 = now_ns();
    int done = 0;
    size_t bytes = 0;
    while (!done) {
        int n = ncg_http_pollfds(h, pf, NCG_HTTP_MAX_CONNS + 1);
        pf[n] = (struct pollfd){pfd[0], POLLIN, 0};
        int rc = poll(pf, (nfds_t)n + 1, 100);
        if (rc > 0 && pf[n].revents) {
            done = read(pfd[0], &bytes, sizeof bytes) == sizeof bytes ? 1 : -1;
        }
        ncg_http_handle(h, pf, rc > 0 ? n : 0, now_ns());
    }
    double cpu = cpu_s() - c0, wall = (double)(now_ns() - t0) / 1e9;
    int st;
    waitpid(pid, &st, 0);
    if (done < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "httpbench: the client failed (status %d)\n", st);
        exit(1);
    }
    /* the render alone, for comparison */
    struct ncg_buf b = {0};
    double r0 = cpu_s();
    for (int i = 0; i < 20; i++) {
        b.len = 0;
        if (!strcmp(path, "/metrics"))
            ncg_tree_metrics_render(&ts, now_ns(), &b);
        else
            ncg_tree_status_render(&ts, NULL, now_ns(), 0, &b);
    }
    double render = (cpu_s() - r0) / 20;
    ncg_buf_free(&b);
    double per = cpu / scrapes;
    printf("httpbench: %d ranks, %-8s %7zu B: %.3f ms checker CPU per scrape (render %.3f ms), "
           "%d scrapes in %.2f s -> %.3f%% of a core at 1 scrape/s (target <= 1%%)\n",
           ranks, path, bytes, per * 1e3, render * 1e3, scrapes, wall, per * 100.0);
    ncg_http_free(h);
    ncg_tree_src_free(&ts);
}

int main(int argc, char **argv)
{
    int ranks = argc > 1 ? atoi(argv[1]) : 1024, scrapes = argc > 2 ? atoi(argv[2]) : 200;
    struct ncg_relay_params p = {.token = 0xabcde,
                                 .interval_ms = 100,
                                 .heartbeat_timeout_s = 10,
                                 .root = 1,
                                 .pid = 1,
                                 .host = "bench",
                                 .embedded = 1,
                                 .client_verdicts = 1,
                                 .lag_warn_s = 60,
                                 .global_rank = -1};
    struct ncg_relay_ops ops = {.send = nop_send, .drop = nop_drop, .up = nop_up};
    struct ncg_relay *co = ncg_relay_new(&p, &ops);
    static struct ncg_msg m;
    uint64_t t = now_ns() - 3000000000ull;
    for (int step = 0; step < 3; step++, t += 1000000000ull)
        for (int r = 0; r < ranks; r++) {
            if (step == 0) {
                ncg_relay_connected(co, r, t);
                memset(&m, 0, sizeof m);
                m.type = NCG_MSG_HELLO;
                m.u.hello.token = 0xabcde;
                m.u.hello.pid = 10000 + (uint32_t)r;
                m.u.hello.global_rank = r;
                snprintf(m.u.hello.host, sizeof m.u.hello.host, "node%03d", r / 8);
                ncg_relay_message(co, r, &m, t);
            }
            memset(&m, 0, sizeof m);
            m.type = NCG_MSG_REPORT;
            m.u.report.n = 1;
            m.u.report.e[0] = (struct ncg_report_entry){0x5eed5eed5eed5eedull,
                                                        (uint32_t)ranks,
                                                        (uint32_t)r,
                                                        1000u * (uint64_t)step + 17u,
                                                        r,
                                                        1000u * (uint64_t)step + 17u,
                                                        0,
                                                        1000u * (uint64_t)step + 17u,
                                                        0};
            ncg_relay_message(co, r, &m, t);
        }
    run(co, ranks, "/metrics", scrapes);
    run(co, ranks, "/status", scrapes);
    ncg_relay_free(co);
    return 0;
}
