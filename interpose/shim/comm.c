/* Per-communicator tracking: the lock-free handle -> struct ncg_comm table, identities equal on
 * every member (DESIGN.md: root / split / shrink / InitAll rules), the lifecycle hooks that
 * create and retire comms, and the per-call numbering and recording (the hot path). */
#define _GNU_SOURCE
#include "comm.h"

#include <ck_pr.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "observer.h"
#include "completion.h"
#include "graph.h"
#include "hash.h"
#include "libver.h"
#include "log.h"
#include "ring.h"
#include "shim.h"
#include "shm.h"
#include "streamtab.h"

/* ---- handle -> comm table: open addressing, readers lock-free, writers under ncg_lock ---- */

#define NCG_TAB_BITS 12
#define NCG_TAB_SIZE (1u << NCG_TAB_BITS)
#define NCG_TAB_TOMB ((struct ncg_comm *)1) /* removed entry: probing continues past it */

static struct ncg_comm *ncg_tab[NCG_TAB_SIZE];

static inline uint32_t ncg_tab_home(ncclComm_t h)
{
    return (uint32_t)(((uintptr_t)h * NCG_HASH_K1) >> (64 - NCG_TAB_BITS));
}

static inline struct ncg_comm *ncg_comm_lookup(ncclComm_t h)
{
    uint32_t i = ncg_tab_home(h);
    for (uint32_t n = 0; n < NCG_TAB_SIZE; n++, i = (i + 1) & (NCG_TAB_SIZE - 1)) {
        /* Dependent load: the comm's fields were stored before the pointer was published. */
        struct ncg_comm *c = ck_pr_load_ptr(&ncg_tab[i]);
        if (!c)
            return NULL;
        if (c != NCG_TAB_TOMB && c->handle == h)
            return c;
    }
    return NULL;
}

/* ncg_lock held. Replaces a stale entry for the same handle (destroyed behind our back). */
static int ncg_tab_insert(struct ncg_comm *c)
{
    uint32_t i = ncg_tab_home(c->handle), free_at = UINT32_MAX;
    for (uint32_t n = 0; n < NCG_TAB_SIZE; n++, i = (i + 1) & (NCG_TAB_SIZE - 1)) {
        struct ncg_comm *e = ncg_tab[i];
        if (e == NCG_TAB_TOMB || !e) {
            if (free_at == UINT32_MAX)
                free_at = i;
            if (!e)
                break;
        } else if (e->handle == c->handle) {
            ck_pr_store_ptr(&ncg_tab[i], NCG_TAB_TOMB);
        }
    }
    if (free_at == UINT32_MAX)
        return -1;
    /* Every field of *c before the pointer: lookups dereference what they load. */
    ck_pr_fence_store();
    ck_pr_store_ptr(&ncg_tab[free_at], c);
    return 0;
}

/* ncg_lock held. */
static void ncg_tab_remove(struct ncg_comm *c)
{
    for (uint32_t i = 0; i < NCG_TAB_SIZE; i++)
        if (ncg_tab[i] == c) {
            ck_pr_store_ptr(&ncg_tab[i], NCG_TAB_TOMB);
            return;
        }
}

/* ---- identities ---- */

/* How many comms this process initialised from one id, per rank (so that one process holding
 * several ranks of the same comm gives each the same count as a process holding one). */
struct ncg_root_count {
    uint64_t id_hash;
    int32_t rank;
    uint64_t count;
};
static struct ncg_root_count *ncg_roots;
static size_t ncg_nroots, ncg_cap_roots;

/* ncg_lock held. Returns the 1-based init count for (id_hash, rank), or 0 on allocation failure. */
static uint64_t ncg_root_bump(uint64_t id_hash, int32_t rank)
{
    for (size_t i = 0; i < ncg_nroots; i++)
        if (ncg_roots[i].id_hash == id_hash && ncg_roots[i].rank == rank)
            return ++ncg_roots[i].count;
    if (ncg_nroots == ncg_cap_roots) {
        size_t cap = ncg_cap_roots ? 2 * ncg_cap_roots : 16;
        void *p = realloc(ncg_roots, cap * sizeof *ncg_roots);
        if (!p)
            return 0;
        ncg_roots = p;
        ncg_cap_roots = cap;
    }
    ncg_roots[ncg_nroots++] = (struct ncg_root_count){id_hash, rank, 1};
    return 1;
}

