/* fakenccl one-sided communication (NCCL 2.30): windows, ncclPutSignal into a peer's window,
 * ncclSignal, ncclWaitSignal. Ranks are processes, so a put cannot write the peer's memory: it
 * appends an entry (window, offset, bytes, signal) to the (me, peer) mailbox in the segment and
 * completes there, one-sided; the target applies its mailboxes' entries in order while it waits
 * for signals or puts itself, so a put's bytes are in its window before the signal that follows
 * them counts, as NCCL guarantees. Signals count per (sender, sigIdx, ctx); the k-th wait for n of
 * them waits until the count reaches what every wait so far asked for (NCCL's cumulative count). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fn_internal.h"

ncclResult_t fn_comm_usable(struct ncclComm *c);
ncclResult_t fn_submit(const struct fn_op *op);

#define PUT_SIGNAL 1u /* the entry ends a put or is a signal: count it once applied */

struct fn_put_hdr { /* 32 bytes, then the data padded to 8 */
    int32_t win;    /* registration index, -1: no data */
    uint32_t flags; /* PUT_SIGNAL */
    int32_t sig_idx, sig_ctx;
    uint64_t off, bytes;
};
_Static_assert(sizeof(struct fn_put_hdr) == 32, "mailbox entry header");

static uint64_t pad8(uint64_t v)
{
    return (v + 7) & ~7ull;
}

static struct fn_mbox *mbox_of(struct ncclComm *c, int s, int r)
{
    return &c->mbox[(size_t)s * c->nranks + r];
}
static unsigned char *mbox_buf(struct ncclComm *c, int s, int r)
{
    return c->mbox_data + ((size_t)s * c->nranks + r) * c->hdr->put_bytes;
}

static void ring_in(unsigned char *buf, uint64_t cap, uint64_t pos, const void *src, uint64_t n)
{
    uint64_t off = pos % cap, first = cap - off < n ? cap - off : n;
    memcpy(buf + off, src, first);
    memcpy(buf, (const unsigned char *)src + first, n - first);
}
static void ring_out(void *dst, const unsigned char *buf, uint64_t cap, uint64_t pos, uint64_t n)
{
    uint64_t off = pos % cap, first = cap - off < n ? cap - off : n;
    memcpy(dst, buf + off, first);
    memcpy((unsigned char *)dst + first, buf, n - first);
}

static int drain(struct ncclComm *c);

int fn_put_progress(struct fn_op *op)
{
    struct ncclComm *c = op->comm;
    /* Apply what others put here first: a rank blocked on a full mailbox frees room in its own
     * for them, so ranks that all put before they wait never block each other. */
    int me = c->rank, peer = op->root, progressed = drain(c);
    if (c->put_done[peer] != op->seq)
        return 0; /* FIFO per (me, peer): a signal never overtakes the data before it */
    struct fn_mbox *mb = mbox_of(c, me, peer);
    uint64_t cap = c->hdr->put_bytes, bytes = op->count * fn_dtype_size(op->dtype);
    uint64_t most = cap / 2 - sizeof(struct fn_put_hdr); /* a chunk always fits a drained box */
    for (;;) {
        uint64_t chunk = bytes - op->moved < most ? bytes - op->moved : most;
        uint64_t need = sizeof(struct fn_put_hdr) + pad8(chunk);
        uint64_t head = atomic_load_explicit(&mb->head, memory_order_relaxed);
        if (cap - (head - atomic_load_explicit(&mb->tail, memory_order_acquire)) < need)
            break; /* full: the target drains it at its next wait (README, limits) */
        int last = op->moved + chunk == bytes;
        struct fn_put_hdr h = {op->win,     last ? PUT_SIGNAL : 0,   op->sig_idx,
                               op->sig_ctx, op->win_off + op->moved, chunk};
        ring_in(mbox_buf(c, me, peer), cap, head, &h, sizeof h);
        if (chunk)
            ring_in(mbox_buf(c, me, peer), cap, head + sizeof h,
                    (const unsigned char *)op->sendbuff + op->moved, chunk);
        op->moved += chunk;
        atomic_store_explicit(&mb->head, head + need, memory_order_release); /* entry first */
        fn_ring(c, peer);
        progressed = 1;
        if (last) {
            op->done = 1;
            c->put_done[peer]++;
            break;
        }
    }
    return progressed;
}

/* Apply every entry the peers appended to c's mailboxes: bytes into c's windows, signals
 * counted. 1 when something was applied. The comm's driving thread. */
