/* A checker this process can no longer reach: RANK DIED of the process that held it (an
 * embedded checker or a relay's, connection lost or silent), falling back from a lost node
 * relay to the tree's root, and CHECKER LOST of a standalone one while communicators stall. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <ck_pr.h>

#include "agent_int.h"
#include "config.h"
#include "local.h"
#include "log.h"
#include "shm.h"
#include "verdict.h"

/* The coordinator's process vanished (connection lost, or silent): a rank died. */
void ncg_link_lost(int li, const char *why, uint64_t now)
{
    ncg_link_lost_as(li, why, 0, now);
}

/* What a local verdict needs of one of this process's communicators, at count calls issued. */
static struct ncg_local_self lc_self(const struct ncg_lcomm *lc, uint64_t count)
{
    return (struct ncg_local_self){lc->id, (uint32_t)lc->nranks, lc->rank, ncg_global_rank(),
                                   count};
}

/* An IP address as text into ip ("?" if not IP); returns its port. */
static uint16_t addr_text(const struct sockaddr_storage *ss, char *ip, size_t cap)
{
    snprintf(ip, cap, "?");
    if (ss->ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, ip, (socklen_t)cap);
        return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    }
    if (ss->ss_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, ip, (socklen_t)cap);
        return ntohs(((const struct sockaddr_in *)ss)->sin_port);
    }
    return 0;
}

/* A link's checker is lost: the CHECKER LOST clock of each of its comms starts now. */
static void lost_clock_start(int li, uint64_t now)
{
    pthread_mutex_lock(&ncg_agent.lk);
    for (size_t i = 0; i < ncg_agent.nlc; i++)
        if (ncg_agent.lc[i].link == li) {
            ncg_agent.lc[i].lost_cnt =
                ncg_agent.lc[i].shm ? ck_pr_load_64(&ncg_agent.lc[i].shm->coll_seq) : 0;
            ncg_agent.lc[i].lost_prog_ns = now;
        }
    pthread_mutex_unlock(&ncg_agent.lk);
}

/* rootlost: the node's relay said the tree's root is gone (its SHUTDOWN NCG_BYE_ROOT). */
void ncg_link_lost_as(int li, const char *why, int rootlost, uint64_t now)
{
    struct ncg_link *l = &ncg_agent.link[li];
    int was_up = l->state == NCG_LINK_UP, was_hello = l->state == NCG_LINK_HELLO;
    ncg_link_close(l);
    l->state = NCG_LINK_DOWN;
    if (ncg_exit_awaiting_release()) {
        /* No RELEASE can come on it any more (a launcher ended its process, say): what this
         * process waited for there is over. */
        ncg_exit_release_got(0, li, now);
        return;
    }
    if (!rootlost && l->tr.on && l->tr.node != l->tr.root_node) {
        /* This node's relay died or froze (also before it welcomed us): its process's ranks
         * are the root's to name (it lost the relay too), so this process reports to the root
         * directly from now on, and gets that verdict there like every other member. */
        ncg_debug(1, "lost %s (%s): reporting to the relay tree's root directly", l->name, why);
        l->tr.on = 0;
        l->addr = l->tr.root;
        l->alen = l->tr.root_len;
        l->lost_ns = now;
        l->lost_acted = 0; /* the root unreachable too: CHECKER LOST, as for a standalone one */
        l->retry_ns = now;
        snprintf(l->lost_why, sizeof l->lost_why, "%s", why);
        char ip[INET6_ADDRSTRLEN];
        uint16_t port = addr_text(&l->addr, ip, sizeof ip);
        snprintf(l->name, sizeof l->name, "the relay tree's root at %s:%u", ip, port);
        lost_clock_start(li, now);
        return;
    }
    if (l->lost_ns) { /* a retry that failed: the next one in a second (a node relay: soon) */
        l->retry_ns = now + (l->tr.on ? 100000000ull : 1000000000ull);
        return;
    }
    if (!was_up) {
        /* this process is leaving too (a short job, the checker's host first): nothing runs
         * unguarded any more */
        if (ncg_exiting())
            ncg_debug(1, "the checker at %s left before accepting this exiting process (%s)",
                      l->name, why);
        else if (was_hello && ncg_cfg.coord[0]) /* a token only NCCLGUARD_TOKEN could get wrong */
            ncg_log("the checker at %s refused this process (wrong NCCLGUARD_TOKEN?); running "
                    "unguarded",
                    l->name);
        else if (was_hello) /* zero-config: the token came with the id, so the checker failed */
            ncg_log("the checker at %s closed the connection before accepting this process (%s); "
                    "running unguarded",
                    l->name, why);
        else
            ncg_log("cannot reach the checker at %s (%s); running unguarded", l->name, why);
        return;
    }
    if (!l->w.embedded) {
        ncg_log("lost the standalone checker at %s (%s); retrying every second, and acting on "
                "it (CHECKER LOST) if this process's communicators make no progress for %g s",
                l->name, why, ncg_cfg.heartbeat_timeout_s);
        l->lost_ns = now;
        l->retry_ns = now + 1000000000ull;
        snprintf(l->lost_why, sizeof l->lost_why, "%s", why);
        lost_clock_start(li, now);
        return;
    }
    /* A local verdict per comm checked there (the coordinator can no longer send one). */
    struct ncg_local_self self[NCG_SHM_MAX_COMMS];
    int n = 0;
    pthread_mutex_lock(&ncg_agent.lk);
    for (size_t i = 0; i < ncg_agent.nlc && n < (int)NCG_SHM_MAX_COMMS; i++) {
        const struct ncg_lcomm *lc = &ncg_agent.lc[i];
        if (lc->link != li || lc->removed)
            continue;
        int dup = 0;
        for (int k = 0; k < n; k++)
            dup |= self[k].comm_id == lc->id;
        if (!dup)
            self[n++] = lc_self(lc, lc->shm ? ck_pr_load_64(&lc->shm->coll_seq) : 0);
    }
    pthread_mutex_unlock(&ncg_agent.lk);
    for (int k = 0; k < n && !ncg_ending(); k++) {
        char root[INET6_ADDRSTRLEN];
        addr_text(&l->tr.root, root, sizeof root);
        struct ncg_local_holder h = {.rootlost = rootlost,
                                     .relay = l->tr.on,
                                     .node = l->tr.node,
                                     .root_node = l->tr.root_node,
                                     .root_grank = l->tr.root_grank,
                                     .root_addr = root,
                                     .grank = l->w.global_rank,
                                     .pid = l->w.pid,
                                     .host = l->w.host,
                                     .why = why};
        struct ncg_verdict *v = ncg_local_rank_died(&self[k], &h);
        if (!v)
            continue;
        ncg_apply_verdict(v, -1, now);
        ncg_verdict_free(v);
    }
}

