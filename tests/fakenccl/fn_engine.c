/* fakenccl engine: one shared segment per communicator under /dev/shm, the round protocol of
 * collectives (every rank posts a descriptor and its contribution; a round completes only when
 * all descriptors are identical, so mismatched calls block forever, as in NCCL), the p2p byte
 * rings, and the progress loop that waits on a futex doorbell instead of polling. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fn_internal.h"

#define FN_DEFAULT_STAGE (1u << 20)
#define FN_DEFAULT_PAIR (256u << 10)

static size_t align_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

static size_t env_bytes(const char *name, size_t dflt, size_t min)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    unsigned long long v = strtoull(s, NULL, 0);
    return v < min ? min : (size_t)v;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* Shared (not PRIVATE) futex ops: the word lives in a segment mapped by several processes. */
static void futex_wait(_Atomic uint32_t *w, uint32_t val, double timeout_s)
{
    struct timespec ts, *tp = NULL;
    if (timeout_s >= 0) {
        ts.tv_sec = (time_t)timeout_s;
        ts.tv_nsec = (long)((timeout_s - (double)ts.tv_sec) * 1e9);
        tp = &ts;
    }
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, val, tp, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

void fn_ring(struct ncclComm *c, int r)
{
    struct fn_rank_area *ra = &c->ranks[r];
    /* seq_cst pair with the waiter's sleepers increment: either it sees the new doorbell value
     * in FUTEX_WAIT, or we see its sleepers count and wake it. */
    atomic_fetch_add(&ra->doorbell, 1);
    if (atomic_load(&ra->sleepers))
        futex_wake(&ra->doorbell);
}

static void ring_all(struct ncclComm *c)
{
    for (int r = 0; r < c->nranks; r++)
        if (r != c->rank)
            fn_ring(c, r);
}

int fn_seg_attach(struct ncclComm *c)
{
    int n = c->nranks;
    size_t stage = env_bytes("FAKENCCL_STAGE_BYTES", FN_DEFAULT_STAGE, 64);
    size_t pairb = env_bytes("FAKENCCL_P2P_BYTES", FN_DEFAULT_PAIR, 64);
    size_t putb = align_up(env_bytes("FAKENCCL_PUT_BYTES", 64 * 1024, 256), FN_CACHELINE);
    stage = align_up(stage < (size_t)n * 8 ? (size_t)n * 8 : stage, FN_CACHELINE);
    pairb = align_up(pairb, FN_CACHELINE);
    struct fn_seg_hdr h0 = {0};
    h0.magic = FN_SEG_MAGIC;
    h0.version = FN_SEG_VERSION;
    h0.nranks = (uint32_t)n;
    h0.stage_bytes = stage;
    h0.pair_bytes = pairb;
    h0.off_ranks = align_up(sizeof(struct fn_seg_hdr), 4096);
    h0.off_stage = align_up(h0.off_ranks + (size_t)n * sizeof(struct fn_rank_area), 4096);
    h0.off_pairs = h0.off_stage + (size_t)n * 2 * stage;
    h0.off_pair_data = align_up(h0.off_pairs + (size_t)n * n * sizeof(struct fn_pair), 4096);
    h0.put_bytes = putb;
    h0.off_mbox = align_up(h0.off_pair_data + (size_t)n * n * pairb, 4096);
    h0.off_mbox_data = align_up(h0.off_mbox + (size_t)n * n * sizeof(struct fn_mbox), 4096);
    h0.total = h0.off_mbox_data + (size_t)n * n * putb;

    int creator = 1;
    int fd = shm_open(c->shm_name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno == EEXIST) {
        creator = 0;
        fd = shm_open(c->shm_name, O_RDWR, 0600);
    }
    if (fd < 0)
        return -errno;
    size_t total;
    if (creator) {
        /* Reserve every page now (this also sets the size): a sparse tmpfs file on a full
         * /dev/shm would SIGBUS the first rank that touches a missing page, later, mid-call. A
         * real library fails init instead, so do we (ENOSPC: ncclSystemError). Peers see the
         * size only once the pages are there. */
        int e = posix_fallocate(fd, 0, (off_t)h0.total);
        if (e != 0) {
            close(fd);
            shm_unlink(c->shm_name);
            return -e;
        }
        total = h0.total;
    } else {
        /* The creator sizes the file right after creating it: a short, bounded wait. */
        struct stat st;
        int tries = 0;
        while (fstat(fd, &st) == 0 && st.st_size == 0 && tries++ < 10000)
            pause_ms(1);
        if (st.st_size == 0) {
            close(fd);
            return -ETIMEDOUT;
        }
        total = (size_t)st.st_size;
    }
    void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -errno;
    struct fn_seg_hdr *h = m;
    if (creator) {
        memcpy(h, &h0, offsetof(struct fn_seg_hdr, ready));
        atomic_store_explicit(&h->ready, 1, memory_order_release); /* header before ready */
    } else {
        int tries = 0;
        while (!atomic_load_explicit(&h->ready, memory_order_acquire) && tries++ < 10000)
            pause_ms(1);
        if (!atomic_load(&h->ready) || h->magic != FN_SEG_MAGIC || h->nranks != (uint32_t)n ||
            h->total != total) {
            munmap(m, total);
            return -EPROTO;
        }
    }
    c->hdr = h;
    c->ranks = (struct fn_rank_area *)((unsigned char *)m + h->off_ranks);
    c->stage = (unsigned char *)m + h->off_stage;
    c->pairs = (struct fn_pair *)((unsigned char *)m + h->off_pairs);
    c->pair_data = (unsigned char *)m + h->off_pair_data;
    c->mbox = (struct fn_mbox *)((unsigned char *)m + h->off_mbox);
    c->mbox_data = (unsigned char *)m + h->off_mbox_data;
    struct fn_rank_area *me = &c->ranks[c->rank];
    uint32_t zero = 0;
    if (!atomic_compare_exchange_strong(&me->joined, &zero, 1)) {
        munmap(m, total);
        c->hdr = NULL;
        return -EADDRINUSE; /* two processes claimed the same rank */
    }
    me->pid = (int32_t)getpid();
    atomic_fetch_add(&h->joined_count, 1);
    ring_all(c);
    return 0;
}

void fn_seg_detach(struct ncclComm *c)
{
    if (!c->hdr)
        return;
    if (!c->joined_seen)
        shm_unlink(c->shm_name); /* init never completed: do not leave the name behind */
    munmap(c->hdr, c->hdr->total);
    c->hdr = NULL;
}

int fn_join_poll(struct ncclComm *c)
{
    if (c->joined_seen)
        return 1;
    if (atomic_load_explicit(&c->hdr->joined_count, memory_order_acquire) < (uint32_t)c->nranks)
        return 0;
    c->joined_seen = 1;
    /* Everyone has the segment mapped: the last rank to notice removes its name, so nothing
     * is left in /dev/shm even if the job is killed later. */
    if (atomic_fetch_add(&c->hdr->unlink_count, 1) + 1 == (uint32_t)c->nranks)
        shm_unlink(c->shm_name);
    return 1;
}

/* ---- collectives ---- */

static unsigned char *stage_of(struct ncclComm *c, int r, uint64_t round)
{
    return c->stage + ((size_t)r * 2 + (round & 1)) * c->hdr->stage_bytes;
}

/* Blocks each rank deposits per round (the chunk unit is one element index in each block). */
static uint64_t deposit_blocks(const struct fn_op *op, int n)
{
    switch (op->fn) {
    case FN_REDUCESCATTER:
    case FN_ALLTOALL:
    case FN_SCATTER:
        return (uint64_t)n;
    default:
        return 1;
    }
}

static void coll_setup(struct fn_op *op)
{
    struct ncclComm *c = op->comm;
    size_t es = fn_dtype_size(op->dtype);
    op->blk = op->count;
    op->elems_per_chunk = c->hdr->stage_bytes / (deposit_blocks(op, c->nranks) * es);
    op->nchunks = op->blk ? (op->blk + op->elems_per_chunk - 1) / op->elems_per_chunk : 1;
    op->chunk = 0;
    op->state = 1;
}

/* Copy len elements for deposit, pre-multiplying for a user (PreMulSum) op. */
static void deposit_copy(struct fn_op *op, void *dst, const void *src, size_t len)
{
    size_t es = fn_dtype_size(op->dtype);
    struct ncclComm *c = op->comm;
    if (op->op >= ncclNumOps &&
        (op->fn == FN_ALLREDUCE || op->fn == FN_REDUCE || op->fn == FN_REDUCESCATTER)) {
        struct fn_user_op *u = &c->uops[op->op - ncclNumOps];
        fn_premul(dst, src, len, op->dtype,
                  u->residence == ncclScalarHostImmediate ? u->imm : u->ptr);
    } else if (len) {
        memcpy(dst, src, len * es);
    }
}

static void coll_post(struct fn_op *op)
{
    struct ncclComm *c = op->comm;
    int n = c->nranks, me = c->rank;
    size_t es = fn_dtype_size(op->dtype);
    uint64_t a = op->chunk * op->elems_per_chunk;
    uint64_t len = op->blk > a ? op->blk - a : 0;
    if (len > op->elems_per_chunk)
        len = op->elems_per_chunk;
    unsigned char *st = stage_of(c, me, c->round);
    const unsigned char *sb = op->sendbuff;
    switch (op->fn) {
    case FN_BROADCAST:
        if (me == op->root)
            deposit_copy(op, st, sb + a * es, len);
        break;
    case FN_SCATTER:
        if (me != op->root)
            break;
        /* fall through */
    case FN_REDUCESCATTER:
    case FN_ALLTOALL:
        for (int j = 0; j < n; j++)
            deposit_copy(op, st + (size_t)j * op->elems_per_chunk * es,
                         sb + ((size_t)j * op->blk + a) * es, len);
        break;
    default:
        deposit_copy(op, st, sb + a * es, len);
        break;
    }
    struct fn_rank_area *ra = &c->ranks[me];
    struct fn_desc *d = &ra->desc[c->round & 1];
    d->fn = (uint32_t)op->fn;
    d->dtype = (uint32_t)op->dtype;
    d->op = op->op >= ncclNumOps ? ncclNumOps : (uint32_t)op->op;
    d->root = op->root;
    d->count = op->count;
    d->chunk = op->chunk;
    ra->slot = op->seq;
    /* data and descriptor before the round number that publishes them */
    atomic_store_explicit(&ra->posted, c->round + 1, memory_order_release);
    ring_all(c);
}

static int coll_ready(struct fn_op *op)
{
    struct ncclComm *c = op->comm;
    const struct fn_desc *mine = &c->ranks[c->rank].desc[c->round & 1];
    for (int r = 0; r < c->nranks; r++) {
        if (atomic_load_explicit(&c->ranks[r].posted, memory_order_acquire) < c->round + 1)
            return 0;
        /* A different call at this slot: never ready, the ranks wait forever like NCCL. */
        if (memcmp(&c->ranks[r].desc[c->round & 1], mine, sizeof *mine) != 0)
            return 0;
    }
    return 1;
}

static void coll_compute(struct fn_op *op)
{
    struct ncclComm *c = op->comm;
    int n = c->nranks, me = c->rank;
    size_t es = fn_dtype_size(op->dtype);
    uint64_t a = op->chunk * op->elems_per_chunk;
    uint64_t len = op->blk > a ? op->blk - a : 0;
    if (len > op->elems_per_chunk)
        len = op->elems_per_chunk;
    unsigned char *rb = op->recvbuff;
    const void *srcs[n > 0 ? n : 1];
    size_t mine_off = (size_t)me * op->elems_per_chunk * es;
    if (len == 0 && op->fn != FN_SPLIT)
        return;
    switch (op->fn) {
    case FN_ALLREDUCE:
    case FN_REDUCE:
        if (op->fn == FN_REDUCE && me != op->root)
            break;
        for (int r = 0; r < n; r++)
            srcs[r] = stage_of(c, r, c->round);
        fn_reduce(rb + a * es, srcs, n, len, op->dtype, op->op, n);
        break;
    case FN_REDUCESCATTER:
        for (int r = 0; r < n; r++)
            srcs[r] = stage_of(c, r, c->round) + mine_off;
        fn_reduce(rb + a * es, srcs, n, len, op->dtype, op->op, n);
        break;
    case FN_BROADCAST:
        memmove(rb + a * es, stage_of(c, op->root, c->round), len * es);
        break;
    case FN_GATHER:
        if (me != op->root)
            break;
        /* fall through */
    case FN_ALLGATHER:
    case FN_SPLIT:
        for (int r = 0; r < n; r++)
            memmove(rb + ((size_t)r * op->blk + a) * es, stage_of(c, r, c->round), len * es);
        break;
    case FN_ALLTOALL:
        for (int r = 0; r < n; r++)
            memmove(rb + ((size_t)r * op->blk + a) * es, stage_of(c, r, c->round) + mine_off,
                    len * es);
        break;
    case FN_SCATTER:
        memmove(rb + a * es, stage_of(c, op->root, c->round) + mine_off, len * es);
        break;
    }
}

static int coll_progress(struct fn_op *op)
{
    struct ncclComm *c = op->comm;
    int progressed = 0;
    if (op->state == 0) {
        if (c->coll_done != op->seq)
            return 0; /* an earlier collective of this comm (same group) goes first */
        coll_setup(op);
    }
    while (!op->done) {
        if (op->state == 1) {
            coll_post(op);
            op->state = 2;
            progressed = 1;
        }
        if (!coll_ready(op))
            break;
        coll_compute(op);
        c->round++;
        progressed = 1;
        if (++op->chunk >= op->nchunks) {
            op->done = 1;
            c->coll_done++;
        } else {
            op->state = 1;
        }
    }
    return progressed;
}

/* ---- point to point ---- */

static struct fn_pair *pair_of(struct ncclComm *c, int s, int r)
{
    return &c->pairs[(size_t)s * c->nranks + r];
}
static unsigned char *pair_buf(struct ncclComm *c, int s, int r)
{
    return c->pair_data + ((size_t)s * c->nranks + r) * c->hdr->pair_bytes;
}

static int send_progress(struct fn_op *op)
{
    struct ncclComm *c = op->comm;
    int me = c->rank, peer = op->root;
    struct fn_pair *p = pair_of(c, me, peer);
    uint64_t bytes = op->count * fn_dtype_size(op->dtype), cap = c->hdr->pair_bytes;
    int progressed = 0;
    if (op->state == 0) {
        if (c->send_done[peer] != op->seq)
            return 0; /* FIFO per (me, peer) */
        p->msg_bytes = bytes;
        atomic_store_explicit(&p->msg_posted, op->seq + 1, memory_order_release);
        fn_ring(c, peer);
        op->state = 1;
        progressed = 1;
    }
    if (op->state == 1) {
        if (atomic_load_explicit(&p->msg_accepted, memory_order_acquire) < op->seq + 1)
            return progressed; /* not matched (yet, or never: a size mismatch blocks) */
        op->state = 2;
        progressed = 1;
    }
    uint64_t tail = atomic_load_explicit(&p->tail, memory_order_acquire);
    uint64_t head = atomic_load_explicit(&p->head, memory_order_relaxed);
    while (op->moved < bytes) {
        uint64_t space = cap - (head - tail), want = bytes - op->moved;
        if (space == 0)
            break;
        if (want > space)
            want = space;
        uint64_t off = head % cap, first = cap - off < want ? cap - off : want;
        const unsigned char *src = (const unsigned char *)op->sendbuff + op->moved;
        memcpy(pair_buf(c, me, peer) + off, src, first);
        memcpy(pair_buf(c, me, peer), src + first, want - first);
        head += want;
        op->moved += want;
        atomic_store_explicit(&p->head, head, memory_order_release); /* bytes before head */
        fn_ring(c, peer);
        progressed = 1;
    }
    /* Complete only once the receiver consumed everything: a send nobody receives blocks. */
    if (op->moved == bytes && atomic_load_explicit(&p->tail, memory_order_acquire) == head) {
        op->done = 1;
        c->send_done[peer]++;
        progressed = 1;
    }
    return progressed;
}

static int recv_progress(struct fn_op *op)
{
    struct ncclComm *c = op->comm;
    int me = c->rank, peer = op->root;
    struct fn_pair *p = pair_of(c, peer, me);
    uint64_t bytes = op->count * fn_dtype_size(op->dtype), cap = c->hdr->pair_bytes;
    int progressed = 0;
    if (op->state == 0) {
        if (c->recv_done[peer] != op->seq)
            return 0;
        if (atomic_load_explicit(&p->msg_posted, memory_order_acquire) < op->seq + 1)
            return 0;
        if (p->msg_bytes != bytes)
            return 0; /* size mismatch: never matches, both sides block */
        atomic_store_explicit(&p->msg_accepted, op->seq + 1, memory_order_release);
        fn_ring(c, peer);
        op->state = 2;
        progressed = 1;
    }
    uint64_t head = atomic_load_explicit(&p->head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&p->tail, memory_order_relaxed);
    while (op->moved < bytes && head > tail) {
        uint64_t want = bytes - op->moved;
        if (want > head - tail)
            want = head - tail;
        uint64_t off = tail % cap, first = cap - off < want ? cap - off : want;
        unsigned char *dst = (unsigned char *)op->recvbuff + op->moved;
        memcpy(dst, pair_buf(c, peer, me) + off, first);
        memcpy(dst + first, pair_buf(c, peer, me), want - first);
        tail += want;
        op->moved += want;
        atomic_store_explicit(&p->tail, tail, memory_order_release); /* copy-out before tail */
        fn_ring(c, peer);
        progressed = 1;
    }
    if (op->moved == bytes) {
        op->done = 1;
        c->recv_done[peer]++;
        fn_ring(c, peer);
        progressed = 1;
    }
    return progressed;
}

/* ---- the progress loop ---- */

const char *fn_op_name(const struct fn_op *op)
{
    static const char *const coll[] = {
        [FN_ALLREDUCE] = "ncclAllReduce",
        [FN_BROADCAST] = "ncclBroadcast",
        [FN_REDUCE] = "ncclReduce",
        [FN_ALLGATHER] = "ncclAllGather",
        [FN_REDUCESCATTER] = "ncclReduceScatter",
        [FN_ALLTOALL] = "ncclAlltoAll",
        [FN_GATHER] = "ncclGather",
        [FN_SCATTER] = "ncclScatter",
        [FN_SPLIT] = "ncclCommSplit",
    };
    switch (op->kind) {
    case FN_OP_SEND:
        return "ncclSend";
    case FN_OP_RECV:
        return "ncclRecv";
    case FN_OP_JOIN:
        return "ncclCommInitRank";
    case FN_OP_PUT:
        return op->win < 0 ? "ncclSignal" : "ncclPutSignal";
    case FN_OP_WAITSIG:
        return "ncclWaitSignal";
    default:
        return op->fn > 0 && op->fn <= FN_SPLIT ? coll[op->fn] : "?";
    }
}

static double timeout_s(void)
{
    const char *s = getenv("FAKENCCL_TIMEOUT_S");
    double v = s && *s ? atof(s) : 0;
    return v > 0 ? v : -1;
}

static void watchdog_line(const struct fn_op *op, double waited)
{
    char what[96];
    if (op->kind == FN_OP_SEND || op->kind == FN_OP_RECV)
        snprintf(what, sizeof what, "%s %s peer %d message %llu", fn_op_name(op),
                 op->kind == FN_OP_SEND ? "to" : "from", op->root, (unsigned long long)op->seq);
    else if (op->kind == FN_OP_PUT || op->kind == FN_OP_WAITSIG)
        snprintf(what, sizeof what, "%s %s peer %d signal %llu", fn_op_name(op),
                 op->kind == FN_OP_PUT ? "to" : "from", op->root,
                 (unsigned long long)op->seq + (op->kind == FN_OP_PUT));
    else if (op->kind == FN_OP_JOIN)
        snprintf(what, sizeof what, "%s (waiting for the other ranks to join)", fn_op_name(op));
    else
        snprintf(what, sizeof what, "%s slot %llu", fn_op_name(op), (unsigned long long)op->seq);
    fprintf(stderr,
            "fakenccl: watchdog: rank %d comm %016llx (nranks %d): %s blocked for %g s, "
            "returning ncclSystemError\n",
            op->comm->rank, (unsigned long long)op->comm->hash, op->comm->nranks, what, waited);
    fn_set_last_error("%s blocked for %g s (FAKENCCL_TIMEOUT_S)", fn_op_name(op), waited);
}

static int op_progress(struct fn_op *op)
{
    if (fn_stall_hold(op)) /* FAKENCCL_STALL (fn_stall.c) */
        return 0;
    if (!fn_join_poll(op->comm))
        return 0;
    switch (op->kind) {
    case FN_OP_COLL:
        return coll_progress(op);
    case FN_OP_SEND:
        return send_progress(op);
    case FN_OP_RECV:
        return recv_progress(op);
    case FN_OP_PUT:
        return fn_put_progress(op);
    case FN_OP_WAITSIG:
        return fn_wait_progress(op);
    default:
        op->done = 1;
        return 1;
    }
}

ncclResult_t fn_run(struct fn_op *ops, int nops)
{
    double limit = timeout_s(), last = -1;
    ncclResult_t res = ncclSuccess;
    for (int i = 0; i < nops; i++)
        atomic_fetch_add(&ops[i].comm->busy, 1);
    for (;;) {
        struct fn_op *first = NULL;
        int multi = 0, progressed = 0;
        /* Snapshot the doorbell before looking, so a ring after the look is never lost. */
        struct fn_rank_area *bell = NULL;
        for (int i = 0; i < nops; i++)
            if (!ops[i].done) {
                struct fn_rank_area *b = &ops[i].comm->ranks[ops[i].comm->rank];
                if (!bell)
                    bell = b;
                else if (b != bell)
                    multi = 1;
            }
        uint32_t seen = bell ? atomic_load(&bell->doorbell) : 0;
        for (int i = 0; i < nops; i++) {
            struct fn_op *op = &ops[i];
            if (op->done)
                continue;
            if (atomic_load(&op->comm->aborted) || atomic_load(&op->comm->revoked)) {
                fn_set_last_error("%s interrupted: communicator %s", fn_op_name(op),
                                  atomic_load(&op->comm->aborted) ? "aborted" : "revoked");
                res = ncclRemoteError;
                goto out;
            }
            if (op_progress(op))
                progressed = 1;
            if (!op->done && !first)
                first = op;
        }
        if (!first)
            break;
        double t = now_s();
        if (progressed || last < 0) {
            last = t;
            if (progressed)
                continue;
        }
        if (limit > 0 && t - last >= limit) {
            watchdog_line(first, limit); /* the configured limit: a stable message */
            atomic_store(&first->comm->async_err, ncclSystemError);
            res = ncclSystemError;
            goto out;
        }
        /* Several comms' doorbells (InitAll, or a group spanning comms): wait on one, briefly. */
        double wait = multi ? 0.001 : -1;
        if (limit > 0) {
            double rem = limit - (t - last);
            if (wait < 0 || rem < wait)
                wait = rem;
        }
        double sw = fn_stall_wait(); /* FAKENCCL_STALL's timed hold ends then */
        if (sw >= 0 && (wait < 0 || sw + 0.001 < wait))
            wait = sw + 0.001;
        atomic_fetch_add(&bell->sleepers, 1);
        futex_wait(&bell->doorbell, seen, wait);
        atomic_fetch_sub(&bell->sleepers, 1);
    }
out:
    for (int i = 0; i < nops; i++)
        atomic_fetch_sub(&ops[i].comm->busy, 1);
    return res;
}
