/* A link's I/O that every layer above the link's state may do (agent_int.h): queue a message on
 * it, close its connection. Calls no other file of the agent but state.c. */
#include "agent_int.h"
#include "wire.h"

void ncg_link_close(struct ncg_link *l)
{
    l->nrx += l->io.nrx;
    l->ntx += l->io.ntx;
    ncg_peer_close(&l->io);
}

void ncg_link_send(struct ncg_link *l, const struct ncg_msg *m)
{
    if (l->state != NCG_LINK_UP && !(l->state == NCG_LINK_HELLO && m->type == NCG_MSG_HELLO))
        return;
    ncg_peer_send(&l->io, m);
}
