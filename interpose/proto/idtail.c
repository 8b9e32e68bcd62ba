/* The id's tail codec (idtail.h): ncclguard's bytes in an ncclUniqueId, big-endian. */
#include <string.h>
#include "idtail.h"

#define TAG "NCGD"

static void put_be(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}

static uint64_t get_be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

void ncg_idtail_encode(unsigned char *uid, const struct ncg_idtail *t)
{
    unsigned char *b = uid + NCG_IDTAIL_OFF;
    memcpy(b, TAG, 4);
    b[4] = NCG_IDTAIL_VERSION;
    b[5] = t->tree ? NCG_IDTAIL_TREE : 0;
    if (t->tree) {
        put_be(b + 16, t->root_node, 4);
        put_be(b + 20, t->nnodes, 4);
        b[24] = t->fanout;
        put_be(b + 25, (uint32_t)t->root_grank, 4);
    }
    put_be(b + 6, t->port, 2);
    put_be(b + 8, t->token, 8);
}

int ncg_idtail_decode(const unsigned char *uid, struct ncg_idtail *t)
{
    const unsigned char *b = uid + NCG_IDTAIL_OFF;
    memset(t, 0, sizeof *t);
    if (memcmp(b, TAG, 4) != 0 || b[4] != NCG_IDTAIL_VERSION)
        return -1;
    t->port = (uint16_t)get_be(b + 6, 2);
    t->token = get_be(b + 8, 8);
    if (b[5] & NCG_IDTAIL_TREE) {
        t->tree = 1;
        t->root_node = (uint32_t)get_be(b + 16, 4);
        t->nnodes = (uint32_t)get_be(b + 20, 4);
        t->fanout = b[24];
        t->root_grank = (int32_t)(uint32_t)get_be(b + 25, 4);
    }
    return 0;
}
