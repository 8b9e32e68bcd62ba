/* The checker thread's links to the checkers of its communicators: where an id's checker is
 * (NCCLGUARD_COORD or the id's tail), connecting, HELLO, the relay election of a relay tree's
 * node, and what a checker sends (WELCOME, QUERY, VERDICT, RELEASE, SHUTDOWN). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <ck_pr.h>

#include "agent_int.h"
#include "hash.h"
#include "hostport.h"
#include "config.h"
#include "idtail.h"
#include "log.h"
#include "http.h"
#include "relayhost.h"
#include "ring.h"
#include "shm.h"
#include "siteof.h"
#include "verdict.h"
#include "wire.h"

/* Coordinator address for an id: from NCCLGUARD_COORD, else from the id's tail. 0 / -1. */
static int coord_for(const unsigned char *uid, struct sockaddr_storage *ss, socklen_t *sl,
                     uint64_t *token, char *name, size_t namelen, struct ncg_tree *tr)
{
    memset(ss, 0, sizeof *ss);
    memset(tr, 0, sizeof *tr);
    if (ncg_cfg.coord[0]) {
        char host[256], port[8];
        struct ncg_hostport hp; /* validated at start-up (config.c): the same parser */
        if (ncg_hostport_parse(ncg_cfg.coord, NCG_HP_BARE_V6, &hp) != 0 ||
            hp.hostlen >= sizeof host)
            return -1;
        snprintf(host, sizeof host, "%.*s", (int)hp.hostlen, hp.host);
        snprintf(port, sizeof port, "%u", hp.port);
        struct addrinfo hints = {0}, *res = NULL;
        hints.ai_socktype = SOCK_STREAM;
        if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
            return -1;
        memcpy(ss, res->ai_addr, res->ai_addrlen);
        *sl = res->ai_addrlen;
        freeaddrinfo(res);
        const char *t = getenv("NCCLGUARD_TOKEN");
        *token = t && *t ? ncg_token_hash(t) : 0;
        snprintf(name, namelen, "%s", ncg_cfg.coord);
        return 0;
    }
    struct ncg_idtail t;
    if (ncg_idtail_decode(uid, &t) != 0)
        return -1;
    uint16_t port = t.port;
    uint64_t tok = t.token;
    uint16_t fam;
    memcpy(&fam, uid + 8, 2);
    char ip[INET6_ADDRSTRLEN] = "127.0.0.1";
    if (fam == AF_INET6) {
        struct sockaddr_in6 a;
        memcpy(&a, uid + 8, sizeof a);
        a.sin6_port = htons(port);
        if (IN6_IS_ADDR_UNSPECIFIED(&a.sin6_addr))
            a.sin6_addr = in6addr_loopback;
        memcpy(ss, &a, sizeof a);
        *sl = sizeof a;
        inet_ntop(AF_INET6, &a.sin6_addr, ip, sizeof ip);
    } else {
        struct sockaddr_in a;
        memcpy(&a, uid + 8, sizeof a);
        if (fam != AF_INET || a.sin_addr.s_addr == htonl(INADDR_ANY))
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        memcpy(ss, &a, sizeof a);
        *sl = sizeof a;
        inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
    }
    *token = tok;
    snprintf(name, namelen, "%s:%u", ip, port);
    if (t.tree) {
        uint32_t node, nnodes, root_node = t.root_node, tn = t.nnodes;
        tr->root_grank = t.root_grank;
        tr->root = *ss; /* also without a node: the root's rank names its loss */
        tr->root_len = *sl;
        /* A process whose node is unknown (or disagrees with the root's count) reports to
         * the root directly, as one of the root node's clients. */
        if (ncg_tree_node(ncg_launch(), &node, &nnodes) == 0 && nnodes == tn && node < tn &&
            root_node < tn && t.fanout >= 2) {
            tr->on = 1;
            tr->root_node = root_node;
            tr->nnodes = tn;
            tr->fanout = t.fanout;
            tr->node = node;
            ncg_rhost_unix_addr(tok, node, ss, sl);
            snprintf(name, namelen, "the relay of node %u (root %s:%u)", node, ip, port);
        } else {
            NCG_LOG_ONCE("this process's node is unknown (LOCAL_RANK, LOCAL_WORLD_SIZE, RANK "
                         "and WORLD_SIZE do not place it among the relay tree's %u nodes): it "
                         "reports to the tree's root at %s:%u directly",
                         tn, ip, port);
        }
    }
    return 0;
}

