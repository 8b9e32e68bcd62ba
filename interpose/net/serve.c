/* The standalone checker (`ncclguard coord`): the root of a relay tree of one node, outside
 * the job, on a TCP listener of the caller's choice, in the calling thread until stopped. The
 * same root that runs inside a job (relayhost.c); the jobs reach it with NCCLGUARD_COORD. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "config.h"
#include "hash.h"
#include "http.h"
#include "relayhost.h"
#include "wire.h"

static void serve_warn(const char *line, void *arg)
{
    (void)arg;
    fprintf(stderr, "%s\n", line);
}

/* The standalone checker's log: one stderr line per event, with the wall-clock time. */
static void serve_log(void *arg, const char *line)
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

int ncg_rhost_serve(const char *listen_host, int port, const char *token_or_null,
                    const char *http_spec, volatile int *stop, char *err, size_t errlen)
{
    /* The same parsing and checks as in the ranks (bad values: one line, the default). */
    struct ncg_config cfg;
    ncg_config_parse(&cfg, ncg_env_process, serve_warn, NULL);
    struct ncg_rhost_params p = ncg_rhost_params_of(
        &cfg, token_or_null ? ncg_token_hash(token_or_null) : 0, 0, 0, 1, 2, -1);
    p.standalone = 1;
    p.listen_port = port;
    p.event = serve_log;
    snprintf(p.listen_host, sizeof p.listen_host, "%s", listen_host ? listen_host : "");
    struct ncg_rhost *h;
    int rc = ncg_rhost_start(&h, &p, err, errlen);
    if (rc != 0)
        return -1;
    fprintf(stderr, "ncclguard: checker listening on %s:%u%s\n",
            listen_host && *listen_host ? listen_host : "*", ncg_rhost_port(h),
            token_or_null ? " (token required)" : "");
    struct ncg_http *http = http_spec ? ncg_rhost_http_start(h, http_spec, err, errlen) : NULL;
    if (http_spec && !http) {
        ncg_rhost_free(h);
        return -1;
    }
    if (http)
        fprintf(stderr, "ncclguard: status endpoint on %s (/status /metrics /healthz)%s\n",
                ncg_http_url(http), token_or_null ? " (token required)" : "");
    enum { MAXFD = 1 << 16 };
    struct pollfd *pf = calloc(MAXFD, sizeof *pf);
    if (!pf) {
        snprintf(err, errlen, "out of memory");
        ncg_rhost_free(h);
        return -1;
    }
    while (!*stop && !ncg_rhost_stopped(h)) {
        int n = ncg_rhost_pollfds(h, pf, MAXFD);
        int prc = poll(pf, (nfds_t)n, (int)p.relay.interval_ms / 2 + 1);
        if (prc < 0 && errno != EINTR)
            break;
        ncg_rhost_handle(h, pf, prc > 0 ? n : 0, ncg_now_ns());
    }
    int failed = ncg_rhost_stopped(h) && !*stop;
    if (failed) {
        snprintf(err, errlen, "out of memory");
    } else { /* stopped on purpose: every client is told (SHUTDOWN), then flushed */
        struct ncg_msg sd = {.type = NCG_MSG_SHUTDOWN};
        ncg_rhost_leave(h, &sd);
        uint64_t until = ncg_now_ns() + 500000000ull;
        while (ncg_rhost_pending_tx(h) && ncg_now_ns() < until) {
            int n = ncg_rhost_pollfds(h, pf, MAXFD);
            if (poll(pf, (nfds_t)n, 10) < 0 && errno != EINTR)
                break;
            ncg_rhost_handle(h, pf, n, ncg_now_ns());
        }
    }
    free(pf);
    ncg_rhost_free(h);
    return failed ? -1 : 0;
}