/* A lost standalone checker: reconnect every second; while it stays away, a communicator of
 * this process on it whose count has not moved for the heartbeat timeout is acted upon as an
 * error verdict, CHECKER LOST, with what this process knows (its counts, its stack). */
void ncg_checker_lost_tick(uint64_t now)
{
    uint64_t hb = (uint64_t)(ncg_cfg.heartbeat_timeout_s * 1e9);
    for (int li = 0; li < ncg_agent.nlink && !ncg_ending(); li++) {
        struct ncg_link *l = &ncg_agent.link[li];
        if (!l->lost_ns || l->state == NCG_LINK_UP)
            continue;
        if (l->state == NCG_LINK_DOWN && now >= l->retry_ns) {
            ncg_link_connect(l, now);
            if (l->state == NCG_LINK_DOWN) /* a node relay: soon, at first very soon */
                l->retry_ns = now + (!l->tr.on                          ? 1000000000ull
                                     : now - l->born_ns < 1000000000ull ? 10000000ull
                                                                        : 100000000ull);
            if (l->state == NCG_LINK_DOWN && l->tr.on && !l->tree_fail_ns)
                l->tree_fail_ns = now;
            if (l->state == NCG_LINK_DOWN && l->tr.on && !l->tree_said &&
                now - l->tree_fail_ns > 5000000000ull) {
                ncg_log("cannot reach %s for 5 s; still trying (unguarded meanwhile)", l->name);
                l->tree_said = 1;
            }
        }
        if (l->lost_acted)
            continue;
        struct ncg_local_self self[NCG_SHM_MAX_COMMS];
        int n = 0;
        pthread_mutex_lock(&ncg_agent.lk);
        for (size_t i = 0; i < ncg_agent.nlc && n < (int)NCG_SHM_MAX_COMMS; i++) {
            struct ncg_lcomm *lc = &ncg_agent.lc[i];
            if (lc->link != li || lc->removed)
                continue;
            uint64_t c = lc->shm ? ck_pr_load_64(&lc->shm->coll_seq) : 0;
            if (c != lc->lost_cnt || !lc->lost_prog_ns) {
                lc->lost_cnt = c;
                lc->lost_prog_ns = now;
            } else if (hb && now - lc->lost_prog_ns >= hb) {
                self[n++] = lc_self(lc, c);
            }
        }
        pthread_mutex_unlock(&ncg_agent.lk);
        if (!n)
            continue;
        l->lost_acted = 1;
        for (int k = 0; k < n && !ncg_ending(); k++) {
            struct ncg_verdict *v = ncg_local_checker_lost(
                &self[k], ncg_link_in_tree(l), l->name, (double)(now - l->lost_ns) / 1e9,
                l->lost_why, ncg_cfg.heartbeat_timeout_s);
            if (!v)
                continue;
            ncg_apply_verdict(v, -1, now);
            ncg_verdict_free(v);
        }
    }
}