void ncg_link_close(struct ncg_link *l)
{
    l->nrx += l->io.nrx;
    l->ntx += l->io.ntx;
    ncg_peer_close(&l->io);
}

/* This process becomes its node's relay of l's tree (nobody answered on the node's name). 0:
 * it is (or another process just became it: connect again); -1: it cannot be one. */
static int become_relay(struct ncg_link *l)
{
    /* A relay of another tree already: this one reports to its root directly (only this
     * thread makes one, so no claim is needed since the root has its own slot). */
    if (ncg_agent.rh)
        return -1;
    struct ncg_rhost_params p =
        ncg_agent_rhost_params(l->token, l->tr.node, l->tr.root_node, l->tr.nnodes, l->tr.fanout);
    p.root_addr = l->tr.root;
    p.root_alen = l->tr.root_len;
    char err[160];
    struct ncg_rhost *h;
    int rc = ncg_rhost_start(&h, &p, err, sizeof err);
    if (rc == -EADDRINUSE)
        return 0;
    if (rc != 0) {
        ncg_log("cannot be the relay of node %u: %s; this process reports to the tree's root "
                "directly",
                l->tr.node, err);
        return -1;
    }
    ncg_debug(1, "this process (global rank %d) is the relay of node %u (relay tree of %u nodes)",
              ncg_global_rank(), l->tr.node, l->tr.nnodes);
    ncg_http_tree_start(h, l->tr.node, 0, ncg_global_rank());
    ncg_agent.rh = h;
    __atomic_store_n(&ncg_agent.have_rh, 1, __ATOMIC_RELEASE);
    return 0;
}

void ncg_link_connect(struct ncg_link *l, uint64_t now)
{
    l->start_ns = l->last_rx_ns = now;
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = socket(l->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            l->state = NCG_LINK_DOWN;
            return;
        }
        ncg_set_nonblock(fd);
        ncg_peer_init(&l->io, fd);
        int rc = connect(fd, (struct sockaddr *)&l->addr, l->alen);
        int e = errno;
        l->state = rc == 0 || e == EINPROGRESS ? NCG_LINK_CONNECTING : NCG_LINK_DOWN;
        if (l->state == NCG_LINK_DOWN) /* refused at once (a Unix name, a local port): no fd kept */
            ncg_link_close(l);
        errno = e; /* for the caller's message */
        if (l->state != NCG_LINK_DOWN || !l->tr.on || attempt)
            return;
        /* The node's relay is LOCAL_RANK 0's checker thread; another process takes the role
         * only when that one is not there after a second (not guarded, or gone), or left. */
        if (ncg_launch()->local != 0 && !l->reelect && now - l->born_ns < 1000000000ull)
            return;
        /* No relay on this node's name: this process binds it (the first to bind wins); if
         * the name is taken by another meanwhile, connect again; if it cannot be a relay,
         * the root directly. */
        if (become_relay(l) != 0) {
            l->tr.on = 0;
            l->addr = l->tr.root;
            l->alen = l->tr.root_len;
        }
    }
}