static int drain(struct ncclComm *c)
{
    int me = c->rank, progressed = 0;
    uint64_t cap = c->hdr->put_bytes;
    for (int s = 0; s < c->nranks; s++) {
        struct fn_mbox *mb = mbox_of(c, s, me);
        uint64_t head = atomic_load_explicit(&mb->head, memory_order_acquire);
        uint64_t tail = atomic_load_explicit(&mb->tail, memory_order_relaxed);
        while (tail < head) {
            const unsigned char *buf = mbox_buf(c, s, me);
            struct fn_put_hdr h;
            ring_out(&h, buf, cap, tail, sizeof h);
            if (h.bytes) {
                struct fn_window *w = h.win >= 0 && h.win < c->nwins ? c->wins[h.win] : NULL;
                if (w && h.off <= w->size && h.bytes <= w->size - h.off)
                    ring_out((unsigned char *)w->buff + h.off, buf, cap, tail + sizeof h, h.bytes);
                else
                    fn_set_last_error("ncclPutSignal from rank %d: window %d offset %llu + %llu "
                                      "bytes outside this rank's window: dropped",
                                      s, h.win, (unsigned long long)h.off,
                                      (unsigned long long)h.bytes);
            }
            if (h.flags & PUT_SIGNAL)
                c->sig_recv[fn_sig_at(c, s, h.sig_idx, h.sig_ctx)]++;
            tail += sizeof h + pad8(h.bytes);
            atomic_store_explicit(&mb->tail, tail, memory_order_release); /* copied out first */
            fn_ring(c, s); /* room for its next put */
            progressed = 1;
        }
    }
    return progressed;
}

int fn_wait_progress(struct fn_op *op)
{
    struct ncclComm *c = op->comm;
    int progressed = drain(c);
    if (c->sig_recv[fn_sig_at(c, op->root, op->sig_idx, op->sig_ctx)] >= op->seq) {
        op->done = 1;
        progressed = 1;
    }
    return progressed;
}

void fn_rma_free(struct ncclComm *c)
{
    for (int i = 0; i < c->nwins; i++)
        if (c->wins[i]) {
            c->wins[i]->magic = 0;
            free(c->wins[i]);
            c->wins[i] = NULL;
        }
}

/* ---- the API ---- */

static int sig_ok(const struct ncclComm *c, int peer, int sig_idx, int ctx, const char *call)
{
    if (peer < 0 || peer >= c->nranks || sig_idx < 0 || sig_idx >= FN_SIG_IDX || ctx < 0 ||
        ctx >= FN_SIG_CTX) {
        fn_set_last_error("%s: invalid peer %d, sigIdx %d or ctx %d (this NCCL takes sigIdx "
                          "0..%d, ctx 0..%d)",
                          call, peer, sig_idx, ctx, FN_SIG_IDX - 1, FN_SIG_CTX - 1);
        return 0;
    }
    return 1;
}

static ncclResult_t no_capture(cudaStream_t stream, const char *call)
{
    if (!fn_capturing(stream))
        return ncclSuccess;
    fn_set_last_error("%s: capture into a CUDA graph is not supported by the CPU NCCL", call);
    return ncclInvalidUsage;
}

FN_API ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size,
                                            ncclWindow_t *win, int winFlags)
{
    (void)winFlags;
    ncclResult_t r = fn_comm_usable(comm);
    if (r != ncclSuccess)
        return r;
    if (!win || (!buff && size)) {
        fn_set_last_error("ncclCommWindowRegister: invalid arguments");
        return ncclInvalidArgument;
    }
    if (comm->nwins >= FN_MAX_WINDOWS) {
        fn_set_last_error("ncclCommWindowRegister: more than %d windows", FN_MAX_WINDOWS);
        return ncclInternalError;
    }
    struct fn_window *w = calloc(1, sizeof *w);
    if (!w)
        return ncclSystemError;
    *w = (struct fn_window){FN_WIN_MAGIC, comm, comm->nwins, buff, size};
    comm->wins[comm->nwins++] = w;
    *win = (ncclWindow_t)w;
    return ncclSuccess;
}
FN_ALIAS(ncclCommWindowRegister);

static struct fn_window *win_of(ncclComm_t comm, ncclWindow_t win)
{
    struct fn_window *w = (struct fn_window *)win;
    return w && w->magic == FN_WIN_MAGIC && w->comm == comm ? w : NULL;
}

FN_API ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
    ncclResult_t r = fn_comm_usable(comm);
    if (r != ncclSuccess)
        return r;
    struct fn_window *w = win_of(comm, win);
    if (!w)
        return ncclInvalidArgument;
    comm->wins[w->index] = NULL; /* puts that arrive for it later are dropped */
    w->magic = 0;
    free(w);
    return ncclSuccess;
}
FN_ALIAS(ncclCommWindowDeregister);

