/* The side channel's sockets: bounded non-blocking peers (frames of wire.h in and out), the
 * listener, and a server that drives a coordinator (coord.h) from poll() events. No threads
 * and no shim state: the checker thread (client.c) and `ncclguard coord` both run it.
 * Every function: the one thread that owns the peer/server; never blocks; allocates buffers. */
#ifndef NCG_CHANNEL_H
#define NCG_CHANNEL_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "accept.h"
#include "clock.h"
#include "wire.h"

struct ncg_peer {
    int fd;
    uint8_t *rx, *tx;
    size_t rxlen, rxcap, txlen, txcap;
    uint64_t nrx, ntx; /* bytes received / sent on the socket so far */
    int more;          /* decoded messages left in rx for the next round (server side) */
    struct ncg_report_ref tref, rref; /* the last REPORT sent / received here (wire.h, v5) */
};

void ncg_peer_init(struct ncg_peer *p, int fd);
void ncg_peer_close(struct ncg_peer *p);                        /* closes fd, frees buffers */
int ncg_peer_send(struct ncg_peer *p, const struct ncg_msg *m); /* queue; -1: backlog over 8 MiB,
                                                                   -2: out of memory */
int ncg_peer_flush(struct ncg_peer *p);                         /* write what fits; -1: broken */
/* Read what is there, at most NCG_PEER_RX_BUDGET bytes per call (the kernel keeps the rest and
 * poll reports it again); -1: EOF/error, -2: out of memory. */
int ncg_peer_fill(struct ncg_peer *p);
#define NCG_PEER_RX_BUDGET (256u * 1024u)
int ncg_peer_next(struct ncg_peer *p, struct ncg_msg *m); /* 1 message, 0 none yet, -1 garbage */
void ncg_set_nonblock(int fd);                            /* O_NONBLOCK + TCP_NODELAY */
/* One non-blocking send (no SIGPIPE) or recv on a socket, retried on EINTR: the bytes moved
 * (> 0), 0 when it would block, -1 when the connection is broken or closed (EOF). Any
 * thread; never blocks; no allocation. */
ssize_t ncg_sock_send(int fd, const void *b, size_t n);
ssize_t ncg_sock_recv(int fd, void *b, size_t n);

/* A TCP listener on host:want (NULL/"" = all interfaces, IPv6 dual-stack else IPv4; want 0 =
 * ephemeral); *port gets the bound port. Returns the fd, or -1 with err filled. */
int ncg_listen(uint16_t *port, const char *host, int want, char *err, size_t errlen);

struct ncg_coord;
struct ncg_http;
struct ncg_server {
    int lfd;
    struct ncg_coord *co; /* created with ops {ncg_server_send, ncg_server_drop, &server} */
    struct ncg_peer *pc;  /* indexed by the coordinator's conn id */
    uint8_t *dead;        /* 1: dropped by the coordinator, 2: lost; closed at the end of a round */
    int npc;
    uint64_t last_tick_ns;
    uint32_t interval_ms;
    struct ncg_http *http; /* the status endpoint (http.h), polled with the rest; or NULL */
    int nomem; /* an allocation for a connection failed: stop at the end of this round */
    struct ncg_accept_state acc; /* the listener's pause (accept.h) */
    int failed; /* stopped (out of memory): clients were told, nothing is polled any more */
    const struct ncg_msg *bye; /* the host leaves (ncg_server_farewell): every connection gets it */
};

/* The coordinator's output callbacks (arg: the struct ncg_server). */
void ncg_server_send(void *arg, int conn, const struct ncg_msg *m);
void ncg_server_drop(void *arg, int conn);
/* Fill pf/map with the listener and connections (map: -1 listener, -2 the status endpoint's
 * sockets, else conn id); returns n. */
int ncg_server_pollfds(struct ncg_server *s, struct pollfd *pf, int *map, int max);
/* Handle poll results (n = 0 after a timeout), tick the coordinator, flush, reap. */
void ncg_server_handle(struct ncg_server *s, struct pollfd *pf, int *map, int n, uint64_t now);
int ncg_server_pending_tx(const struct ncg_server *s); /* connections with unsent bytes */
/* The host process leaves: bye (its SHUTDOWN, kept by the caller until the process ends) to
 * every connection, the ones still waiting in the listener's backlog too (accepted now: a
 * process whose checker was too slow to accept it before would be left without the final
 * counts, and its calls past them unjudged), and to any accepted from now on. */
void ncg_server_farewell(struct ncg_server *s, const struct ncg_msg *bye, uint64_t now);
/* 1 when a connection has decoded messages waiting for the next round (poll with timeout 0). */
int ncg_server_busy(const struct ncg_server *s);
int ncg_server_open_conns(const struct ncg_server *s);
/* What the process hosting an embedded checker still waits for when it leaves (the agent's
 * exit.c): other processes connected that have not said their last goodbye, holding a member
 * of a communicator (procs) or none yet (unreg: not registered, or not past HELLO); the most
 * members of one communicator still checked (no error verdict) that no process registered
 * yet (unknown); this process's own connections whose last goodbye is not read yet
 * (self_pending, by self_pid); and when the latest connection still open was made
 * (newest_ns). Reads the coordinator's view (ncg_coord_view). 0, or -ENOMEM. */
struct ncg_server_stay {
    int procs, unreg, unknown, self_pending;
    uint64_t newest_ns;
};
int ncg_server_stay(struct ncg_server *s, uint32_t self_pid, uint64_t now,
                    struct ncg_server_stay *st);

struct ncg_config;
struct ncg_coord_params;
/* This host's name (gethostname, else "localhost"), cached. Any thread; no allocation. */
const char *ncg_host_name(void);
/* The coordinator's parameters from a parsed configuration (timeouts, interval), with this
 * process's pid and host. Any thread; no allocation. */
void ncg_coord_params_init(struct ncg_coord_params *cp, const struct ncg_config *cfg,
                           uint64_t token, int embedded, int32_t global_rank);

#endif
