/* The checker thread's links to the checkers of its communicators: where an id's checker is
 * (NCCLGUARD_COORD or the id's tail), and the driver of each link's machine
 * (machine/link_sm.h): its sockets, HELLO, becoming a tree node's relay, what a checker sends
 * (WELCOME, QUERY, VERDICT, RELEASE, SHUTDOWN) and the lines it says; every decision is the
 * machine's. */
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

/* A socket to the link's address, connecting: NCG_CONN_* (refused: l->err says why). */
static int open_conn(struct ncg_link *l)
{
    int fd = socket(l->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        l->err = errno;
        return NCG_CONN_REFUSED;
    }
    ncg_set_nonblock(fd);
    ncg_peer_init(&l->io, fd);
    if (connect(fd, (struct sockaddr *)&l->addr, l->alen) == 0)
        return NCG_CONN_OK;
    l->err = errno;
    if (l->err == EINPROGRESS)
        return NCG_CONN_INPROGRESS;
    ncg_link_close(l); /* refused at once (a Unix name, a local port): no fd kept */
    return NCG_CONN_REFUSED;
}

static void send_hello(struct ncg_link *l)
{
    struct ncg_msg h = {.type = NCG_MSG_HELLO};
    h.u.hello.token = l->token;
    h.u.hello.pid = (uint32_t)getpid();
    h.u.hello.global_rank = ncg_global_rank();
    snprintf(h.u.hello.host, sizeof h.u.hello.host, "%s", ncg_host_name());
    ncg_link_send(l, &h);
}

/* The words of a loss's cause (link_sm.h's NCG_WHY_*). */
static const char *why_text(int why)
{
    switch (why) {
    case NCG_WHY_CLOSED:
        return "connection lost";
    case NCG_WHY_SILENT:
        return "the checker went silent (frozen or unreachable)";
    case NCG_WHY_CONNECT_TIMEOUT:
        return "connect timed out";
    case NCG_WHY_ROOT_LOST:
        return "the relay tree's root was lost";
    case NCG_WHY_SHUT_DOWN:
        return "it shut down";
    default:
        return "?";
    }
}

/* The machine's line K (link_sm.h's NCG_LSAY_*). */
static void say(const struct ncg_link *l, int k, const char *why, const struct ncg_link_ev *ev)
{
    double hb = (double)ncg_params.heartbeat_ns / 1e9;
    switch (k) {
    case NCG_LSAY_UNREACHABLE:
        ncg_log("cannot reach the checker at %s: %s; running unguarded", l->name, strerror(l->err));
        break;
    case NCG_LSAY_UNREACHABLE_WHY:
        ncg_log("cannot reach the checker at %s (%s); running unguarded", l->name, why);
        break;
    case NCG_LSAY_REFUSED: /* a token only NCCLGUARD_TOKEN could get wrong */
        ncg_log("the checker at %s refused this process (wrong NCCLGUARD_TOKEN?); running "
                "unguarded",
                l->name);
        break;
    case NCG_LSAY_CLOSED_EARLY: /* zero-config: the token came with the id, so it failed */
        ncg_log("the checker at %s closed the connection before accepting this process (%s); "
                "running unguarded",
                l->name, why);
        break;
    case NCG_LSAY_LEFT_EXITING:
        ncg_debug(1, "the checker at %s left before accepting this exiting process (%s)", l->name,
                  why);
        break;
    case NCG_LSAY_LOST:
        if (ncg_link_sm_standalone(&l->sm))
            ncg_log("lost the standalone checker at %s (%s); retrying every second, and acting "
                    "on it (CHECKER LOST) if this process's communicators make no progress for "
                    "%g s",
                    l->name, why, hb);
        else
            ncg_log("lost the checker at %s before it accepted this process (%s); retrying "
                    "every second, and acting on it (CHECKER LOST) if this process's "
                    "communicators make no progress for %g s",
                    l->name, why, hb);
        break;
    case NCG_LSAY_SHUT_DOWN:
        ncg_log("the standalone checker at %s shut down; retrying every second, unguarded "
                "meanwhile",
                l->name);
        break;
    case NCG_LSAY_FAILED:
        ncg_log("the checker at %s stopped (its process ran out of memory); running unguarded",
                l->name);
        break;
    case NCG_LSAY_BYE:
        ncg_debug(1, "the checker at %s shut down (its process %s)", l->name,
                  ev->flags & NCG_BYE_VERDICT ? "was ended by a verdict" : "exited cleanly");
        break;
    case NCG_LSAY_NOMEM: /* our own shortage: say so, and no verdict from a partial view */
        ncg_log("out of memory for the side channel to the checker at %s; running unguarded",
                l->name);
        break;
    case NCG_LSAY_FALLBACK:
        ncg_debug(1, "lost %s (%s): reporting to the relay tree's root directly", l->name, why);
        break;
    case NCG_LSAY_TREE_UNREACHABLE:
        ncg_log("cannot reach %s for %g s; still trying (unguarded meanwhile)", l->name,
                (double)ncg_params.link.tree_say / 1e9);
        break;
    case NCG_LSAY_ATTACHED: /* a tree's: said at -v */
        ncg_debug(1, "attached to %s", l->name);
        break;
    case NCG_LSAY_RECONNECTED:
        ncg_log("reconnected to the standalone checker at %s", l->name);
        break;
    default:
        break;
    }
}

