/* NCCL 2.30's one-sided signals and grown communicators, as the shim records them.
 * Signals: each signal a ncclPutSignal / ncclSignal sends is a send record, each descriptor of
 * a ncclWaitSignal a receive record carrying the last signal it needs, on a channel per
 * (sigIdx, ctx) (include/ncclguard/signal.h), so the checker pairs and waits on them as on
 * send/recv. Grow: ncclCommGetUniqueId writes the parent's identity into the id's spare bytes,
 * so the new ranks compute the grown comm's identity as the parent's members do. */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "graph.h"
#include "hash.h"
#include "log.h"
#include "ncclguard/signal.h"
#include "shim.h"

/* ---- signals ---- */

/* The counters of (peer, chan) in c, or NULL (table full or no memory: unrecorded). The first
 * signal on c allocates the table. Application thread; NCCL's one-thread-per-comm rule makes
 * the counters the calling thread's. */
static struct ncg_sigent *sig_ent(struct ncg_comm *c, int peer, uint64_t chan)
{
    struct ncg_sigent *t = __atomic_load_n(&c->sig, __ATOMIC_ACQUIRE);
    if (!t) {
        uint32_t cap = 16;
        while (cap < 4u * (uint32_t)c->nranks && cap < 65536)
            cap <<= 1;
        t = malloc(cap * sizeof *t);
        if (!t)
            return NULL;
        for (uint32_t i = 0; i < cap; i++)
            t[i] = (struct ncg_sigent){.peer = -1};
        pthread_mutex_lock(&ncg_lock);
        if (c->sig) { /* another thread misusing the comm won: keep its table */
            free(t);
            t = c->sig;
        } else {
            c->sig_cap = cap;
            __atomic_store_n(&c->sig, t, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&ncg_lock);
    }
    uint32_t mask = c->sig_cap - 1, i = (uint32_t)ncg_hash2((uint64_t)peer, chan) & mask;
    for (uint32_t n = 0; n <= mask; n++, i = (i + 1) & mask) {
        if (t[i].peer == peer && t[i].chan == chan)
            return &t[i];
        if (t[i].peer < 0) {
            t[i].chan = chan;
            t[i].peer = peer;
            return &t[i];
        }
    }
    NCG_LOG_ONCE("more signal channels than %u on one communicator; later signals are not "
                 "checked",
                 c->sig_cap);
    return NULL;
}

/* Record a signal sent to peer (send) or a wait for n more from it (!send) on (sig_idx, ctx).
 * 0 to forward, -1 when a verdict failed the comm. Application thread; lock-free after the
 * comm's first signal. */
static int sig_record(void *pc, int send, uint64_t n, int peer, int sig_idx, int ctx,
                      ncclComm_t comm, void *stream)
{
    int rc = 0;
    if (ncg_graph_capturing()) /* captured signals are not followed into replays (docs/shim.md) */
        return 0;
    struct ncg_comm *c = ncg_comm_usable(comm, &rc);
    if (!c || peer < 0 || peer >= c->nranks || peer == c->rank || n == 0)
        return rc; /* NCCL rejects a bad peer or count: nothing to pair */
    uint64_t chan = ncg_sig_chan(sig_idx, ctx);
    struct ncg_sigent *e = sig_ent(c, peer, chan);
    if (!e)
        return 0;
    uint64_t k;
    if (send) {
        k = e->sent++;
    } else {
        e->expect += n;
        k = e->expect - 1; /* the last signal this wait needs */
    }
    ncg_p2p_put(c, pc, ncg_sig_seq(chan, k), send ? NCG_F_SEND : NCG_F_RECV, n, 0, peer, stream);
    return 0;
}

static int recording(void)
{
    return __atomic_load_n(&ncg_state, __ATOMIC_RELAXED) == NCG_ST_ACTIVE;
}

ncclResult_t ncg_hook_ncclPutSignal(const void *localbuff, size_t count, ncclDataType_t datatype,
                                    int peer, ncclWindow_t peerWin, size_t peerWinOffset,
                                    int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                                    cudaStream_t stream)
{
    if (recording() && sig_record(ncg_tls.pc, 1, 1, peer, sigIdx, ctx, comm, stream) < 0)
        return ncclRemoteError;
    ncclResult_t r = NCG_REAL(ncclPutSignal)(localbuff, count, datatype, peer, peerWin,
                                             peerWinOffset, sigIdx, ctx, flags, comm, stream);
    ncg_done_after_call((void *)stream);
    return r;
}

ncclResult_t ncg_hook_ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                                 cudaStream_t stream)
{
    if (recording() && sig_record(ncg_tls.pc, 1, 1, peer, sigIdx, ctx, comm, stream) < 0)
        return ncclRemoteError;
    ncclResult_t r = NCG_REAL(ncclSignal)(peer, sigIdx, ctx, flags, comm, stream);
    ncg_done_after_call((void *)stream);
    return r;
}

ncclResult_t ncg_hook_ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm,
                                     cudaStream_t stream)
{
    for (int i = 0; recording() && signalDescs && i < nDesc; i++) {
        const ncclWaitSignalDesc_t *d = &signalDescs[i];
        if (d->opCnt > 0 && sig_record(ncg_tls.pc, 0, (uint64_t)d->opCnt, d->peer, d->sigIdx,
                                       d->ctx, comm, stream) < 0)
            return ncclRemoteError;
    }
    ncclResult_t r = NCG_REAL(ncclWaitSignal)(nDesc, signalDescs, comm, stream);
    ncg_done_after_call((void *)stream);
    return r;
}