static uint64_t ncg_split_id(uint64_t parent, uint64_t k, int color)
{
    return ncg_hash2(ncg_hash2(ncg_hash2(parent, 'S'), k), (uint64_t)(uint32_t)color);
}

static int ncg_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static uint64_t ncg_shrink_id(uint64_t parent, uint64_t k, const int *excl, int n)
{
    uint64_t seed = ncg_hash2(ncg_hash2(parent, 'K'), k);
    if (n <= 0 || !excl)
        return ncg_hash_bytes("", 0, seed);
    int *sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted)
        return 0;
    memcpy(sorted, excl, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, ncg_cmp_int);
    uint64_t id = ncg_hash_bytes(sorted, (size_t)n * sizeof *sorted, seed);
    free(sorted);
    return id;
}

/* ---- creation and readiness ---- */

/* Tells the observer above (if any) that c became known (added) or went away; outside
 * ncg_lock. Application thread. */
static void ncg_comm_tell(struct ncg_comm *c, int added)
{
    const struct ncg_observer *o = ncg_observed();
    void (*fn)(struct ncg_comm *) = added ? o->comm_added : o->comm_removed;
    if (fn)
        fn(c);
}

/* The creating wrapper's turn, after ncg_comm_tell(c, 1): the checker may want to hear of c
 * before the wrapper returns (observer.h, comm_announce). Application thread, no lock held;
 * never on the per-call path. */
static void ncg_comm_announce(struct ncg_comm *c)
{
    const struct ncg_observer *o = ncg_observed();
    if (o->comm_announce)
        o->comm_announce(c);
}

/* ncg_lock held; c->rank/nranks known. Allocates the p2p counters and the segment slot and
 * publishes both; the caller tells the checker after dropping the lock. */
static void ncg_comm_complete(struct ncg_comm *c)
{
    if (c->nranks > 0) {
        c->p2p_send = calloc((size_t)c->nranks, sizeof *c->p2p_send);
        c->p2p_recv = calloc((size_t)c->nranks, sizeof *c->p2p_recv);
    }
    c->shm = ncg_shm_comm_alloc();
    if (c->shm) { /* else ncg_shm_comm_alloc said why, once */
        ncg_shm_comm_publish(c->shm, c->id, c->parent_id, c->origin, c->rank, c->nranks);
        c->cev[0].done = &c->shm->coll_done;
        c->cev[1].done = &c->shm->p2p_done;
    }
    /* Counters and slot before pending clears: the hot path reads them after seeing 0. */
    ck_pr_fence_store();
    ck_pr_store_int(&c->pending, 0);
}

/* Track a new comm. rank < 0: not known yet (pending until ncg_comm_try_ready succeeds).
 * Returns it with the checker already told, or NULL (untracked). Application thread. */
static struct ncg_comm *ncg_comm_add(ncclComm_t h, uint64_t id, uint64_t parent_id, uint32_t origin,
                                     int32_t rank, int32_t nranks, const ncclUniqueId *root_uid)
{
    /* Own cache lines: threads on different comms never share a line they write. */
    size_t size = (sizeof(struct ncg_comm) + 63) & ~(size_t)63;
    struct ncg_comm *c = aligned_alloc(64, size);
    if (!c)
        return NULL;
    memset(c, 0, size);
    c->handle = h;
    c->id = id;
    c->parent_id = parent_id;
    c->origin = origin;
    c->rank = rank;
    c->nranks = nranks;
    if (root_uid)
        c->root_uid = *root_uid;
    c->created_ns = ncg_now_ns();
    c->slow_next = ncg_slow_first(id);
    c->pending = 1;
    pthread_mutex_lock(&ncg_lock);
    if (ncg_activate() < 0 || ncg_tab_insert(c) < 0) {
        pthread_mutex_unlock(&ncg_lock);
        NCG_LOG_ONCE("cannot track more communicators; later ones run unrecorded and unchecked");
        free(c);
        return NULL;
    }
    int ready = rank >= 0 && nranks > 0;
    if (ready)
        ncg_comm_complete(c);
    pthread_mutex_unlock(&ncg_lock);
    if (ready) {
        ncg_comm_tell(c, 1);
        ncg_comm_announce(c);
    }
    ncg_libver_check(rank); /* the first comm: which NCCL, and what it has that we don't know */
    static const char *const origin_name[] = {"?", "root", "split", "shrink", "initall", "grow"};
    ncg_debug(2, "comm %p id %016llx origin %s rank %d/%d%s", (void *)h, (unsigned long long)id,
              origin < 6 ? origin_name[origin] : "?", rank, nranks,
              ready ? "" : " (rank known once ready)");
    return c;
}

