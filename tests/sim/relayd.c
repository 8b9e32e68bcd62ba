/* ncg-relayd: one relay of the tree (interpose/relay/relay.c) as a standalone process, for the
 * end-to-end test of real guarded processes through relays (tests/sim/t_relay_e2e.sh): ranks
 * reach it with NCCLGUARD_COORD=host:port (the client protocol, unchanged:
 * interpose/agent/client.c sees a standalone checker), and it links to its parent relay over TCP.
 * Not the zero-config wiring (docs/checker.md): a test harness. ncg-relayd --node N [--parent
 * HOST:PORT] [--token STRING] [--interval-ms MS] NCCLGUARD_LAG_WARN_S / NCCLGUARD_LAG_ABORT_S as
 * for the coordinator (defaults 60 / 0). */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "channel.h"
#include "hash.h"
#include "relay.h"

#define MAXC 256

static struct ncg_peer pc[MAXC], up;
static uint8_t closing[MAXC];
static struct ncg_relay *R;
static volatile sig_atomic_t stop;

static void op_send(void *arg, int conn, const struct ncg_msg *m)
{
    (void)arg;
    if (conn >= 0 && conn < MAXC && pc[conn].fd >= 0)
        ncg_peer_send(&pc[conn], m);
}
static void op_drop(void *arg, int conn)
{
    (void)arg;
    if (conn >= 0 && conn < MAXC)
        closing[conn] = 1;
}
static void op_up(void *arg, const struct ncg_msg *m)
{
    (void)arg;
    if (up.fd >= 0)
        ncg_peer_send(&up, m);
}
static void op_event(void *arg, const char *line)
{
    (void)arg;
    fprintf(stderr, "ncg-relayd: %s\n", line);
}

static int dial(const char *spec)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    if (!colon || (size_t)(colon - spec) >= sizeof host)
        return -1;
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = 0;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
        return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd >= 0)
        ncg_set_nonblock(fd);
    return fd;
}

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    const char *parent = NULL, *token = NULL;
    struct ncg_relay_params p = {0};
    p.interval_ms = 100;
    p.heartbeat_timeout_s = 10;
    p.client_verdicts = 1;
    const char *lw = getenv("NCCLGUARD_LAG_WARN_S"), *la = getenv("NCCLGUARD_LAG_ABORT_S");
    p.lag_warn_s = lw ? atof(lw) : 60;
    p.lag_abort_s = la ? atof(la) : 0;
    const char *sw = getenv("NCCLGUARD_STUCK_WARN_S"), *sa = getenv("NCCLGUARD_STUCK_ABORT_S");
    p.stuck_warn_s = sw ? atof(sw) : 0; /* off unless asked (its clients' defaults differ) */
    p.stuck_abort_s = sa ? atof(sa) : 0;
    const char *ew = getenv("NCCLGUARD_EXIT_WAIT_S");
    p.exit_wait_s = ew ? atof(ew) : 5; /* the clients' default */
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--node"))
            p.node = (uint32_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--parent"))
            parent = argv[i + 1];
        else if (!strcmp(argv[i], "--token"))
            token = argv[i + 1];
        else if (!strcmp(argv[i], "--interval-ms"))
            p.interval_ms = (uint32_t)atol(argv[i + 1]);
    }
    p.root = parent == NULL;
    p.token = token ? ncg_token_hash(token) : 0;
    p.pid = (uint32_t)getpid();
    snprintf(p.host, sizeof p.host, "%s", ncg_host_name());
    struct ncg_relay_ops ops = {op_send, op_drop, op_up, op_event, NULL};
    R = ncg_relay_new(&p, &ops);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    char err[256];
    uint16_t port = 0;
    int lfd = ncg_listen(&port, "127.0.0.1", 0, err, sizeof err);
    if (lfd < 0 || !R) {
        fprintf(stderr, "ncg-relayd: %s\n", err);
        return 2;
    }
    for (int i = 0; i < MAXC; i++)
        pc[i].fd = -1;
    up.fd = -1;
    printf("ncg-relayd: node %u listening on 127.0.0.1:%u\n", p.node, port);
    fflush(stdout);
    uint64_t retry = 0;
    while (!stop) {
        uint64_t now = ncg_now_ns();
        if (parent && up.fd < 0 && now >= retry) {
            int fd = dial(parent);
            if (fd >= 0) {
                ncg_peer_init(&up, fd);
                ncg_relay_parent_up(R, now);
            } else {
                retry = now + 200000000ull;
            }
        }
        struct pollfd pf[MAXC + 2];
        int map[MAXC + 2], n = 0;
        pf[n] = (struct pollfd){lfd, POLLIN, 0};
        map[n++] = -1;
        if (up.fd >= 0) {
            pf[n] = (struct pollfd){up.fd, POLLIN | (up.txlen ? POLLOUT : 0), 0};
            map[n++] = -2;
        }
        for (int i = 0; i < MAXC; i++)
            if (pc[i].fd >= 0) {
                pf[n] = (struct pollfd){pc[i].fd, POLLIN | (pc[i].txlen ? POLLOUT : 0), 0};
                map[n++] = i;
            }
        int k = poll(pf, (nfds_t)n, 20);
        now = ncg_now_ns();
        for (int j = 0; k > 0 && j < n; j++) {
            if (!pf[j].revents)
                continue;
            if (map[j] == -1) {
                int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                int slot = -1;
                for (int i = 0; i < MAXC && fd >= 0; i++)
                    if (pc[i].fd < 0) {
                        slot = i;
                        break;
                    }
                if (fd >= 0 && slot < 0)
                    close(fd);
                if (slot >= 0) {
                    ncg_set_nonblock(fd);
                    ncg_peer_init(&pc[slot], fd);
                    closing[slot] = 0;
                    ncg_relay_connected(R, slot, now);
                }
                continue;
            }
            struct ncg_peer *pp = map[j] == -2 ? &up : &pc[map[j]];
            int rc = (pf[j].revents & (POLLIN | POLLHUP | POLLERR)) ? ncg_peer_fill(pp) : 0;
            struct ncg_msg m;
            int got;
            while ((got = ncg_peer_next(pp, &m)) == 1) {
                if (map[j] == -2)
                    ncg_relay_parent_message(R, &m, now);
                else
                    ncg_relay_message(R, map[j], &m, now);
                ncg_msg_release(&m);
            }
            if (rc < 0 || got < 0) {
                if (map[j] == -2) {
                    ncg_peer_close(&up);
                    ncg_relay_parent_down(R);
                    retry = now + 200000000ull;
                } else {
                    ncg_relay_closed(R, map[j], now);
                    ncg_peer_close(&pc[map[j]]);
                }
            }
        }
        ncg_relay_tick(R, now);
        if (ncg_relay_parent_silent(R, now) && up.fd >= 0) {
            ncg_peer_close(&up);
            ncg_relay_parent_down(R);
        }
        if (up.fd >= 0 && ncg_peer_flush(&up) < 0) {
            ncg_peer_close(&up);
            ncg_relay_parent_down(R);
        }
        for (int i = 0; i < MAXC; i++) {
            if (pc[i].fd < 0)
                continue;
            if (ncg_peer_flush(&pc[i]) < 0 && !closing[i]) {
                ncg_relay_closed(R, i, now);
                ncg_peer_close(&pc[i]);
            } else if (closing[i] && !pc[i].txlen) {
                ncg_peer_close(&pc[i]);
            }
        }
    }
    ncg_relay_free(R);
    return 0;
}
