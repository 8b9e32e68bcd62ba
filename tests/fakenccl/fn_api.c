/* fakenccl API: the NCCL 2.28 host functions (pncclX strong, ncclX weak aliases), argument
 * checks, communicator creation (init, split, shrink, InitAll), groups (per-thread nesting,
 * only the outermost end launches) and the trivial calls (versions, errors, memory). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fn_internal.h"

static __thread char t_last_error[256];

void fn_set_last_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t_last_error, sizeof t_last_error, fmt, ap);
    va_end(ap);
}

/* ---- identity ---- */

static uint64_t mix64(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static uint64_t id_hash(const ncclUniqueId *id)
{
    /* Only the bytes the id generator wrote: the tail belongs to whoever wants it. */
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < NCG_NCCL_ID_USED_BYTES; i++)
        h = (h ^ (unsigned char)id->internal[i]) * 0x100000001b3ull;
    return h;
}

/* How many times this process initialised (id, rank): a re-init of the same id gets a fresh
 * segment, while several ranks of one id in one process (a group of InitRank) share one. */
static pthread_mutex_t g_gen_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gen_ent {
    uint64_t idh;
    int rank;
    uint64_t count;
} * g_gen;
static size_t g_gen_n, g_gen_cap;

static uint64_t next_generation(uint64_t idh, int rank)
{
    uint64_t out = 0;
    pthread_mutex_lock(&g_gen_lock);
    size_t i;
    for (i = 0; i < g_gen_n; i++)
        if (g_gen[i].idh == idh && g_gen[i].rank == rank)
            break;
    if (i == g_gen_n) {
        if (g_gen_n == g_gen_cap) {
            size_t cap = g_gen_cap ? g_gen_cap * 2 : 16;
            struct gen_ent *n = realloc(g_gen, cap * sizeof *n);
            if (!n)
                goto out;
            g_gen = n;
            g_gen_cap = cap;
        }
        g_gen[g_gen_n++] = (struct gen_ent){idh, rank, 0};
    }
    out = g_gen[i].count++;
out:
    pthread_mutex_unlock(&g_gen_lock);
    return out;
}

/* ---- groups ---- */

static __thread int t_depth;
static __thread struct fn_op *t_ops;
static __thread int t_nops, t_cap;
static __thread ncclResult_t t_group_err;

void fn_assign_seq(struct fn_op *op)
{
    struct ncclComm *c = op->comm;
    if (op->kind == FN_OP_WAITSIG) { /* NCCL's count: what every wait so far asked for */
        uint64_t *e = &c->sig_expect[fn_sig_at(c, op->root, op->sig_idx, op->sig_ctx)];
        op->seq = __atomic_add_fetch(e, op->count, __ATOMIC_RELAXED);
        return;
    }
    uint64_t *ctr = op->kind == FN_OP_COLL   ? &c->coll_issued
                    : op->kind == FN_OP_SEND ? &c->send_issued[op->root]
                    : op->kind == FN_OP_RECV ? &c->recv_issued[op->root]
                    : op->kind == FN_OP_PUT  ? &c->put_issued[op->root]
                                             : NULL;
    /* atomic: a graph replay on a stream worker may take the next slot of the same comm */
    if (ctr)
        op->seq = __atomic_fetch_add(ctr, 1, __ATOMIC_RELAXED);
}

static ncclResult_t submit(const struct fn_op *op);
ncclResult_t fn_submit(const struct fn_op *op);
ncclResult_t fn_submit(const struct fn_op *op)
{
    return submit(op);
}

static ncclResult_t submit(const struct fn_op *op)
{
    if (t_depth == 0) {
        struct fn_op one = *op;
        if (one.kind != FN_OP_JOIN && fn_capturing(one.stream))
            return fn_capture_submit(&one, 1); /* slots are taken at each replay */
        int sync = one.kind == FN_OP_JOIN || (!fn_cuda_on() && !fn_async_on());
        if (sync && one.kind != FN_OP_JOIN)
            fn_stream_order(&one, 1); /* after the stream's earlier work (and replays) */
        fn_assign_seq(&one);
        if (!sync && fn_cuda_on())
            return fn_cuda_run(&one, 1);
        if (!sync)
            return fn_async_submit(&one, 1);
        return fn_run(&one, 1);
    }
    if (t_nops == t_cap) {
        int cap = t_cap ? t_cap * 2 : 32;
        struct fn_op *n = realloc(t_ops, (size_t)cap * sizeof *n);
        if (!n) {
            t_group_err = ncclSystemError;
            return ncclSystemError;
        }
        t_ops = n;
        t_cap = cap;
    }
    t_ops[t_nops++] = *op;
    return ncclSuccess;
}