unsigned ncg_link_drive(int li, struct ncg_link_ev ev, const char *why_given)
{
    struct ncg_link *l = &ncg_agent.link[li];
    unsigned all = 0;
    for (;;) {
        struct ncg_link_do d = ncg_link_sm_step(&l->sm, &ev, &ncg_params);
        l->state = l->sm.state;
        all |= d.act;
        const char *why = why_given ? why_given : why_text(d.why);
        if (d.act & NCG_LA_CLOSE)
            ncg_link_close(l);
        if (d.say)
            say(l, d.say, why, &ev);
        if (d.act & NCG_LA_TO_ROOT) {
            l->tr.on = 0;
            l->addr = l->tr.root;
            l->alen = l->tr.root_len;
        }
        if (d.act & NCG_LA_NAME_ROOT)
            ncg_lost_name_root(l);
        if (d.act & NCG_LA_KEEP_WHY)
            snprintf(l->lost_why, sizeof l->lost_why, "%s", why);
        if (d.act & NCG_LA_LOST_CLOCK)
            ncg_lost_clock_start(li, ev.now);
        if (d.act & NCG_LA_RELEASE_ALL)
            ncg_exit_release_got(0, li, ev.now);
        if (d.act & NCG_LA_RANK_DIED)
            ncg_lost_rank_died(li, why, d.why == NCG_WHY_ROOT_LOST, ev.now);
        if ((d.act & NCG_LA_CHECK_LOST) && ncg_lost_check(li, ev.now)) {
            struct ncg_link_ev acted = {.type = NCG_LEV_ACTED, .now = ev.now};
            ncg_link_sm_step(&l->sm, &acted, &ncg_params);
        }
        if (d.act & NCG_LA_REPORT_NOW)
            ncg_agent.last_report_ns = 0;
        if (d.act & NCG_LA_HELLO)
            send_hello(l);
        why_given = NULL;
        if (d.act & NCG_LA_CONNECT)
            ev = (struct ncg_link_ev){.type = NCG_LEV_CONNECT, .now = ev.now, .conn = open_conn(l)};
        else if (d.act & NCG_LA_BECOME_RELAY)
            ev = (struct ncg_link_ev){
                .type = NCG_LEV_RELAY, .now = ev.now, .relay_ok = become_relay(l) == 0};
        else
            return all;
    }
}

void ncg_link_connect(struct ncg_link *l, uint64_t now)
{
    ncg_link_drive((int)(l - ncg_agent.link),
                   (struct ncg_link_ev){.type = NCG_LEV_START, .now = now}, NULL);
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
            ncg_agent.link[i].token == tok) /* lost ones are retried */
            return ncg_agent.link[i].state == NCG_LINK_DOWN ? -2 : i;
    if (ncg_agent.nlink == NCG_MAX_LINKS)
        return -2;
    struct ncg_link *l = &ncg_agent.link[ncg_agent.nlink];
    memset(l, 0, sizeof *l);
    l->addr = l->key = ss;
    l->alen = l->klen = sl;
    l->token = tok;
    l->tr = tr;
    ncg_link_sm_init(&l->sm, tr.root_len != 0, tr.on, tr.on && tr.node == tr.root_node,
                     ncg_launch()->local == 0, ncg_cfg.coord[0] != 0, now);
    snprintf(l->name, sizeof l->name, "%s", name);
    ncg_link_connect(l, now);      /* under lk: starting takes no lock */
    if (l->state == NCG_LINK_DOWN) /* said */
        return -2;
    return ncg_agent.nlink++;
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

/* A loss's event, with what the machine observes of this process (not under lk). */
static struct ncg_link_ev ev_lost(int type, uint64_t now)
{
    return (struct ncg_link_ev){.type = type,
                                .now = now,
                                .exiting = (uint8_t)ncg_exiting(),
                                .releasing = ncg_exit_awaiting_release()};
}

/* A SHUTDOWN's counts into each comm of link li it names (ncg_sd_facts_take; the counts of
 * ncg_exit_messages). Takes lk. */
static void take_bye(int li, const struct ncg_msg_goodbye *g)
{
    pthread_mutex_lock(&ncg_agent.lk);
    for (size_t i = 0; i < ncg_agent.nlc; i++) {
        struct ncg_lcomm *lc = &ncg_agent.lc[i];
        if (lc->link == li && !lc->removed)
            ncg_sd_facts_take(&lc->sd, g, lc->id);
    }
    pthread_mutex_unlock(&ncg_agent.lk);
}