/* A split/shrink child whose rank and size we learn from NCCL once it is ready (querying a
 * comm still initialising fails). Returns 0 once complete. Application thread; takes ncg_lock;
 * calls the real library with depth raised so NCCL's own calls pass through. */
static int ncg_comm_try_ready(struct ncg_comm *c)
{
    ncg_fn_ncclCommGetAsyncError aerr = NCG_REAL(ncclCommGetAsyncError);
    ncg_fn_ncclCommCount count = NCG_REAL(ncclCommCount);
    ncg_fn_ncclCommUserRank urank = NCG_REAL(ncclCommUserRank);
    if (!count || !urank)
        return -1;
    int rc = -1, n = -1, r = -1, done = 0;
    ncg_tls.depth++;
    pthread_mutex_lock(&ncg_lock);
    if (!c->pending) {
        rc = 0;
    } else {
        ncclResult_t st = ncclSuccess;
        if ((!aerr || (aerr(c->handle, &st) == ncclSuccess && st == ncclSuccess)) &&
            count(c->handle, &n) == ncclSuccess && urank(c->handle, &r) == ncclSuccess && n > 0 &&
            r >= 0 && r < n) {
            c->rank = r;
            c->nranks = n;
            ncg_comm_complete(c);
            rc = 0;
            done = 1;
        }
    }
    pthread_mutex_unlock(&ncg_lock);
    ncg_tls.depth--;
    if (done)
        ncg_comm_tell(c, 1);
    return rc;
}

static void ncg_comm_retire(struct ncg_comm *c, int forget)
{
    int tell = 0;
    pthread_mutex_lock(&ncg_lock);
    if (!c->removed) {
        c->removed = 1;
        tell = !c->pending; /* the checker never heard of a comm that never became ready */
        if (c->shm)
            ncg_shm_comm_retire(c->shm);
    }
    if (forget)
        ncg_tab_remove(c);
    pthread_mutex_unlock(&ncg_lock);
    if (tell)
        ncg_comm_tell(c, 0);
}

void ncg_comm_fork_child(void)
{
    memset(ncg_tab, 0, sizeof ncg_tab); /* the parent's comms are not the child's */
    ncg_nroots = 0;
}

/* ---- lifecycle hooks (see api.def: HOOK) ---- */

static int ncg_made(ncclResult_t r)
{
    return r == ncclSuccess || r == ncclInProgress;
}

static void ncg_add_root(ncclComm_t h, const ncclUniqueId *ids, int nid, int rank, int nranks)
{
    uint64_t idh = ncg_hash_bytes(ids, (size_t)nid * sizeof *ids, 0);
    pthread_mutex_lock(&ncg_lock);
    uint64_t k = ncg_root_bump(idh, rank);
    pthread_mutex_unlock(&ncg_lock);
    ncg_comm_add(h, ncg_hash2(idh, k), 0, NCG_ORIGIN_ROOT, rank, nranks, &ids[0]);
}

ncclResult_t ncg_hook_ncclGetUniqueId(ncclUniqueId *uniqueId)
{
    ncclResult_t r = NCG_REAL(ncclGetUniqueId)(uniqueId);
    if (r == ncclSuccess && uniqueId) {
        uint64_t magic;
        memcpy(&magic, uniqueId->internal, sizeof magic);
        if (magic != NCG_NCCL_COMM_ID_MAGIC) /* NCCL_COMM_ID ids are built locally on every rank */
            if (ncg_observed()->unique_id)
                ncg_observed()->unique_id(uniqueId);
    }
    return r;
}

ncclResult_t ncg_hook_ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                             int rank, ncclConfig_t *config)
{
    ncclResult_t r = NCG_REAL(ncclCommInitRankConfig)(comm, nranks, commId, rank, config);
    if (ncg_made(r) && comm && *comm) /* ncclInProgress: rank and size are the arguments */
        ncg_add_root(*comm, &commId, 1, rank, nranks);
    return r;
}