FN_API ncclResult_t pncclGroupStart(void)
{
    t_depth++;
    return ncclSuccess;
}
FN_ALIAS(ncclGroupStart);

/* Moves the group's joins (inits inside the group) first; returns how many. */
static int joins_first(void)
{
    int k = 0;
    for (int i = 0; i < t_nops; i++)
        if (t_ops[i].kind == FN_OP_JOIN) {
            struct fn_op tmp = t_ops[k];
            t_ops[k++] = t_ops[i];
            t_ops[i] = tmp;
        }
    return k;
}

FN_API ncclResult_t pncclGroupEnd(void)
{
    if (t_depth == 0) {
        fn_set_last_error("ncclGroupEnd without ncclGroupStart");
        return ncclInvalidUsage;
    }
    if (--t_depth > 0)
        return ncclSuccess;
    ncclResult_t res = t_group_err;
    int captured = 0;
    for (int i = 0; res == ncclSuccess && i < t_nops; i++)
        if (t_ops[i].kind != FN_OP_JOIN && fn_capturing(t_ops[i].stream))
            captured = 1;
    /* Synchronous mode: after the streams' earlier work, before taking slots (graph replays
     * queued there take theirs when they run). */
    if (res == ncclSuccess && t_nops > 0 && !captured && !fn_cuda_on() && !fn_async_on())
        fn_stream_order(t_ops, t_nops);
    /* Slots in call order (one thread drives a comm); a captured group takes them at each
     * replay instead. */
    for (int i = 0; !captured && i < t_nops; i++)
        fn_assign_seq(&t_ops[i]);
    if (res == ncclSuccess && t_nops > 0 && captured) {
        int k = joins_first();
        if (k > 0)
            res = fn_run(t_ops, k);
        if (res == ncclSuccess && k < t_nops)
            res = fn_capture_submit(t_ops + k, t_nops - k);
    } else if (res == ncclSuccess && t_nops > 0 && fn_cuda_on()) {
        res = fn_cuda_run(t_ops, t_nops); /* device buffers staged, synchronous */
    } else if (res == ncclSuccess && t_nops > 0 && fn_async_on()) {
        /* Joins (inits inside the group) complete now, the rest goes on the streams. */
        int k = joins_first();
        if (k > 0)
            res = fn_run(t_ops, k);
        if (res == ncclSuccess && k < t_nops)
            res = fn_async_submit(t_ops + k, t_nops - k);
    } else if (res == ncclSuccess && t_nops > 0) {
        res = fn_run(t_ops, t_nops);
    }
    t_nops = 0;
    t_group_err = ncclSuccess;
    return res;
}
FN_ALIAS(ncclGroupEnd);

FN_API ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *sim)
{
    if (t_depth == 0)
        return ncclInvalidUsage;
    if (--t_depth > 0)
        return ncclSuccess;
    /* Nothing is launched (no slot was taken): estimate 5 us + bytes at 20 GB/s per op. */
    float us = 0;
    for (int i = t_nops - 1; i >= 0; i--) {
        struct fn_op *op = &t_ops[i];
        us += 5.0f + (float)(op->count * fn_dtype_size(op->dtype)) / 20000.0f;
    }
    if (sim)
        sim->estimatedTime = us;
    t_nops = 0;
    t_group_err = ncclSuccess;
    return ncclSuccess;
}
FN_ALIAS(ncclGroupSimulateEnd);

/* ---- communicators ---- */

static int comm_ok(const struct ncclComm *c)
{
    return c && c->magic == FN_COMM_MAGIC;
}

/* Checks shared by calls that use a communicator. */
static ncclResult_t comm_usable(struct ncclComm *c)
{
    if (!comm_ok(c)) {
        fn_set_last_error("invalid communicator");
        return ncclInvalidArgument;
    }
    if (atomic_load(&c->revoked)) {
        fn_set_last_error("communicator was revoked");
        return ncclInvalidUsage;
    }
    int e = atomic_load(&c->async_err);
    if (e != ncclSuccess)
        return (ncclResult_t)e;
    if (c->suspended) {
        fn_set_last_error("communicator is suspended (ncclCommSuspend)");
        return ncclInvalidUsage;
    }
    return ncclSuccess;
}

ncclResult_t fn_comm_usable(struct ncclComm *c);
ncclResult_t fn_comm_usable(struct ncclComm *c)
{
    return comm_usable(c);
}

static void comm_free(struct ncclComm *c)
{
    fn_seg_detach(c);
    fn_rma_free(c);
    free(c->send_issued);
    free(c->sig_recv);
    c->magic = 0;
    free(c);
}

void fn_comm_unref(struct ncclComm *c)
{
    if (atomic_fetch_sub(&c->refs, 1) == 1)
        comm_free(c);
}

static int env_int(const char *name, int dflt)
{
    const char *s = getenv(name);
    return s && *s ? atoi(s) : dflt;
}

