/* The checker thread's public side (client.h), the top of the agent's files with checker.c: the
 * checker started for the ids this process makes (a relay tree's root: of one node for a flat
 * job), the id's tail, and the communicators application threads hand over. The state its parts
 * share is state.c's (agent_int.h, which gives their order); the thread is thread.c; its links
 * link.c, verdicts apply.c, a lost checker lost.c, reports report.c, the exit exit.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <ck_pr.h>

#include "agent_int.h"
#include "client.h"
#include "comm.h"
#include "config.h"
#include "http.h"
#include "idtail.h"
#include "log.h"
#include "relayhost.h"
#include "shm.h"

/* Tree mode for the ids this process makes: NCCLGUARD_TREE, and the launcher's node figures. */
static int tree_wanted(uint32_t *node, uint32_t *nnodes)
{
    if (ncg_cfg.tree == NCG_TREE_OFF || ncg_tree_node(ncg_launch(), node, nnodes) != 0)
        return 0;
    if (ncg_cfg.tree == NCG_TREE_ON)
        return 1;
    return ncg_launch()->world >= NCG_TREE_AUTO_RANKS;
}

/* Caller holds ncg_agent.lk: this process's ids get a relay tree's root, flat (a tree of one
 * node: the ids' tails say nothing of a tree) or over nnodes nodes. 0, or -errno (said). */
static int root_start_locked(uint32_t node, uint32_t nnodes, uint64_t tok, int flat)
{
    struct ncg_rhost_params p = ncg_agent_rhost_params(tok, node, node, nnodes, ncg_cfg.fanout);
    char err[160];
    struct ncg_rhost *h;
    int rc = ncg_rhost_start(&h, &p, err, sizeof err);
    if (rc != 0) {
        ncg_log("cannot start the checker: %s; this job runs unguarded", err);
        return rc;
    }
    ncg_agent.root = h;
    ncg_agent.root_flat = flat;
    ncg_agent.port = ncg_rhost_port(h);
    ncg_agent.token = tok;
    ncg_agent.root_tree.on = 1;
    ncg_agent.root_tree.root_node = node;
    ncg_agent.root_tree.nnodes = nnodes;
    ncg_agent.root_tree.fanout = ncg_cfg.fanout;
    ncg_http_tree_start(h, node, 1, ncg_global_rank());
    if (!flat)
        ncg_log("checking through a relay tree: %u nodes of %d ranks, fan-out %u%s", nnodes,
                ncg_launch()->local_world, ncg_cfg.fanout,
                ncg_cfg.http[0] ? "; status endpoint at the root and each node's relay" : "");
    /* Publish after the fields above: the thread reads have_root without the lock. */
    __atomic_store_n(&ncg_agent.have_root, 1, __ATOMIC_RELEASE);
    return 0;
}

int ncg_channel_listen(uint16_t *port, uint64_t *token)
{
    int rc = 0;
    pthread_mutex_lock(&ncg_agent.lk);
    uint32_t node = 0, nnodes = 1;
    if (ncg_agent.root_tree.on) { /* this process's earlier ids' checker */
        if (!ncg_root_up()) {
            rc = -ENOMEM; /* it stopped: ids get no tail, their ranks run unguarded */
            goto out;
        }
        goto started;
    }
    if (ncg_agent.root_failed) {
        rc = -EIO; /* it could not start, or stopped: ids get no tail, their ranks run unguarded */
        goto out;
    }
    uint64_t tok = 0;
    while (tok == 0)
        if (getrandom(&tok, sizeof tok, 0) != sizeof tok)
            tok = (uint64_t)ncg_now_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
    int flat = !tree_wanted(&node, &nnodes);
    if (flat) /* a flat job: the root of a tree of one node */
        node = 0, nnodes = 1;
    if (root_start_locked(node, nnodes, tok, flat) != 0) {
        ncg_agent.root_failed = 1;
        rc = -EIO;
        goto out;
    }
started:
    rc = ncg_start_thread_locked();
    *port = ncg_agent.port;
    *token = ncg_agent.token;
out:
    pthread_mutex_unlock(&ncg_agent.lk);
    if (rc == 0)
        ncg_wake_thread();
    return rc;
}

/* Writes {tag, version, port, token} into the id's tail (called by checker.c), and this
 * process's relay tree when the token is its root's. */
void ncg_channel_write_tail(unsigned char *uid, uint16_t port, uint64_t token)
{
    struct ncg_idtail t = {.port = port, .token = token};
    pthread_mutex_lock(&ncg_agent.lk);
    if (ncg_agent.root_tree.on && !ncg_agent.root_flat && ncg_agent.token == token) {
        t.tree = 1;
        t.root_node = ncg_agent.root_tree.root_node;
        t.nnodes = ncg_agent.root_tree.nnodes;
        t.fanout = (uint8_t)ncg_agent.root_tree.fanout;
        t.root_grank = ncg_global_rank();
    }
    pthread_mutex_unlock(&ncg_agent.lk);
    ncg_idtail_encode(uid, &t);
}