ncclResult_t ncg_hook_ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    ncclResult_t r = NCG_REAL(ncclCommInitRank)(comm, nranks, commId, rank);
    if (ncg_made(r) && comm && *comm)
        ncg_add_root(*comm, &commId, 1, rank, nranks);
    return r;
}

ncclResult_t ncg_hook_ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                               ncclUniqueId *commIds, ncclConfig_t *config)
{
    ncclResult_t r =
        NCG_REAL(ncclCommInitRankScalable)(newcomm, nranks, myrank, nId, commIds, config);
    if (ncg_made(r) && newcomm && *newcomm && commIds && nId > 0)
        ncg_add_root(*newcomm, commIds, nId, myrank, nranks);
    return r;
}

ncclResult_t ncg_hook_ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
    ncclResult_t r = NCG_REAL(ncclCommInitAll)(comm, ndev, devlist);
    if (r != ncclSuccess || !comm)
        return r;
    /* Every member lives in this process: a local identity, unique per call. */
    static uint64_t calls;
    uint64_t id = ncg_hash2(ncg_hash2((uint64_t)getpid(), ncg_now_ns()),
                            __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED));
    for (int i = 0; i < ndev; i++)
        if (comm[i])
            ncg_comm_add(comm[i], id, 0, NCG_ORIGIN_INITALL, i, ndev, NULL);
    return r;
}

struct ncg_comm *ncg_comm_find(ncclComm_t h)
{
    return ncg_comm_lookup(h);
}

struct ncg_comm *ncg_comm_track(ncclComm_t h, uint64_t id, uint64_t parent_id, uint32_t origin,
                                int32_t rank, int32_t nranks, const ncclUniqueId *root_uid)
{
    return ncg_comm_add(h, id, parent_id, origin, rank, nranks, root_uid);
}

/* A child of parent p: complete now when NCCL already knows rank and size, else pending. */
static void ncg_add_child(ncclComm_t h, struct ncg_comm *p, uint64_t id, uint32_t origin)
{
    struct ncg_comm *c = ncg_comm_add(h, id, p->id, origin, -1, -1, &p->root_uid);
    if (c && ncg_comm_try_ready(c) == 0)
        ncg_comm_announce(c);
}

ncclResult_t ncg_hook_ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                    ncclConfig_t *config)
{
    struct ncg_comm *p = ncg_comm_lookup(comm);
    /* Every member calls split in the same order, NOCOLOR ones too: the counter agrees. For the
     * same reason the split takes the next slot on the parent (colors differ by design, so only
     * the function is compared): a rank splitting while its peers are in a collective is a
     * MISMATCH, not a silent hang. */
    if (p && ncg_record_coll(ncg_tls.pc, NCG_F_COMMSPLIT, 0, 0, NCG_NO_OP, -1, comm, NULL) < 0)
        return ncclRemoteError; /* the parent was failed by a verdict (soft action) */
    uint64_t k = p ? __atomic_fetch_add(&p->split_count, 1, __ATOMIC_RELAXED) : 0;
    ncclResult_t r = NCG_REAL(ncclCommSplit)(comm, color, key, newcomm, config);
    if (ncg_tls.done_at) { /* the split's slot: host-synchronous, done when it returns */
        ck_pr_store_64(ncg_tls.done_at, ncg_tls.done_val);
        ncg_tls.done_at = NULL;
    }
    if (p && ncg_made(r) && color != NCCL_SPLIT_NOCOLOR && newcomm && *newcomm)
        ncg_add_child(*newcomm, p, ncg_split_id(p->id, k, color), NCG_ORIGIN_SPLIT);
    return r;
}

ncclResult_t ncg_hook_ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                     ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
    struct ncg_comm *p = ncg_comm_lookup(comm);
    uint64_t k = p ? __atomic_fetch_add(&p->shrink_count, 1, __ATOMIC_RELAXED) : 0;
    uint64_t id = p ? ncg_shrink_id(p->id, k, excludeRanksList, excludeRanksCount) : 0;
    ncclResult_t r = NCG_REAL(ncclCommShrink)(comm, excludeRanksList, excludeRanksCount, newcomm,
                                              config, shrinkFlags);
    if (p && ncg_made(r) && newcomm && *newcomm)
        ncg_add_child(*newcomm, p, id, NCG_ORIGIN_SHRINK);
    return r;
}

