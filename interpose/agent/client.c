/* The checker thread's public side (client.h): the state its parts share (agent_int.h),
 * the embedded coordinator or relay tree's root started for the ids this process makes, the
 * id's tail, and the communicators application threads hand over. The thread is thread.c; its
 * links link.c, verdicts apply.c, a lost checker lost.c, reports report.c, the exit exit.c. */
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
#include "coord.h"
#include "http.h"
#include "idtail.h"
#include "log.h"
#include "relayhost.h"
#include "shm.h"

struct ncg_agent ncg_agent = {.lk = PTHREAD_MUTEX_INITIALIZER,
                              .cv = PTHREAD_COND_INITIALIZER,
                              .ann_cv = PTHREAD_COND_INITIALIZER,
                              .wake = {-1, -1},
                              .srv = {.lfd = -1}};

/* This process hosts a relay that runs (acquire: pairs with the release that published it). */
int ncg_rh_up(void)
{
    return __atomic_load_n(&ncg_agent.have_rh, __ATOMIC_ACQUIRE) &&
           !ncg_rhost_stopped(ncg_agent.rh);
}

/* An abort verdict is ending this process: no other verdict is shown (one is enough). */
int ncg_ending(void)
{
    return ncg_agent.abort_at_ns || ncg_agent.release_until_ns;
}

int ncg_exiting(void)
{
    pthread_mutex_lock(&ncg_agent.lk);
    int exiting = ncg_agent.exiting;
    pthread_mutex_unlock(&ncg_agent.lk);
    return exiting;
}

/* The embedded coordinator is ready (acquire: pairs with ncg_channel_listen's release). */
int ncg_srv_up(void)
{
    return __atomic_load_n(&ncg_agent.have_srv, __ATOMIC_ACQUIRE) &&
           !__atomic_load_n(&ncg_agent.srv.failed, __ATOMIC_ACQUIRE);
}

void ncg_wake_thread(void)
{
    if (ncg_agent.wake[1] >= 0) {
        char c = 1;
        ssize_t r = write(ncg_agent.wake[1], &c, 1);
        (void)r;
    }
}

static struct ncg_launch_ranks launch;
static void launch_parse(void)
{
    ncg_launch_ranks_parse(&launch, ncg_env_process, NULL);
}

/* The launcher's ranks (config.h's precedence), read once. Any thread. */
const struct ncg_launch_ranks *ncg_launch(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, launch_parse);
    return &launch;
}

int32_t ncg_global_rank(void)
{
    struct ncg_shm_header *h = ncg_seg_get();
    if (h)
        return h->global_rank;
    return ncg_launch()->global;
}

/* A relay's parameters from this process's configuration. */
struct ncg_rhost_params ncg_agent_rhost_params(uint64_t tok, uint32_t node, uint32_t root,
                                               uint32_t nnodes, uint32_t fanout)
{
    return (struct ncg_rhost_params){.token = tok,
                                     .node = node,
                                     .root_node = root,
                                     .nnodes = nnodes,
                                     .fanout = fanout,
                                     .interval_ms = ncg_cfg.interval_ms,
                                     .heartbeat_timeout_s = ncg_cfg.heartbeat_timeout_s,
                                     .lag_warn_s = ncg_cfg.lag_warn_s,
                                     .lag_abort_s = ncg_cfg.lag_abort_s,
                                     .stuck_warn_s = ncg_cfg.stuck_warn_s,
                                     .stuck_abort_s = ncg_cfg.stuck_abort_s,
                                     .exit_wait_s = ncg_cfg.exit_wait_s,
                                     .global_rank = ncg_global_rank()};
}

/* Tree mode for the ids this process makes: NCCLGUARD_TREE, and the launcher's node figures. */
static int tree_wanted(uint32_t *node, uint32_t *nnodes)
{
    if (ncg_cfg.tree == NCG_TREE_OFF || ncg_tree_node(ncg_launch(), node, nnodes) != 0)
        return 0;
    if (ncg_cfg.tree == NCG_TREE_ON)
        return 1;
    return ncg_launch()->world >= NCG_TREE_AUTO_RANKS;
}

/* Caller holds ncg_agent.lk: this process's ids get a relay tree's root (its relay). 0, or -errno
 * (the caller falls back to the flat coordinator). */
