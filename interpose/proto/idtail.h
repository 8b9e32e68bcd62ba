/* The id's tail: the bytes ncclguard appends to an ncclUniqueId after NCCL's 40 used ones, so
 * that every rank finds the checker (and, for a relay tree, its layout) from the id it got.
 * Byte offsets from NCG_IDTAIL_OFF, big-endian: 0..3 "NCGD", 4 version, 5 flags, 6..7 port,
 * 8..15 token; with NCG_IDTAIL_TREE: 16..19 the root's node, 20..23 nodes, 24 fan-out, 25..28
 * the root's global rank. Pure: no sockets, threads or clock. */
#ifndef NCG_IDTAIL_H
#define NCG_IDTAIL_H

#include <stdint.h>

#define NCG_IDTAIL_OFF 40 /* ncclguard's bytes in the id: after NCCL's 40 used bytes */
#define NCG_IDTAIL_END 69 /* one past the last byte a tail may write (128-byte ids) */
#define NCG_IDTAIL_VERSION 1
#define NCG_IDTAIL_TREE 1u /* flags: the root is a relay tree's (the tree fields follow) */

struct ncg_idtail {
    uint16_t port;  /* the checker's (or tree root's) TCP port */
    uint64_t token; /* its connection token */
    uint8_t tree;   /* 1: the fields below are set */
    uint32_t root_node, nnodes;
    uint8_t fanout;
    int32_t root_grank; /* the root's process's global rank, or -1 */
};

/* Writes t into bytes NCG_IDTAIL_OFF.. of a 128-byte unique id; the tree's bytes only when
 * t->tree (the others are left as they are). Any thread; no allocation. */
void ncg_idtail_encode(unsigned char *uid, const struct ncg_idtail *t);
/* Reads the tail of a 128-byte unique id into t (zeroed first; the tree's fields only when its
 * flag is set). 0, or -1 when the id carries no tail of ours (tag or version). Any thread; no
 * allocation. */
int ncg_idtail_decode(const unsigned char *uid, struct ncg_idtail *t);

#endif