ncclResult_t ncg_hook_ncclCommFinalize(ncclComm_t comm)
{
    struct ncg_comm *c = ncg_comm_lookup(comm);
    if (c)
        ncg_comm_retire(c, 0); /* ncclCommDestroy follows and forgets the handle */
    return NCG_REAL(ncclCommFinalize)(comm);
}

ncclResult_t ncg_hook_ncclCommDestroy(ncclComm_t comm)
{
    struct ncg_comm *c = ncg_comm_lookup(comm);
    if (c) /* before the real call: once it returns the handle may be reused by a new comm */
        ncg_comm_retire(c, 1);
    return NCG_REAL(ncclCommDestroy)(comm);
}

ncclResult_t ncg_hook_ncclCommAbort(ncclComm_t comm)
{
    struct ncg_comm *c = ncg_comm_lookup(comm);
    if (c) {
        __atomic_store_n(&c->aborted, 1, __ATOMIC_RELAXED); /* before the checker is told */
        ncg_comm_retire(c, 1);
    }
    return NCG_REAL(ncclCommAbort)(comm);
}

ncclResult_t ncg_hook_ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    ncclResult_t r = NCG_REAL(ncclCommGetAsyncError)(comm, asyncError);
    struct ncg_comm *c = ncg_comm_lookup(comm);
    if (c && r == ncclSuccess && asyncError) {
        if (ck_pr_load_int(&c->pending) && *asyncError == ncclSuccess)
            ncg_comm_try_ready(c);
        /* soft action: the framework sees a remote error and raises its own */
        if (__atomic_load_n(&c->failed, __ATOMIC_RELAXED))
            *asyncError = ncclRemoteError;
    }
    return r;
}

/* ---- the hot path ---- */

static inline uint32_t ncg_redop_class(int op)
{
    if (op == NCG_NO_OP)
        return NCG_REDOP_NONE;
    return (unsigned)op < (unsigned)ncclNumOps ? (uint32_t)op : NCG_REDOP_USER;
}

/* Usable for recording: known, ready. Returns NULL to forward unrecorded, with *rc -1 when a
 * verdict failed the comm (the call returns ncclRemoteError), else untouched. */
static inline struct ncg_comm *ncg_comm_for_call(ncclComm_t comm, int *rc)
{
    struct ncg_comm *c = ncg_comm_lookup(comm);
    if (!c)
        return NULL;
    if (__builtin_expect(__atomic_load_n(&c->failed, __ATOMIC_RELAXED), 0)) {
        *rc = -1;
        return NULL;
    }
    if (__builtin_expect(ck_pr_load_int(&c->pending), 0) && ncg_comm_try_ready(c) != 0)
        return NULL; /* still initialising: NCCL itself will refuse the call */
    return c;
}

/* Flags of a record issued inside a group: a graph replay's calls are recorded as a group and
 * carry their own flags (graph.c). */
static inline uint8_t ncg_group_flags(void)
{
    uint8_t f = ncg_tls.rec_flags;
    return f ? f : NCG_REC_IN_GROUP;
}

/* A call made while its stream is being captured into a CUDA graph: kept with the graph and
 * recorded at each replay instead (graph.c); 1 when so. */
static inline int ncg_captured(void *pc, uint32_t func, size_t count, int dtype, int op,
                               int root_or_peer, int p2p, ncclComm_t comm, void *stream)
{
    if (!ncg_graph_capturing())
        return 0;
    struct ncg_gcall g = {.comm = comm,
                          .pc = pc,
                          .count = count,
                          .root_or_peer = root_or_peer,
                          .op = op,
                          .func = func,
                          .dtype = dtype,
                          .p2p = (uint8_t)p2p,
                          .in_group = ncg_tls.group > 0};
    return ncg_graph_capture_call(stream, &g) != 0;
}

