/* The checker thread of a guarded process (client.h): client links to the coordinators of its
 * communicators (HELLO, periodic REPORT and P2P, ANSWERs to queries, GOODBYEs, verdicts) and,
 * in the process that called ncclGetUniqueId, the embedded coordinator (channel.c's server).
 * One poll() loop; application threads only touch the comm list, under G.lk, off the hot path. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <ck_pr.h>

#include "action.h"
#include "channel.h"
#include "client.h"
#include "comm.h"
#include "completion.h"
#include "config.h"
#include "coord.h"
#include "diag.h"
#include "dump.h"
#include "http.h"
#include "idtail.h"
#include "log.h"
#include "relayhost.h"
#include "ring.h"
#include "shm.h"
#include "stack.h"
#include "streamtab.h"
#include "symbol.h"
#include "verdict.h"
#include "wire.h"

#define MAX_LINKS 16
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NCG_THREAD_STACK (4u << 20) /* sanitizers' frames are larger */
#else
#define NCG_THREAD_STACK (512u << 10) /* the checker thread's stack */
#endif

enum { L_FREE = 0, L_CONNECTING, L_HELLO, L_UP, L_DOWN };

/* A relay tree as an id's tail announces it (coord_for). */
struct tree {
    uint8_t on;
    uint32_t root_node, nnodes, fanout, node; /* node: this process's */
    int32_t root_grank;                       /* the root's process's global rank, or -1 */
    struct sockaddr_storage root;             /* the root's TCP listener */
    socklen_t root_len;
};

struct link {
    uint64_t nrx, ntx, up_ns; /* traffic of closed connections, time it came up */
    int state;
    struct ncg_peer io;
    struct sockaddr_storage addr, key; /* key: the address the id named (addr may move to the
                                          tree's root) */
    socklen_t alen, klen;
    char name[300];
    uint64_t token;
    uint64_t start_ns, last_rx_ns;
    struct ncg_msg_welcome w;
    uint8_t waited; /* the last WAIT sent was not empty (an empty one clears it) */
    /* A standalone checker lost: retried every second; CHECKER LOST when this process's comms
     * on it make no progress for the heartbeat timeout (checker_lost_tick). */
    uint64_t lost_ns, retry_ns;
    char lost_why[96];
    int lost_acted;
    struct tree tr;        /* tr.on: the link goes to this node's relay (a Unix name), else flat */
    uint64_t tree_fail_ns; /* the node's relay unreachable since (0: reachable) */
    uint8_t tree_said;     /* that was said (once, after 5 s) */
    uint64_t born_ns;      /* made; in its first second only LOCAL_RANK 0 becomes a relay */
    uint8_t reelect;       /* its relay left: any process may take over at once */
};

/* 1 when l belongs to a relay tree: to its node's relay (tr.on), or fallen back from a lost
 * one to the tree's root (tr.on cleared, the root's address kept). */
static int link_in_tree(const struct link *l)
{
    return l->tr.root_len != 0;
}

struct lcomm {
    struct ncg_comm *c;       /* NULL once removed */
    struct ncg_shm_comm *shm; /* NULL once removed (its slot may be reused) */
    uint64_t id;
    int32_t rank, nranks;
    int link; /* -1 not resolved yet, -2 unguarded */
    uint64_t p2p_next;
    uint64_t final;
    uint64_t peer_final; /* the coordinator's process left this comm at this count */
    uint64_t peer_left;  /* its SHUTDOWN: another member left at this count (lowest) */
    uint8_t removed;
    uint8_t aborted;                 /* removed by ncclCommAbort: its GOODBYE says so */
    uint64_t lost_cnt, lost_prog_ns; /* its link's checker lost: last count seen, and when */
    uint8_t peer_verdict; /* the coordinator's process was ended by a verdict (SHUTDOWN flag) */
    unsigned char uid[NCCL_UNIQUE_ID_BYTES];
    uint64_t blocked_prev[2]; /* 1 + the oldest incomplete slot / p2p index seen last report */
    uint8_t reported;         /* a REPORT carried it (else its GOODBYE goes with a first REPORT) */
};

static struct {
    pthread_mutex_t lk;
    pthread_cond_t cv;
    int started;
    pid_t pid;
    pthread_t th;
    int wake[2];
    /* comms (under lk) */
    struct lcomm *lc;
    size_t nlc, caplc;
    /* embedded coordinator (listener made under lk, then owned by the thread) */
    struct ncg_server srv;
    int have_srv;
    uint16_t port;
    uint64_t token;
    /* the relay tree: this process's relay (the root's, made under lk like srv, or a node's,
     * made by the thread), owned by the thread once published */
    struct ncg_rhost *rh;
    int rh_claim; /* __atomic: 0 -> 1 by whoever makes rh (one relay per process) */
    int have_rh;
    struct tree root_tree; /* the root's layout, written into the ids' tails */
    /* exit handshake (under lk) */
    int exiting, exit_done;
    /* thread-owned */
    struct link link[MAX_LINKS];
    int nlink;
    uint64_t last_report_ns;
    uint64_t abort_at_ns; /* nonzero: _exit once verdicts are flushed, or at this time */
    /* nonzero: an abort verdict waits until then for the RELEASE of every verdict this process
     * said DONE to meanwhile (release.h): rel[] (comm, link, released) */
    uint64_t release_until_ns;
    struct {
        uint64_t comm_id;
        int link;
        uint8_t released;
    } rel[MAX_LINKS * 4];
    int nrel;
    /* this process's checker (or tree root) still holds an exit release of other processes:
     * its SHUTDOWN and its own exit wait (bounded by hold_until_ns) */
    int sd_deferred;
    uint64_t hold_until_ns;
    int holding;  /* __atomic: at_exit extends its wait meanwhile */
    int aborting; /* __atomic: an abort verdict is being applied; a clean exit waits for its _exit
                   */
    uint64_t tx_bytes; /* client bytes queued (ncg_channel_tx_bytes) */
} G = {.lk = PTHREAD_MUTEX_INITIALIZER,
       .cv = PTHREAD_COND_INITIALIZER,
       .wake = {-1, -1},
       .srv = {.lfd = -1}};

/* This process hosts a relay that runs (acquire: pairs with the release that published it). */
static int rh_up(void)
{
    return __atomic_load_n(&G.have_rh, __ATOMIC_ACQUIRE) && !ncg_rhost_stopped(G.rh);
}

/* An abort verdict is ending this process: no other verdict is shown (one is enough). */
static int ending(void)
{
    return G.abort_at_ns || G.release_until_ns;
}

/* The embedded coordinator is ready (acquire: pairs with ncg_channel_listen's release). */
static int srv_up(void)
{
    return __atomic_load_n(&G.have_srv, __ATOMIC_ACQUIRE) &&
           !__atomic_load_n(&G.srv.failed, __ATOMIC_ACQUIRE);
}

static void wake_thread(void)
{
    if (G.wake[1] >= 0) {
        char c = 1;
        ssize_t r = write(G.wake[1], &c, 1);
        (void)r;
    }
}

static const char *env_get(const char *name, void *arg)
{
    (void)arg;
    return getenv(name);
}

static struct ncg_launch_ranks launch;
static void launch_parse(void)
{
    ncg_launch_ranks_parse(&launch, env_get, NULL);
}

/* The launcher's ranks (config.h's precedence), read once. Any thread. */
static const struct ncg_launch_ranks *launch_ranks(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, launch_parse);
    return &launch;
}

static int32_t global_rank(void)
{
    struct ncg_shm_header *h = ncg_seg_get();
    if (h)
        return h->global_rank;
    return launch_ranks()->global;
}

/* ---------- rendezvous ---------- */