static int link_for(const struct ncg_lcomm *c, uint64_t now)
{
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    uint64_t tok = 0;
    char name[300];
    struct ncg_tree tr;
    if (coord_for(c->uid, &ss, &sl, &tok, name, sizeof name, &tr) != 0) {
        NCG_LOG_ONCE("communicator %016" PRIx64
                     " is not checked: its id carries no ncclguard coordinator "
                     "(root process without ncclguard, or an NCCL_COMM_ID id); set "
                     "NCCLGUARD_COORD=host:port",
                     c->id);
        return -2;
    }
    for (int i = 0; i < ncg_agent.nlink; i++)
        if (ncg_agent.link[i].klen == sl && !memcmp(&ncg_agent.link[i].key, &ss, sl) &&
            ncg_agent.link[i].token == tok)
            return ncg_agent.link[i].state == NCG_LINK_DOWN && !ncg_agent.link[i].lost_ns
                       ? -2
                       : i; /* lost: retried */
    if (ncg_agent.nlink == NCG_MAX_LINKS)
        return -2;
    struct ncg_link *l = &ncg_agent.link[ncg_agent.nlink];
    memset(l, 0, sizeof *l);
    l->addr = l->key = ss;
    l->alen = l->klen = sl;
    l->token = tok;
    l->tr = tr;
    l->born_ns = now;
    snprintf(l->name, sizeof l->name, "%s", name);
    ncg_link_connect(l, now);
    if (l->state == NCG_LINK_DOWN && l->tr.on) { /* no node relay yet: retried (link_connect) */
        l->lost_ns = now;
        l->lost_acted = 1;
        l->retry_ns = now + 10000000ull; /* LOCAL_RANK 0's relay comes within milliseconds */
    } else if (l->state == NCG_LINK_DOWN) {
        ncg_log("cannot reach the checker at %s: %s; running unguarded", l->name, strerror(errno));
        return -2;
    }
    return ncg_agent.nlink++;
}

void ncg_link_send(struct ncg_link *l, const struct ncg_msg *m)
{
    size_t before = l->io.txlen;
    if (l->state != NCG_LINK_UP && !(l->state == NCG_LINK_HELLO && m->type == NCG_MSG_HELLO))
        return;
    if (ncg_peer_send(&l->io, m) == 0)
        ncg_agent.tx_bytes += l->io.txlen - before;
}

void ncg_resolve_links(uint64_t now)
{
    pthread_mutex_lock(&ncg_agent.lk);
    for (size_t i = 0; i < ncg_agent.nlc; i++) /* removed ones too: their GOODBYE needs the link */
        if (ncg_agent.lc[i].link == -1)
            ncg_agent.lc[i].link = link_for(&ncg_agent.lc[i], now);
    pthread_mutex_unlock(&ncg_agent.lk);
}

static void answer_query(int li, const struct ncg_msg_query *q)
{
    static struct ncg_msg m;
    pthread_mutex_lock(&ncg_agent.lk);
    for (size_t i = 0; i < ncg_agent.nlc; i++) {
        struct ncg_lcomm *lc = &ncg_agent.lc[i];
        if (lc->id != q->comm_id || lc->link != li || lc->removed || !lc->shm)
            continue;
        memset(&m, 0, sizeof m);
        m.type = NCG_MSG_ANSWER;
        m.u.answer.comm_id = q->comm_id;
        m.u.answer.qid = q->qid;
        m.u.answer.rank = (uint32_t)lc->rank;
        m.u.answer.n = q->n;
        for (uint32_t k = 0; k < q->n; k++) {
            struct ncg_answer *a = &m.u.answer.a[k];
            struct ncg_shm_record rec;
            int rc = -EAGAIN;
            for (int tries = 0; tries < 100 && rc == -EAGAIN; tries++) {
                rc = ncg_ring_read(lc->shm, NCG_RING_COLL, q->slot[k], &rec);
                if (rc == -EAGAIN && q->slot[k] >= ck_pr_load_64(&lc->shm->coll_seq))
                    break; /* not issued: cannot happen for slots < min(count) */
                if (rc == -EAGAIN)
                    sched_yield(); /* a writer is mid-record: it finishes in nanoseconds */
            }
            a->call.seq = q->slot[k];
            if (rc == 0) {
                a->status = NCG_ANS_OK;
                a->digest = rec.digest;
                a->call.count = rec.count;
                a->call.root = rec.root_or_peer;
                a->call.func = rec.func;
                a->call.dtype = rec.dtype;
                a->call.redop = rec.redop;
                if (q->mode & NCG_QUERY_RECORDS)
                    ncg_site_of(&rec, a->site, sizeof a->site);
            } else {
                a->status = rc == -ENOENT ? NCG_ANS_GONE : NCG_ANS_NONE;
            }
        }
        ncg_link_send(&ncg_agent.link[li], &m);
    }
    pthread_mutex_unlock(&ncg_agent.lk);
}

