/* The side channel's sockets: bounded non-blocking peers (frames of wire.h in and out) and the
 * listener. No threads and no shim state: the checker thread and `ncclguard coord` both use
 * them (through relayhost.h). Every function: the one thread that owns the peer; never blocks;
 * allocates buffers. */
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

/* This host's name (gethostname, else "localhost"), cached. Any thread; no allocation. */
const char *ncg_host_name(void);

#endif
