/* ncg_test: the few helpers every test application needs to behave like a launched NCCL job.
 * Rank and world size come from the launcher's environment (RANK, WORLD_SIZE; ncg-launch sets
 * them), and the unique id travels through the file $NCG_ID_FILE: rank 0 creates it with
 * ncclGetUniqueId and publishes it atomically, the others wait for it (10 ms sleeps, bounded).
 * Include after nccl.h (NVIDIA's) or include/ncclguard/nccl_abi.h (ours). */
#ifndef NCG_TEST_H
#define NCG_TEST_H

#if !defined(NCCL_H_) && !defined(NCG_NCCL_ABI_H)
#include "ncclguard/nccl_abi.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* $RANK (default 0). Any thread; no allocation. */
int ncg_test_rank(void);
/* $NCG_TEST_WORLD, else $WORLD_SIZE (default 1): the first lets a test place its ranks in a
 * larger job as the launcher's variables tell ncclguard. Any thread; no allocation. */
int ncg_test_world(void);
/* Rank 0: ncclGetUniqueId, write $NCG_ID_FILE (tmp + rename). Others: wait up to
 * $NCG_ID_TIMEOUT_S (default 60) seconds for the file, then read it. Blocking (sleeps);
 * returns 0, or -1 after printing why. Name suffix: a second id in one job (e.g. "b"),
 * NULL for the default file. */
int ncg_test_share_id_named(ncclUniqueId *id, const char *suffix);
/* ncg_test_share_id_named(id, NULL). */
int ncg_test_share_id(ncclUniqueId *id);
/* The stream an application thread passes to NCCL calls. Synchronous mode: NULL. Asynchronous
 * mode (FAKENCCL_ASYNC=1): libcudart.so.13 (the CPU runtime of tests/fakecuda, found through
 * LD_LIBRARY_PATH) is loaded at first use and each thread gets its own non-blocking stream, as
 * a framework's per-process-group NCCL stream. Any thread; allocates on first use. */
cudaStream_t ncg_test_stream(void);
/* The calling thread's i-th stream (0..3; 0 is ncg_test_stream()), NULL when synchronous. */
cudaStream_t ncg_test_stream_n(int i);
/* 1 when calls run asynchronously (FAKENCCL_ASYNC=1 and the runtime loaded). Any thread. */
int ncg_test_async(void);
/* The host's synchronization point (loss.item()): wait for the calling thread's streams, then
 * return comm's asynchronous error (ncclCommGetAsyncError), so a failed or revoked
 * communicator surfaces here as on a GPU. Synchronous mode: only the error query. Blocks. */
ncclResult_t ncg_test_sync(ncclComm_t comm);
/* Print "<prog>: rank R: <call> failed: <error string>" and exit(1) when r != ncclSuccess. */
#define NCG_CHECK(call)                                                                            \
    do {                                                                                           \
        ncclResult_t ncg_r_ = (call);                                                              \
        if (ncg_r_ != ncclSuccess)                                                                 \
            ncg_test_fail(#call, ncg_r_, __FILE__, __LINE__);                                      \
    } while (0)
void ncg_test_fail(const char *what, ncclResult_t r, const char *file, int line)
    __attribute__((noreturn));

#ifdef __cplusplus
}
#endif
#endif