static void link_message(int li, struct ncg_msg *m, uint64_t now)
{
    struct ncg_link *l = &ncg_agent.link[li];
    l->last_rx_ns = now;
    switch (m->type) {
    case NCG_MSG_WELCOME:
        if (l->state == NCG_LINK_HELLO) {
            l->w = m->u.welcome;
            l->state = NCG_LINK_UP;
            l->up_ns = now;
            if (l->lost_ns && ncg_link_in_tree(l)) { /* a tree's: said at -v */
                ncg_debug(1, "attached to %s", l->name);
                l->lost_ns = 0;
                l->lost_acted = 0;
                l->tree_fail_ns = 0;
                l->tree_said = 0;
            } else if (l->lost_ns) {
                ncg_log("reconnected to the standalone checker at %s", l->name);
                l->lost_ns = 0;
                l->lost_acted = 0;
            }
            ncg_agent.last_report_ns = 0; /* report at once */
        }
        break;
    case NCG_MSG_QUERY:
        if (l->state == NCG_LINK_UP)
            answer_query(li, &m->u.query);
        break;
    case NCG_MSG_VERDICT:
        if (l->state != NCG_LINK_UP)
            break;
        if (!ncg_ending())
            ncg_apply_verdict(m->u.verdict, li, now);
        else if (m->u.verdict->severity == NCG_SEV_ERROR) /* one diagnostic is enough */
            ncg_exit_verdict_while_ending(m->u.verdict->comm_id, li);
        break;
    case NCG_MSG_RELEASE:
        ncg_exit_release_got(m->u.exit.comm_id, li, now);
        break;
    case NCG_MSG_SHUTDOWN:
        if (ncg_agent.release_until_ns) {
            ncg_link_close(l);
            l->state = NCG_LINK_DOWN;
            ncg_exit_release_got(0, li, now); /* the checker left: no RELEASE will come on it */
            break;
        }
        if ((m->u.goodbye.flags & NCG_BYE_RELAY) && l->tr.on) {
            /* The node's relay leaves (its process exits cleanly): reattach to the node's next
             * relay, which may be this process (link_connect). Exiting: no need. */
            ncg_link_close(l);
            l->state = NCG_LINK_DOWN;
            l->lost_ns = now;
            l->lost_acted = 1;
            l->reelect = 1;
            l->retry_ns = ncg_exiting() ? UINT64_MAX : now;
            break;
        }
        if (m->u.goodbye.flags & NCG_BYE_ROOT) {
            ncg_link_lost_as(li, "the relay tree's root was lost", 1, now);
            break;
        }
        if (m->u.goodbye.flags & NCG_BYE_FAILED) {
            /* Not a death and not an exit: its ranks live on, only the checking stopped. The
             * process whose own checker failed has said so already. */
            if (!(__atomic_load_n(&ncg_agent.have_root, __ATOMIC_ACQUIRE) &&
                  ncg_rhost_stopped(ncg_agent.root)))
                ncg_log("the checker at %s stopped (its process ran out of memory); running "
                        "unguarded",
                        l->name);
            ncg_link_close(l);
            l->state = NCG_LINK_DOWN;
            break;
        }
        if (!l->w.embedded && l->state == NCG_LINK_UP) {
            /* A standalone checker stopped on purpose: it may come back (a restarted daemon),
             * so retry; no CHECKER LOST, it said it left. */
            ncg_log("the standalone checker at %s shut down; retrying every second, unguarded "
                    "meanwhile",
                    l->name);
            ncg_link_close(l);
            l->state = NCG_LINK_DOWN;
            l->lost_ns = now;
            l->retry_ns = now + 1000000000ull;
            l->lost_acted = 1;
            snprintf(l->lost_why, sizeof l->lost_why, "it shut down");
            break;
        }
        /* A comm's first entry is the leaving process's own count and comm rank (UINT64_MAX:
         * it held no rank there), the later ones the members that left before it, each with
         * its rank and count (ncg_exit_messages) */
        pthread_mutex_lock(&ncg_agent.lk);
        for (size_t i = 0; i < ncg_agent.nlc; i++) {
            int first = 1;
            for (uint32_t k = 0; k < m->u.goodbye.n; k++) {
                struct ncg_lcomm *lc = &ncg_agent.lc[i];
                if (lc->id != m->u.goodbye.comm_id[k] || lc->link != li || lc->removed)
                    continue;
                uint32_t rk = m->u.goodbye.rank[k];
                int32_t rank = rk == NCG_BYE_ANYRANK || rk > INT32_MAX ? -1 : (int32_t)rk;
                if (first) {
                    lc->peer_final = m->u.goodbye.count[k];
                    lc->peer_verdict = !!(m->u.goodbye.flags & NCG_BYE_VERDICT);
                    lc->peer_rank = rank;
                    lc->ngone = 0;
                } else {
                    if (m->u.goodbye.count[k] < lc->peer_left)
                        lc->peer_left = m->u.goodbye.count[k];
                    if (rank >= 0 && lc->ngone < sizeof lc->gone_rank / sizeof *lc->gone_rank) {
                        lc->gone_rank[lc->ngone] = rank;
                        lc->gone_count[lc->ngone++] = m->u.goodbye.count[k];
                    }
                }
                first = 0;
            }
        }
        pthread_mutex_unlock(&ncg_agent.lk);
        ncg_debug(1, "the checker at %s shut down (its process %s)", l->name,
                  m->u.goodbye.flags & NCG_BYE_VERDICT ? "was ended by a verdict"
                                                       : "exited cleanly");
        ncg_link_close(l);
        l->state = NCG_LINK_DOWN;
        break;
    default:
        break;
    }
}

