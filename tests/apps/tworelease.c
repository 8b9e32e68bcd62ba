/* tworelease: two error verdicts reach one process, and one of their members prints late. A
 * world comm W and a split S (rank / 2: S0 = {0,1}, S1 = {2,3}); at step 100 rank 3 returns
 * from main after its W call (RANK EXITED on W and on S1), and rank 1 stops itself (SIGSTOP)
 * for $TWOREL_STOP_S seconds (default 2; a forked child wakes it) after its S call, so its
 * diagnostic and report come late. No rank may exit before rank 1 has printed and reported:
 * rank 2 gets both verdicts, and S1's release alone must not let it go. Run under ncg-launch. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"

int main(void)
{
    int rank = ncg_test_rank(), world = ncg_test_world();
    const char *st = getenv("TWOREL_STOP_S");
    double stop_s = st ? atof(st) : 2.0;
    ncclUniqueId id;
    if (ncg_test_share_id(&id) != 0)
        return 1;
    ncclComm_t w, s;
    NCG_CHECK(ncclCommInitRank(&w, world, id, rank));
    NCG_CHECK(ncclCommSplit(w, rank / 2, rank, &s, NULL));
    float a[8] = {0}, b[8];
    for (int i = 0; i < 200; i++) {
        NCG_CHECK(ncclAllReduce(a, b, 8, ncclFloat32, ncclSum, w, ncg_test_stream()));
        if (i == 100 && rank == 3) {
            usleep(200000);
            return 0;
        }
        NCG_CHECK(ncclAllReduce(a, b, 8, ncclFloat32, ncclSum, s, ncg_test_stream()));
        if (i == 100 && rank == 1) {
            pid_t me = getpid();
            if (fork() == 0) {
                usleep((useconds_t)(stop_s * 1e6));
                kill(me, SIGCONT);
                _exit(0);
            }
            raise(SIGSTOP);
        }
        if (i % 4 == 3)
            NCG_CHECK(ncg_test_sync(w));
        usleep(1000);
    }
    return 0;
}
