/* The checker's observers of the shim's events (observer.h), registered when the library loads:
 * rendezvous through the unique id's tail, and handing communicators to the checker thread
 * (client.c). Everything else of the checker lives in proto/judge/coord/relay (pure), net
 * (network), the agent's other files. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include "client.h"
#include "observer.h"
#include "comm.h"
#include "config.h"
#include "ncclguard/shm.h"
#include "reportdir.h"

static void on_unique_id(ncclUniqueId *id)
{
    uint64_t magic;
    unsigned char *u = (unsigned char *)id->internal;
    if (!ncg_cfg.enabled || !ncg_cfg.check || ncg_cfg.coord[0])
        return; /* off, or an explicit coordinator: the id stays NCCL's own */
    memcpy(&magic, u, sizeof magic);
    if (magic == NCG_NCCL_COMM_ID_MAGIC)
        return; /* NCCL_COMM_ID: every rank builds it locally, a tail would differ */
    for (int i = 40; i < NCCL_UNIQUE_ID_BYTES; i++)
        if (u[i])
            return; /* not the zeroed tail we know: leave it alone */
    uint16_t port;
    uint64_t token;
    if (ncg_channel_listen(&port, &token) == 0)
        ncg_channel_write_tail(u, port, token);
}

static void on_comm_added(struct ncg_comm *c)
{
    if (!ncg_cfg.enabled || !ncg_cfg.check)
        return;
    if (c->origin == NCG_ORIGIN_INITALL && !ncg_cfg.coord[0]) {
        /* Every member is in this process (no id travels): this process's own checker compares
         * them, reached on loopback through a tail written into an id of our own, which the
         * communicator's split children inherit. NCCLGUARD_COORD: that checker, as for all. */
        uint16_t port;
        uint64_t token;
        unsigned char *u = (unsigned char *)c->root_uid.internal;
        if (ncg_channel_listen(&port, &token) != 0)
            return; /* said why; unguarded */
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        memset(u, 0, NCCL_UNIQUE_ID_BYTES);
        memcpy(u + 8, &a, sizeof a); /* where NCCL's handle keeps the root's address */
        ncg_channel_write_tail(u, port, token);
    }
    ncg_channel_add(c);
}

static void on_comm_announce(struct ncg_comm *c)
{
    if (ncg_cfg.enabled && ncg_cfg.check)
        ncg_channel_announce(c);
}

static void on_comm_removed(struct ncg_comm *c)
{
    ncg_channel_remove(c);
}

static void on_fork_child(void)
{
    ncg_channel_fork_child();
}

static void on_activate(void)
{
    if (ncg_cfg.check)
        ncg_reportdir_at_start();
}

static const struct ncg_observer checker_observer = {
    .unique_id = on_unique_id,
    .comm_added = on_comm_added,
    .comm_announce = on_comm_announce,
    .comm_removed = on_comm_removed,
    .fork_child = on_fork_child,
    .activate = on_activate,
};

/* At load, before the application's threads: the shim's first event finds the table there. */
__attribute__((constructor)) static void checker_register(void)
{
    ncg_observer_set(&checker_observer);
}