void ncg_channel_add(struct ncg_comm *c)
{
    pthread_mutex_lock(&ncg_agent.lk);
    if (ncg_agent.nlc == ncg_agent.caplc) {
        size_t n = ncg_agent.caplc ? ncg_agent.caplc * 2 : 16;
        struct ncg_lcomm *nl = realloc(ncg_agent.lc, sizeof *nl * n);
        if (!nl)
            goto out;
        ncg_agent.lc = nl;
        ncg_agent.caplc = n;
    }
    struct ncg_lcomm *lc = &ncg_agent.lc[ncg_agent.nlc++];
    memset(lc, 0, sizeof *lc);
    lc->c = c;
    lc->shm = c->shm;
    lc->id = c->id;
    lc->rank = c->rank;
    lc->nranks = c->nranks;
    lc->link = c->shm ? -1 : -2; /* not recorded: nothing to compare */
    ncg_sd_facts_reset(&lc->sd);
    memcpy(lc->uid, c->root_uid.internal, sizeof lc->uid);
    if (ncg_start_thread_locked() != 0)
        NCG_LOG_ONCE("cannot start the checker thread; running unguarded");
out:
    pthread_mutex_unlock(&ncg_agent.lk);
    ncg_wake_thread();
}

/* The live entry of c, or NULL. Under lk. */
static struct ncg_lcomm *lc_of(const struct ncg_comm *c)
{
    for (size_t i = 0; i < ncg_agent.nlc; i++)
        if (ncg_agent.lc[i].c == c && !ncg_agent.lc[i].removed)
            return &ncg_agent.lc[i];
    return NULL;
}

void ncg_channel_announce(struct ncg_comm *c)
{
    pthread_mutex_lock(&ncg_agent.lk);
    struct ncg_lcomm *lc = lc_of(c);
    if (!lc || lc->link == -2 || !ncg_agent.started || ncg_agent.pid != getpid() ||
        ncg_agent.exiting) {
        pthread_mutex_unlock(&ncg_agent.lk);
        return; /* unguarded, no thread, or the process is leaving: nothing to wait for */
    }
    lc->announce = 1;
    lc->announce_mark = 0;
    pthread_mutex_unlock(&ncg_agent.lk);
    ncg_wake_thread();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* ann_cv's clock (a static initializer's) */
    ts.tv_sec += (time_t)(NCG_ANNOUNCE_NS / 1000000000ull);
    pthread_mutex_lock(&ncg_agent.lk);
    while ((lc = lc_of(c)) && lc->announce)
        if (pthread_cond_timedwait(&ncg_agent.ann_cv, &ncg_agent.lk, &ts) == ETIMEDOUT)
            break;
    if ((lc = lc_of(c)))
        lc->announce = 0; /* out, or not within the bound: its REPORT comes with the next one */
    pthread_mutex_unlock(&ncg_agent.lk);
}

void ncg_channel_remove(struct ncg_comm *c)
{
    pthread_mutex_lock(&ncg_agent.lk);
    struct ncg_lcomm *lc = lc_of(c); /* one live entry per comm */
    if (lc) {
        lc->final = c->shm ? ck_pr_load_64(&c->shm->coll_seq) : 0;
        lc->removed = 1;
        lc->aborted = (uint8_t)c->aborted;
        lc->c = NULL;
        lc->shm = NULL;
    }
    pthread_mutex_unlock(&ncg_agent.lk);
}

void ncg_channel_fork_child(void)
{
    /* The thread does not exist here; the sockets are the parent's: close our copies so the
     * parent's death still reads as EOF at the coordinator. */
    for (int i = 0; i < ncg_agent.nlink; i++)
        if (ncg_agent.link[i].io.fd >= 0)
            close(ncg_agent.link[i].io.fd);
    if (ncg_agent.have_root)
        ncg_rhost_fork_child(ncg_agent.root);
    if (ncg_agent.have_rh)
        ncg_rhost_fork_child(ncg_agent.rh);
    if (ncg_agent.wake[0] >= 0)
        close(ncg_agent.wake[0]);
    if (ncg_agent.wake[1] >= 0)
        close(ncg_agent.wake[1]);
    /* Forget everything; the memory is the parent's copy, leaked on purpose (no locks here). */
    memset(&ncg_agent, 0, sizeof ncg_agent);
    ncg_agent.lk = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    ncg_agent.cv = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    ncg_agent.ann_cv = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    ncg_agent.wake[0] = ncg_agent.wake[1] = -1;
}
