/* cliapp: a small guarded job for the CLI tests. Every rank issues --calls AllReduces (count
 * 256, float32, sum), --sleep-ms apart, then destroys its comm and exits 0. With --hang-rank R,
 * rank R stops calling NCCL after those calls (sleeps up to --hold-s seconds, then exits 0
 * without destroying its comm) while the others issue one more AllReduce and block in it:
 * slot counts disagree and nobody progresses, the stall `ncclguard watch` must see.
 * --tag TEXT is ignored: it only marks the command line for `ncclguard status --match`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    long calls = 10, sleep = 0, hang = -1, hold = 60;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "usage: cliapp [--calls N] [--sleep-ms MS] [--hang-rank R] "
                            "[--hold-s S] [--tag TEXT]\n");
            return 2;
        }
        if (!strcmp(argv[i], "--calls"))
            calls = atol(v);
        else if (!strcmp(argv[i], "--sleep-ms"))
            sleep = atol(v);
        else if (!strcmp(argv[i], "--hang-rank"))
            hang = atol(v);
        else if (!strcmp(argv[i], "--hold-s"))
            hold = atol(v);
        else if (strcmp(argv[i], "--tag") != 0)
            return 2;
        i++;
    }
    int rank = ncg_test_rank(), world = ncg_test_world();
    ncclUniqueId id;
    if (ncg_test_share_id(&id) != 0)
        return 1;
    ncclComm_t comm;
    NCG_CHECK(ncclCommInitRank(&comm, world, id, rank));
    float in[256], out[256];
    for (int i = 0; i < 256; i++)
        in[i] = (float)rank;
    for (long c = 0; c < calls; c++) {
        NCG_CHECK(ncclAllReduce(in, out, 256, ncclFloat32, ncclSum, comm, NULL));
        if (sleep)
            sleep_ms(sleep);
    }
    if (hang >= 0) {
        if (rank == hang) {
            printf("cliapp: rank %d stops calling NCCL\n", rank);
            fflush(stdout);
            for (long s = 0; s < hold * 10; s++)
                sleep_ms(100);
            return 0;
        }
        NCG_CHECK(ncclAllReduce(in, out, 256, ncclFloat32, ncclSum, comm, NULL)); /* blocks */
    }
    NCG_CHECK(ncclCommDestroy(comm));
    return 0;
}
