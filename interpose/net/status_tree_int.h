/* Between the two halves of the relay tree's endpoint (status_tree.h): the snapshot of a
 * relay's view that status_tree.c takes (connections, each comm's aggregates, its rows) and
 * status_tree_render.c walks to write /status and /metrics. Private to those two files. */
#ifndef NCG_STATUS_TREE_INT_H
#define NCG_STATUS_TREE_INT_H

#include <stddef.h>
#include <stdint.h>
#include "relay.h"
#include "status_tree.h"

struct ncg_http_query;

/* Each view as the relay gave it, its borrowed pointers cleared: what they point to is copied
 * alongside (valid during the view callback only). */
struct ncg_tree_conn {
    struct ncg_relay_conn_view v; /* host: NULL */
    char host[64];
};

struct ncg_tree_row {
    struct ncg_relay_rank_view v; /* host: NULL */
    char host[64];
    double rate, age; /* calls per second; seconds since its count grew (-1: not known) */
    uint8_t unknown;  /* a gathered row whose figures the gather did not reach */
};

struct ncg_tree_comm {
    struct ncg_relay_comm_view v; /* verdict, here, sg_host: NULL */
    size_t r0, nrows;             /* its rows in snap.row */
    int vkind, vsev;
    int64_t vslot;
    char vtext[1024], vsubject[NCG_WIRE_STR];
    uint32_t vncalls; /* the verdict's distinct calls (a MISMATCH's), with their ranks */
    struct ncg_vcall vcalls[NCG_WIRE_MAX_CALLS];
    char sg_host[64]; /* v.sg_host's copy */
};

struct ncg_tree_snap {
    struct ncg_tree_src *t;
    const struct ncg_http_query *q;
    uint64_t now;
    struct ncg_tree_conn *c;
    size_t nc, capc;
    struct ncg_tree_comm *cm;
    size_t ncm, capcm;
    struct ncg_tree_row *row;
    size_t nrow, caprow;
    int oom;
    int gather;  /* rows may come from the figures gather (ncg_tree_snap_take) */
    int pending; /* a figures gather was asked for: render again once it is in */
};

/* Takes the snapshot of t's relay at now into s, the comms and rows q asks for (NULL: all).
 * gather: rows may come from the root's figures gather (/status; never /metrics, which stays
 * O(comms + children + own ranks)). 0 (free s with ncg_tree_snap_free), or -ENOMEM or
 * NCG_HTTP_NOT_READY (a gather was started or is in flight: render again later), s freed
 * already. The relay's thread; never blocks; allocates. */
int ncg_tree_snap_take(struct ncg_tree_src *t, const struct ncg_http_query *q, uint64_t now,
                       int gather, struct ncg_tree_snap *s);
void ncg_tree_snap_free(struct ncg_tree_snap *s);

#endif
