/* The checker's read-only status endpoint: a minimal HTTP/1.1 responder (GET/HEAD of /status,
 * /metrics, /healthz) on non-blocking sockets, driven from the coordinator's own poll loop
 * (channel.c's server): bounded request size, per-connection deadlines, a connection cap,
 * one request per connection. The bearer token, when the job has one, guards every path. */
#ifndef NCG_HTTP_H
#define NCG_HTTP_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#define NCG_HTTP_MAX_CONNS 16                   /* concurrent; more are answered 503 and closed */
#define NCG_HTTP_HEAD_TIMEOUT_NS 5000000000ull  /* the request head must arrive within 5 s */
#define NCG_HTTP_LIFE_TIMEOUT_NS 15000000000ull /* a connection lives at most 15 s */

struct ncg_http;
struct ncg_buf;

/* What a render may answer besides 0 and -ENOMEM: not ready yet (rows gathered elsewhere): the
 * connection is kept and rendered again on later ncg_http_handle calls, until ready or
 * NCG_HTTP_RENDER_TIMEOUT_NS after the request (then 503). */
#define NCG_HTTP_NOT_READY 1
#define NCG_HTTP_RENDER_TIMEOUT_NS 3000000000ull

/* /status?ranks=LO-HI&comm=ID (either, both or none), as the render receives it. */
struct ncg_http_query {
    uint8_t has_ranks, has_comm;
    uint32_t lo, hi; /* comm ranks, inclusive */
    uint64_t comm;
};

/* Where the answers come from: a relay's renderers (status_tree.h; the root's for a flat job).
 * Called in ncg_http_handle's thread; append to out and return 0, -ENOMEM or NCG_HTTP_NOT_READY.
 * time_unix: the wall clock. */
struct ncg_http_source {
    int (*status)(void *arg, const struct ncg_http_query *q, uint64_t now_ns, double time_unix,
                  struct ncg_buf *out);
    int (*metrics)(void *arg, uint64_t now_ns, struct ncg_buf *out);
    void *arg;
    uint8_t status_query; /* 1: /status takes ?ranks= and ?comm= (else a query is ignored) */
};

/* Parses a query string ("ranks=4-7&comm=00ab..."; "ranks=5" is 5-5; comm: up to 16 hex
 * digits). 0, or -EINVAL with one line in err (unknown key, bad number, LO > HI). Pure. */
int ncg_http_query_parse(const char *qs, struct ncg_http_query *q, char *err, size_t errlen);

struct ncg_http_stats {
    uint64_t accepted, requests, refused; /* refused: over the cap */
    uint64_t status[6];                   /* answers by class: [2] 2xx, [4] 4xx, [5] 5xx */
    uint64_t timeouts;                    /* connections closed at a deadline */
};

/* Listens on spec ("HOST:PORT", "[V6]:PORT"; port 0 picks a free one) for the source src
 * (copied; its arg the caller keeps alive and serializes with ncg_http_handle). token 0: no token
 * asked for; else a request must carry "Authorization: Bearer <T>" where T is the token as 16
 * lowercase hex digits, or a string whose ncg_token_hash is the token (`coord --token T`).
 * Returns NULL with err filled. The coordinator's thread (or before it runs); allocates. */
struct ncg_http *ncg_http_new(const char *spec, uint64_t token, const struct ncg_http_source *src,
                              char *err, size_t errlen);
void ncg_http_free(struct ncg_http *h); /* closes everything */

/* "HOST:PORT" as bound (the port resolved), and a URL a client elsewhere can use (the host
 * name when bound to a wildcard address). Pure accessors. */
const char *ncg_http_address(const struct ncg_http *h);
const char *ncg_http_url(const struct ncg_http *h);

/* Poll integration: fill up to max entries (listener and connections) and remember them;
 * then hand back the same entries after poll (n = 0 after a timeout: deadlines only). The
 * coordinator's thread; never blocks; allocates response buffers. */
int ncg_http_pollfds(struct ncg_http *h, struct pollfd *pf, int max);
void ncg_http_handle(struct ncg_http *h, const struct pollfd *pf, int n, uint64_t now_ns);
void ncg_http_get_stats(const struct ncg_http *h, struct ncg_http_stats *st);

/* Writes DIR/ncclguard-job.<host>.<pid>.json (mode 0600, atomically) saying where the job's
 * endpoint listens and its token, for `ncclguard status --job FILE` and scrapers; role
 * ("checker", "root", "relay") and node (-1: none) say which part of the job serves it. The
 * checker's thread; blocks on the file system; 0 or -errno with err filled. */
int ncg_http_write_job_file(const struct ncg_http *h, const char *dir, const char *host,
                            uint32_t pid, int32_t global_rank, const char *role, int32_t node,
                            char *path, size_t pathlen, char *err, size_t errlen);

/* In a fork()ed child: close the inherited sockets, touch nothing else (no free, no locks). */
void ncg_http_fork_child(struct ncg_http *h);

/* The same in the relay tree (docs/cli.md, "The endpoint in the relay tree"): the root (rank
 * 0's process) and every node relay serve their relay's endpoint (ncg_rhost_http_start) and
 * write a job file saying their role and node; on failure (another relay on this host holds
 * a fixed port) one "ncclguard:" line and no endpoint here. The checker thread, or under the
 * agent's lock before it polls h; binds, writes a file. (http_job.c) */
struct ncg_rhost;
void ncg_http_tree_start(struct ncg_rhost *h, uint32_t node, int root, int32_t global_rank);

/* The token as a bearer string: 16 lowercase hex digits ("" for 0). Pure. */
void ncg_http_token_hex(uint64_t token, char out[17]);

#endif
