/* The checker thread: one poll() loop over this process's checker (a relay tree's root), its node
 * relay and its links to checkers, reporting every interval; its exit steps are exit.c's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <ck_pr.h>

#include "action.h"
#include "agent_int.h"
#include "config.h"
#include "dump.h"
#include "log.h"
#include "shm.h"

int ncg_announce_tick(int exiting, uint64_t now)
{
    int due = 0, woke = 0;
    pthread_mutex_lock(&ncg_agent.lk);
    for (size_t i = 0; i < ncg_agent.nlc; i++) {
        struct ncg_lcomm *lc = &ncg_agent.lc[i];
        if (!lc->announce || lc->link == -1)
            continue; /* none waits, or its link is resolved first (ncg_resolve_links) */
        const struct ncg_link *l = lc->link >= 0 ? &ncg_agent.link[lc->link] : NULL;
        int give_up = !l || lc->removed || exiting || ncg_ending() || l->state == NCG_LINK_FREE ||
                      l->state == NCG_LINK_DOWN;
        if (!give_up && l->state == NCG_LINK_RETRY) { /* a tree's node relay being elected */
            give_up = l->sm.retry_ns == UINT64_MAX || now - l->sm.born_ns > NCG_ANNOUNCE_NS;
        } else if (!give_up && l->state != NCG_LINK_UP) { /* connecting, or awaiting WELCOME */
            give_up = now - l->sm.start_ns > NCG_ANNOUNCE_NS;
        } else if (!give_up && !lc->reported) {
            /* the REPORT that registers it: now, not at the next interval (once: one that
             * could not carry it, full, leaves it to the periodic ones) */
            due |= lc->announce == 1;
            lc->announce = 2;
        } else if (!give_up) {
            /* reported: that REPORT is queued behind at most what is queued now (ntx + txlen
             * only grows as frames are queued, and not as they are written) */
            if (!lc->announce_mark)
                lc->announce_mark = l->io.ntx + l->io.txlen;
            give_up = l->io.ntx >= lc->announce_mark; /* written: done */
        }
        if (give_up) {
            lc->announce = 0;
            woke = 1;
        }
    }
    if (woke)
        pthread_cond_broadcast(&ncg_agent.ann_cv);
    pthread_mutex_unlock(&ncg_agent.lk);
    return due;
}

