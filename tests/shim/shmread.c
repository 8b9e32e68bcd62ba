/* Reads another process's ncclguard segment, as the CLI would. `shmread PID` dumps it
 * (segdump.h); `shmread --watch PID SECONDS` re-reads every ring continuously while the
 * producers of `calls stress` write, and checks that every record it accepts is whole: the
 * fields agree with the slot (count = seq % 16 + 1, dtype = (seq / 16) % 8) and consecutive
 * digests chain. Exit 0 when no torn or inconsistent record was ever accepted. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"
#include "segdump.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int watch(struct ncg_shm_header *h, double secs)
{
    unsigned long long ok = 0, again = 0, gone = 0, chained = 0, bad = 0;
    double end = now_s() + secs;
    while (now_s() < end) {
        for (uint32_t i = 0; i < h->ncomms && i < NCG_SHM_MAX_COMMS; i++) {
            const struct ncg_shm_comm *c = ncg_shm_comm_at(h, i);
            if (c->state != NCG_COMM_ACTIVE)
                continue;
            uint64_t n = c->coll_seq;
            uint64_t from = n > NCG_COLL_RING ? n - NCG_COLL_RING : 0;
            int have_prev = 0;
            struct ncg_shm_record prev = {0};
            for (uint64_t k = from; k < n + 2;
                 k++) { /* past the count: must never be accepted early */
                struct ncg_shm_record r;
                int rc = ncg_ring_read(c, NCG_RING_COLL, k, &r);
                if (rc == -EAGAIN) {
                    again++;
                    have_prev = 0;
                    continue;
                }
                if (rc == -ENOENT) {
                    gone++;
                    have_prev = 0;
                    continue;
                }
                ok++;
                uint64_t fp =
                    ncg_fingerprint(NCG_F_ALLREDUCE, r.count, r.dtype, r.redop, r.root_or_peer);
                if (r.seq != k || r.count != k % 16 + 1 || r.dtype != (k / 16) % 8 ||
                    r.func != NCG_F_ALLREDUCE || r.redop != 0 || r.root_or_peer != -1) {
                    if (bad++ < 5)
                        fprintf(
                            stderr,
                            "shmread: torn record at %llu: seq=%llu count=%llu dtype=%u func=%u\n",
                            (unsigned long long)k, (unsigned long long)r.seq,
                            (unsigned long long)r.count, r.dtype, r.func);
                } else if (have_prev && prev.seq + 1 == r.seq) {
                    chained++;
                    if (ncg_digest_next(prev.digest, fp) != r.digest && bad++ < 5)
                        fprintf(stderr, "shmread: digest chain broken at %llu\n",
                                (unsigned long long)k);
                }
                prev = r;
                have_prev = 1;
            }
        }
        usleep(1000); /* a reader that polls, not one that spins */
    }
    printf("shmread: accepted %llu (chained %llu), in progress %llu, overwritten %llu, bad %llu\n",
           ok, chained, again, gone, bad);
    return bad == 0 && ok > 0 && chained > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 2) {
        struct ncg_shm_header *h = segdump_map(atoi(argv[1]));
        if (!h) {
            printf("noseg\n");
            return 1;
        }
        segdump(stdout, h);
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "--watch")) {
        struct ncg_shm_header *h = segdump_map(atoi(argv[2]));
        if (!h) {
            fprintf(stderr, "shmread: no segment for pid %s\n", argv[2]);
            return 1;
        }
        return watch(h, atof(argv[3]));
    }
    fprintf(stderr, "usage: shmread PID | shmread --watch PID SECONDS\n");
    return 2;
}