/* Create this rank's comm object and join the segment of identity hash. Waiting for the other
 * ranks is the caller's: blocking (now), group (at the end) or nonblocking (async error). */
static ncclResult_t comm_create(struct ncclComm **out, int nranks, int rank, uint64_t hash,
                                int blocking, int cudev)
{
    *out = NULL;
    struct ncclComm *c = calloc(1, sizeof *c);
    if (!c)
        return ncclSystemError;
    c->magic = FN_COMM_MAGIC;
    atomic_init(&c->refs, 1);
    c->hash = hash;
    c->nranks = nranks;
    c->rank = rank;
    c->cudev = cudev;
    c->blocking = blocking;
    /* FAKENCCL_SHM_TAG (inherited by every rank) lets a test find its own segments. */
    char tag[24] = "";
    const char *t = getenv("FAKENCCL_SHM_TAG");
    for (int i = 0; t && t[i] && i < 16; i++)
        tag[i] = (char)((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9') ? t[i] : '_');
    snprintf(c->shm_name, sizeof c->shm_name, "/fakenccl-%u-%s%s%016llx-%d", (unsigned)getuid(),
             tag, tag[0] ? "-" : "", (unsigned long long)hash, nranks);
    c->send_issued = calloc((size_t)nranks * 4, sizeof(uint64_t));
    if (!c->send_issued) {
        free(c);
        return ncclSystemError;
    }
    c->send_done = c->send_issued + nranks;
    c->recv_issued = c->send_issued + 2 * nranks;
    c->recv_done = c->send_issued + 3 * nranks;
    size_t nsig = (size_t)nranks * FN_SIG_IDX * FN_SIG_CTX;
    c->sig_recv = calloc(2 * nsig + 2 * (size_t)nranks, sizeof(uint64_t));
    if (!c->sig_recv) {
        free(c->send_issued);
        free(c);
        return ncclSystemError;
    }
    c->sig_expect = c->sig_recv + nsig;
    c->put_issued = c->sig_recv + 2 * nsig;
    c->put_done = c->put_issued + nranks;
    int rc = fn_seg_attach(c);
    if (rc != 0) {
        fn_set_last_error("cannot join communicator segment %s: %s", c->shm_name,
                          rc == -EADDRINUSE ? "rank already taken" : strerror(-rc));
        free(c->send_issued);
        free(c->sig_recv);
        free(c);
        return rc == -EADDRINUSE ? ncclInvalidUsage : ncclSystemError;
    }
    *out = c;
    return ncclSuccess;
}

/* Finish an init according to the comm's mode. */
static ncclResult_t comm_finish_init(struct ncclComm *c)
{
    struct fn_op join = {.kind = FN_OP_JOIN, .comm = c};
    if (!c->blocking) {
        c->init_pending = 1;
        return ncclInProgress;
    }
    return submit(&join);
}

static int config_blocking(const ncclConfig_t *config, int dflt)
{
    if (config && config->blocking != NCCL_CONFIG_UNDEF_INT)
        return config->blocking != 0;
    return dflt;
}

static ncclResult_t init_rank(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank,
                              ncclConfig_t *config)
{
    if (!comm)
        return ncclInvalidArgument;
    *comm = NULL;
    if (nranks < 1 || rank < 0 || rank >= nranks || !id) {
        fn_set_last_error("invalid nranks %d / rank %d", nranks, rank);
        return ncclInvalidArgument;
    }
    uint64_t idh = id_hash(id);
    uint64_t hash = mix64(mix64(idh, next_generation(idh, rank)), 0x524f4f54 /* ROOT */);
    struct ncclComm *c;
    ncclResult_t r =
        comm_create(&c, nranks, rank, hash, config_blocking(config, 1), env_int("LOCAL_RANK", 0));
    if (r != ncclSuccess)
        return r;
    *comm = c;
    r = comm_finish_init(c);
    if (r != ncclSuccess && r != ncclInProgress) {
        fn_comm_unref(c);
        *comm = NULL;
    }
    return r;
}

FN_API ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    return init_rank(comm, nranks, &commId, rank, NULL);
}
FN_ALIAS(ncclCommInitRank);

FN_API ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                            int rank, ncclConfig_t *config)
{
    return init_rank(comm, nranks, &commId, rank, config);
}
FN_ALIAS(ncclCommInitRankConfig);

FN_API ncclResult_t pncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                              ncclUniqueId *commIds, ncclConfig_t *config)
{
    /* Every rank passes the same id array; the first id names the communicator. */
    if (nId < 1 || !commIds)
        return ncclInvalidArgument;
    return init_rank(newcomm, nranks, &commIds[0], myrank, config);
}
FN_ALIAS(ncclCommInitRankScalable);

