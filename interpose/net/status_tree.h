/* The status endpoint served by the relay tree (docs/cli.md, "The endpoint in the relay
 * tree"): /status in the flat checker's format (ncclguard-job-status) and /metrics, rendered
 * from a relay's read-only view (relay.h's ncg_relay_view). At the root: the job's aggregates
 * per communicator, the relays, and rows of any rank range (at most 4,096) from the figures
 * gather (relay.h); at a node relay: its subtree's aggregates and its own ranks' rows and
 * per-rank families. /metrics: O(comms + direct children + own ranks) per render, never
 * O(ranks); the root's /status: that plus the rows asked for. */
#ifndef NCG_STATUS_TREE_H
#define NCG_STATUS_TREE_H

#include <stddef.h>
#include <stdint.h>
#include "buf.h"

struct ncg_relay;
struct ncg_http_query;
struct ncg_http_source;
struct ncg_tree_rate; /* per-rank calls-per-second windows (status_tree.c) */

/* The renderers' state: what the relay does not know of itself, and the rate windows. */
struct ncg_tree_src {
    struct ncg_relay *r;
    uint32_t node, nnodes, fanout;
    uint32_t children; /* child relays the tree's shape gives this node */
    struct ncg_tree_rate *rt;
    size_t nrt, caprt;
};

/* Fills t for relay r of node (root: node == root_node) in a tree of nnodes and fanout, and
 * src for the endpoint (http.h). The caller keeps t alive while the endpoint runs and frees
 * it with ncg_tree_src_free. The relay's thread; allocates nothing. */
void ncg_tree_src_init(struct ncg_tree_src *t, struct ncg_relay *r, uint32_t node,
                       uint32_t root_node, uint32_t nnodes, uint32_t fanout,
                       struct ncg_http_source *src);
void ncg_tree_src_free(struct ncg_tree_src *t);

/* Append the documents to out (0 or -ENOMEM). q: a query (NULL: none): comm= keeps one
 * communicator, ranks= the rows in that comm-rank range. The root's /status may instead start
 * a figures gather and return NCG_HTTP_NOT_READY (http.h: rendered again later). The relay's
 * thread; never blocks; allocates. */
int ncg_tree_status_render(struct ncg_tree_src *t, const struct ncg_http_query *q, uint64_t now_ns,
                           double time_unix, struct ncg_buf *out);
int ncg_tree_metrics_render(struct ncg_tree_src *t, uint64_t now_ns, struct ncg_buf *out);

#endif