static int root_start_locked(uint32_t node, uint32_t nnodes, uint64_t tok)
{
    struct ncg_rhost_params p = ncg_agent_rhost_params(tok, node, node, nnodes, ncg_cfg.fanout);
    char err[160];
    struct ncg_rhost *h;
    int zero = 0;
    if (!__atomic_compare_exchange_n(&ncg_agent.rh_claim, &zero, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return -EBUSY; /* this process is another tree's node relay: the flat checker */
    int rc = ncg_rhost_start(&h, &p, err, sizeof err);
    if (rc != 0) {
        __atomic_store_n(&ncg_agent.rh_claim, 0, __ATOMIC_RELEASE);
        ncg_log("cannot start the relay tree's root (%s); using the flat checker", err);
        return rc;
    }
    ncg_agent.rh = h;
    ncg_agent.port = ncg_rhost_port(h);
    ncg_agent.token = tok;
    ncg_agent.root_tree.on = 1;
    ncg_agent.root_tree.root_node = node;
    ncg_agent.root_tree.nnodes = nnodes;
    ncg_agent.root_tree.fanout = ncg_cfg.fanout;
    ncg_http_tree_start(h, node, 1, ncg_global_rank());
    if (!ncg_agent.root_flat)
        ncg_log("checking through a relay tree: %u nodes of %d ranks, fan-out %u%s", nnodes,
                ncg_launch()->local_world, ncg_cfg.fanout,
                ncg_cfg.http[0] ? "; status endpoint at the root and each node's relay" : "");
    __atomic_store_n(&ncg_agent.have_rh, 1, __ATOMIC_RELEASE);
    return 0;
}

int ncg_channel_listen(uint16_t *port, uint64_t *token)
{
    int rc = 0;
    pthread_mutex_lock(&ncg_agent.lk);
    uint32_t node, nnodes;
    if (ncg_agent.root_tree.on) /* this process's earlier ids' tree */
        goto started;
    if (!ncg_agent.have_srv) {
        uint64_t tok = 0;
        while (tok == 0)
            if (getrandom(&tok, sizeof tok, 0) != sizeof tok)
                tok = (uint64_t)ncg_now_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
        if (!tree_wanted(&node, &nnodes)) { /* a flat job: the root of a tree of one node */
            node = 0;
            nnodes = 1;
            ncg_agent.root_flat = 1;
        }
        if (root_start_locked(node, nnodes, tok) == 0)
            goto started;
    }
    if (__atomic_load_n(&ncg_agent.srv.failed, __ATOMIC_ACQUIRE)) {
        rc = -ENOMEM; /* it stopped: ids get no tail, their ranks run unguarded */
        goto out;
    }
    if (!ncg_agent.have_srv) {
        char err[160];
        uint16_t p = 0;
        int fd = ncg_listen(&p, NULL, 0, err, sizeof err);
        if (fd < 0) {
            ncg_log("cannot start the checker: %s; this job runs unguarded", err);
            rc = -EIO;
            goto out;
        }
        uint64_t tok = 0;
        while (tok == 0)
            if (getrandom(&tok, sizeof tok, 0) != sizeof tok)
                tok = (uint64_t)ncg_now_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
        struct ncg_coord_params cp;
        ncg_coord_params_init(&cp, &ncg_cfg, tok, 1, ncg_global_rank());
        struct ncg_coord_ops ops = {ncg_server_send, ncg_server_drop, &ncg_agent.srv, NULL};
        ncg_agent.srv.co = ncg_coord_new(&cp, &ops);
        if (!ncg_agent.srv.co) {
            close(fd);
            rc = -ENOMEM;
            goto out;
        }
        ncg_agent.srv.lfd = fd;
        ncg_agent.srv.interval_ms = cp.interval_ms;
        ncg_agent.port = p;
        ncg_agent.token = tok;
        ncg_http_embedded_start(&ncg_agent.srv, tok, ncg_host_name(), (uint32_t)getpid(),
                                cp.global_rank);
        /* Publish after the fields above: the thread reads have_srv without the lock. */
        __atomic_store_n(&ncg_agent.have_srv, 1, __ATOMIC_RELEASE);
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
    lc->peer_final = lc->peer_left = UINT64_MAX;
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

/* How long a creating thread waits for its comm's REPORT, and how long a link may take to come
 * up before nobody waits for it any more. */
#define ANNOUNCE_NS 1000000000ull

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
    ts.tv_sec += (time_t)(ANNOUNCE_NS / 1000000000ull);
    pthread_mutex_lock(&ncg_agent.lk);
    while ((lc = lc_of(c)) && lc->announce)
        if (pthread_cond_timedwait(&ncg_agent.ann_cv, &ncg_agent.lk, &ts) == ETIMEDOUT)
            break;
    if ((lc = lc_of(c)))
        lc->announce = 0; /* out, or not within the bound: its REPORT comes with the next one */
    pthread_mutex_unlock(&ncg_agent.lk);
}

int ncg_announce_tick(int exiting, uint64_t now)
{
    int due = 0, woke = 0;
    pthread_mutex_lock(&ncg_agent.lk);
    for (size_t i = 0; i < ncg_agent.nlc; i++) {
        struct ncg_lcomm *lc = &ncg_agent.lc[i];
        if (!lc->announce || lc->link == -1)
            continue; /* none waits, or its link is resolved first (ncg_resolve_links) */
        const struct ncg_link *l = lc->link >= 0 ? &ncg_agent.link[lc->link] : NULL;
        int give_up = !l || lc->removed || exiting || ncg_ending() || l->state == NCG_LINK_FREE;
        if (!give_up && l->state == NCG_LINK_DOWN) { /* a tree's node relay being elected */
            give_up = !l->lost_ns || l->retry_ns == UINT64_MAX || now - l->born_ns > ANNOUNCE_NS;
        } else if (!give_up && l->state != NCG_LINK_UP) { /* connecting, or awaiting WELCOME */
            give_up = now - l->start_ns > ANNOUNCE_NS;
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
    if (ncg_agent.have_srv) {
        if (ncg_agent.srv.lfd >= 0)
            close(ncg_agent.srv.lfd);
        for (int i = 0; i < ncg_agent.srv.npc; i++)
            if (ncg_agent.srv.pc[i].fd >= 0)
                close(ncg_agent.srv.pc[i].fd);
        if (ncg_agent.srv.http)
            ncg_http_fork_child(ncg_agent.srv.http);
    }
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
    ncg_agent.srv.lfd = -1;
}

/* Side-channel bytes this process's client links queued so far (bench). */

uint64_t ncg_channel_tx_bytes(void)
{
    return ncg_agent.tx_bytes;
}