FN_API ncclResult_t pncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    if (!comms || ndev < 1)
        return ncclInvalidArgument;
    ncclUniqueId id;
    /* Through the PLT, as the genuine library does. */
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess)
        return r;
    uint64_t hash = mix64(mix64(id_hash(&id), 0), 0x524f4f54);
    struct fn_op *joins = calloc((size_t)ndev, sizeof *joins);
    if (!joins)
        return ncclSystemError;
    int made = 0;
    for (; made < ndev; made++) {
        r = comm_create(&comms[made], ndev, made, hash, 1, devlist ? devlist[made] : made);
        if (r != ncclSuccess)
            break;
        joins[made] = (struct fn_op){.kind = FN_OP_JOIN, .comm = comms[made]};
    }
    if (r == ncclSuccess)
        r = fn_run(joins, ndev);
    if (r != ncclSuccess)
        for (int i = 0; i < made; i++) {
            fn_comm_unref(comms[i]);
            comms[i] = NULL;
        }
    free(joins);
    return r;
}
FN_ALIAS(ncclCommInitAll);

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

struct split_ent {
    int key, rank;
};
static int cmp_split(const void *a, const void *b)
{
    const struct split_ent *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->rank > y->rank) - (x->rank < y->rank);
}

FN_API ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                   ncclConfig_t *config)
{
    ncclResult_t r = comm_usable(comm);
    if (r != ncclSuccess)
        return r;
    if (!newcomm || (color < 0 && color != NCCL_SPLIT_NOCOLOR))
        return ncclInvalidArgument;
    *newcomm = NULL;
    int n = comm->nranks;
    int32_t mine[2] = {color, key};
    int32_t *all = calloc((size_t)n * 2, sizeof *all);
    struct split_ent *ents = calloc((size_t)n, sizeof *ents);
    if (!all || !ents) {
        free(all);
        free(ents);
        return ncclSystemError;
    }
    /* Split is collective over the parent: an internal allgather of (color, key). It runs
     * now even inside a group (documented limit). */
    struct fn_op op = {.kind = FN_OP_COLL,
                       .comm = comm,
                       .fn = FN_SPLIT,
                       .sendbuff = mine,
                       .recvbuff = all,
                       .count = 2,
                       .dtype = ncclInt32,
                       .op = ncclSum,
                       .root = 0,
                       .seq = __atomic_fetch_add(&comm->coll_issued, 1, __ATOMIC_RELAXED)};
    fn_async_drain(comm); /* the parent's queued slots come first, in engine order */
    r = fn_run(&op, 1);
    uint64_t ctr = comm->split_count++;
    if (r == ncclSuccess && color != NCCL_SPLIT_NOCOLOR) {
        int m = 0, myrank = -1;
        for (int i = 0; i < n; i++)
            if (all[2 * i] == color)
                ents[m++] = (struct split_ent){all[2 * i + 1], i};
        qsort(ents, (size_t)m, sizeof *ents, cmp_split);
        for (int i = 0; i < m; i++)
            if (ents[i].rank == comm->rank)
                myrank = i;
        uint64_t hash = mix64(mix64(mix64(comm->hash, 0x53504c4954 /* SPLIT */), ctr),
                              (uint64_t)(uint32_t)color);
        struct ncclComm *c;
        r = comm_create(&c, m, myrank, hash, config_blocking(config, comm->blocking), comm->cudev);
        if (r == ncclSuccess) {
            *newcomm = c;
            r = comm_finish_init(c);
            if (r != ncclSuccess && r != ncclInProgress) {
                fn_comm_unref(c);
                *newcomm = NULL;
            }
        }
    }
    free(all);
    free(ents);
    return r;
}
FN_ALIAS(ncclCommSplit);