static void *thread_main(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "ncclguard"); /* so `top -H` (and the fault-injection tests) can tell it */
    enum { MAXFD = 4096 };
    static struct pollfd pf[MAXFD];
    static int map[MAXFD];
    uint64_t interval = ncg_params.interval_ns, hb = ncg_params.heartbeat_ns;
    uint64_t last_loop = 0;
    for (;;) {
        uint64_t now = ncg_now_ns();
        if (last_loop && hb && now - last_loop > hb / 2)
            ncg_links_resumed(now); /* we were suspended, not the checker: restart its clock */
        last_loop = now;
        int exiting = ncg_exiting();
        ncg_exit_tick(exiting, now); /* goodbyes, a deferred SHUTDOWN, a relay leaving */
        ncg_resolve_links(now);
        int announce = ncg_announce_tick(exiting, now); /* a comm just made waits for it */
        if (!exiting)
            ncg_checker_lost_tick(now);
        if (!exiting && (announce || now - ncg_agent.last_report_ns >= interval)) {
            ncg_agent.last_report_ns = now;
            if (ncg_ending()) /* its GOODBYEs went: liveness only (agent_int.h) */
                ncg_client_keepalive();
            else
                ncg_exit_report(now);
            struct ncg_shm_header *h = ncg_seg_get();
            if (h)
                ck_pr_store_64(&h->heartbeat_ns, ncg_now_ns());
            ncg_dump_poll();   /* `ncclguard dump` (dump.h) */
            ncg_action_tick(); /* a LAG or STUCK warning shown here that is over */
        }
        ncg_links_clock(exiting, now); /* connect timeouts, silent checkers */
        if (ncg_exit_finish(exiting, now))
            return NULL; /* a clean exit is done (an abort ends the process there) */
        int n = 0;
        pf[n] = (struct pollfd){ncg_agent.wake[0], POLLIN, 0};
        map[n++] = -1000;
        int root_first = n, nroot = 0;
        if (ncg_root_up()) {
            nroot = ncg_rhost_pollfds(ncg_agent.root, pf + n, MAXFD - n - NCG_MAX_LINKS);
            n += nroot;
        }
        int rh_first = n, nrh = 0;
        if (ncg_rh_up()) {
            nrh = ncg_rhost_pollfds(ncg_agent.rh, pf + n, MAXFD - n - NCG_MAX_LINKS);
            n += nrh;
        }
        int link_first = n;
        for (int i = 0; i < ncg_agent.nlink; i++)
            if (ncg_agent.link[i].state >= NCG_LINK_CONNECTING &&
                ncg_agent.link[i].state <= NCG_LINK_UP && ncg_agent.link[i].io.fd >= 0) {
                short ev = POLLIN;
                if (ncg_agent.link[i].state == NCG_LINK_CONNECTING || ncg_agent.link[i].io.txlen)
                    ev |= POLLOUT;
                pf[n] = (struct pollfd){ncg_agent.link[i].io.fd, ev, 0};
                map[n++] = i;
            }
        uint64_t next = ncg_agent.last_report_ns + interval;
        int timeout = next > now ? (int)((next - now) / 1000000ull) + 1 : 0;
        if ((ncg_root_up() || ncg_rh_up()) && timeout > (int)ncg_cfg.interval_ms / 2)
            timeout = (int)ncg_cfg.interval_ms / 2 + 1;
        for (int i = 0; i < ncg_agent.nlink; i++) { /* a link to retry soon (a node relay's) */
            uint64_t w = ncg_link_sm_wake_ns(&ncg_agent.link[i].sm);
            if (w != UINT64_MAX && w > now && w - now < (uint64_t)timeout * 1000000ull)
                timeout = (int)((w - now) / 1000000ull) + 1;
        }
        if (ncg_exit_sm_fast(&ncg_agent.exit, exiting, now)) /* an exit under way */
            timeout = 10;
        int rc = poll(pf, (nfds_t)n, timeout);
        if (rc < 0 && errno != EINTR)
            usleep(1000);
        now = ncg_now_ns();
        if (rc > 0 && (pf[0].revents & POLLIN)) {
            char drain[64];
            while (read(ncg_agent.wake[0], drain, sizeof drain) > 0) {
            }
        }
        if (ncg_root_up())
            ncg_rhost_handle(ncg_agent.root, pf + root_first, rc > 0 ? nroot : 0, now);
        if (ncg_rh_up())
            ncg_rhost_handle(ncg_agent.rh, pf + rh_first, rc > 0 ? nrh : 0, now);
        for (int k = link_first; k < n; k++)
            if (rc > 0 && pf[k].revents)
                ncg_link_io(map[k], pf[k].revents, now);
            else if (ncg_agent.link[map[k]].io.txlen &&
                     ncg_agent.link[map[k]].state >= NCG_LINK_HELLO)
                ncg_link_io(map[k], 0, now);
    }
}

/* Caller holds ncg_agent.lk. */
int ncg_start_thread_locked(void)
{
    if (ncg_agent.started && ncg_agent.pid == getpid())
        return 0;
    ncg_params = ncg_agent_params_of(&ncg_cfg); /* once: the configuration is read at start-up */
    ncg_exit_sm_init(&ncg_agent.exit, &ncg_params);
    if (pipe2(ncg_agent.wake, O_CLOEXEC | O_NONBLOCK) != 0)
        return -errno;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the app's signals are not ours to take */
    /* A small stack: the default (RLIMIT_STACK, often 8 MiB) would count against the job's
     * address-space limit (ulimit -v) for a thread whose frames are a few KiB (its big buffers
     * are static). */
    pthread_attr_t at;
    int rc = pthread_attr_init(&at);
    if (rc == 0) {
        rc = pthread_attr_setstacksize(&at, NCG_THREAD_STACK);
        if (rc == 0)
            rc = pthread_create(&ncg_agent.th, &at, thread_main, NULL);
        pthread_attr_destroy(&at);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        close(ncg_agent.wake[0]);
        close(ncg_agent.wake[1]);
        ncg_agent.wake[0] = ncg_agent.wake[1] = -1;
        return -rc;
    }
    pthread_detach(ncg_agent.th);
    ncg_agent.started = 1;
    ncg_agent.pid = getpid();
    static int registered;
    if (!registered) {
        registered = 1;
        atexit(ncg_exit_at_exit);
    }
    return 0;
}
