/* shapes: the hangs a new user's programs showed that ncclguard missed (send/recv, mixed,
 * asynchronous, threads), each as a small NCCL program run under ncg-launch. Every rank creates
 * the world comm and makes 4 AllReduce calls, synchronizes, sleeps $SHAPE_DELAY_MS (default 0:
 * a fault right after the start), then: Usage: shapes SHAPE
 *   p2pexit    rank 0 ncclSend to rank 1; rank 1 returns from main (RANK EXITED)
 *   p2perr     rank 1's ncclSend to peer 99 is refused (ncclInvalidArgument): it exits 3 (RANK
 *              EXITED); rank 0 waits in its send to rank 1
 *   p2pcrash   rank 0 ncclSend to rank 1; rank 1 SIGKILLs itself (RANK DIED)
 *   recvrecv   ranks 0 and 1 each ncclRecv from the other first, then send (DEADLOCK)
 *   sendsend   each sends to the other first, then receives, ungrouped (DEADLOCK: a send blocks
 *              until its receive is posted)
 *   dupsend    rank 0 sends on the world comm, rank 1 receives on a duplicate (DEADLOCK)
 *   gatherroot a gather written as grouped send/recv; the last rank takes rank 1 as the root,
 *              the others rank 0 (rank 1 finishes and leaves: RANK EXITED)
 *   collp2p    rank 0 AllReduce then Send to 1; rank 1 Recv from 0, synchronizes, then
 *              AllReduce (DEADLOCK; asynchronous mode: through rank 1's host wait)
 *   threads    2 ranks as threads of one process: thread 1 makes one AllReduce fewer, then
 *              ncclCommFinalize + ncclCommDestroy (RANK EXITED of rank 1); not under ncg-launch
 *   threadsp2p the same threads, 10 AllReduce each, then thread 0 sends 8 elements to thread 1,
 *              which receives 9 (P2P MISMATCH)
 * A program that completes prints "shapes: rank R done". */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"

static float buf[64];

static void all_reduce(ncclComm_t c, cudaStream_t s)
{
    NCG_CHECK(ncclAllReduce(buf, buf, 8, ncclFloat, ncclSum, c, s));
}

static ncclUniqueId tid_id;
static int tid_p2p; /* threadsp2p */

static void *thread_rank(void *arg)
{
    int r = (int)(long)arg;
    ncclComm_t c;
    NCG_CHECK(ncclCommInitRank(&c, 2, tid_id, r));
    cudaStream_t s = ncg_test_stream();
    for (int i = 0; i < (r == 1 && !tid_p2p ? 9 : 10); i++) {
        all_reduce(c, s);
        ncg_test_sync(c);
    }
    if (tid_p2p) { /* rank 0 sends 8 elements, rank 1 receives 9 */
        if (r == 0)
            NCG_CHECK(ncclSend(buf, 8, ncclFloat, 1, c, s));
        else
            NCG_CHECK(ncclRecv(buf, 9, ncclFloat, 0, c, s));
        ncg_test_sync(c);
    }
    if (r == 1 && !tid_p2p)
        NCG_CHECK(ncclCommFinalize(c));
    NCG_CHECK(ncclCommDestroy(c));
    fprintf(stderr, "shapes: rank %d done\n", r);
    return NULL;
}

static int threads(void)
{
    pthread_t t[2];
    NCG_CHECK(ncclGetUniqueId(&tid_id));
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, thread_rank, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: shapes SHAPE\n");
        return 2;
    }
    const char *sh = argv[1];
    if (!strcmp(sh, "threads") || !strcmp(sh, "threadsp2p")) {
        tid_p2p = !strcmp(sh, "threadsp2p");
        return threads();
    }
    int rank = ncg_test_rank(), world = ncg_test_world(), peer = 1 - rank;
    ncclUniqueId id;
    ncclComm_t c, d = NULL;
    if (ncg_test_share_id(&id))
        return 1;
    NCG_CHECK(ncclCommInitRank(&c, world, id, rank));
    cudaStream_t s = ncg_test_stream();
    for (int i = 0; i < 4; i++)
        all_reduce(c, s);
    ncg_test_sync(c);
    const char *e = getenv("SHAPE_DELAY_MS");
    if (e)
        usleep((useconds_t)atoi(e) * 1000);
    if (!strcmp(sh, "p2pexit")) {
        if (rank == 1)
            return 0;
        if (rank == 0)
            NCG_CHECK(ncclSend(buf, 8, ncclFloat, 1, c, s));
    } else if (!strcmp(sh, "p2perr")) {
        if (rank == 1) {
            ncclResult_t r = ncclSend(buf, 8, ncclFloat, 99, c, s);
            fprintf(stderr, "shapes: rank 1: ncclSend to 99: %s\n", ncclGetErrorString(r));
            exit(3);
        }
        if (rank == 0)
            NCG_CHECK(ncclSend(buf, 8, ncclFloat, 1, c, s));
    } else if (!strcmp(sh, "p2pcrash")) {
        if (rank == 1)
            raise(SIGKILL);
        if (rank == 0)
            NCG_CHECK(ncclSend(buf, 8, ncclFloat, 1, c, s));
    } else if (!strcmp(sh, "recvrecv") && rank < 2) {
        NCG_CHECK(ncclRecv(buf, 8, ncclFloat, peer, c, s));
        NCG_CHECK(ncclSend(buf, 8, ncclFloat, peer, c, s));
    } else if (!strcmp(sh, "sendsend") && rank < 2) {
        NCG_CHECK(ncclSend(buf, 8, ncclFloat, peer, c, s));
        NCG_CHECK(ncclRecv(buf, 8, ncclFloat, peer, c, s));
    } else if (!strcmp(sh, "dupsend")) {
        NCG_CHECK(ncclCommSplit(c, 0, rank, &d, NULL));
        if (rank == 0)
            NCG_CHECK(ncclSend(buf, 8, ncclFloat, 1, c, s));
        else if (rank == 1)
            NCG_CHECK(ncclRecv(buf, 8, ncclFloat, 0, d, s));
    } else if (!strcmp(sh, "gatherroot")) {
        int root = rank == world - 1 ? 1 : 0;
        NCG_CHECK(ncclGroupStart());
        if (rank == root) {
            for (int p = 0; p < world; p++)
                if (p != rank)
                    NCG_CHECK(ncclRecv(buf + p, 1, ncclFloat, p, c, s));
        } else {
            NCG_CHECK(ncclSend(buf, 1, ncclFloat, root, c, s));
        }
        NCG_CHECK(ncclGroupEnd());
    } else if (!strcmp(sh, "collp2p")) {
        if (rank == 0) {
            all_reduce(c, s);
            NCG_CHECK(ncclSend(buf, 8, ncclFloat, 1, c, s));
        } else if (rank == 1) {
            NCG_CHECK(ncclRecv(buf, 8, ncclFloat, 0, c, s));
            ncg_test_sync(c);
            all_reduce(c, s);
        }
    } else {
        fprintf(stderr, "shapes: unknown shape %s\n", sh);
        return 2;
    }
    ncg_test_sync(c);
    if (d) {
        ncg_test_sync(d);
        NCG_CHECK(ncclCommDestroy(d));
    }
    NCG_CHECK(ncclCommDestroy(c));
    fprintf(stderr, "shapes: rank %d done\n", rank);
    return 0;
}