FN_API ncclResult_t pncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                    ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
    (void)shrinkFlags; /* NCCL_SHRINK_ABORT: nothing is in flight between calls here */
    if (!comm_ok(comm))
        return ncclInvalidArgument;
    if (!newcomm || excludeRanksCount < 0 || (excludeRanksCount > 0 && !excludeRanksList))
        return ncclInvalidArgument;
    *newcomm = NULL;
    int n = comm->nranks;
    int *ex = calloc((size_t)excludeRanksCount + 1, sizeof *ex);
    if (!ex)
        return ncclSystemError;
    memcpy(ex, excludeRanksList, (size_t)excludeRanksCount * sizeof *ex);
    qsort(ex, (size_t)excludeRanksCount, sizeof *ex, cmp_int);
    int m = 0, below = 0;
    uint64_t ctr = comm->shrink_count++;
    uint64_t hash = mix64(mix64(comm->hash, 0x53485249 /* SHRI */), ctr);
    for (int i = 0; i < excludeRanksCount; i++) {
        if (ex[i] < 0 || ex[i] >= n || (i > 0 && ex[i] == ex[i - 1])) {
            free(ex);
            return ncclInvalidArgument;
        }
        if (ex[i] == comm->rank) {
            free(ex);
            fn_set_last_error("ncclCommShrink called by an excluded rank");
            return ncclInvalidArgument;
        }
        if (ex[i] < comm->rank)
            below++;
        hash = mix64(hash, (uint64_t)ex[i]);
        m++;
    }
    free(ex);
    if (n - m < 1)
        return ncclInvalidArgument;
    /* Survivors agree on the child without talking to the excluded (possibly dead) ranks. */
    struct ncclComm *c;
    ncclResult_t r = comm_create(&c, n - m, comm->rank - below, hash,
                                 config_blocking(config, comm->blocking), comm->cudev);
    if (r != ncclSuccess)
        return r;
    *newcomm = c;
    r = comm_finish_init(c);
    if (r != ncclSuccess && r != ncclInProgress) {
        fn_comm_unref(c);
        *newcomm = NULL;
    }
    return r;
}
FN_ALIAS(ncclCommShrink);

/* ---- grow (2.30): NCCL's ids and hashes, so every member agrees without talking ---- */

/* The grow id's magic for the n-th grow (1-based) of comm hash h: the root's
 * ncclCommGetUniqueId and every existing member compute it (NCCL: hashCombine(magic,
 * childCount)); the new ranks read it from the id. Never NCCL_COMM_ID's fixed magic. */
static uint64_t grow_magic(uint64_t h, uint64_t n)
{
    uint64_t m = mix64(mix64(h, 0x47524f57 /* GROW */), n);
    return m == NCG_NCCL_COMM_ID_MAGIC ? m + 1 : m;
}

FN_API ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId)
{
    ncclResult_t r = comm_usable(comm);
    if (r != ncclSuccess)
        return r;
    if (!uniqueId)
        return ncclInvalidArgument;
    if ((r = pncclGetUniqueId(uniqueId)) != ncclSuccess) /* the root's address, zeroed tail */
        return r;
    uint64_t m = grow_magic(comm->hash, comm->grow_count + 1);
    memcpy(uniqueId->internal, &m, sizeof m);
    return ncclSuccess;
}
FN_ALIAS(ncclCommGetUniqueId);

/* Existing ranks: comm, rank -1 (they keep theirs), the id on the root only; new ranks: no
 * comm, the id and their rank. The grown comm is a new one of nRanks members. */
FN_API ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId,
                                  int rank, ncclComm_t *newcomm, ncclConfig_t *config)
{
    if (!newcomm || nRanks <= 0)
        return ncclInvalidArgument;
    *newcomm = NULL;
    uint64_t magic;
    int myrank, blocking, cudev;
    if (comm) {
        ncclResult_t r = comm_usable(comm);
        if (r != ncclSuccess)
            return r;
        if (nRanks <= comm->nranks || rank != -1) {
            fn_set_last_error("ncclCommGrow: existing ranks pass rank -1 and more than %d ranks",
                              comm->nranks);
            return ncclInvalidArgument;
        }
        fn_async_drain(comm); /* the parent's queued work first, as for split */
        magic = grow_magic(comm->hash, ++comm->grow_count);
        if (uniqueId && memcmp(uniqueId->internal, &magic, sizeof magic) != 0) {
            fn_set_last_error("ncclCommGrow: magic mismatch computed by the root");
            return ncclInvalidArgument;
        }
        myrank = comm->rank;
        blocking = config_blocking(config, comm->blocking);
        cudev = comm->cudev;
    } else {
        if (!uniqueId || rank < 0 || rank >= nRanks) {
            fn_set_last_error("ncclCommGrow: new ranks pass the id and a rank below %d", nRanks);
            return ncclInvalidArgument;
        }
        memcpy(&magic, uniqueId->internal, sizeof magic);
        myrank = rank;
        blocking = config_blocking(config, 1);
        cudev = env_int("LOCAL_RANK", 0);
    }
    struct ncclComm *c;
    ncclResult_t r =
        comm_create(&c, nRanks, myrank, mix64(magic, (uint64_t)nRanks), blocking, cudev);
    if (r != ncclSuccess)
        return r;
    *newcomm = c;
    r = comm_finish_init(c);
    if (r != ncclSuccess && r != ncclInProgress) {
        fn_comm_unref(c);
        *newcomm = NULL;
    }
    return r;
}
FN_ALIAS(ncclCommGrow);

/* ---- suspend / resume / memory statistics (2.30) ---- */

