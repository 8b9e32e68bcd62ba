/* Unit tests of the id's tail codec (interpose/proto/idtail.c): round trips of a flat and a
 * relay tree's tail, the exact bytes (the wire every rank reads), what encoding leaves alone,
 * and tails that are not ours (no tag, another version, an NCCL id untouched). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "idtail.h"

NCG_CHECK_PROGRAM("idtail_test");

static int same(const struct ncg_idtail *a, const struct ncg_idtail *b)
{
    return a->port == b->port && a->token == b->token && a->tree == b->tree &&
           a->root_node == b->root_node && a->nnodes == b->nnodes && a->fanout == b->fanout &&
           a->root_grank == b->root_grank;
}

static void round_trip(const struct ncg_idtail *in)
{
    unsigned char uid[128], orig[128];
    for (int i = 0; i < 128; i++)
        orig[i] = (unsigned char)(0xa5 ^ i);
    memcpy(uid, orig, sizeof uid);
    ncg_idtail_encode(uid, in);
    struct ncg_idtail out;
    CHECK(ncg_idtail_decode(uid, &out) == 0);
    CHECK(same(in, &out));
    /* NCCL's bytes and those past the tail are never written; a flat tail leaves the tree's */
    int end = in->tree ? NCG_IDTAIL_END : NCG_IDTAIL_OFF + 16;
    CHECK(memcmp(uid, orig, NCG_IDTAIL_OFF) == 0);
    CHECK(memcmp(uid + end, orig + end, sizeof uid - (size_t)end) == 0);
}

static void golden(void)
{
    /* The bytes every version of ncclguard with tail version 1 writes and reads. */
    static const unsigned char want[] = {'N',  'C',  'G',  'D',  1,    1,    0x12, 0x34, 0x01, 0x02,
                                         0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x00, 0x00, 0x00, 0x03,
                                         0x00, 0x01, 0x00, 0x02, 0x08, 0x7f, 0x00, 0x00, 0x01};
    _Static_assert(sizeof want == NCG_IDTAIL_END - NCG_IDTAIL_OFF, "the tail's size");
    struct ncg_idtail t = {.port = 0x1234,
                           .token = 0x0102030405060708ull,
                           .tree = 1,
                           .root_node = 3,
                           .nnodes = 0x00010002,
                           .fanout = 8,
                           .root_grank = 0x7f000001};
    unsigned char uid[128] = {0};
    ncg_idtail_encode(uid, &t);
    CHECK(memcmp(uid + NCG_IDTAIL_OFF, want, sizeof want) == 0);
    /* flat: the flags byte 0, nothing after the token */
    struct ncg_idtail f = {.port = 0x1234, .token = 0x0102030405060708ull};
    memset(uid, 0, sizeof uid);
    ncg_idtail_encode(uid, &f);
    CHECK(memcmp(uid + NCG_IDTAIL_OFF, want, 5) == 0 && uid[NCG_IDTAIL_OFF + 5] == 0);
    CHECK(memcmp(uid + NCG_IDTAIL_OFF + 6, want + 6, 10) == 0);
    for (int i = NCG_IDTAIL_OFF + 16; i < 128; i++)
        CHECK(uid[i] == 0);
}

static void malformed(void)
{
    struct ncg_idtail t = {.port = 7, .token = 9}, out;
    unsigned char uid[128] = {0}, good[128];
    CHECK(ncg_idtail_decode(uid, &out) == -1); /* NCCL's own id: a zeroed tail */
    ncg_idtail_encode(uid, &t);
    memcpy(good, uid, sizeof good);
    for (int i = 0; i < 4; i++) { /* every byte of the tag */
        uid[NCG_IDTAIL_OFF + i] ^= 0x20;
        out.port = 1;
        CHECK(ncg_idtail_decode(uid, &out) == -1);
        CHECK(out.port == 0 && out.token == 0 && !out.tree); /* nothing half-read */
        memcpy(uid, good, sizeof uid);
    }
    for (int v = 0; v < 256; v++) { /* another version */
        uid[NCG_IDTAIL_OFF + 4] = (unsigned char)v;
        CHECK((ncg_idtail_decode(uid, &out) == 0) == (v == NCG_IDTAIL_VERSION));
    }
    memcpy(uid, good, sizeof uid);
    /* flags without the tree's bit: no tree, whatever the bytes after the token hold */
    uid[NCG_IDTAIL_OFF + 5] = 0xfe;
    memset(uid + NCG_IDTAIL_OFF + 16, 0xff, 13);
    CHECK(ncg_idtail_decode(uid, &out) == 0 && !out.tree && out.nnodes == 0 && out.root_grank == 0);
    /* the tree's bit among unknown ones: the tree's fields as written */
    uid[NCG_IDTAIL_OFF + 5] = 0xff;
    CHECK(ncg_idtail_decode(uid, &out) == 0 && out.tree && out.nnodes == 0xffffffffu &&
          out.fanout == 0xff && out.root_grank == -1 && out.port == 7 && out.token == 9);
}

int main(void)
{
    round_trip(&(struct ncg_idtail){.port = 29500, .token = 0xfedcba9876543210ull});
    round_trip(&(struct ncg_idtail){.port = 1, .token = 1});
    round_trip(&(struct ncg_idtail){.port = 65535,
                                    .token = ~0ull,
                                    .tree = 1,
                                    .root_node = 0,
                                    .nnodes = 2,
                                    .fanout = 2,
                                    .root_grank = -1});
    round_trip(&(struct ncg_idtail){.port = 40000,
                                    .token = 0x8000000000000001ull,
                                    .tree = 1,
                                    .root_node = 4095,
                                    .nnodes = 4096,
                                    .fanout = 255,
                                    .root_grank = 2147483647});
    golden();
    malformed();
    return ncg_check_done();
}
