/* Accepting on a listener, the same way for every listener of the process (the checker's,
 * the relay host's, the status endpoint's): non-blocking close-on-exec sockets, a bounded batch
 * per round, never the application's last descriptors (a margin below RLIMIT_NOFILE), and a
 * pause that doubles while descriptors or kernel memory lack, instead of spinning on EMFILE. */
#ifndef NCG_ACCEPT_H
#define NCG_ACCEPT_H

#include <stdint.h>
#include <sys/socket.h>

#define NCG_FD_MARGIN 32 /* descriptors always left to the application (or 1/8 of the limit) */

/* One listener's pause: zero-initialized means accepting. */
struct ncg_accept_state {
    uint64_t after_ns;   /* accepting paused until then (the listener is not polled) */
    uint32_t backoff_ms; /* the current pause, 50 ms doubling up to 1 s; 0 after an accept */
};

/* Takes an accepted connection fd (the callee owns it from then on, also to close it), from
 * the peer at from/fromlen. Returns 0 to accept more this round, else stops the round. */
typedef int (*ncg_accept_fn)(void *arg, int fd, const struct sockaddr_storage *from,
                             socklen_t fromlen, uint64_t now_ns);

/* 1 when the listener is to be polled at now_ns (not paused). Pure. */
int ncg_accept_ready(const struct ncg_accept_state *a, uint64_t now_ns);

/* Accepts up to max connections on lfd and hands each to fn, until the backlog is empty or fn
 * says stop. Out of descriptors (EMFILE, ENFILE, or a new one inside the margin: closed again)
 * or kernel memory (ENOMEM, ENOBUFS): the round ends and accepting pauses; the first time in
 * the process a margin refusal prints one "ncclguard:" line. The thread that owns the
 * listener; never blocks; allocates nothing (fn may). */
void ncg_accept_round(int lfd, struct ncg_accept_state *a, int max, uint64_t now_ns,
                      ncg_accept_fn fn, void *arg);

#endif