FN_API ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags)
{
    (void)flags; /* NCCL_SUSPEND_MEM: nothing to release on the CPU */
    ncclResult_t r = comm_usable(comm);
    if (r != ncclSuccess)
        return r;
    fn_async_drain(comm); /* its work completes first */
    comm->suspended = 1;
    return ncclSuccess;
}
FN_ALIAS(ncclCommSuspend);

FN_API ncclResult_t pncclCommResume(ncclComm_t comm)
{
    if (!comm_ok(comm))
        return ncclInvalidArgument;
    if (!comm->suspended) {
        fn_set_last_error("ncclCommResume: communicator is not suspended");
        return ncclInvalidUsage;
    }
    comm->suspended = 0;
    return ncclSuccess;
}
FN_ALIAS(ncclCommResume);

/* The segment stands for NCCL's suspendable device memory, the comm object for the rest. */
FN_API ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value)
{
    if (!comm_ok(comm) || !value)
        return ncclInvalidArgument;
    uint64_t seg = comm->suspended || !comm->hdr ? 0 : comm->hdr->total;
    uint64_t persist = sizeof *comm;
    switch (stat) {
    case ncclStatGpuMemSuspend:
        *value = seg;
        return ncclSuccess;
    case ncclStatGpuMemSuspended:
        *value = (uint64_t)comm->suspended;
        return ncclSuccess;
    case ncclStatGpuMemPersist:
        *value = persist;
        return ncclSuccess;
    case ncclStatGpuMemTotal:
        *value = seg + persist;
        return ncclSuccess;
    }
    return ncclInvalidArgument;
}
FN_ALIAS(ncclCommMemStats);

FN_API ncclResult_t pncclCommFinalize(ncclComm_t comm)
{
    if (!comm_ok(comm))
        return ncclInvalidArgument;
    /* Synchronous mode: every call completed before it returned; asynchronous: flush. */
    fn_async_drain(comm);
    comm->finalized = 1;
    return ncclSuccess;
}
FN_ALIAS(ncclCommFinalize);

FN_API ncclResult_t pncclCommDestroy(ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess;
    if (!comm_ok(comm))
        return ncclInvalidArgument;
    /* Graph replays started from now on skip (fn_async.c); those running are drained. */
    atomic_store(&comm->dead, 1);
    fn_async_drain(comm); /* as NCCL: the communicator's pending work completes first */
    fn_comm_unref(comm);
    return ncclSuccess;
}
FN_ALIAS(ncclCommDestroy);

static void wait_idle(struct ncclComm *c)
{
    /* The blocked thread was rung awake; it leaves the engine within microseconds. */
    struct timespec ts = {0, 1000000};
    while (atomic_load(&c->busy) > 0)
        nanosleep(&ts, NULL);
}

FN_API ncclResult_t pncclCommAbort(ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess;
    if (!comm_ok(comm))
        return ncclInvalidArgument;
    atomic_store(&comm->aborted, 1);
    atomic_store(&comm->dead, 1);
    fn_ring(comm, comm->rank);
    wait_idle(comm);
    fn_comm_unref(comm);
    return ncclSuccess;
}
FN_ALIAS(ncclCommAbort);

FN_API ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags)
{
    (void)revokeFlags;
    if (!comm_ok(comm))
        return ncclInvalidArgument;
    atomic_store(&comm->revoked, 1);
    fn_ring(comm, comm->rank);
    return ncclSuccess;
}
FN_ALIAS(ncclCommRevoke);

FN_API ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    if (!comm_ok(comm) || !asyncError)
        return ncclInvalidArgument;
    if (atomic_load(&comm->revoked)) {
        *asyncError = ncclRemoteError;
        return ncclSuccess;
    }
    int e = atomic_load(&comm->async_err);
    if (e != ncclSuccess) {
        *asyncError = (ncclResult_t)e;
        return ncclSuccess;
    }
    if (comm->init_pending) {
        /* Report "in progress" at least once, as a nonblocking NCCL init does. */
        if (comm->inprog_reported && fn_join_poll(comm)) {
            comm->init_pending = 0;
        } else {
            comm->inprog_reported = 1;
            *asyncError = ncclInProgress;
            sched_yield(); /* callers spin on this; let the other ranks run */
            return ncclSuccess;
        }
    }
    *asyncError = ncclSuccess;
    return ncclSuccess;
}
FN_ALIAS(ncclCommGetAsyncError);

static ncclResult_t comm_ready(ncclComm_t comm)
{
    if (!comm_ok(comm))
        return ncclInvalidArgument;
    if (comm->init_pending && !comm->joined_seen) {
        fn_set_last_error("communicator is still initializing");
        return ncclInvalidUsage;
    }
    return ncclSuccess;
}

FN_API ncclResult_t pncclCommCount(const ncclComm_t comm, int *count)
{
    ncclResult_t r = comm_ready(comm);
    if (r == ncclSuccess && !count)
        r = ncclInvalidArgument;
    if (r == ncclSuccess)
        *count = comm->nranks;
    return r;
}
FN_ALIAS(ncclCommCount);

