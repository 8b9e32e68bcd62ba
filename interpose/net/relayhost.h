/* The relay tree's host inside a guarded process (docs/checker.md, "the relay tree"): runs a
 * relay (relay.h) in the checker thread with its sockets: an abstract Unix socket for the
 * processes of its node (named from the tree's token and the node), a TCP listener for child
 * relays, the link to its parent found through the root's directory (RWHERE / RHERE), and at
 * the root that directory. The node's first process to bind the name is its relay. */
#ifndef NCG_RELAYHOST_H
#define NCG_RELAYHOST_H

#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>
#include "relay.h"

struct ncg_rhost_params {
    /* The relay's settings (ncg_relay_params_of) with its token, node (this relay's) and
     * global_rank (of this process, -1: unknown; in WELCOME to the node's processes); what
     * the host knows itself (root, pid, host, embedded, client_verdicts, has_global_rank)
     * ncg_rhost_start sets. */
    struct ncg_relay_params relay;
    uint32_t root_node; /* the root's node (relay.node == root_node: this is the root) */
    uint32_t nnodes, fanout;
    struct sockaddr_storage root_addr; /* below the root: where the root listens (TCP) */
    socklen_t root_alen;
    /* The standalone checker (`ncclguard coord`, ncg_rhost_serve): the root of a tree of one
     * node outside the job, on TCP listen_host:listen_port only (no node socket), its WELCOME
     * not embedded, every event a line through event. */
    uint8_t standalone;
    char listen_host[256]; /* "" : all interfaces */
    int listen_port;       /* 0: any */
    void (*event)(void *arg, const char *line);
    void *event_arg;
};

struct ncg_rhost;

/* A relay host's parameters from a parsed configuration (timeouts, thresholds, SLOW) for the
 * relay of node in the tree rooted at root_node (nnodes nodes, fanout); the one place a relay
 * gets its settings (in a job from ncg_cfg, `ncclguard coord` from its environment). Pure. */
struct ncg_config;
struct ncg_rhost_params ncg_rhost_params_of(const struct ncg_config *cfg, uint64_t token,
                                            uint32_t node, uint32_t root_node, uint32_t nnodes,
                                            uint32_t fanout, int32_t global_rank);

/* Binds the node's Unix name and a TCP listener (all interfaces, any port) and makes the
 * relay. 0 with *out set; -EADDRINUSE when another process is the node's relay already; other
 * negative errno with err filled. The checker thread; allocates. */
int ncg_rhost_start(struct ncg_rhost **out, const struct ncg_rhost_params *p, char *err,
                    size_t errlen);
void ncg_rhost_free(struct ncg_rhost *h);
/* The node relay's Unix address for a tree (abstract: nothing on disk; the name is a hash of
 * the token, which it does not reveal). Pure. */
void ncg_rhost_unix_addr(uint64_t token, uint32_t node, struct sockaddr_storage *ss,
                         socklen_t *len);
uint16_t ncg_rhost_port(const struct ncg_rhost *h); /* the TCP listener's port */
/* The relay tree's parent of node, the tree rooted at root (ncg_relay_parent, rotated). Pure. */
uint32_t ncg_rhost_parent(uint32_t node, uint32_t root, uint32_t nnodes, uint32_t fanout);

/* Fills pf with the host's sockets (at most max); returns how many. The checker thread. */
int ncg_rhost_pollfds(struct ncg_rhost *h, struct pollfd *pf, int max);
/* Handles what poll reported on those n entries (n = 0 after a timeout), ticks the relay,
 * flushes. Never blocks. */
void ncg_rhost_handle(struct ncg_rhost *h, const struct pollfd *pf, int n, uint64_t now_ns);
int ncg_rhost_pending_tx(const struct ncg_rhost *h); /* connections with unsent bytes */
/* Its relay's exit releases still waiting for DONEs (ncg_relay_releases_waiting). */
int ncg_rhost_releases_waiting(const struct ncg_rhost *h);
int ncg_rhost_open_conns(const struct ncg_rhost *h); /* child connections open */
/* The process exits cleanly: SHUTDOWN to every child (below the root NCG_BYE_RELAY: they
 * reattach; at the root sd, this process's final counts, passed down the tree: the checking
 * ends), listeners closed; keep calling handle to flush. */
struct ncg_msg;
void ncg_rhost_leave(struct ncg_rhost *h, const struct ncg_msg *sd);
/* ncg_relay_left of the host's relay (the root's: for its SHUTDOWN). The checker thread. */
struct ncg_relay_left_ent;
size_t ncg_rhost_left(const struct ncg_rhost *h, struct ncg_relay_left_ent *out, size_t cap);
/* The root's stay at its process's clean exit (agent/exit.c): other processes connected here
 * that hold active ranks and have not said their last goodbye (procs), connected without one
 * (unreg), the most ranks of a communicator without a verdict never registered (unknown), our
 * own goodbye not read yet (self_pending), and when the newest connection came (newest_ns).
 * Child relays with active ranks beneath count as procs. The checker thread; allocates a
 * scratch array (0, or -ENOMEM). */
struct ncg_host_stay {
    int procs, unreg, unknown, self_pending;
    uint64_t newest_ns;
};
int ncg_rhost_stay(struct ncg_rhost *h, uint32_t self_pid, uint64_t now, struct ncg_host_stay *st);
/* 1 once the host has stopped (left, out of memory, or the root was lost): nothing to poll. */
int ncg_rhost_stopped(const struct ncg_rhost *h);
/* The status endpoint of this relay (status_tree.h) on spec ("HOST:PORT", port 0: any),
 * guarded by the tree's token, served from the host's poll loop from now on. Returns it (the
 * host owns and frees it), or NULL with err filled (one endpoint per host: a second call
 * fails). The checker thread, before the loop polls h; binds, allocates. */
struct ncg_http;
struct ncg_http *ncg_rhost_http_start(struct ncg_rhost *h, const char *spec, char *err,
                                      size_t errlen);
/* The standalone checker (`ncclguard coord`, serve.c): a root of one node listening on
 * listen_host:port (NULL or "": all interfaces; port 0: any, printed), token_or_null as
 * NCCLGUARD_TOKEN (hashed; NULL: none required), the status endpoint on http_spec (NULL: none),
 * the settings from the environment as in the ranks, until *stop: then SHUTDOWN to every
 * client. Blocks (poll) in the calling thread; 0, or -1 with err filled (cannot listen, out of
 * memory). */
int ncg_rhost_serve(const char *listen_host, int port, const char *token_or_null,
                    const char *http_spec, volatile int *stop, char *err, size_t errlen);
/* After fork, in the child: closes the parent's sockets; the memory is leaked on purpose. */
void ncg_rhost_fork_child(struct ncg_rhost *h);

#endif