/* Coordinator address for an id: from NCCLGUARD_COORD, else from the id's tail. 0 / -1. */
static int coord_for(const unsigned char *uid, struct sockaddr_storage *ss, socklen_t *sl,
                     uint64_t *token, char *name, size_t namelen, struct tree *tr)
{
    memset(ss, 0, sizeof *ss);
    memset(tr, 0, sizeof *tr);
    if (ncg_cfg.coord[0]) {
        char host[256];
        const char *s = ncg_cfg.coord, *port;
        const char *colon = strrchr(s, ':');
        if (!colon)
            return -1;
        if (s[0] == '[') {
            const char *e = strchr(s, ']');
            if (!e || e > colon)
                return -1;
            snprintf(host, sizeof host, "%.*s", (int)(e - s - 1), s + 1);
        } else {
            snprintf(host, sizeof host, "%.*s", (int)(colon - s), s);
        }
        port = colon + 1;
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
        if (ncg_tree_node(launch_ranks(), &node, &nnodes) == 0 && nnodes == tn && node < tn &&
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

static void link_close(struct link *l)
{
    l->nrx += l->io.nrx;
    l->ntx += l->io.ntx;
    ncg_peer_close(&l->io);
}

/* A relay's parameters from this process's configuration. */
static struct ncg_rhost_params rhost_params(uint64_t tok, uint32_t node, uint32_t root,
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
                                     .global_rank = global_rank()};
}

/* This process becomes its node's relay of l's tree (nobody answered on the node's name). 0:
 * it is (or another process just became it: connect again); -1: it cannot be one. */
static int become_relay(struct link *l)
{
    int zero = 0;
    if (!__atomic_compare_exchange_n(&G.rh_claim, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return -1; /* a relay of another tree already: this one reports to its root directly */
    struct ncg_rhost_params p =
        rhost_params(l->token, l->tr.node, l->tr.root_node, l->tr.nnodes, l->tr.fanout);
    p.root_addr = l->tr.root;
    p.root_alen = l->tr.root_len;
    char err[160];
    struct ncg_rhost *h;
    int rc = ncg_rhost_start(&h, &p, err, sizeof err);
    if (rc != 0)
        __atomic_store_n(&G.rh_claim, 0, __ATOMIC_RELEASE);
    if (rc == -EADDRINUSE)
        return 0;
    if (rc != 0) {
        ncg_log("cannot be the relay of node %u: %s; this process reports to the tree's root "
                "directly",
                l->tr.node, err);
        return -1;
    }
    ncg_debug(1, "this process (global rank %d) is the relay of node %u (relay tree of %u nodes)",
              global_rank(), l->tr.node, l->tr.nnodes);
    G.rh = h;
    __atomic_store_n(&G.have_rh, 1, __ATOMIC_RELEASE);
    return 0;
}

static void link_connect(struct link *l, uint64_t now)
{
    l->start_ns = l->last_rx_ns = now;
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = socket(l->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            l->state = L_DOWN;
            return;
        }
        ncg_set_nonblock(fd);
        ncg_peer_init(&l->io, fd);
        int rc = connect(fd, (struct sockaddr *)&l->addr, l->alen);
        int e = errno;
        l->state = rc == 0 || e == EINPROGRESS ? L_CONNECTING : L_DOWN;
        if (l->state == L_DOWN) /* refused at once (a Unix name, a local port): no fd kept */
            link_close(l);
        errno = e; /* for the caller's message */
        if (l->state != L_DOWN || !l->tr.on || attempt)
            return;
        /* The node's relay is LOCAL_RANK 0's checker thread; another process takes the role
         * only when that one is not there after a second (not guarded, or gone), or left. */
        if (launch_ranks()->local != 0 && !l->reelect && now - l->born_ns < 1000000000ull)
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

static int link_for(const struct lcomm *c, uint64_t now)
{
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    uint64_t tok = 0;
    char name[300];
    struct tree tr;
    if (coord_for(c->uid, &ss, &sl, &tok, name, sizeof name, &tr) != 0) {
        NCG_LOG_ONCE("communicator %016" PRIx64
                     " is not checked: its id carries no ncclguard coordinator "
                     "(root process without ncclguard, or an NCCL_COMM_ID id); set "
                     "NCCLGUARD_COORD=host:port",
                     c->id);
        return -2;
    }
    for (int i = 0; i < G.nlink; i++)
        if (G.link[i].klen == sl && !memcmp(&G.link[i].key, &ss, sl) && G.link[i].token == tok)
            return G.link[i].state == L_DOWN && !G.link[i].lost_ns ? -2 : i; /* lost: retried */
    if (G.nlink == MAX_LINKS)
        return -2;
    struct link *l = &G.link[G.nlink];
    memset(l, 0, sizeof *l);
    l->addr = l->key = ss;
    l->alen = l->klen = sl;
    l->token = tok;
    l->tr = tr;
    l->born_ns = now;
    snprintf(l->name, sizeof l->name, "%s", name);
    link_connect(l, now);
    if (l->state == L_DOWN && l->tr.on) { /* no node relay yet: retried (link_connect) */
        l->lost_ns = now;
        l->lost_acted = 1;
        l->retry_ns = now + 10000000ull; /* LOCAL_RANK 0's relay comes within milliseconds */
    } else if (l->state == L_DOWN) {
        ncg_log("cannot reach the checker at %s: %s; running unguarded", l->name, strerror(errno));
        return -2;
    }
    return G.nlink++;
}

static void link_send(struct link *l, const struct ncg_msg *m)
{
    size_t before = l->io.txlen;
    if (l->state != L_UP && !(l->state == L_HELLO && m->type == NCG_MSG_HELLO))
        return;
    if (ncg_peer_send(&l->io, m) == 0)
        G.tx_bytes += l->io.txlen - before;
}

/* ---------- verdicts on this side ---------- */

/* The thread to show for an error verdict: the issuer of this rank's latest call on the comm
 * (collective or p2p, whichever is newer), and what it issued. 0 when there is none. */
static uint32_t stuck_thread(const struct lcomm *lc, char *what, size_t cap)
{
    struct ncg_shm_record rc, rp;
    char call[192];
    uint64_t cc = ck_pr_load_64(&lc->shm->coll_seq), pc = ck_pr_load_64(&lc->shm->p2p_seq);
    int hc = cc && ncg_ring_read(lc->shm, NCG_RING_COLL, cc - 1, &rc) == 0;
    int hp = pc && ncg_ring_read(lc->shm, NCG_RING_P2P, pc - 1, &rp) == 0;
    if (hp && (!hc || rp.t_ns > rc.t_ns)) {
        struct ncg_call c = {rp.seq, rp.count, rp.root_or_peer, rp.func, rp.dtype, rp.redop};
        snprintf(what, cap, "%s, #%" PRIu64 " of the pair", ncg_call_format(&c, call, sizeof call),
                 rp.seq);
        return rp.tid;
    }
    if (!hc)
        return 0;
    struct ncg_call c = {rc.seq, rc.count, rc.root_or_peer, rc.func, rc.dtype, rc.redop};
    snprintf(what, cap, "slot %" PRIu64 " %s", cc - 1, ncg_call_format(&c, call, sizeof call));
    return rc.tid;
}

/* Symbolized stack of thread tid into x (static storage: checker thread only); file:line only
 * when srcline (a rank that prints the full block: reading debug information costs CPU time
 * on every rank at once, between the verdict and the exit). */
static void capture_stack(uint32_t tid, const char *what, struct ncg_diag_ctx *x, int srcline)
{
    enum { SHOW = 16 };
    static char frame[SHOW][256];
    static const char *fp[SHOW];
    uint64_t pcs[NCG_STACK_MAX];
    int n = ncg_stack_capture(tid, pcs, SHOW);
    if (n <= 0) { /* said in the block: the user knows why the stack is missing */
        x->stack_tid = tid;
        x->stack_what = what;
        x->stack_why = n < 0 ? ncg_stack_strerror(n) : "no frames";
        x->nstack = 0;
        return;
    }
    for (int i = 0; i < n; i++)
        fp[i] = ncg_symbolize_opt(pcs[i], frame[i], sizeof frame[i], srcline);
    x->stack_tid = tid;
    x->stack_what = what;
    x->stack = fp;
    x->nstack = n;
}

/* Verdicts whose diagnostic shows the stuck thread's stack: the certain ones, and a LAG that
 * became an error when the process is about to end anyway (abort): there the lagging rank's
 * stack is the answer to "where is it?". A job that lives on is not interrupted for a LAG. */
static int is_stuck_verdict(const struct ncg_verdict *v)
{
    if (v->severity != NCG_SEV_ERROR)
        return 0;
    if (v->kind == NCG_V_LAG)
        return ncg_cfg.action == NCG_ACTION_ABORT;
    return v->kind == NCG_V_MISMATCH || v->kind == NCG_V_P2P_MISMATCH ||
           v->kind == NCG_V_RANK_DIED || v->kind == NCG_V_RANK_EXITED || v->kind == NCG_V_STUCK ||
           v->kind == NCG_V_DEADLOCK || v->kind == NCG_V_CHECKER_LOST;
}

static void client_report(uint64_t now);

/* The comms this process destroyed and said goodbye for (they leave G.lc), for its SHUTDOWN:
 * its own coordinator may not have read that goodbye when the process exits. The latest
 * NCG_WIRE_MAX_COMMS, checker thread only. */
static struct {
    uint64_t id, final;
} left_own[NCG_WIRE_MAX_COMMS];
static unsigned left_own_n;
static void left_own_add(uint64_t id, uint64_t final)
{
    left_own[left_own_n++ % NCG_WIRE_MAX_COMMS] = (typeof(left_own[0])){id, final};
}
/* A record's call site for a diagnostic; a graph replay's is its capture's, so said. */
static void site_of(const struct ncg_shm_record *rec, char *buf, size_t n)
{
    static const char tag[] = " (in a CUDA graph replay)";
    if (!(rec->flags & NCG_REC_GRAPH) || n <= sizeof tag) {
        ncg_symbolize(rec->caller_pc, buf, n);
        return;
    }
    ncg_symbolize(rec->caller_pc, buf, n - (sizeof tag - 1));
    if (!buf[0])
        snprintf(buf, n, "a CUDA graph replay");
    else
        strcat(buf, tag);
}

static void client_exit_messages(uint8_t flags, int only_bye);
static struct ncg_msg exit_sd;

/* This process's SHUTDOWN (exit_sd) to every client of its embedded checker. */
static void server_shutdown(void)
{
    for (int i = 0; i < G.srv.npc; i++)
        if (G.srv.pc[i].fd >= 0)
            ncg_peer_send(&G.srv.pc[i], &exit_sd);
}

/* One comm rank of the verdict's communicator held by this process, and what it shows. */
struct held {
    int32_t rank;
    uint32_t tid; /* the thread whose stack to show (0: none) */
    char mycall[256], site[NCG_WIRE_SITE], what[256];
    double call_time_unix;
};
#define MAX_HELD 8 /* comm ranks of one comm shown by one process (the report lists them all) */

/* Fills h with comm rank lc->rank's own call at the verdict's slot (or its latest) and the
 * thread to show, and sets its count in v. Caller holds G.lk. */
static void held_facts(const struct lcomm *lc, struct ncg_verdict *v, struct held *h)
{
    char call[192];
    struct ncg_shm_record rec;
    memset(h, 0, sizeof *h);
    h->rank = lc->rank;
    h->call_time_unix = -1;
    uint64_t cnt = lc->removed ? lc->final : lc->shm ? ck_pr_load_64(&lc->shm->coll_seq) : 0;
    /* This rank's own count as it is now, not as last reported to the coordinator. */
    if (lc->rank >= 0 && (uint32_t)lc->rank < v->nranks)
        v->counts[lc->rank] = (int64_t)cnt;
    if (!lc->shm) { /* destroyed here before the verdict: its count is all that is left */
        if (lc->removed)
            snprintf(h->mycall, sizeof h->mycall,
                     "none (it destroyed the communicator after %" PRIu64 " calls)", cnt);
        return;
    }
    int slotted = v->kind == NCG_V_MISMATCH || v->kind == NCG_V_STUCK || v->kind == NCG_V_DEADLOCK;
    int64_t slot = slotted && v->slot >= 0 && (uint64_t)v->slot < cnt ? v->slot : (int64_t)cnt - 1;
    if (slot >= 0 && ncg_ring_read(lc->shm, NCG_RING_COLL, (uint64_t)slot, &rec) == 0) {
        struct ncg_call c = {.seq = rec.seq,
                             .count = rec.count,
                             .root = rec.root_or_peer,
                             .func = rec.func,
                             .dtype = rec.dtype,
                             .redop = rec.redop};
        snprintf(h->mycall, sizeof h->mycall, "slot %" PRId64 " %s%s", slot,
                 ncg_call_format(&c, call, sizeof call),
                 (uint64_t)slot + 1 == cnt ? " (its latest call)" : "");
        site_of(&rec, h->site, sizeof h->site);
        if (v->kind == NCG_V_STUCK && !v->ncalls && rec.seq == (uint64_t)v->slot &&
            slot == v->slot) {
            /* the headline's call (the same on every rank: digests agree), where no WAIT named
             * it (asynchronous NCCL: nobody blocks inside the call) */
            v->ncalls = 1;
            v->calls[0].call = c;
            snprintf(v->calls[0].site, sizeof v->calls[0].site, "%s", h->site);
        }
        struct timespec wt, mt;
        clock_gettime(CLOCK_REALTIME, &wt);
        clock_gettime(CLOCK_MONOTONIC, &mt);
        double mono = (double)mt.tv_sec + (double)mt.tv_nsec * 1e-9;
        h->call_time_unix =
            (double)wt.tv_sec + (double)wt.tv_nsec * 1e-9 - (mono - (double)rec.t_ns * 1e-9);
    }
    if (ncg_cfg.stacks && is_stuck_verdict(v))
        h->tid = stuck_thread(lc, h->what, sizeof h->what);
}

/* x for held rank h: its call, site and (without G.lk: the capture may take ~300 ms while
 * application threads take G.lk at init) its thread's stack and Python frames. */
static void held_context(const struct ncg_verdict *v, struct held *h, struct ncg_diag_ctx *x)
{
    static struct ncg_pystack py; /* checker thread only */
    x->rank = h->rank;
    x->my_call = h->mycall;
    x->my_site = h->site;
    x->call_time_unix = h->call_time_unix;
    x->stack_tid = 0;
    x->nstack = 0;
    x->py = NULL;
    if (!h->tid)
        return;
    char on[8];
    int full = ncg_cfg.diag == NCG_DIAG_FULL ||
               (ncg_cfg.diag == NCG_DIAG_AUTO && ncg_diag_full_here(v, h->rank, on, sizeof on));
    capture_stack(h->tid, h->what, x, full);
    if (ncg_py_capture(h->tid, &py) == 0)
        x->py = &py;
}

/* Tells the checker on link li that this process printed and reported comm_id's verdict. */
static void say_done(int li, uint64_t comm_id)
{
    struct ncg_msg m = {.type = NCG_MSG_DONE, .u.exit.comm_id = comm_id};
    if (li >= 0 && li < G.nlink && G.link[li].state == L_UP)
        link_send(&G.link[li], &m);
}

/* The longest this process waits on an exit release, for its own RELEASE or for the releases
 * its checker holds for others: the checker's bound, and a margin for a RELEASE to arrive. */
static uint64_t release_bound_ns(void)
{
    return (uint64_t)((ncg_cfg.exit_wait_s + 2.0) * 1e9);
}

/* This process's checker or tree root still waits for other processes' DONEs. */
static int hosted_waiting(void)
{
    return (srv_up() && ncg_coord_releases_waiting(G.srv.co)) ||
           (rh_up() && G.root_tree.on && ncg_rhost_releases_waiting(G.rh));
}

/* An abort verdict's exit: now, once our own verdicts reached the others (a process that hosts
 * the checker or a relay waits for its connections to drain, and for the exit releases it
 * holds for others; thread_main). */
static void exit_arm(uint64_t now)
{
    if (G.release_until_ns && srv_up())
        G.sd_deferred = 1; /* held back until the release (client_exit_messages) */
    G.release_until_ns = 0;
    if (!G.abort_at_ns) {
        G.abort_at_ns = now + (srv_up() || rh_up() ? 1000000000ull : 1);
        G.hold_until_ns = now + release_bound_ns();
    }
}

/* Waits (abort) for the RELEASE of comm_id on link li too. */
static void release_wait_add(uint64_t comm_id, int li)
{
    for (int i = 0; i < G.nrel; i++)
        if (G.rel[i].comm_id == comm_id && G.rel[i].link == li)
            return;
    if (G.nrel < (int)(sizeof G.rel / sizeof *G.rel))
        G.rel[G.nrel++] = (__typeof__(G.rel[0])){comm_id, li, 0};
}

/* comm_id's RELEASE came on link li (comm_id 0: every verdict of li, its checker being gone);
 * once every one came, the process may exit. */
static void release_got(uint64_t comm_id, int li, uint64_t now)
{
    if (!G.release_until_ns)
        return;
    int left = 0;
    for (int i = 0; i < G.nrel; i++) {
        if (G.rel[i].link == li && (!comm_id || G.rel[i].comm_id == comm_id))
            G.rel[i].released = 1;
        left += !G.rel[i].released;
    }
    if (!left)
        exit_arm(now);
}

/* Applies a verdict: every comm rank of v's communicator held here prints its diagnostic (the
 * one that prints the full block first, with the report and the action). li: the link it came
 * on (-1: decided here, the checker being lost): there the process says DONE and, to abort,
 * waits for the checker's RELEASE (release.h) so that no rank exits, and no launcher kills the
 * others, before every rank has printed and written its part. */
static void apply_verdict(struct ncg_verdict *v, int li, uint64_t now)
{
    struct ncg_comm *fail[NCG_SHM_MAX_COMMS + 8];
    int nf = 0;
    static struct held held[MAX_HELD]; /* checker thread only */
    int32_t ranks[NCG_SHM_MAX_COMMS];
    int nh = 0, nr = 0;
    struct ncg_diag_ctx x = {.rank = -1,
                             .global_rank = global_rank(),
                             .rank_var = launch_ranks()->global_var,
                             .diag_mode = ncg_cfg.diag,
                             .pid = (uint32_t)getpid(),
                             .host = ncg_host_name(),
                             .my_call = "",
                             .my_site = "",
                             .action = "",
                             .exit_status = -1,
                             .report_path = "",
                             .call_time_unix = -1};
    /* From here the process ends with NCG_EXIT_VERDICT: an application that finishes meanwhile
     * (the stack capture's signal may end its sleep) must not exit 0 first (at_exit waits). */
    if (v->severity == NCG_SEV_ERROR && ncg_cfg.action == NCG_ACTION_ABORT)
        __atomic_store_n(&G.aborting, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&G.lk);
    /* Live comms first: a rank that destroyed the comm here is shown only when none is left. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < G.nlc; i++) {
            struct lcomm *lc = &G.lc[i];
            if (lc->id != v->comm_id || lc->removed != pass || lc->rank < 0)
                continue;
            int dup = 0;
            for (int k = 0; k < nr; k++)
                dup |= ranks[k] == lc->rank;
            if (dup || nr == (int)NCG_SHM_MAX_COMMS)
                continue;
            ranks[nr++] = lc->rank;
            if (nh < MAX_HELD && (pass == 0 || nh == 0))
                held_facts(lc, v, &held[nh++]);
        }
    pthread_mutex_unlock(&G.lk);
    /* The first shown (with the report) is a rank the verdict is about, else one that prints
     * the full block, when this process holds one. */
    int best = 0, best_score = -1;
    for (int k = 0; k < nh; k++) {
        char on[8];
        int score = ncg_diag_in_subject(v, held[k].rank)
                        ? 2
                        : ncg_cfg.diag == NCG_DIAG_AUTO &&
                              ncg_diag_full_here(v, held[k].rank, on, sizeof on);
        if (score > best_score) {
            best = k;
            best_score = score;
        }
    }
    if (best) {
        struct held t = held[0];
        held[0] = held[best];
        held[best] = t;
    }
    x.held = ranks;
    x.nheld = nr;
    if (nh)
        held_context(v, &held[0], &x);
    /* The comms to fail, taken under the lock they are used under: the capture above let
     * application threads run (one may have destroyed or aborted a comm meanwhile). */
    pthread_mutex_lock(&G.lk);
    for (size_t i = 0; i < G.nlc; i++) {
        struct lcomm *lc = &G.lc[i];
        if (lc->id == v->comm_id && !lc->removed && lc->c && nf < (int)(sizeof fail / sizeof *fail))
            fail[nf++] = lc->c;
    }
    int must_exit = ncg_action_apply(v, &x, fail, nf);
    pthread_mutex_unlock(&G.lk);
    for (int k = 1; k < nh; k++) { /* the other comm ranks held here: their own lines */
        held_context(v, &held[k], &x);
        ncg_action_show(v, &x);
    }
    if (v->kind == NCG_V_LAG && v->severity == NCG_SEV_WARN && nh)
        ncg_dump_on_warning(v->comm_id); /* NCCLGUARD_DUMP_ON_WARN=1 */
    if (v->severity == NCG_SEV_ERROR)
        say_done(li, v->comm_id); /* printed and reported: others may be released */
    if (must_exit && !G.abort_at_ns && !G.release_until_ns) {
        /* Our end is the verdict's doing, not a death: peers on our other comms say so. */
        client_report(now);
        int wait = li >= 0 && G.link[li].state == L_UP && ncg_cfg.exit_wait_s > 0;
        client_exit_messages(NCG_BYE_VERDICT, wait);
        if (wait) {
            G.release_until_ns = now + release_bound_ns();
            G.nrel = 0;
            release_wait_add(v->comm_id, li);
        } else {
            exit_arm(now);
        }
    }
}

/* The coordinator's process vanished (connection lost, or silent): a rank died. */
static void link_lost_as(int li, const char *why, int rootlost, uint64_t now);
static void link_lost(int li, const char *why, uint64_t now)
{
    link_lost_as(li, why, 0, now);
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
    pthread_mutex_lock(&G.lk);
    for (size_t i = 0; i < G.nlc; i++)
        if (G.lc[i].link == li) {
            G.lc[i].lost_cnt = G.lc[i].shm ? ck_pr_load_64(&G.lc[i].shm->coll_seq) : 0;
            G.lc[i].lost_prog_ns = now;
        }
    pthread_mutex_unlock(&G.lk);
}

/* rootlost: the node's relay said the tree's root is gone (its SHUTDOWN NCG_BYE_ROOT). */
static void link_lost_as(int li, const char *why, int rootlost, uint64_t now)
{
    struct link *l = &G.link[li];
    int was_up = l->state == L_UP, was_hello = l->state == L_HELLO;
    link_close(l);
    l->state = L_DOWN;
    if (G.release_until_ns) { /* no RELEASE can come on it any more (a launcher ended its
                                 process, say): what this process waited for there is over */
        release_got(0, li, now);
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
        if (was_hello && ncg_cfg.coord[0]) /* a token only NCCLGUARD_TOKEN could get wrong */
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
    uint64_t ids[NCG_SHM_MAX_COMMS], cnt[NCG_SHM_MAX_COMMS];
    uint32_t nr[NCG_SHM_MAX_COMMS];
    int32_t me[NCG_SHM_MAX_COMMS];
    int n = 0;
    pthread_mutex_lock(&G.lk);
    for (size_t i = 0; i < G.nlc && n < (int)NCG_SHM_MAX_COMMS; i++)
        if (G.lc[i].link == li && !G.lc[i].removed) {
            int dup = 0;
            for (int k = 0; k < n; k++)
                dup |= ids[k] == G.lc[i].id;
            if (!dup) {
                ids[n] = G.lc[i].id;
                me[n] = G.lc[i].rank;
                cnt[n] = G.lc[i].shm ? ck_pr_load_64(&G.lc[i].shm->coll_seq) : 0;
                nr[n++] = (uint32_t)G.lc[i].nranks;
            }
        }
    pthread_mutex_unlock(&G.lk);
    for (int k = 0; k < n && !ending(); k++) {
        struct ncg_verdict *v = ncg_verdict_new(nr[k]);
        if (!v)
            continue;
        v->kind = NCG_V_RANK_DIED;
        v->severity = NCG_SEV_ERROR;
        v->comm_id = ids[k];
        if (me[k] >= 0 && (uint32_t)me[k] < nr[k]) { /* what this side knows: its own rank */
            v->members[me[k]] = global_rank();
            v->counts[me[k]] = (int64_t)cnt[k];
        }
        char root[INET6_ADDRSTRLEN];
        addr_text(&l->tr.root, root, sizeof root);
        int32_t rg =
            rootlost || (l->tr.on && l->tr.node == l->tr.root_node) ? l->tr.root_grank : -2;
        if (rg >= 0) /* the root's process: it holds the checker, as under the flat one */
            snprintf(v->subject, sizeof v->subject, "holding the checker (global rank %d)", rg);
        else if (rg == -1)
            snprintf(v->subject, sizeof v->subject,
                     "holding the checker (the relay tree's root at %s)", root);
        else if (l->tr.on && l->w.global_rank >= 0)
            snprintf(v->subject, sizeof v->subject, "holding the relay of node %u (global rank %d)",
                     l->tr.node, l->w.global_rank);
        else if (l->tr.on)
            snprintf(v->subject, sizeof v->subject, "holding the relay of node %u", l->tr.node);
        else if (l->w.global_rank >= 0)
            snprintf(v->subject, sizeof v->subject, "holding the checker (global rank %d)",
                     l->w.global_rank);
        else
            snprintf(v->subject, sizeof v->subject, "holding the checker");
        if (rootlost)
            snprintf(v->detail, sizeof v->detail,
                     "this node's relay (pid %u on %s) lost it: its process died or is "
                     "unreachable",
                     l->w.pid, l->w.host);
        else
            snprintf(v->detail, sizeof v->detail, "pid %u on %s, %s", l->w.pid, l->w.host, why);
        apply_verdict(v, -1, now);
        ncg_verdict_free(v);
    }
}

/* ---------- client messages ---------- */

static void answer_query(int li, const struct ncg_msg_query *q)
{
    static struct ncg_msg m;
    pthread_mutex_lock(&G.lk);
    for (size_t i = 0; i < G.nlc; i++) {
        struct lcomm *lc = &G.lc[i];
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
                    site_of(&rec, a->site, sizeof a->site);
            } else {
                a->status = rc == -ENOENT ? NCG_ANS_GONE : NCG_ANS_NONE;
            }
        }
        link_send(&G.link[li], &m);
    }
    pthread_mutex_unlock(&G.lk);
}

static void link_message(int li, struct ncg_msg *m, uint64_t now)
{
    struct link *l = &G.link[li];
    l->last_rx_ns = now;
    switch (m->type) {
    case NCG_MSG_WELCOME:
        if (l->state == L_HELLO) {
            l->w = m->u.welcome;
            l->state = L_UP;
            l->up_ns = now;
            if (l->lost_ns && link_in_tree(l)) { /* a tree's: said at -v */
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
            G.last_report_ns = 0; /* report at once */
        }
        break;
    case NCG_MSG_QUERY:
        if (l->state == L_UP)
            answer_query(li, &m->u.query);
        break;
    case NCG_MSG_VERDICT:
        if (l->state != L_UP)
            break;
        if (!ending())
            apply_verdict(m->u.verdict, li, now);
        else if (m->u.verdict->severity == NCG_SEV_ERROR) { /* one diagnostic is enough */
            say_done(li, m->u.verdict->comm_id);
            if (G.release_until_ns) /* but its other members may still be printing */
                release_wait_add(m->u.verdict->comm_id, li);
        }
        break;
    case NCG_MSG_RELEASE:
        release_got(m->u.exit.comm_id, li, now);
        break;
    case NCG_MSG_SHUTDOWN:
        if (G.release_until_ns) {
            link_close(l);
            l->state = L_DOWN;
            release_got(0, li, now); /* the checker left: no RELEASE will come on it */
            break;
        }
        if ((m->u.goodbye.flags & NCG_BYE_RELAY) && l->tr.on) {
            /* The node's relay leaves (its process exits cleanly): reattach to the node's next
             * relay, which may be this process (link_connect). Exiting: no need. */
            link_close(l);
            l->state = L_DOWN;
            l->lost_ns = now;
            l->lost_acted = 1;
            l->reelect = 1;
            pthread_mutex_lock(&G.lk);
            int exiting = G.exiting;
            pthread_mutex_unlock(&G.lk);
            l->retry_ns = exiting ? UINT64_MAX : now;
            break;
        }
        if (m->u.goodbye.flags & NCG_BYE_ROOT) {
            link_lost_as(li, "the relay tree's root was lost", 1, now);
            break;
        }
        if (m->u.goodbye.flags & NCG_BYE_FAILED) {
            /* Not a death and not an exit: its ranks live on, only the checking stopped. The
             * process whose own checker failed has said so already. */
            if (!__atomic_load_n(&G.srv.failed, __ATOMIC_ACQUIRE))
                ncg_log("the checker at %s stopped (its process ran out of memory); running "
                        "unguarded",
                        l->name);
            link_close(l);
            l->state = L_DOWN;
            break;
        }
        if (!l->w.embedded && l->state == L_UP) {
            /* A standalone checker stopped on purpose: it may come back (a restarted daemon),
             * so retry; no CHECKER LOST, it said it left. */
            ncg_log("the standalone checker at %s shut down; retrying every second, unguarded "
                    "meanwhile",
                    l->name);
            link_close(l);
            l->state = L_DOWN;
            l->lost_ns = now;
            l->retry_ns = now + 1000000000ull;
            l->lost_acted = 1;
            snprintf(l->lost_why, sizeof l->lost_why, "it shut down");
            break;
        }
        /* A comm's first entry is the leaving process's own count (UINT64_MAX: it held no
         * rank there), a later one the lowest another member left at (client_exit_messages) */
        pthread_mutex_lock(&G.lk);
        for (size_t i = 0; i < G.nlc; i++) {
            int first = 1;
            for (uint32_t k = 0; k < m->u.goodbye.n; k++) {
                struct lcomm *lc = &G.lc[i];
                if (lc->id != m->u.goodbye.comm_id[k] || lc->link != li || lc->removed)
                    continue;
                if (first) {
                    lc->peer_final = m->u.goodbye.count[k];
                    lc->peer_verdict = !!(m->u.goodbye.flags & NCG_BYE_VERDICT);
                } else if (m->u.goodbye.count[k] < lc->peer_left) {
                    lc->peer_left = m->u.goodbye.count[k];
                }
                first = 0;
            }
        }
        pthread_mutex_unlock(&G.lk);
        ncg_debug(1, "the checker at %s shut down (its process %s)", l->name,
                  m->u.goodbye.flags & NCG_BYE_VERDICT ? "was ended by a verdict"
                                                       : "exited cleanly");
        link_close(l);
        l->state = L_DOWN;
        break;
    default:
        break;
    }
}

/* The thread driving a comm here: the issuer of its latest call, else its creator. */
static uint32_t driver_tid(const struct lcomm *lc, uint64_t cnt)
{
    struct ncg_shm_record rc, rp;
    if (!lc->shm)
        return 0;
    uint64_t pc = ck_pr_load_64(&lc->shm->p2p_seq);
    int hc = cnt && ncg_ring_read(lc->shm, NCG_RING_COLL, cnt - 1, &rc) == 0;
    int hp = pc && ncg_ring_read(lc->shm, NCG_RING_P2P, pc - 1, &rp) == 0;
    if (hp && (!hc || rp.t_ns > rc.t_ns))
        return rp.tid;
    return hc ? rc.tid : lc->shm->creator_tid;
}

/* 1 + the oldest launched, incomplete call of lc of the kind (0: none), and how many are
 * launched. Checker thread, G.lk held. */
static uint64_t oldest_pending(const struct lcomm *lc, int p2p, uint64_t *launched)
{
    const struct ncg_shm_comm *s = lc->shm;
    uint64_t iss = ck_pr_load_64(p2p ? &s->p2p_seq : &s->coll_seq);
    uint64_t held = ck_pr_load_64(p2p ? &s->p2p_held : &s->coll_held);
    uint64_t done = ck_pr_load_64(p2p ? &s->p2p_done : &s->coll_done);
    *launched = held && held - 1 < iss ? held - 1 : iss;
    return done < *launched ? done + 1 : 0;
}

/* How many of lc's kinds (collective, p2p) have had the same oldest incomplete call since the
 * previous report. Checker thread, G.lk held. */
static unsigned stalled_kinds(const struct lcomm *lc)
{
    unsigned n = 0;
    uint64_t launched;
    for (int p2p = 0; lc->shm && p2p < 2; p2p++) {
        uint64_t key = oldest_pending(lc, p2p, &launched);
        n += key && key == lc->blocked_prev[p2p];
    }
    return n;
}

/* Adds the oldest launched, incomplete collective and p2p call of lc to w when it was already
 * the oldest one at the previous report (blocked for at least an interval). Under asynchronous
 * NCCL (queued) nobody blocks inside a call: then up to per_kind of the first launched calls
 * not known complete, with their streams and launch orders (the stream-order DEADLOCK,
 * waitfor.h): completion is sampled, so the calls that really wait may come a few milliseconds
 * of calls after the first ones not known complete. Checker thread, G.lk held. */
static void blocked_calls(struct lcomm *lc, struct ncg_msg_wait *w, int queued, uint64_t per_kind)
{
    static struct {
        uint64_t pc;
        char site[NCG_WIRE_SITE];
    } cache[64]; /* call sites symbolized once per address (a loop's calls share a few) */
    if (!lc->shm)
        return;
    for (int p2p = 0; p2p < 2; p2p++) {
        const struct ncg_shm_comm *s = lc->shm;
        uint64_t launched, key = oldest_pending(lc, p2p, &launched);
        uint64_t prev = lc->blocked_prev[p2p];
        lc->blocked_prev[p2p] = key;
        if (!key || key != prev)
            continue;
        uint64_t end = queued ? launched : key;
        if (end - (key - 1) > per_kind)
            end = key - 1 + per_kind;
        for (uint64_t k = key; k <= end && w->n < NCG_WIRE_MAX_WAITS; k++) {
            struct ncg_shm_record r;
            if (ncg_ring_read(s, p2p ? NCG_RING_P2P : NCG_RING_COLL, k - 1, &r) != 0)
                break;
            struct ncg_wait_ent *e = &w->w[w->n++];
            memset(e, 0, sizeof *e);
            e->comm_id = lc->id;
            e->rank = (uint32_t)lc->rank;
            e->tid = r.tid;
            e->p2p = (uint8_t)p2p;
            e->queued = (uint8_t)queued;
            e->stream = queued ? NCG_REC_STREAM(r.reserved) : 0;
            e->order = queued ? NCG_REC_ORDER(r.reserved) : 0;
            e->call = (struct ncg_call){r.seq, r.count, r.root_or_peer, r.func, r.dtype, r.redop};
            /* the WAIT site without file:line: WAITs flow whenever a call waits an interval, and
             * reading debug information (libdw) there would cost every waiting job memory and
             * CPU */
            unsigned h = (unsigned)((r.caller_pc * 0x9e3779b97f4a7c15ull) >> 58); /* 64 */
            if (cache[h].pc != r.caller_pc || !cache[h].pc) {
                cache[h].pc = r.caller_pc;
                ncg_symbolize_opt(r.caller_pc, cache[h].site, sizeof cache[h].site, 0);
            }
            memcpy(e->site, cache[h].site, sizeof e->site);
        }
    }
}

/* Periodic: REPORT (heartbeat + counts), P2P records, GOODBYEs of removed comms; local RANK
 * EXITED against a coordinator process that left. */
static void client_report(uint64_t now)
{
    static struct ncg_msg rep[MAX_LINKS], p2p, bye[MAX_LINKS], wt[MAX_LINKS];
    unsigned stalled[MAX_LINKS] = {0};
    int32_t gr = global_rank();
    ncg_completion_poll(); /* asynchronous NCCL: advance the done counters first */
    int cm = __atomic_load_n(&ncg_cmode, __ATOMIC_ACQUIRE);
    for (int i = 0; i < G.nlink; i++) {
        memset(&rep[i], 0, sizeof rep[i]);
        rep[i].type = NCG_MSG_REPORT;
        wt[i].type = NCG_MSG_WAIT;
        wt[i].u.wait.n = 0;
        memset(&bye[i], 0, sizeof bye[i]);
        bye[i].type = NCG_MSG_GOODBYE;
    }
    struct ncg_verdict *exited = NULL;
    pthread_mutex_lock(&G.lk);
    /* Queued WAIT entries share a message: each stalled comm and kind gets its part. */
    for (size_t i = 0; cm == NCG_CMODE_EVENTS && i < G.nlc; i++)
        if (G.lc[i].link >= 0 && !G.lc[i].removed)
            stalled[G.lc[i].link] += stalled_kinds(&G.lc[i]);
    for (size_t i = 0; i < G.nlc;) {
        struct lcomm *lc = &G.lc[i];
        if (lc->link < 0) {
            if (lc->removed && lc->link == -2) { /* unguarded: nobody to tell */
                G.lc[i] = G.lc[--G.nlc];
                continue;
            }
            i++; /* removed before its link was resolved: told once it is */
            continue;
        }
        struct link *l = &G.link[lc->link];
        if (lc->removed && (l->state == L_CONNECTING || l->state == L_HELLO)) {
            i++; /* removed while its link was coming up: its GOODBYE once it is up */
            continue;
        }
        if (lc->removed) {
            struct ncg_msg_goodbye *g = &bye[lc->link].u.goodbye;
            struct ncg_msg_report *rr = &rep[lc->link].u.report;
            uint8_t fl = lc->aborted ? NCG_BYE_ABORT : 0;
            /* Destroyed or aborted before any REPORT carried it (within the first interval):
             * the checker does not know this member yet, and would drop its GOODBYE; a REPORT
             * with its final count goes first (the REPORT is sent before the GOODBYE). */
            if (!lc->reported && l->state == L_UP && rr->n < NCG_WIRE_MAX_COMMS &&
                (g->n == 0 || g->flags == fl) && g->n < NCG_WIRE_MAX_COMMS) {
                rr->e[rr->n++] = (struct ncg_report_entry){.comm_id = lc->id,
                                                           .nranks = (uint32_t)lc->nranks,
                                                           .rank = (uint32_t)lc->rank,
                                                           .count = lc->final,
                                                           .global_rank = gr,
                                                           .done = lc->final,
                                                           .done_hi = lc->final};
                lc->reported = 1;
            }
            if (g->n == 0)
                g->flags = fl;
            if (l->state == L_UP && g->n < NCG_WIRE_MAX_COMMS && g->flags == fl) {
                g->comm_id[g->n] = lc->id;
                g->count[g->n++] = lc->final;
                left_own_add(lc->id, lc->final);
            } else if (l->state == L_UP) {
                i++; /* next round (full, or the other kind of goodbye) */
                continue;
            }
            G.lc[i] = G.lc[--G.nlc];
            continue;
        }
        uint64_t cnt = lc->shm ? ck_pr_load_64(&lc->shm->coll_seq) : 0;
        if (l->state != L_UP) {
            uint64_t low = lc->peer_left < lc->peer_final ? lc->peer_left : lc->peer_final;
            if (!exited && cnt > low) {
                exited = ncg_verdict_new((uint32_t)lc->nranks);
                if (exited) {
                    /* the checker's process, or members that left before it did (it knew
                     * their counts, not who they were: the SHUTDOWN carries no ranks) */
                    int host = cnt > lc->peer_final, others = cnt > lc->peer_left;
                    int32_t hg = link_in_tree(l) ? l->tr.root_grank : l->w.global_rank;
                    exited->kind = NCG_V_RANK_EXITED;
                    exited->severity = NCG_SEV_ERROR;
                    exited->comm_id = lc->id;
                    exited->slot = (int64_t)low;
                    if (lc->rank >= 0 && lc->rank < lc->nranks) /* what this side knows */
                        exited->members[lc->rank] = global_rank();
                    /* a tree's SHUTDOWN with counts is the root's, passed down */
                    if (host && others && lc->peer_left < lc->peer_final)
                        snprintf(exited->subject, sizeof exited->subject,
                                 "holding the checker (global rank %d), and others that left "
                                 "before it",
                                 hg);
                    else if (host)
                        snprintf(exited->subject, sizeof exited->subject,
                                 "holding the checker (global rank %d)", hg);
                    else
                        snprintf(exited->subject, sizeof exited->subject,
                                 "that left before the checker's process (global rank %d)", hg);
                    snprintf(exited->detail, sizeof exited->detail,
                             "%s after %" PRIu64 " calls; this rank issued %" PRIu64,
                             host && lc->peer_verdict && lc->peer_final <= lc->peer_left
                                 ? NCG_EXITED_VERDICT
                                 : "left",
                             low, cnt);
                    lc->peer_final = lc->peer_left = UINT64_MAX;
                }
            }
            i++;
            continue;
        }
        struct ncg_msg_report *r = &rep[lc->link].u.report;
        if (r->n < NCG_WIRE_MAX_COMMS) {
            uint64_t done = lc->shm ? ck_pr_load_64(&lc->shm->coll_done) : 0, hi;
            done = done < cnt ? done : cnt;
            int sampled = ncg_cev_bounds(lc->c ? &lc->c->cev[0] : NULL, done, cnt, &hi);
            r->e[r->n++] = (struct ncg_report_entry){.comm_id = lc->id,
                                                     .nranks = (uint32_t)lc->nranks,
                                                     .rank = (uint32_t)lc->rank,
                                                     .count = cnt,
                                                     .global_rank = gr,
                                                     .done = done,
                                                     .tid = driver_tid(lc, cnt),
                                                     .done_hi = hi,
                                                     .flags = sampled ? NCG_REP_SAMPLED : 0};
            lc->reported = 1;
        }
        /* WAITs: where a call's return is its completion, the calls threads are blocked in (the
         * DEADLOCK wait-for graph of threads); under asynchronous NCCL (completion from CUDA
         * events) a thread is not blocked in the calls it enqueued and a completed call looks
         * incomplete for a while, so instead the first calls queued on each stalled comm with
         * their streams and launch orders (the stream-order graph; docs/checker.md). While
         * the mode is still being probed, a call's return (found idle) is its completion, and
         * the first one that leaves work behind ends the probing (EVENTS): a call incomplete
         * at two reports in a row under PROBE has not returned, its thread is blocked in it. */
        if (wt[lc->link].u.wait.n < NCG_WIRE_MAX_WAITS - 1) {
            unsigned k = stalled[lc->link] ? stalled[lc->link] : 1;
            uint64_t per = NCG_WIRE_MAX_WAITS / k < 4 ? 4 : NCG_WIRE_MAX_WAITS / k;
            blocked_calls(lc, &wt[lc->link].u.wait, cm == NCG_CMODE_EVENTS, per);
        }
        i++;
    }
    pthread_mutex_unlock(&G.lk);
    for (int i = 0; i < G.nlink; i++) {
        if (G.link[i].state != L_UP)
            continue;
        link_send(&G.link[i], &rep[i]);
        if (bye[i].u.goodbye.n) /* after the REPORT that may introduce its comms */
            link_send(&G.link[i], &bye[i]);
        if (wt[i].u.wait.n || G.link[i].waited) /* after the REPORT: counts first */
            link_send(&G.link[i], &wt[i]);
        G.link[i].waited = wt[i].u.wait.n != 0;
    }
    /* p2p after the reports: the coordinator matches records only from registered members */
    pthread_mutex_lock(&G.lk);
    for (size_t i = 0; i < G.nlc; i++) {
        struct lcomm *lc = &G.lc[i];
        if (lc->link < 0 || lc->removed || G.link[lc->link].state != L_UP)
            continue;
        struct link *l = &G.link[lc->link];
        /* p2p records since the last report, at most NCG_WIRE_MAX_P2P per comm and interval */
        uint64_t top = lc->shm ? ck_pr_load_64(&lc->shm->p2p_seq) : 0;
        if (top > lc->p2p_next) {
            uint64_t from = lc->p2p_next;
            if (top - from > NCG_WIRE_MAX_P2P)
                from = top - NCG_WIRE_MAX_P2P;
            memset(&p2p, 0, sizeof p2p);
            p2p.type = NCG_MSG_P2P;
            p2p.u.p2p.comm_id = lc->id;
            uint64_t k;
            for (k = from; k < top; k++) {
                struct ncg_shm_record rec;
                int rc = ncg_ring_read(lc->shm, NCG_RING_P2P, k, &rec);
                if (rc == -EAGAIN)
                    break; /* still being written: next round */
                if (rc != 0)
                    continue;
                p2p.u.p2p.r[p2p.u.p2p.n++] =
                    (struct ncg_p2p_rec){rec.seq, rec.count, rec.root_or_peer, rec.func, rec.dtype};
            }
            lc->p2p_next = k;
            if (p2p.u.p2p.n)
                link_send(l, &p2p);
        }
    }
    pthread_mutex_unlock(&G.lk);
    if (exited) {
        if (!ending())
            apply_verdict(exited, -1, now);
        ncg_verdict_free(exited);
    }
}

/* At clean process exit: GOODBYE with final counts to every coordinator; SHUTDOWN (with this
 * process's final counts) to every client of ours, unless only_bye (an abort verdict waiting
 * for its exit release: the clients of our checker still need it; exit_arm says it then). */
static struct ncg_msg exit_sd; /* this process's SHUTDOWN (a tree's root sends it on leaving) */
/* Adds a comm's count to exit_sd: this process's own, one entry per comm (its lowest, when it
 * holds several ranks there), or (other) another member's. */
static void sd_add(uint64_t id, uint64_t cnt, int other)
{
    struct ncg_msg_goodbye *g = &exit_sd.u.goodbye;
    for (uint32_t j = 0; j < g->n && !other; j++)
        if (g->comm_id[j] == id) {
            g->count[j] = cnt < g->count[j] ? cnt : g->count[j];
            return;
        }
    if (g->n < NCG_WIRE_MAX_COMMS) {
        g->comm_id[g->n] = id;
        g->count[g->n++] = cnt;
    }
}
static void client_exit_messages(uint8_t flags, int only_bye)
{
    static struct ncg_msg bye[MAX_LINKS];
    memset(&exit_sd, 0, sizeof exit_sd);
    exit_sd.type = NCG_MSG_SHUTDOWN;
    exit_sd.u.goodbye.flags = flags;
    for (int i = 0; i < G.nlink; i++) {
        memset(&bye[i], 0, sizeof bye[i]);
        bye[i].type = NCG_MSG_GOODBYE;
        bye[i].u.goodbye.flags = (uint8_t)(NCG_BYE_PROCESS | flags);
    }
    pthread_mutex_lock(&G.lk);
    for (size_t i = 0; i < G.nlc; i++) {
        struct lcomm *lc = &G.lc[i];
        uint64_t cnt = lc->removed ? lc->final : lc->shm ? ck_pr_load_64(&lc->shm->coll_seq) : 0;
        if (lc->link >= 0) {
            struct ncg_msg_goodbye *g = &bye[lc->link].u.goodbye;
            if (g->n < NCG_WIRE_MAX_COMMS) {
                g->comm_id[g->n] = lc->id;
                g->count[g->n++] = cnt;
            }
        }
        sd_add(lc->id, cnt, 0);
    }
    pthread_mutex_unlock(&G.lk);
    for (unsigned k = 0; k < left_own_n && k < NCG_WIRE_MAX_COMMS; k++)
        sd_add(left_own[k].id, left_own[k].final, 0);
    /* Members that left before this process: its coordinator knew their counts, the others
     * would not learn them once it is gone. After this process's own entries: a comm's first
     * entry is its own (UINT64_MAX when it held no rank there), a later one another member's. */
    static uint64_t ids[NCG_WIRE_MAX_COMMS], low[NCG_WIRE_MAX_COMMS];
    size_t nl = srv_up() && G.srv.co        ? ncg_coord_left(G.srv.co, ids, low, NCG_WIRE_MAX_COMMS)
                : rh_up() && G.root_tree.on ? ncg_rhost_left(G.rh, ids, low, NCG_WIRE_MAX_COMMS)
                                            : 0;
    for (size_t k = 0; k < nl; k++) {
        int own = -1;
        for (uint32_t j = 0; j < exit_sd.u.goodbye.n && own < 0; j++)
            if (exit_sd.u.goodbye.comm_id[j] == ids[k])
                own = (int)j;
        if (own < 0 && exit_sd.u.goodbye.n + 2 <= NCG_WIRE_MAX_COMMS)
            sd_add(ids[k], UINT64_MAX, 0);
        else if (own < 0 || low[k] >= exit_sd.u.goodbye.count[own])
            continue;
        sd_add(ids[k], low[k], 1);
    }
    for (int i = 0; i < G.nlink; i++)
        if (G.link[i].state == L_UP)
            link_send(&G.link[i], &bye[i]);
    if (srv_up() && !only_bye)
        server_shutdown();
}

/* ---------- the thread ---------- */

/* A lost standalone checker: reconnect every second; while it stays away, a communicator of
 * this process on it whose count has not moved for the heartbeat timeout is acted upon as an
 * error verdict, CHECKER LOST, with what this process knows (its counts, its stack). */
static void checker_lost_tick(uint64_t now)
{
    uint64_t hb = (uint64_t)(ncg_cfg.heartbeat_timeout_s * 1e9);
    for (int li = 0; li < G.nlink && !ending(); li++) {
        struct link *l = &G.link[li];
        if (!l->lost_ns || l->state == L_UP)
            continue;
        if (l->state == L_DOWN && now >= l->retry_ns) {
            link_connect(l, now);
            if (l->state == L_DOWN) /* a node relay: soon, at first very soon */
                l->retry_ns = now + (!l->tr.on                          ? 1000000000ull
                                     : now - l->born_ns < 1000000000ull ? 10000000ull
                                                                        : 100000000ull);
            if (l->state == L_DOWN && l->tr.on && !l->tree_fail_ns)
                l->tree_fail_ns = now;
            if (l->state == L_DOWN && l->tr.on && !l->tree_said &&
                now - l->tree_fail_ns > 5000000000ull) {
                ncg_log("cannot reach %s for 5 s; still trying (unguarded meanwhile)", l->name);
                l->tree_said = 1;
            }
        }
        if (l->lost_acted)
            continue;
        uint64_t ids[NCG_SHM_MAX_COMMS], cnt[NCG_SHM_MAX_COMMS];
        uint32_t nr[NCG_SHM_MAX_COMMS];
        int32_t me[NCG_SHM_MAX_COMMS];
        int n = 0;
        pthread_mutex_lock(&G.lk);
        for (size_t i = 0; i < G.nlc && n < (int)NCG_SHM_MAX_COMMS; i++) {
            struct lcomm *lc = &G.lc[i];
            if (lc->link != li || lc->removed)
                continue;
            uint64_t c = lc->shm ? ck_pr_load_64(&lc->shm->coll_seq) : 0;
            if (c != lc->lost_cnt || !lc->lost_prog_ns) {
                lc->lost_cnt = c;
                lc->lost_prog_ns = now;
            } else if (hb && now - lc->lost_prog_ns >= hb) {
                ids[n] = lc->id;
                me[n] = lc->rank;
                cnt[n] = c;
                nr[n++] = (uint32_t)lc->nranks;
            }
        }
        pthread_mutex_unlock(&G.lk);
        if (!n)
            continue;
        l->lost_acted = 1;
        for (int k = 0; k < n && !ending(); k++) {
            struct ncg_verdict *v = ncg_verdict_new(nr[k]);
            if (!v)
                continue;
            v->kind = NCG_V_CHECKER_LOST;
            v->severity = NCG_SEV_ERROR;
            v->comm_id = ids[k];
            if (me[k] >= 0 && (uint32_t)me[k] < nr[k]) {
                v->members[me[k]] = global_rank();
                v->counts[me[k]] = (int64_t)cnt[k];
            }
            if (link_in_tree(l)) /* fell back from a lost node relay to the tree's root */
                snprintf(v->subject, sizeof v->subject, "%s", l->name);
            else
                snprintf(v->subject, sizeof v->subject, "the standalone checker at %s", l->name);
            snprintf(v->detail, sizeof v->detail,
                     "unreachable for %.1f s (%s), and this process issued no call on this "
                     "communicator for %g s (%" PRIu64 " so far)",
                     (double)(now - l->lost_ns) / 1e9, l->lost_why, ncg_cfg.heartbeat_timeout_s,
                     cnt[k]);
            apply_verdict(v, -1, now);
            ncg_verdict_free(v);
        }
    }
}

static void resolve_links(uint64_t now)
{
    pthread_mutex_lock(&G.lk);
    for (size_t i = 0; i < G.nlc; i++) /* removed ones too: their GOODBYE needs the link */
        if (G.lc[i].link == -1)
            G.lc[i].link = link_for(&G.lc[i], now);
    pthread_mutex_unlock(&G.lk);
}

/* Reads and handles what the checker sent; non-zero when the link went down meanwhile (by a
 * message, its end of the stream or our own shortage). */
static int link_read(int li, uint64_t now)
{
    struct link *l = &G.link[li];
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
        if (l->state == L_DOWN)
            return 1;
    }
    if (rc == -2) { /* our own shortage: say so, and no verdict from a partial view */
        ncg_log("out of memory for the side channel to the checker at %s; running unguarded",
                l->name);
        link_close(l);
        l->state = L_DOWN;
        return 1;
    }
    if (rc < 0) {
        link_lost(li, "connection lost", now);
        return 1;
    }
    return 0;
}

static void link_io(int li, short rev, uint64_t now)
{
    struct link *l = &G.link[li];
    if (l->state == L_CONNECTING) {
        int err = 0;
        socklen_t el = sizeof err;
        if (getsockopt(l->io.fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err) {
            if (!l->lost_ns)
                ncg_log("cannot reach the checker at %s: %s; running unguarded", l->name,
                        strerror(err ? err : errno));
            link_close(l);
            l->state = L_DOWN;
            l->retry_ns = now + 1000000000ull;
            return;
        }
        if (!(rev & POLLOUT))
            return;
        l->state = L_HELLO;
        struct ncg_msg h = {.type = NCG_MSG_HELLO};
        h.u.hello.token = l->token;
        h.u.hello.pid = (uint32_t)getpid();
        h.u.hello.global_rank = global_rank();
        snprintf(h.u.hello.host, sizeof h.u.hello.host, "%s", ncg_host_name());
        link_send(l, &h);
    }
    if ((rev & (POLLIN | POLLHUP | POLLERR)) && link_read(li, now) != 0)
        return;
    /* A write refused (the checker closed its end: on a Unix socket at once, EPIPE) says
     * nothing of what it sent before closing, its SHUTDOWN above all (a node relay in this very
     * thread may have closed it after this poll): read that first. */
    if (l->io.txlen && ncg_peer_flush(&l->io) != 0 && link_read(li, now) == 0)
        link_lost(li, "connection lost", now);
}

/* Bytes still queued on any live connection of ours. */
static int tx_pending(void)
{
    int n = srv_up() ? ncg_server_pending_tx(&G.srv) : 0;
    if (rh_up())
        n += ncg_rhost_pending_tx(G.rh);
    for (int i = 0; i < G.nlink; i++)
        n += G.link[i].state == L_UP && G.link[i].io.txlen > 0;
    return n;
}

static void *thread_main(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "ncclguard"); /* so `top -H` (and the fault-injection tests) can tell it */
    enum { MAXFD = 4096 };
    static struct pollfd pf[MAXFD];
    static int map[MAXFD];
    uint64_t interval = (uint64_t)(ncg_cfg.interval_ms ? ncg_cfg.interval_ms : 100) * 1000000ull;
    uint64_t hb = (uint64_t)(ncg_cfg.heartbeat_timeout_s * 1e9);
    uint64_t exit_deadline = 0, exit_sent_ns = 0, root_left_ns = 0;
    int exit_sent = 0;
    uint64_t last_loop = 0;
    for (;;) {
        uint64_t now = ncg_chan_now_ns();
        if (last_loop && hb && now - last_loop > hb / 2)
            for (int i = 0; i < G.nlink;
                 i++) /* we were suspended, not the checker: restart its clock */
                G.link[i].last_rx_ns = now;
        last_loop = now;
        pthread_mutex_lock(&G.lk);
        int exiting = G.exiting;
        pthread_mutex_unlock(&G.lk);
        if (exiting && !exit_deadline)
            exit_deadline = now + 600000000ull;
        if (exiting && !exit_sent) {
            /* A link still connecting gets a moment to come up: a goodbye needs a registration. */
            int connecting = 0;
            for (int i = 0; i < G.nlink; i++)
                connecting += G.link[i].state == L_CONNECTING || G.link[i].state == L_HELLO;
            if (!connecting || now + 200000000ull >= exit_deadline) {
                client_report(now); /* registers comms not reported yet, so the goodbye counts */
                /* Other processes' exit releases held here: this process's SHUTDOWN and its
                 * exit wait for them (their own deadlines bound it; so does hold_until_ns). */
                int hold = hosted_waiting();
                client_exit_messages(0, hold);
                if (hold) {
                    G.sd_deferred = 1;
                    G.hold_until_ns = now + release_bound_ns();
                    __atomic_store_n(&G.holding, 1, __ATOMIC_RELEASE);
                }
                exit_sent = 1;
                exit_sent_ns = now;
            }
        }
        /* An exit release this process holds for others is over (or its bound passed): its
         * SHUTDOWN goes now, and its own exit waits a moment for it to be read. */
        int hold = G.hold_until_ns && now < G.hold_until_ns && hosted_waiting();
        if (G.sd_deferred && !G.release_until_ns && !hold) {
            server_shutdown();
            G.sd_deferred = 0;
            __atomic_store_n(&G.holding, 0, __ATOMIC_RELEASE);
            if (G.abort_at_ns)
                G.abort_at_ns = now + 1000000000ull;
            if (exiting && exit_deadline < now + 200000000ull)
                exit_deadline = now + 200000000ull;
        }
        /* A relay here leaves once its parent heard of this process's goodbyes (an RSTAT a
         * little over an interval later): below it, the node's processes reattach. The root
         * waits for its children's next figures (a RANK EXITED of its own ranks is judged
         * there; after it, each client judges from the counts the root leaves with). */
        if (exit_sent && rh_up() && !(hold && G.root_tree.on) &&
            now >= exit_sent_ns + (G.root_tree.on ? 3 * interval : interval + interval / 2))
            ncg_rhost_leave(G.rh, &exit_sd);
        resolve_links(now);
        if (!exiting)
            checker_lost_tick(now);
        if (!exiting && now - G.last_report_ns >= interval) {
            G.last_report_ns = now;
            client_report(now);
            struct ncg_shm_header *h = ncg_seg_get();
            if (h)
                ck_pr_store_64(&h->heartbeat_ns, ncg_now_ns());
            ncg_dump_poll(); /* `ncclguard dump` (dump.h) */
        }
        for (int i = 0; i < G.nlink; i++) {
            struct link *l = &G.link[i];
            if (l->state == L_CONNECTING && now - l->start_ns > 10000000000ull)
                link_lost(i, "connect timed out", now);
            else if ((l->state == L_UP || l->state == L_HELLO) && hb && now - l->last_rx_ns > hb &&
                     !exiting)
                link_lost(i, "the checker went silent (frozen or unreachable)", now);
        }
        if (G.release_until_ns && now >= G.release_until_ns) {
            ncg_debug(1, "no exit release from the checker within %g s: exiting",
                      (double)release_bound_ns() / 1e9);
            exit_arm(now);
        }
        if (G.abort_at_ns) {
            int pending =
                srv_up() ? ncg_server_pending_tx(&G.srv) + ncg_server_open_conns(&G.srv) : 0;
            if (rh_up()) /* the verdict passed on to the node's processes first */
                pending += ncg_rhost_pending_tx(G.rh) + ncg_rhost_open_conns(G.rh);
            /* Our own link to our own listener stays open: exit once only it is left. A tree's
             * root first says it leaves, with its counts, down the tree (late members got the
             * verdict until then), and waits a moment for that to be read. */
            /* (the root waits two intervals at least: the processes of a node whose relay died
             * meanwhile come to it directly, and get the verdict there) */
            int grace =
                rh_up() && G.root_tree.on && now + 1000000000ull < G.abort_at_ns + 2 * interval;
            /* (and neither leaves nor exits while it holds others' exit releases) */
            int held = hold || G.sd_deferred;
            if (!held && (now >= G.abort_at_ns || (pending <= 1 && !grace)) && rh_up() &&
                G.root_tree.on && !root_left_ns) {
                ncg_rhost_leave(G.rh, &exit_sd);
                root_left_ns = now;
            } else if (!held && (now >= G.abort_at_ns + 300000000ull || pending <= 1)) {
                ncg_action_exit();
            }
        }
        if (exiting && !__atomic_load_n(&G.aborting, __ATOMIC_ACQUIRE) && !G.sd_deferred &&
            !(hold && rh_up()) &&
            (now >= exit_deadline || (exit_sent && !tx_pending() && !rh_up()))) {
            for (int i = 0; i < G.nlink; i++) {
                struct link *l = &G.link[i];
                if (l->up_ns)
                    ncg_debug(1,
                              "side channel to %s: sent %" PRIu64 " B, received %" PRIu64
                              " B in %.2f s",
                              l->name, l->ntx + l->io.ntx, l->nrx + l->io.nrx,
                              (double)(now - l->up_ns) / 1e9);
            }
            pthread_mutex_lock(&G.lk);
            G.exit_done = 1;
            pthread_cond_broadcast(&G.cv);
            pthread_mutex_unlock(&G.lk);
            return NULL;
        }
        int n = 0;
        pf[n] = (struct pollfd){G.wake[0], POLLIN, 0};
        map[n++] = -1000;
        int srv_first = n, nsrv = 0;
        if (srv_up()) {
            nsrv = ncg_server_pollfds(&G.srv, pf + n, map + n, MAXFD - n - MAX_LINKS);
            n += nsrv;
        }
        int rh_first = n, nrh = 0;
        if (rh_up()) {
            nrh = ncg_rhost_pollfds(G.rh, pf + n, MAXFD - n - MAX_LINKS);
            n += nrh;
        }
        int link_first = n;
        for (int i = 0; i < G.nlink; i++)
            if (G.link[i].state >= L_CONNECTING && G.link[i].state <= L_UP &&
                G.link[i].io.fd >= 0) {
                short ev = POLLIN;
                if (G.link[i].state == L_CONNECTING || G.link[i].io.txlen)
                    ev |= POLLOUT;
                pf[n] = (struct pollfd){G.link[i].io.fd, ev, 0};
                map[n++] = i;
            }
        uint64_t next = G.last_report_ns + interval;
        int timeout = next > now ? (int)((next - now) / 1000000ull) + 1 : 0;
        if ((srv_up() || rh_up()) && timeout > (int)ncg_cfg.interval_ms / 2)
            timeout = (int)ncg_cfg.interval_ms / 2 + 1;
        for (int i = 0; i < G.nlink; i++) /* a link to retry soon (a node relay's) */
            if (G.link[i].state == L_DOWN && G.link[i].lost_ns && G.link[i].retry_ns > now &&
                G.link[i].retry_ns - now < (uint64_t)timeout * 1000000ull)
                timeout = (int)((G.link[i].retry_ns - now) / 1000000ull) + 1;
        if (G.abort_at_ns || G.release_until_ns || exiting)
            timeout = 10;
        if (srv_up() && ncg_server_busy(&G.srv))
            timeout = 0; /* messages left from a bounded round */
        int rc = poll(pf, (nfds_t)n, timeout);
        if (rc < 0 && errno != EINTR)
            usleep(1000);
        now = ncg_chan_now_ns();
        if (rc > 0 && (pf[0].revents & POLLIN)) {
            char drain[64];
            while (read(G.wake[0], drain, sizeof drain) > 0) {
            }
        }
        if (srv_up()) {
            ncg_server_handle(&G.srv, pf + srv_first, map + srv_first, rc > 0 ? nsrv : 0, now);
            if (G.srv.failed)
                ncg_log("the checker in this process ran out of memory and stopped; this job runs "
                        "unguarded");
        }
        if (rh_up())
            ncg_rhost_handle(G.rh, pf + rh_first, rc > 0 ? nrh : 0, now);
        for (int k = link_first; k < n; k++)
            if (rc > 0 && pf[k].revents)
                link_io(map[k], pf[k].revents, now);
            else if (G.link[map[k]].io.txlen && G.link[map[k]].state >= L_HELLO)
                link_io(map[k], 0, now);
    }
}

static void at_exit(void)
{
    pthread_mutex_lock(&G.lk);
    if (G.started && G.pid == getpid() && !G.exit_done) {
        G.exiting = 1;
        wake_thread();
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 800000000; /* the thread gives up at 600 ms */
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        int extended = 0;
        while (!G.exit_done)
            if (pthread_cond_timedwait(&G.cv, &G.lk, &ts) == ETIMEDOUT) {
                if (extended || !(__atomic_load_n(&G.aborting, __ATOMIC_ACQUIRE) ||
                                  __atomic_load_n(&G.holding, __ATOMIC_ACQUIRE)))
                    break;
                /* an abort verdict is under way: its _exit comes within ~1 s of its release,
                 * itself bounded by exit_wait + 2 s, then by the releases this process holds
                 * for others (the same again) */
                ts.tv_sec += 5 + 2 * (time_t)(release_bound_ns() / 1000000000ull);
                extended = 1;
            }
    }
    /* Past every bound with an abort verdict under way: its exit status, never the app's. */
    int abort_now = !G.exit_done && __atomic_load_n(&G.aborting, __ATOMIC_ACQUIRE) && G.started &&
                    G.pid == getpid();
    pthread_mutex_unlock(&G.lk);
    if (abort_now)
        ncg_action_exit();
}

/* Caller holds G.lk. */
static int start_thread_locked(void)
{
    if (G.started && G.pid == getpid())
        return 0;
    if (pipe2(G.wake, O_CLOEXEC | O_NONBLOCK) != 0)
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
            rc = pthread_create(&G.th, &at, thread_main, NULL);
        pthread_attr_destroy(&at);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        close(G.wake[0]);
        close(G.wake[1]);
        G.wake[0] = G.wake[1] = -1;
        return -rc;
    }
    pthread_detach(G.th);
    G.started = 1;
    G.pid = getpid();
    static int registered;
    if (!registered) {
        registered = 1;
        atexit(at_exit);
    }
    return 0;
}

/* Tree mode for the ids this process makes: NCCLGUARD_TREE, and the launcher's node figures. */
static int tree_wanted(uint32_t *node, uint32_t *nnodes)
{
    if (ncg_cfg.tree == NCG_TREE_OFF || ncg_tree_node(launch_ranks(), node, nnodes) != 0)
        return 0;
    if (ncg_cfg.tree == NCG_TREE_ON)
        return 1;
    if (launch_ranks()->world < NCG_TREE_AUTO_RANKS)
        return 0;
    if (ncg_cfg.http[0]) { /* the endpoint is the flat checker's (docs/checker.md) */
        NCG_LOG_ONCE("NCCLGUARD_HTTP: the flat checker for %d ranks (the relay tree does not "
                     "serve the status endpoint yet)",
                     launch_ranks()->world);
        return 0;
    }
    return 1;
}

/* Caller holds G.lk: this process's ids get a relay tree's root (its relay). 0, or -errno
 * (the caller falls back to the flat coordinator). */
static int root_start_locked(uint32_t node, uint32_t nnodes, uint64_t tok)
{
    struct ncg_rhost_params p = rhost_params(tok, node, node, nnodes, ncg_cfg.fanout);
    char err[160];
    struct ncg_rhost *h;
    int zero = 0;
    if (!__atomic_compare_exchange_n(&G.rh_claim, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return -EBUSY; /* this process is another tree's node relay: the flat checker */
    int rc = ncg_rhost_start(&h, &p, err, sizeof err);
    if (rc != 0) {
        __atomic_store_n(&G.rh_claim, 0, __ATOMIC_RELEASE);
        ncg_log("cannot start the relay tree's root (%s); using the flat checker", err);
        return rc;
    }
    G.rh = h;
    G.port = ncg_rhost_port(h);
    G.token = tok;
    G.root_tree.on = 1;
    G.root_tree.root_node = node;
    G.root_tree.nnodes = nnodes;
    G.root_tree.fanout = ncg_cfg.fanout;
    if (ncg_cfg.http[0])
        ncg_log("NCCLGUARD_HTTP: not served in the relay tree yet (NCCLGUARD_TREE=off for the "
                "status endpoint)");
    ncg_log("checking through a relay tree: %u nodes of %d ranks, fan-out %u; not yet in this "
            "mode: the status endpoint (NCCLGUARD_TREE=off: the flat checker)",
            nnodes, launch_ranks()->local_world, ncg_cfg.fanout);
    __atomic_store_n(&G.have_rh, 1, __ATOMIC_RELEASE);
    return 0;
}

int ncg_channel_listen(uint16_t *port, uint64_t *token)
{
    int rc = 0;
    pthread_mutex_lock(&G.lk);
    uint32_t node, nnodes;
    if (G.root_tree.on) /* this process's earlier ids' tree */
        goto started;
    if (!G.have_srv && tree_wanted(&node, &nnodes)) {
        uint64_t tok = 0;
        while (tok == 0)
            if (getrandom(&tok, sizeof tok, 0) != sizeof tok)
                tok = (uint64_t)ncg_chan_now_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
        if (root_start_locked(node, nnodes, tok) == 0)
            goto started;
    }
    if (__atomic_load_n(&G.srv.failed, __ATOMIC_ACQUIRE)) {
        rc = -ENOMEM; /* it stopped: ids get no tail, their ranks run unguarded */
        goto out;
    }
    if (!G.have_srv) {
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
                tok = (uint64_t)ncg_chan_now_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
        struct ncg_coord_params cp;
        ncg_coord_params_init(&cp, &ncg_cfg, tok, 1, global_rank());
        struct ncg_coord_ops ops = {ncg_server_send, ncg_server_drop, &G.srv, NULL};
        G.srv.co = ncg_coord_new(&cp, &ops);
        if (!G.srv.co) {
            close(fd);
            rc = -ENOMEM;
            goto out;
        }
        G.srv.lfd = fd;
        G.srv.interval_ms = cp.interval_ms;
        G.port = p;
        G.token = tok;
        ncg_http_embedded_start(&G.srv, tok, ncg_host_name(), (uint32_t)getpid(), cp.global_rank);
        /* Publish after the fields above: the thread reads have_srv without the lock. */
        __atomic_store_n(&G.have_srv, 1, __ATOMIC_RELEASE);
    }
started:
    rc = start_thread_locked();
    *port = G.port;
    *token = G.token;
out:
    pthread_mutex_unlock(&G.lk);
    if (rc == 0)
        wake_thread();
    return rc;
}

/* Writes {tag, version, port, token} into the id's tail (called by checker.c), and this
 * process's relay tree when the token is its root's. */
void ncg_channel_write_tail(unsigned char *uid, uint16_t port, uint64_t token)
{
    struct ncg_idtail t = {.port = port, .token = token};
    pthread_mutex_lock(&G.lk);
    if (G.root_tree.on && G.token == token) {
        t.tree = 1;
        t.root_node = G.root_tree.root_node;
        t.nnodes = G.root_tree.nnodes;
        t.fanout = (uint8_t)G.root_tree.fanout;
        t.root_grank = global_rank();
    }
    pthread_mutex_unlock(&G.lk);
    ncg_idtail_encode(uid, &t);
}

void ncg_channel_add(struct ncg_comm *c)
{
    pthread_mutex_lock(&G.lk);
    if (G.nlc == G.caplc) {
        size_t n = G.caplc ? G.caplc * 2 : 16;
        struct lcomm *nl = realloc(G.lc, sizeof *nl * n);
        if (!nl)
            goto out;
        G.lc = nl;
        G.caplc = n;
    }
    struct lcomm *lc = &G.lc[G.nlc++];
    memset(lc, 0, sizeof *lc);
    lc->c = c;
    lc->shm = c->shm;
    lc->id = c->id;
    lc->rank = c->rank;
    lc->nranks = c->nranks;
    lc->link = c->shm ? -1 : -2; /* not recorded: nothing to compare */
    lc->peer_final = lc->peer_left = UINT64_MAX;
    memcpy(lc->uid, c->root_uid.internal, sizeof lc->uid);
    if (start_thread_locked() != 0)
        NCG_LOG_ONCE("cannot start the checker thread; running unguarded");
out:
    pthread_mutex_unlock(&G.lk);
    wake_thread();
}

void ncg_channel_remove(struct ncg_comm *c)
{
    pthread_mutex_lock(&G.lk);
    for (size_t i = 0; i < G.nlc; i++)
        if (G.lc[i].c == c && !G.lc[i].removed) {
            G.lc[i].final = c->shm ? ck_pr_load_64(&c->shm->coll_seq) : 0;
            G.lc[i].removed = 1;
            G.lc[i].aborted = (uint8_t)c->aborted;
            G.lc[i].c = NULL;
            G.lc[i].shm = NULL;
        }
    pthread_mutex_unlock(&G.lk);
}

void ncg_channel_fork_child(void)
{
    /* The thread does not exist here; the sockets are the parent's: close our copies so the
     * parent's death still reads as EOF at the coordinator. */
    for (int i = 0; i < G.nlink; i++)
        if (G.link[i].io.fd >= 0)
            close(G.link[i].io.fd);
    if (G.have_srv) {
        if (G.srv.lfd >= 0)
            close(G.srv.lfd);
        for (int i = 0; i < G.srv.npc; i++)
            if (G.srv.pc[i].fd >= 0)
                close(G.srv.pc[i].fd);
        if (G.srv.http)
            ncg_http_fork_child(G.srv.http);
    }
    if (G.have_rh)
        ncg_rhost_fork_child(G.rh);
    if (G.wake[0] >= 0)
        close(G.wake[0]);
    if (G.wake[1] >= 0)
        close(G.wake[1]);
    /* Forget everything; the memory is the parent's copy, leaked on purpose (no locks here). */
    memset(&G, 0, sizeof G);
    G.lk = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    G.cv = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    G.wake[0] = G.wake[1] = -1;
    G.srv.lfd = -1;
}

/* Side-channel bytes this process's client links queued so far (bench). */

uint64_t ncg_channel_tx_bytes(void)
{
    return G.tx_bytes;
}