FN_API ncclResult_t pncclCommUserRank(const ncclComm_t comm, int *rank)
{
    ncclResult_t r = comm_ready(comm);
    if (r == ncclSuccess && !rank)
        r = ncclInvalidArgument;
    if (r == ncclSuccess)
        *rank = comm->rank;
    return r;
}
FN_ALIAS(ncclCommUserRank);

FN_API ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int *device)
{
    ncclResult_t r = comm_ready(comm);
    if (r == ncclSuccess && !device)
        r = ncclInvalidArgument;
    if (r == ncclSuccess)
        *device = comm->cudev;
    return r;
}
FN_ALIAS(ncclCommCuDevice);

/* ---- collectives and p2p ---- */

static int rooted(int fn)
{
    return fn == FN_BROADCAST || fn == FN_REDUCE || fn == FN_GATHER || fn == FN_SCATTER;
}

static ncclResult_t coll(int fn, const void *sendbuff, void *recvbuff, size_t count,
                         ncclDataType_t dt, ncclRedOp_t op, int root, ncclComm_t comm,
                         cudaStream_t stream)
{
    ncclResult_t r = comm_usable(comm);
    if (r != ncclSuccess)
        return r;
    if (!fn_dtype_valid(dt)) {
        fn_set_last_error("invalid datatype %d", (int)dt);
        return ncclInvalidArgument;
    }
    if ((int)op < 0 || (op >= ncclNumOps && (op - ncclNumOps >= FN_MAX_USER_OPS ||
                                             !comm->uops[op - ncclNumOps].used))) {
        fn_set_last_error("invalid reduction operation %d", (int)op);
        return ncclInvalidArgument;
    }
    if (rooted(fn) && (root < 0 || root >= comm->nranks)) {
        fn_set_last_error("invalid root %d", root);
        return ncclInvalidArgument;
    }
    int me = comm->rank;
    int need_send = !((fn == FN_BROADCAST || fn == FN_SCATTER) && me != root);
    int need_recv = !((fn == FN_REDUCE || fn == FN_GATHER) && me != root);
    if (count > 0 && ((need_send && !sendbuff) || (need_recv && !recvbuff))) {
        fn_set_last_error("NULL buffer");
        return ncclInvalidArgument;
    }
    struct fn_op o = {.kind = FN_OP_COLL,
                      .comm = comm,
                      .fn = fn,
                      .sendbuff = sendbuff,
                      .recvbuff = recvbuff,
                      .count = count,
                      .dtype = dt,
                      .op = op,
                      .root = rooted(fn) ? root : 0,
                      .stream = stream}; /* the slot is taken when it is submitted */
    return submit(&o);
}

FN_API ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                   cudaStream_t stream)
{
    return coll(FN_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}
FN_ALIAS(ncclAllReduce);

FN_API ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                   ncclDataType_t datatype, int root, ncclComm_t comm,
                                   cudaStream_t stream)
{
    return coll(FN_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}
FN_ALIAS(ncclBroadcast);

FN_API ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                               ncclComm_t comm, cudaStream_t stream)
{
    /* Through the PLT, exactly as NCCL 2.28: an interposed ncclBroadcast sees this call. */
    return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}
FN_ALIAS(ncclBcast);

FN_API ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                                ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                                cudaStream_t stream)
{
    return coll(FN_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}
FN_ALIAS(ncclReduce);

FN_API ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return coll(FN_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm, stream);
}
FN_ALIAS(ncclAllGather);

FN_API ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                       cudaStream_t stream)
{
    return coll(FN_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream);
}
FN_ALIAS(ncclReduceScatter);

FN_API ncclResult_t pncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                                  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return coll(FN_ALLTOALL, sendbuff, recvbuff, count, datatype, ncclSum, 0, comm, stream);
}
FN_ALIAS(ncclAlltoAll);

