/* A wait on a member that left (gonewait.h). */
#include "gonewait.h"

int32_t ncg_gw_target(const struct ncg_wait_ent *e, uint32_t nranks,
                      void (*member)(const void *arg, uint32_t i, struct ncg_gw_member *out),
                      const void *arg)
{
    struct ncg_gw_member m;
    if (e->rank >= nranks)
        return -1;
    if (e->p2p) {
        int32_t p = e->call.root;
        if (p < 0 || (uint32_t)p >= nranks || (uint32_t)p == e->rank)
            return -1;
        member(arg, (uint32_t)p, &m);
        return m.left != NCG_GW_HERE ? p : -1;
    }
    for (uint32_t i = 0; i < nranks; i++) {
        if (i == e->rank)
            continue;
        member(arg, i, &m);
        if (m.left != NCG_GW_HERE && m.done <= e->call.seq)
            return (int32_t)i;
    }
    return -1;
}

uint64_t ncg_gw_sig(uint64_t comm_id, const struct ncg_wait_ent *e, int32_t target)
{
    uint64_t h = 0xcbf29ce484222325ull;
    uint64_t f[6] = {comm_id,
                     e->rank,
                     e->p2p,
                     e->call.seq,
                     (uint64_t)(int64_t)e->call.root,
                     (uint64_t)(int64_t)target};
    for (int i = 0; i < 6; i++)
        h = (h ^ f[i]) * 0x100000001b3ull;
    return h ^ e->call.func;
}
