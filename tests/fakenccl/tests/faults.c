/* faults: NCCL's failure semantics. `faults MODE`: after two good AllReduces, rank 1 (the last
 * rank for p2p modes) does something its peers do not match:
 *   count dtype op root func   a different collective call at slot 2
 *   p2psize                    rank 0 sends 4 int32, rank 1 receives 8
 *   norecv                     rank 0 sends, rank 1 never receives (it leaves)
 *   dead                       rank 1 exits before slot 2
 *   abort / revoke             rank 0 blocks in slot 2 (rank 1 never joins it); another thread
 *                              of rank 0 calls ncclCommAbort / ncclCommRevoke
 * Each rank prints "faults: rank R: CALL returned N" for the call that should block; it exits 3
 * when that call failed (the expected outcome with FAKENCCL_TIMEOUT_S or abort), 0 if it
 * completed (wrong, unless the rank had nothing to wait for). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"

static ncclComm_t g_comm;
static _Atomic int g_entering;
static int g_revoke;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *killer(void *arg)
{
    (void)arg;
    while (!g_entering)
        sleep_ms(10);
    sleep_ms(300); /* let the other thread get into its wait */
    ncclResult_t r = g_revoke ? ncclCommRevoke(g_comm, NCCL_REVOKE_DEFAULT) : ncclCommAbort(g_comm);
    printf("faults: rank 0: %s returned %d\n", g_revoke ? "ncclCommRevoke" : "ncclCommAbort", r);
    fflush(stdout);
    return NULL;
}

static int report(int rank, const char *what, ncclResult_t r)
{
    printf("faults: rank %d: %s returned %d (%s)\n", rank, what, (int)r, ncclGetErrorString(r));
    fflush(stdout);
    return r == ncclSuccess ? 0 : 3;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "count";
    int me = ncg_test_rank(), n = ncg_test_world();
    ncclUniqueId id;
    if (ncg_test_share_id(&id) != 0)
        return 1;
    NCG_CHECK(ncclCommInitRank(&g_comm, n, id, me));
    float a[8] = {1, 1, 1, 1, 1, 1, 1, 1}, b[8];
    for (int i = 0; i < 2; i++)
        NCG_CHECK(ncclAllReduce(a, b, 1, ncclFloat32, ncclSum, g_comm, NULL));
    int odd = me == 1;
    ncclResult_t r;
    char done[4200];
    snprintf(done, sizeof done, "%s.done",
             getenv("NCG_ID_FILE") ? getenv("NCG_ID_FILE") : "/tmp/x");

    if (!strcmp(mode, "count") || !strcmp(mode, "dtype") || !strcmp(mode, "op") ||
        !strcmp(mode, "root") || !strcmp(mode, "func")) {
        size_t count = odd && !strcmp(mode, "count") ? 2 : 1;
        ncclDataType_t dt = odd && !strcmp(mode, "dtype") ? ncclInt32 : ncclFloat32;
        ncclRedOp_t op = odd && !strcmp(mode, "op") ? ncclMax : ncclSum;
        if (!strcmp(mode, "root")) {
            r = ncclReduce(a, b, 1, ncclFloat32, ncclSum, odd ? 1 : 0, g_comm, NULL);
            return report(me, "ncclReduce", r);
        }
        if (odd && !strcmp(mode, "func")) {
            r = ncclBroadcast(a, b, 1, ncclFloat32, 0, g_comm, NULL);
            return report(me, "ncclBroadcast", r);
        }
        r = ncclAllReduce(a, b, count, dt, op, g_comm, NULL);
        return report(me, "ncclAllReduce", r);
    }
    if (!strcmp(mode, "p2psize") || !strcmp(mode, "norecv")) {
        int32_t buf[8] = {0};
        if (me == 0)
            return report(me, "ncclSend", ncclSend(buf, 4, ncclInt32, 1, g_comm, NULL));
        if (me == 1 && !strcmp(mode, "p2psize"))
            return report(me, "ncclRecv", ncclRecv(buf, 8, ncclInt32, 0, g_comm, NULL));
        return 0;
    }
    if (!strcmp(mode, "dead")) {
        if (odd)
            _exit(0); /* no goodbye: the others wait on a call it will never make */
        return report(me, "ncclAllReduce",
                      ncclAllReduce(a, b, 1, ncclFloat32, ncclSum, g_comm, NULL));
    }
    if (!strcmp(mode, "abort") || !strcmp(mode, "revoke")) {
        g_revoke = !strcmp(mode, "revoke");
        if (me != 0) {
            /* stay alive (bounded) without joining slot 2 until rank 0 is done */
            for (int i = 0; i < 3000 && access(done, F_OK) != 0; i++)
                sleep_ms(10);
            return 0;
        }
        pthread_t th;
        pthread_create(&th, NULL, killer, NULL);
        g_entering = 1;
        r = ncclAllReduce(a, b, 1, ncclFloat32, ncclSum, g_comm, NULL);
        int rc = report(me, "ncclAllReduce", r);
        pthread_join(th, NULL);
        if (g_revoke) {
            ncclResult_t later = ncclAllReduce(a, b, 1, ncclFloat32, ncclSum, g_comm, NULL);
            ncclResult_t async = ncclSuccess;
            NCG_CHECK(ncclCommGetAsyncError(g_comm, &async));
            printf("faults: rank 0: after revoke: ncclAllReduce returned %d, async error %d\n",
                   (int)later, (int)async);
            if (later == ncclSuccess || async == ncclSuccess)
                rc = 1;
            NCG_CHECK(ncclCommDestroy(g_comm));
        }
        FILE *f = fopen(done, "w");
        if (f)
            fclose(f);
        return rc;
    }
    fprintf(stderr, "faults: unknown mode %s\n", mode);
    return 2;
}