FN_API ncclResult_t pncclGather(const void *sendbuff, void *recvbuff, size_t count,
                                ncclDataType_t datatype, int root, ncclComm_t comm,
                                cudaStream_t stream)
{
    return coll(FN_GATHER, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}
FN_ALIAS(ncclGather);

FN_API ncclResult_t pncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                 ncclDataType_t datatype, int root, ncclComm_t comm,
                                 cudaStream_t stream)
{
    return coll(FN_SCATTER, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}
FN_ALIAS(ncclScatter);

static ncclResult_t p2p(int kind, const void *sendbuff, void *recvbuff, size_t count,
                        ncclDataType_t dt, int peer, ncclComm_t comm, cudaStream_t stream)
{
    ncclResult_t r = comm_usable(comm);
    if (r != ncclSuccess)
        return r;
    if (!fn_dtype_valid(dt) || peer < 0 || peer >= comm->nranks) {
        fn_set_last_error("invalid datatype %d or peer %d", (int)dt, peer);
        return ncclInvalidArgument;
    }
    if (count > 0 && !(kind == FN_OP_SEND ? sendbuff : recvbuff))
        return ncclInvalidArgument;
    struct fn_op o = {.kind = kind,
                      .comm = comm,
                      .sendbuff = sendbuff,
                      .recvbuff = recvbuff,
                      .count = count,
                      .dtype = dt,
                      .root = peer,
                      .stream = stream}; /* the message index is taken when submitted */
    return submit(&o);
}

FN_API ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                              ncclComm_t comm, cudaStream_t stream)
{
    return p2p(FN_OP_SEND, sendbuff, NULL, count, datatype, peer, comm, stream);
}
FN_ALIAS(ncclSend);

FN_API ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                              ncclComm_t comm, cudaStream_t stream)
{
    return p2p(FN_OP_RECV, NULL, recvbuff, count, datatype, peer, comm, stream);
}
FN_ALIAS(ncclRecv);

/* ---- reduction ops, registration, memory ---- */

FN_API ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar,
                                              ncclDataType_t datatype,
                                              ncclScalarResidence_t residence, ncclComm_t comm)
{
    if (!comm_ok(comm) || !op || !scalar || !fn_dtype_valid(datatype))
        return ncclInvalidArgument;
    for (int i = 0; i < FN_MAX_USER_OPS; i++)
        if (!comm->uops[i].used) {
            struct fn_user_op *u = &comm->uops[i];
            u->used = 1;
            u->dtype = datatype;
            u->residence = residence;
            u->ptr = scalar;
            memset(u->imm, 0, sizeof u->imm);
            if (residence == ncclScalarHostImmediate)
                memcpy(u->imm, scalar, fn_dtype_size(datatype));
            *op = (ncclRedOp_t)(ncclNumOps + i);
            return ncclSuccess;
        }
    fn_set_last_error("too many user reduction ops (%d)", FN_MAX_USER_OPS);
    return ncclInternalError;
}
FN_ALIAS(ncclRedOpCreatePreMulSum);

FN_API ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    if (!comm_ok(comm) || (int)op < ncclNumOps || op - ncclNumOps >= FN_MAX_USER_OPS ||
        !comm->uops[op - ncclNumOps].used)
        return ncclInvalidArgument;
    comm->uops[op - ncclNumOps].used = 0;
    return ncclSuccess;
}
FN_ALIAS(ncclRedOpDestroy);

FN_API ncclResult_t pncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    (void)buff;
    (void)size;
    if (!comm_ok(comm) || !handle)
        return ncclInvalidArgument;
    *handle = comm; /* any non-NULL token: host memory needs no registration */
    return ncclSuccess;
}
FN_ALIAS(ncclCommRegister);

FN_API ncclResult_t pncclCommDeregister(const ncclComm_t comm, void *handle)
{
    (void)handle;
    return comm_ok(comm) ? ncclSuccess : ncclInvalidArgument;
}
FN_ALIAS(ncclCommDeregister);

FN_API ncclResult_t pncclMemAlloc(void **ptr, size_t size)
{
    if (!ptr)
        return ncclInvalidArgument;
    if (posix_memalign(ptr, 4096, size ? size : 1) != 0)
        return ncclSystemError;
    return ncclSuccess;
}
FN_ALIAS(ncclMemAlloc);

FN_API ncclResult_t pncclMemFree(void *ptr)
{
    free(ptr);
    return ncclSuccess;
}
FN_ALIAS(ncclMemFree);

/* ---- versions and errors ---- */

FN_API ncclResult_t pncclGetVersion(int *version)
{
    if (!version)
        return ncclInvalidArgument;
    *version = NCG_NCCL_VERSION_CODE(NCG_NCCL_ABI_MAJOR, NCG_NCCL_ABI_MINOR, NCG_NCCL_ABI_PATCH);
    return ncclSuccess;
}
FN_ALIAS(ncclGetVersion);

FN_API const char *pncclGetErrorString(ncclResult_t code)
{
    switch (code) {
    case ncclSuccess:
        return "no error";
    case ncclUnhandledCudaError:
        return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
        return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
        return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
        return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
        return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
        return "remote process exited or there was a network error";
    case ncclInProgress:
        return "NCCL operation in progress";
    default:
        return "unknown result code";
    }
}
FN_ALIAS(ncclGetErrorString);

FN_API const char *pncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return t_last_error;
}
FN_ALIAS(ncclGetLastError);

FN_API void pncclResetDebugInit(void)
{
}
FN_ALIAS(ncclResetDebugInit);