static void on_shutdown(int li, const struct ncg_msg_goodbye *g, uint64_t now)
{
    struct ncg_link_ev ev = ev_lost(NCG_LEV_SHUTDOWN, now);
    ev.flags = g->flags;
    ev.own_stopped = __atomic_load_n(&ncg_agent.have_root, __ATOMIC_ACQUIRE) &&
                     ncg_rhost_stopped(ncg_agent.root);
    if (ncg_link_drive(li, ev, NULL) & NCG_LA_TAKE_BYE)
        take_bye(li, g);
}

static void on_verdict(int li, struct ncg_msg *m, uint64_t now)
{
    if (!ncg_ending())
        ncg_exit_apply(m->u.verdict, li, now);
    else if (m->u.verdict->severity == NCG_SEV_ERROR) /* one diagnostic is enough */
        ncg_exit_verdict_while_ending(m->u.verdict->comm_id, li);
}

static void link_message(int li, struct ncg_msg *m, uint64_t now)
{
    struct ncg_link *l = &ncg_agent.link[li];
    struct ncg_link_ev ev = {.type = NCG_LEV_MESSAGE, .now = now};
    switch (m->type) {
    case NCG_MSG_WELCOME:
        ev.type = NCG_LEV_WELCOME;
        ev.embedded = m->u.welcome.embedded;
        if (ncg_link_drive(li, ev, NULL) & NCG_LA_ACCEPT) {
            l->w = m->u.welcome;
            l->up_ns = now;
        }
        break;
    case NCG_MSG_QUERY:
        if (ncg_link_drive(li, ev, NULL) & NCG_LA_ACCEPT)
            answer_query(li, &m->u.query);
        break;
    case NCG_MSG_VERDICT:
        if (ncg_link_drive(li, ev, NULL) & NCG_LA_ACCEPT)
            on_verdict(li, m, now);
        break;
    case NCG_MSG_RELEASE:
        ncg_link_drive(li, ev, NULL);
        ncg_exit_release_got(m->u.exit.comm_id, li, now);
        break;
    case NCG_MSG_SHUTDOWN:
        on_shutdown(li, &m->u.goodbye, now);
        break;
    default:
        ncg_link_drive(li, ev, NULL);
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
        if (l->state >= NCG_LINK_DOWN)
            return 1;
    }
    if (rc == -2) {
        ncg_link_drive(li, (struct ncg_link_ev){.type = NCG_LEV_NOMEM, .now = now}, NULL);
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
            l->err = err ? err : errno;
            ncg_link_drive(li, (struct ncg_link_ev){.type = NCG_LEV_CONNECT_ERR, .now = now}, NULL);
            return;
        }
        if (!(rev & POLLOUT))
            return;
        ncg_link_drive(li, (struct ncg_link_ev){.type = NCG_LEV_WRITABLE, .now = now}, NULL);
    }
    if ((rev & (POLLIN | POLLHUP | POLLERR)) && link_read(li, now) != 0)
        return;
    /* A write refused (the checker closed its end: on a Unix socket at once, EPIPE) says
     * nothing of what it sent before closing, its SHUTDOWN above all (a node relay in this very
     * thread may have closed it after this poll): read that first. */
    if (l->io.txlen && ncg_peer_flush(&l->io) != 0 && link_read(li, now) == 0)
        ncg_link_lost(li, "connection lost", now);
}

void ncg_links_clock(int exiting, uint64_t now)
{
    for (int i = 0; i < ncg_agent.nlink; i++) {
        struct ncg_link_ev ev = {.type = NCG_LEV_CLOCK,
                                 .now = now,
                                 .exiting = (uint8_t)exiting,
                                 .releasing = ncg_exit_awaiting_release()};
        ncg_link_drive(i, ev, NULL);
    }
}

void ncg_links_resumed(uint64_t now)
{
    for (int i = 0; i < ncg_agent.nlink; i++)
        ncg_link_drive(i, (struct ncg_link_ev){.type = NCG_LEV_RESUMED, .now = now}, NULL);
}

/* The coordinator's process vanished (connection lost, or silent): a rank died. */
void ncg_link_lost(int li, const char *why, uint64_t now)
{
    ncg_link_lost_as(li, why, 0, now);
}

void ncg_link_lost_as(int li, const char *why, int rootlost, uint64_t now)
{
    struct ncg_link_ev ev = {.type = NCG_LEV_CLOSED,
                             .now = now,
                             .exiting = (uint8_t)ncg_exiting(),
                             .releasing = ncg_exit_awaiting_release(),
                             .why = rootlost ? NCG_WHY_ROOT_LOST : NCG_WHY_CLOSED};
    ncg_link_drive(li, ev, why);
}

/* A lost checker: reconnect (every second, a node relay's name sooner); while it stays away, a
 * communicator of this process on it whose count has not moved for the heartbeat timeout is
 * acted upon as an error verdict, CHECKER LOST, with what this process knows (its counts, its
 * stack). */
void ncg_checker_lost_tick(uint64_t now)
{
    for (int li = 0; li < ncg_agent.nlink && !ncg_ending(); li++)
        ncg_link_drive(li, (struct ncg_link_ev){.type = NCG_LEV_TICK, .now = now}, NULL);
}