/* Reads and handles what the checker sent; non-zero when the link went down meanwhile (by a
 * message, its end of the stream or our own shortage). */
static int link_read(int li, uint64_t now)
{
    struct ncg_link *l = &ncg_agent.link[li];
    static struct ncg_msg m;
    int rc = ncg_peer_fill(&l->io);
    for (;;) {
        int k = ncg_peer_next(&l->io, &m);
        if (k < 0) {
            rc = -1;
            break;
        }
        if (k == 0)
            break;
        link_message(li, &m, now);
        ncg_msg_release(&m);
        if (l->state == NCG_LINK_DOWN)
            return 1;
    }
    if (rc == -2) { /* our own shortage: say so, and no verdict from a partial view */
        ncg_log("out of memory for the side channel to the checker at %s; running unguarded",
                l->name);
        ncg_link_close(l);
        l->state = NCG_LINK_DOWN;
        return 1;
    }
    if (rc < 0) {
        ncg_link_lost(li, "connection lost", now);
        return 1;
    }
    return 0;
}

void ncg_link_io(int li, short rev, uint64_t now)
{
    struct ncg_link *l = &ncg_agent.link[li];
    if (l->state == NCG_LINK_CONNECTING) {
        int err = 0;
        socklen_t el = sizeof err;
        if (getsockopt(l->io.fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err) {
            if (!l->lost_ns)
                ncg_log("cannot reach the checker at %s: %s; running unguarded", l->name,
                        strerror(err ? err : errno));
            ncg_link_close(l);
            l->state = NCG_LINK_DOWN;
            l->retry_ns = now + 1000000000ull;
            return;
        }
        if (!(rev & POLLOUT))
            return;
        l->state = NCG_LINK_HELLO;
        struct ncg_msg h = {.type = NCG_MSG_HELLO};
        h.u.hello.token = l->token;
        h.u.hello.pid = (uint32_t)getpid();
        h.u.hello.global_rank = ncg_global_rank();
        snprintf(h.u.hello.host, sizeof h.u.hello.host, "%s", ncg_host_name());
        ncg_link_send(l, &h);
    }
    if ((rev & (POLLIN | POLLHUP | POLLERR)) && link_read(li, now) != 0)
        return;
    /* A write refused (the checker closed its end: on a Unix socket at once, EPIPE) says
     * nothing of what it sent before closing, its SHUTDOWN above all (a node relay in this very
     * thread may have closed it after this poll): read that first. */
    if (l->io.txlen && ncg_peer_flush(&l->io) != 0 && link_read(li, now) == 0)
        ncg_link_lost(li, "connection lost", now);
}