/* ---- grow ---- */

/* The grow id's spare bytes (NCCL uses its first 40; ncclCommGrow reads only its bootstrap
 * handle): 40..43 "NCGW", 44..51 the parent's identity, 52..55 the parent's grow counter for
 * this grow, 56..95 and 96..124 the parent's root id bytes 0..39 (NCCL's handle: the checker's
 * address) and 40..68 (ncclguard's tail: its port and token, interpose/proto/idtail.h), so that
 * a new rank finds the parent's checker. Little-endian. */
#define GROW_TAG "NCGW"
#define GROW_OFF 40
#define GROW_ROOT_HEAD 40 /* root id bytes 0..39 */
#define GROW_ROOT_TAIL 29 /* root id bytes 40..68 (NCG_IDTAIL_END is 69) */

static void grow_encode(unsigned char *u, uint64_t parent, uint32_t k, const ncclUniqueId *root)
{
    unsigned char *b = u + GROW_OFF;
    memcpy(b, GROW_TAG, 4);
    for (int i = 0; i < 8; i++)
        b[4 + i] = (unsigned char)(parent >> (8 * i));
    for (int i = 0; i < 4; i++)
        b[12 + i] = (unsigned char)(k >> (8 * i));
    memcpy(b + 16, root->internal, GROW_ROOT_HEAD);
    memcpy(b + 16 + GROW_ROOT_HEAD, root->internal + 40, GROW_ROOT_TAIL);
}

/* 0 with the parent's identity, counter and root id, or -1: no grow record of ours. */
static int grow_decode(const unsigned char *u, uint64_t *parent, uint32_t *k, ncclUniqueId *root)
{
    const unsigned char *b = u + GROW_OFF;
    if (memcmp(b, GROW_TAG, 4) != 0)
        return -1;
    *parent = 0;
    *k = 0;
    for (int i = 0; i < 8; i++)
        *parent |= (uint64_t)b[4 + i] << (8 * i);
    for (int i = 0; i < 4; i++)
        *k |= (uint32_t)b[12 + i] << (8 * i);
    memset(root, 0, sizeof *root);
    memcpy(root->internal, b + 16, GROW_ROOT_HEAD);
    memcpy(root->internal + 40, b + 16 + GROW_ROOT_HEAD, GROW_ROOT_TAIL);
    return 0;
}

_Static_assert(GROW_OFF + 16 + GROW_ROOT_HEAD + GROW_ROOT_TAIL <= NCCL_UNIQUE_ID_BYTES,
               "the grow record fits the id");

static uint64_t grow_id(uint64_t parent, uint64_t k)
{
    return ncg_hash2(ncg_hash2(parent, 'G'), k);
}

ncclResult_t ncg_hook_ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId)
{
    ncclResult_t r = NCG_REAL(ncclCommGetUniqueId)(comm, uniqueId);
    struct ncg_comm *p = ncg_comm_find(comm);
    if (r != ncclSuccess || !uniqueId || !p)
        return r;
    const unsigned char *u = (const unsigned char *)uniqueId->internal;
    for (int i = GROW_OFF; i < NCCL_UNIQUE_ID_BYTES; i++)
        if (u[i])
            return r; /* not the zeroed spare bytes we know: leave the id alone */
    /* The grow that consumes this id is the parent's next (every member counts its grows). */
    grow_encode((unsigned char *)uniqueId->internal, p->id,
                (uint32_t)__atomic_load_n(&p->grow_count, __ATOMIC_RELAXED), &p->root_uid);
    return r;
}

ncclResult_t ncg_hook_ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId,
                                   int rank, ncclComm_t *newcomm, ncclConfig_t *config)
{
    struct ncg_comm *p = comm ? ncg_comm_find(comm) : NULL;
    uint64_t k = p ? __atomic_fetch_add(&p->grow_count, 1, __ATOMIC_RELAXED) : 0;
    ncclResult_t r = NCG_REAL(ncclCommGrow)(comm, nRanks, uniqueId, rank, newcomm, config);
    if ((r != ncclSuccess && r != ncclInProgress) || !newcomm || !*newcomm)
        return r;
    if (p) { /* an existing member keeps its rank (NCCL: "existing ranks pass rank=-1") */
        ncg_comm_track(*newcomm, grow_id(p->id, k), p->id, NCG_ORIGIN_GROW, p->rank, nRanks,
                       &p->root_uid);
        return r;
    }
    uint64_t parent;
    uint32_t pk;
    ncclUniqueId root;
    if (!comm && uniqueId &&
        grow_decode((const unsigned char *)uniqueId->internal, &parent, &pk, &root) == 0)
        ncg_comm_track(*newcomm, grow_id(parent, pk), parent, NCG_ORIGIN_GROW, rank, nRanks, &root);
    else if (ncg_state_get() != NCG_ST_DISABLED)
        NCG_LOG_ONCE("ncclCommGrow: the id carries no parent from ncclguard (its "
                     "ncclCommGetUniqueId ran unguarded); the grown communicator is not checked");
    return r;
}