FN_API ncclResult_t pncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void **outUserPtr)
{
    struct fn_window *w = win_of(comm, win);
    if (!w || !outUserPtr)
        return ncclInvalidArgument;
    *outUserPtr = w->buff;
    return ncclSuccess;
}
FN_ALIAS(ncclWinGetUserPtr);

static ncclResult_t put(const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
                        ncclWindow_t peerWin, size_t off, int sig_idx, int ctx, ncclComm_t comm,
                        cudaStream_t stream, const char *call)
{
    ncclResult_t r = fn_comm_usable(comm);
    if (r != ncclSuccess)
        return r;
    if (!sig_ok(comm, peer, sig_idx, ctx, call))
        return ncclInvalidArgument;
    struct fn_window *w = NULL;
    if (peerWin) {
        w = win_of(comm, peerWin);
        size_t bytes = count * fn_dtype_size(datatype);
        if (!w || !fn_dtype_valid(datatype) || (count && !localbuff) || off > w->size ||
            bytes > w->size - off) {
            fn_set_last_error("%s: invalid window, datatype, buffer or range", call);
            return ncclInvalidArgument;
        }
    }
    if ((r = no_capture(stream, call)) != ncclSuccess)
        return r;
    struct fn_op o = {.kind = FN_OP_PUT,
                      .comm = comm,
                      .sendbuff = localbuff,
                      .count = w ? count : 0,
                      .dtype = w ? datatype : ncclInt8,
                      .root = peer,
                      .stream = stream,
                      .sig_idx = sig_idx,
                      .sig_ctx = ctx,
                      .win = w ? w->index : -1,
                      .win_off = off};
    return fn_submit(&o);
}

FN_API ncclResult_t pncclPutSignal(const void *localbuff, size_t count, ncclDataType_t datatype,
                                   int peer, ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx,
                                   int ctx, unsigned int flags, ncclComm_t comm,
                                   cudaStream_t stream)
{
    if (flags != 0 || !peerWin) {
        fn_set_last_error("ncclPutSignal: flags must be 0 and peerWin set");
        return ncclInvalidArgument;
    }
    return put(localbuff, count, datatype, peer, peerWin, peerWinOffset, sigIdx, ctx, comm, stream,
               "ncclPutSignal");
}
FN_ALIAS(ncclPutSignal);

FN_API ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                                cudaStream_t stream)
{
    if (flags != 0) {
        fn_set_last_error("ncclSignal: flags must be 0");
        return ncclInvalidArgument;
    }
    return put(NULL, 0, ncclInt8, peer, NULL, 0, sigIdx, ctx, comm, stream, "ncclSignal");
}
FN_ALIAS(ncclSignal);

/* A wait is one op per descriptor, run together (a group of its own inside the caller's). */
FN_API ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm,
                                    cudaStream_t stream)
{
    ncclResult_t r = fn_comm_usable(comm);
    if (r != ncclSuccess)
        return r;
    if (nDesc <= 0 || !signalDescs) {
        fn_set_last_error("ncclWaitSignal: invalid arguments");
        return ncclInvalidArgument;
    }
    for (int i = 0; i < nDesc; i++)
        if (signalDescs[i].opCnt <= 0 || !sig_ok(comm, signalDescs[i].peer, signalDescs[i].sigIdx,
                                                 signalDescs[i].ctx, "ncclWaitSignal")) {
            fn_set_last_error("ncclWaitSignal: descriptor %d invalid", i);
            return ncclInvalidArgument;
        }
    if ((r = no_capture(stream, "ncclWaitSignal")) != ncclSuccess)
        return r;
    if (nDesc > 1 && (r = pncclGroupStart()) != ncclSuccess)
        return r;
    for (int i = 0; i < nDesc && r == ncclSuccess; i++) {
        struct fn_op o = {.kind = FN_OP_WAITSIG,
                          .comm = comm,
                          .count = (size_t)signalDescs[i].opCnt,
                          .dtype = ncclInt8,
                          .root = signalDescs[i].peer,
                          .stream = stream,
                          .sig_idx = signalDescs[i].sigIdx,
                          .sig_ctx = signalDescs[i].ctx,
                          .win = -1};
        r = fn_submit(&o);
    }
    if (nDesc > 1) {
        ncclResult_t e = pncclGroupEnd();
        if (r == ncclSuccess)
            r = e;
    }
    return r;
}
FN_ALIAS(ncclWaitSignal);
