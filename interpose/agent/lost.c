/* A checker this process can no longer reach, as the link's machine (machine/link_sm.h) decides
 * it (link.c feeds it the loss): what it says done: RANK DIED of the process that held it (an
 * embedded checker or a relay's), the name of the tree's root once fallen back to it, and the
 * CHECKER LOST clock and verdict of a lost checker while communicators stall. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <ck_pr.h>

#include "agent_int.h"
#include "local.h"
#include "log.h"
#include "shm.h"
#include "verdict.h"

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

void ncg_lost_name_root(struct ncg_link *l)
{
    char ip[INET6_ADDRSTRLEN];
    uint16_t port = addr_text(&l->addr, ip, sizeof ip);
    snprintf(l->name, sizeof l->name, "the relay tree's root at %s:%u", ip, port);
}

/* A link's checker is lost: the CHECKER LOST clock of each of its comms starts now. */
void ncg_lost_clock_start(int li, uint64_t now)
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

void ncg_lost_rank_died(int li, const char *why, int rootlost, uint64_t now)
{
    const struct ncg_link *l = &ncg_agent.link[li];
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
        ncg_exit_apply(v, -1, now);
        ncg_verdict_free(v);
    }
}

int ncg_lost_check(int li, uint64_t now)
{
    const struct ncg_link *l = &ncg_agent.link[li];
    uint64_t hb = ncg_params.heartbeat_ns;
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
    /* Its subject: a tree's link names itself; a checker that never answered is not known to
     * be standalone. */
    int verbatim = ncg_link_in_tree(l) || !ncg_link_sm_standalone(&l->sm);
    char subject[sizeof l->name + 16];
    if (ncg_link_in_tree(l) && !strncmp(l->name, "the ", 4))
        snprintf(subject, sizeof subject, "%s", l->name);
    else if (verbatim)
        snprintf(subject, sizeof subject, "the checker at %s", l->name);
    else
        snprintf(subject, sizeof subject, "%s", l->name);
    for (int k = 0; k < n && !ncg_ending(); k++) {
        struct ncg_verdict *v =
            ncg_local_checker_lost(&self[k], verbatim, subject, (double)(now - l->sm.lost_ns) / 1e9,
                                   l->lost_why, (double)hb / 1e9);
        if (!v)
            continue;
        ncg_exit_apply(v, -1, now);
        ncg_verdict_free(v);
    }
    return n > 0;
}