int ncg_record_coll(void *pc, uint32_t func, size_t count, int dtype, int op, int root,
                    ncclComm_t comm, void *stream)
{
    int rc = 0; /* forwarded unrecorded: captured into a graph, or no usable comm */
    struct ncg_comm *c;
    if (ncg_captured(pc, func, count, dtype, op, root, 0, comm, stream) ||
        !(c = ncg_comm_for_call(comm, &rc)))
        return rc;
    uint32_t redop = ncg_redop_class(op);
    uint64_t fp = ncg_fingerprint(func, count, (uint32_t)dtype, redop, root);
    /* Reserve the slot and extend the digest in one step, so that concurrent callers on one comm
     * get distinct consecutive slots whose digests chain in slot order. */
    uint64_t cur[2] = {c->seq_digest[0], c->seq_digest[1]}, next[2];
    do {
        next[0] = cur[0] + 1;
        next[1] = ncg_digest_next(cur[1], fp);
    } while (!ck_pr_cas_64_2_value(c->seq_digest, cur, next, cur));
    uint64_t slot = cur[0];
    struct ncg_shm_comm *s = c->shm;
    if (!s)
        return 0;
    uint64_t now = ncg_coarse_ns(); /* the record's timestamp: coarse (clock.h) */
    int grouped = ncg_tls.group > 0;
    if (__builtin_expect(slot >= c->slow_next, 0)) /* every member samples the same slots */
        ncg_slow_issue(c, slot, stream, grouped);
    ncg_ring_put_fields(&s->coll[slot & (NCG_COLL_RING - 1)], slot, slot, count, next[1],
                        (uint64_t)(uintptr_t)pc, now, ncg_tid(), root, func, (uint32_t)dtype, redop,
                        grouped ? ncg_group_flags() : 0, ncg_rec_reserved(stream, grouped));
    if (__builtin_expect(grouped, 0)) {
        ncg_group_note(s, c->cev, 0, slot, stream);
    } else {
        ncg_tls.done_at = &s->coll_done; /* completed when it returns (completion.h) */
        ncg_tls.done_val = slot + 1;
        ncg_tls.done_cev = &c->cev[0];
    }
    /* The record before the count that announces it. A plain store, not an atomic add: NCCL
     * forbids concurrent calls on one comm, so calls on a comm are ordered and slot + 1 is the
     * count; racing misuse can only make the count lag until the comm's next call. */
    ck_pr_fence_store();
    ck_pr_store_64(&s->coll_seq, slot + 1);
    ck_pr_store_64(&s->last_ns, now);
    return 0;
}

struct ncg_comm *ncg_comm_usable(ncclComm_t comm, int *rc)
{
    return ncg_comm_for_call(comm, rc);
}

int ncg_record_p2p(void *pc, uint32_t func, size_t count, int dtype, int peer, ncclComm_t comm,
                   void *stream)
{
    int rc = 0; /* forwarded unrecorded: captured into a graph, or no usable comm */
    struct ncg_comm *c;
    if (ncg_captured(pc, func, count, dtype, NCG_NO_OP, peer, 1, comm, stream) ||
        !(c = ncg_comm_for_call(comm, &rc)))
        return rc;
    if (peer < 0 || peer >= c->nranks || !c->p2p_send || !c->p2p_recv)
        return 0; /* NCCL rejects a bad peer: nothing to pair */
    uint64_t *ctr = func == NCG_F_SEND ? &c->p2p_send[peer] : &c->p2p_recv[peer];
    uint64_t k = ck_pr_faa_64(ctr, 1); /* k-th send to / recv from this peer */
    ncg_p2p_put(c, pc, k, func, count, dtype, peer, stream);
    return 0;
}

void ncg_p2p_put(struct ncg_comm *c, void *pc, uint64_t k, uint32_t func, size_t count, int dtype,
                 int peer, void *stream)
{
    struct ncg_shm_comm *s = c->shm;
    if (!s)
        return;
    uint64_t now = ncg_coarse_ns(); /* the record's timestamp: coarse (clock.h) */
    uint64_t idx = ck_pr_faa_64(&s->p2p_seq, 1);
    int grouped = ncg_tls.group > 0;
    ncg_ring_put_fields(&s->p2p[idx & (NCG_P2P_RING - 1)], idx, k, count,
                        ncg_fingerprint(func, count, (uint32_t)dtype, NCG_REDOP_NONE, peer),
                        (uint64_t)(uintptr_t)pc, now, ncg_tid(), peer, func, (uint32_t)dtype,
                        NCG_REDOP_NONE, grouped ? ncg_group_flags() : 0,
                        ncg_rec_reserved(stream, grouped));
    if (grouped) {
        ncg_group_note(s, c->cev, 1, idx, stream);
    } else {
        ncg_tls.done_at = &s->p2p_done;
        ncg_tls.done_val = idx + 1;
        ncg_tls.done_cev = &c->cev[1];
    }
    ck_pr_store_64(&s->last_ns, now);
}
