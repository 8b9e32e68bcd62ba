/* Accepting on a listener (accept.h): one loop for the checker's server (channel.c), the relay
 * host (relayhost.c) and the status endpoint (http.c), so that a connection flood costs the
 * application no descriptor and the checker thread no spinning, whichever listener it hits. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "accept.h"

int ncg_accept_ready(const struct ncg_accept_state *a, uint64_t now_ns)
{
    return now_ns >= a->after_ns;
}

/* Accepting stops for a while (the listener is not polled), doubling up to 1 s while the
 * cause lasts: out of descriptors (EMFILE/ENFILE, or the margin below), or of kernel memory. */
static void backoff(struct ncg_accept_state *a, uint64_t now_ns)
{
    a->backoff_ms = a->backoff_ms ? a->backoff_ms * 2 : 50;
    if (a->backoff_ms > 1000)
        a->backoff_ms = 1000;
    a->after_ns = now_ns + (uint64_t)a->backoff_ms * 1000000ull;
}

/* Descriptors left to the application: the kernel hands out the lowest free number, so a new
 * fd this close to RLIMIT_NOFILE means the process has about that many open. */
static int fd_in_margin(int fd)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 0;
    rlim_t margin = rl.rlim_cur / 8 > NCG_FD_MARGIN ? rl.rlim_cur / 8 : NCG_FD_MARGIN;
    return (rlim_t)fd + margin >= rl.rlim_cur;
}

void ncg_accept_round(int lfd, struct ncg_accept_state *a, int max, uint64_t now_ns,
                      ncg_accept_fn fn, void *arg)
{
    static int warned; /* once per process: every listener shares the descriptors */
    if (lfd < 0 || !ncg_accept_ready(a, now_ns))
        return;
    for (int k = 0; k < max; k++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS)
                backoff(a, now_ns);
            return;
        }
        if (fd_in_margin(fd)) {
            close(fd);
            if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
                fprintf(stderr, "ncclguard: near this process's file descriptor limit "
                                "(RLIMIT_NOFILE): the checker refuses connections for now, to "
                                "leave descriptors to the application\n");
            backoff(a, now_ns);
            return;
        }
        a->backoff_ms = 0;
        if (fn(arg, fd, &ss, sl, now_ns) != 0)
            return;
    }
}
