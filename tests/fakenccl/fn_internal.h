/* fakenccl internals: the shared-memory layout of one communicator, the process-private comm
 * object, pending operations and the progress engine that drives them. Private to
 * tests/fakenccl; applications only see the NCCL API (include/ncclguard/nccl_abi.h). */
#ifndef FN_INTERNAL_H
#define FN_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ncclguard/nccl_abi.h"

#define FN_API __attribute__((visibility("default")))
/* pnccl##name is the strong definition, nccl##name a weak alias at the same address, as in
 * the genuine library (PMPI style). */
#define FN_ALIAS(name)                                                                             \
    extern __typeof(p##name) name __attribute__((weak, alias("p" #name), visibility("default")))

#define FN_SEG_MAGIC 0x47455343434e4b46ull /* "FKNCCSEG" little-endian */
#define FN_SEG_VERSION 2u                  /* 2: put mailboxes (one-sided signals, fn_rma.c) */
#define FN_CACHELINE 64
#define FN_MAX_USER_OPS 64
#define FN_MAX_WINDOWS 256 /* windows registered on one comm over its life */
#define FN_SIG_IDX 8       /* signal indices 0..7 (NCCL 2.30 takes 0 only) */
#define FN_SIG_CTX 4       /* contexts 0..3 (NCCL 2.30 takes 0 only) */

/* Collective function codes carried in a round descriptor; equal codes must meet. */
enum fn_fn {
    FN_ALLREDUCE = 1,
    FN_BROADCAST,
    FN_REDUCE,
    FN_ALLGATHER,
    FN_REDUCESCATTER,
    FN_ALLTOALL,
    FN_GATHER,
    FN_SCATTER,
    FN_SPLIT, /* internal allgather of (color, key) for ncclCommSplit */
};

/* What a rank posts for one round; every member must post an identical one to complete it.
 * op is the reduction class (built-in value, or ncclNumOps for any user op). */
struct fn_desc {
    uint32_t fn, dtype, op;
    int32_t root;
    uint64_t count, chunk;
};

/* One rank's control area, one cache line per hot word group. */
struct fn_rank_area {
    _Atomic uint32_t doorbell; /* bumped by anyone who may have unblocked this rank */
    _Atomic uint32_t sleepers; /* threads of this rank in FUTEX_WAIT on doorbell */
    _Atomic uint32_t joined;
    int32_t pid;
    _Atomic uint64_t posted; /* rounds posted: round k is posted once posted >= k + 1 */
    uint64_t slot;           /* collective slot this rank is at (informational) */
    char pad0[FN_CACHELINE - 32];
    _Alignas(FN_CACHELINE) struct fn_desc desc[2]; /* by round parity */
};

/* One ordered (sender, receiver) channel: a byte ring plus message descriptors. */
struct fn_pair {
    _Atomic uint64_t msg_posted;   /* messages whose size the sender announced */
    _Atomic uint64_t msg_accepted; /* messages the receiver matched (equal size) */
    _Atomic uint64_t head;         /* bytes written by the sender, ever */
    _Atomic uint64_t tail;         /* bytes consumed by the receiver, ever */
    uint64_t msg_bytes;            /* size of message msg_posted - 1 */
    char pad[FN_CACHELINE - 40];
};

/* One ordered (sender, receiver) put mailbox: entries (struct fn_put_hdr, then its bytes padded
 * to 8) the sender appends and the receiver applies to its window, in order (fn_rma.c). */
struct fn_mbox {
    _Atomic uint64_t head; /* bytes appended by the sender, ever */
    _Atomic uint64_t tail; /* bytes applied by the receiver, ever */
    char pad[FN_CACHELINE - 16];
};

struct fn_seg_hdr {
    uint64_t magic;
    uint32_t version, nranks;
    uint64_t stage_bytes; /* per rank and parity */
    uint64_t pair_bytes;  /* ring capacity per ordered pair */
    uint64_t off_ranks, off_stage, off_pairs, off_pair_data, total;
    uint64_t put_bytes; /* mailbox capacity per ordered pair */
    uint64_t off_mbox, off_mbox_data;
    _Atomic uint32_t ready; /* set by the creator once the header is valid */
    _Atomic uint32_t joined_count;
    _Atomic uint32_t unlink_count; /* ranks that saw the full join; the last unlinks the name */
    char pad[FN_CACHELINE - 12];
};

struct fn_user_op {
    int used;
    ncclDataType_t dtype;
    ncclScalarResidence_t residence;
    unsigned char imm[8]; /* host-immediate scalar */
    const void *ptr;      /* "device" (host memory here) scalar, read at reduction time */
};

struct ncclComm {
    uint64_t magic;
    uint64_t hash; /* identity, equal on every member */
    char shm_name[96];
    int nranks, rank, cudev;
    int blocking;
    struct fn_seg_hdr *hdr;
    struct fn_rank_area *ranks;
    unsigned char *stage;
    struct fn_pair *pairs;
    unsigned char *pair_data;
    /* state of the thread driving this comm (one at a time, as in NCCL) */
    uint64_t round;                                              /* rounds completed */
    uint64_t coll_issued, coll_done;                             /* collective slots */
    uint64_t *send_issued, *send_done, *recv_issued, *recv_done; /* per peer */
    uint64_t split_count, shrink_count;
    int joined_seen;  /* saw every rank joined */
    int init_pending; /* nonblocking init not yet observed complete */
    int inprog_reported;
    _Atomic int aborted, revoked;
    _Atomic int busy; /* threads inside the progress engine on this comm */
    _Atomic int async_err;
    /* asynchronous mode: queued jobs hold references, the handle holds one */
    _Atomic int refs;
    _Atomic uint32_t pending; /* jobs enqueued on streams, not yet finished (futex word) */
    _Atomic int dead;         /* destroyed or aborted: graph replays of it skip */
    int finalized;
    struct fn_user_op uops[FN_MAX_USER_OPS];
    /* one-sided (fn_rma.c): windows by registration order, equal on every rank */
    struct fn_mbox *mbox;
    unsigned char *mbox_data;
    struct fn_window *wins[FN_MAX_WINDOWS];
    int nwins;
    uint64_t *put_issued, *put_done; /* per peer: puts/signals, FIFO per (me, peer) */
    uint64_t *sig_recv;              /* per (peer, sigIdx, ctx): signals applied here */
    uint64_t *sig_expect; /* per (peer, sigIdx, ctx): signals the waits issued so far expect */
    uint64_t grow_count;  /* ncclCommGrow calls on this comm */
    int suspended;        /* ncclCommSuspend'ed: calls refused until ncclCommResume */
};

/* A registered window: the handle ncclCommWindowRegister returns. */
struct fn_window {
    uint64_t magic;
    struct ncclComm *comm;
    int index; /* registration order on comm: names the same window on every rank */
    void *buff;
    size_t size;
};
#define FN_WIN_MAGIC 0x4e49574b414646ull
#define FN_COMM_MAGIC 0x4d4d4f434b414646ull

enum fn_kind { FN_OP_COLL = 1, FN_OP_SEND, FN_OP_RECV, FN_OP_JOIN, FN_OP_PUT, FN_OP_WAITSIG };

/* One pending operation (a call, or one call of a group). */
struct fn_op {
    int kind;
    struct ncclComm *comm;
    int fn; /* enum fn_fn for collectives */
    const void *sendbuff;
    void *recvbuff;
    size_t count;
    ncclDataType_t dtype;
    ncclRedOp_t op;
    int root;             /* root for collectives, peer for p2p */
    uint64_t seq;         /* collective slot, or message index on the (me, peer) channel; a
                             wait's signal count to reach */
    int sig_idx, sig_ctx; /* put / signal / wait: the signal's index and context */
    int win;              /* put: the peer's window (registration index), -1 signal only */
    size_t win_off;       /* put: byte offset in it */
    cudaStream_t stream;  /* where the work runs in asynchronous mode */
    /* progress state */
    int state, done;
    uint64_t chunk, nchunks, elems_per_chunk, blk;
    uint64_t moved; /* p2p bytes moved */
};

/* --- fn_dtype.c: pure data functions (any thread, no blocking, no allocation) --- */
size_t fn_dtype_size(ncclDataType_t dt);
int fn_dtype_valid(int dt);
double fn_load(const void *p, ncclDataType_t dt, size_t i);
void fn_store(void *p, ncclDataType_t dt, size_t i, double v);
/* dst[i] = srcs[0][i] op srcs[1][i] op ... in source order; avg divides by nranks. */
void fn_reduce(void *dst, const void *const *srcs, int nsrc, size_t n, ncclDataType_t dt,
               ncclRedOp_t op, int nranks);
/* dst[i] = src[i] * scalar (scalar given as a value of dtype dt); dst may equal src. */
void fn_premul(void *dst, const void *src, size_t n, ncclDataType_t dt, const void *scalar);

/* --- fn_stall.c: FAKENCCL_STALL=RANK:SLOT (README) --- */
/* 1 when op must never progress. Any thread driving op's comm; no blocking, no allocation. */
int fn_stall_hold(const struct fn_op *op);
/* Seconds left of a timed hold in progress (RANK:SLOT:SECONDS), -1 none: the engine's wait
 * ends then, nothing else would wake it. */
double fn_stall_wait(void);

/* --- fn_engine.c --- */
/* Map or create the segment of comm->shm_name and mark this rank joined. Caller thread,
 * may poll-sleep briefly while another rank creates the segment; allocates. 0 / -errno. */
int fn_seg_attach(struct ncclComm *c);
/* Unmap (and unlink if this rank never saw the full join). Any thread, non-blocking. */
void fn_seg_detach(struct ncclComm *c);
/* Ring rank r's doorbell of comm c. Any thread, non-blocking. */
void fn_ring(struct ncclComm *c, int r);
/* Try to complete the join without blocking: 1 when every rank joined. Calling thread. */
int fn_join_poll(struct ncclComm *c);
/* Drive ops until all are done (or error). Blocks (futex) while no progress is possible;
 * honours abort/revoke and FAKENCCL_TIMEOUT_S. Calling thread; no allocation. */
ncclResult_t fn_run(struct fn_op *ops, int nops);
/* Name of an op's API function, for messages. Any thread; no blocking, no allocation. */
const char *fn_op_name(const struct fn_op *op);

/* --- fn_async.c: FAKENCCL_ASYNC=1 --- */
/* 1 when FAKENCCL_ASYNC=1 and a CUDA runtime that runs work is loaded (else one line, once).
 * Any thread; resolves on first use. */
int fn_async_on(void);
/* Enqueue ops (a call, or a group's calls without joins) on ops[0].stream, joined with the
 * other ops' streams by events; each op's comm gains a reference and a pending job until the
 * work ran. Caller thread; allocates; never blocks on the work. */
ncclResult_t fn_async_submit(const struct fn_op *ops, int nops);
/* Synchronous mode: wait for the work queued on each op's stream before the call
 * (cudaStreamSynchronize through the loaded runtime; nothing without one), as a GPU would run
 * the call after it. Call before taking the ops' slots. Caller thread; blocks. */
void fn_stream_order(const struct fn_op *ops, int nops);
/* Wait until comm c has no pending job (destroy, finalize, split). Caller thread; blocks. */
void fn_async_drain(struct ncclComm *c);
/* 1 when a CUDA runtime is loaded and stream is capturing (or its capture was invalidated).
 * Any thread; no blocking (one runtime query). */
int fn_capturing(cudaStream_t stream);
/* Record ops (a call, or a group's calls without joins, all on one stream) into the stream's
 * capture as one persistent host function: each replay takes the comms' next slots then and
 * runs them like an eager asynchronous call; the job lives as long as the graph (a CUDA user
 * object). Caller thread; allocates; never blocks on the work. */
ncclResult_t fn_capture_submit(const struct fn_op *ops, int nops);

/* --- fn_cuda.c: FAKENCCL_CUDA=1 --- */
/* 1 when FAKENCCL_CUDA=1 and a CUDA runtime is loaded in the process (else one line, once).
 * Takes precedence over FAKENCCL_ASYNC. Any thread; resolves on first use. */
int fn_cuda_on(void);
/* Run ops (a call, or a group's calls) with their device buffers staged through host memory:
 * the calls' streams synchronized, inputs copied in, fn_run, outputs copied back. Caller
 * thread; blocks like fn_run plus the stream synchronizations; allocates (a per-thread block,
 * reused). */
ncclResult_t fn_cuda_run(const struct fn_op *ops, int nops);

/* --- fn_rma.c: windows, ncclPutSignal / ncclSignal / ncclWaitSignal --- */
/* Progress a put/signal (FN_OP_PUT) or a wait (FN_OP_WAITSIG); 1 when it progressed. The comm's
 * driving thread; no blocking, no allocation. */
int fn_put_progress(struct fn_op *op);
int fn_wait_progress(struct fn_op *op);
/* Index of (peer, sigIdx, ctx) in sig_recv / sig_expect. */
static inline size_t fn_sig_at(const struct ncclComm *c, int peer, int idx, int ctx)
{
    (void)c;
    return ((size_t)peer * FN_SIG_IDX + (size_t)idx) * FN_SIG_CTX + (size_t)ctx;
}
/* Free c's windows (comm teardown). */
void fn_rma_free(struct ncclComm *c);

/* --- fn_api.c --- */
/* Take op's slot (collective) or message index (p2p) on its comm now. Any thread; atomic. */
void fn_assign_seq(struct fn_op *op);
/* Drop one reference of c; the last frees it (segment detached). Any thread. */
void fn_comm_unref(struct ncclComm *c);
/* Set the calling thread's ncclGetLastError text. Any thread; no blocking, no allocation. */
void fn_set_last_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
