/* Unit test of the ring writer/reader on private comm slots: stamps, "not yet" vs "gone",
 * wrap-around (also past 2^32 records), and many producer threads while a reader thread checks
 * every record it accepts: (a) 8 producers reserving positions of one ring by fetch-add (fewer
 * than a ring's worth: a lap over a writer preempted mid-record is excluded by NCCL's one thread
 * per comm at a time, see ring.h); (b) 8 producers each lapping its own comm's ring many times. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

static int fails;
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "ring_test:%d: expected %s\n", __LINE__, #cond);                       \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

static struct ncg_shm_comm *slot, *slots;

static void put_in(struct ncg_shm_comm *c, uint64_t idx)
{
    struct ncg_shm_record r = {.seq = idx,
                               .count = idx * 3 + 1,
                               .digest = ~idx,
                               .t_ns = idx ^ 0x5555,
                               .tid = (uint32_t)idx,
                               .root_or_peer = -1,
                               .func = 1};
    ncg_ring_put(&c->coll[idx & (NCG_COLL_RING - 1)], idx, &r);
    ck_pr_store_64(&c->coll_seq, idx + 1);
}

static void put(uint64_t idx)
{
    struct ncg_shm_record r = {.seq = idx,
                               .count = idx * 3 + 1,
                               .digest = ~idx,
                               .t_ns = idx ^ 0x5555,
                               .tid = (uint32_t)idx,
                               .root_or_peer = -1,
                               .func = 1};
    ncg_ring_put(&slot->coll[idx & (NCG_COLL_RING - 1)], idx, &r);
}

static int whole(const struct ncg_shm_record *r, uint64_t idx)
{
    return r->seq == idx && r->count == idx * 3 + 1 && r->digest == ~idx &&
           r->t_ns == (idx ^ 0x5555) && r->tid == (uint32_t)idx && r->func == 1;
}

enum { PRODUCERS = 8, SHARED_PER = 110, OWN_PER = 20000 };
static uint64_t reserve_ctr;
static int producers_done;
static unsigned long long reader_ok, reader_bad;

static void *producer_shared(void *arg)
{
    (void)arg;
    for (int i = 0; i < SHARED_PER; i++) {
        uint64_t idx = ck_pr_faa_64(&reserve_ctr, 1); /* as the shim reserves: disjoint positions */
        put(idx);
    }
    return NULL;
}

static void *producer_own(void *arg)
{
    struct ncg_shm_comm *c = arg;
    for (uint64_t i = 0; i < OWN_PER; i++)
        put_in(c, i);
    return NULL;
}

static void read_all(struct ncg_shm_comm *c, uint64_t n)
{
    for (uint64_t k = n > NCG_COLL_RING ? n - NCG_COLL_RING : 0; k < n; k++) {
        struct ncg_shm_record r;
        if (ncg_ring_read(c, NCG_RING_COLL, k, &r) == 0) {
            if (whole(&r, k))
                reader_ok++;
            else
                reader_bad++;
        }
    }
}

static void *reader(void *arg)
{
    (void)arg;
    while (!ck_pr_load_int(&producers_done)) {
        read_all(slot, ck_pr_load_64(&reserve_ctr));
        for (int i = 0; i < PRODUCERS; i++)
            read_all(&slots[i], ck_pr_load_64(&slots[i].coll_seq));
    }
    return NULL;
}

int main(void)
{
    slot = calloc(1, sizeof *slot);
    struct ncg_shm_record r;
    EXPECT(ncg_ring_read(slot, NCG_RING_COLL, 0, &r) == -EAGAIN); /* never written: not yet */
    EXPECT(ncg_ring_read(slot, 7, 0, &r) == -ENOENT);
    put(0);
    EXPECT(ncg_ring_read(slot, NCG_RING_COLL, 0, &r) == 0 && whole(&r, 0) && r.stamp == 2);
    EXPECT(ncg_ring_read(slot, NCG_RING_COLL, 1, &r) == -EAGAIN);
    for (uint64_t i = 1; i < 3 * NCG_COLL_RING + 5; i++)
        put(i);
    EXPECT(ncg_ring_read(slot, NCG_RING_COLL, 0, &r) == -ENOENT); /* overwritten: gone */
    EXPECT(ncg_ring_read(slot, NCG_RING_COLL, 2 * NCG_COLL_RING + 4, &r) == -ENOENT);
    EXPECT(ncg_ring_read(slot, NCG_RING_COLL, 2 * NCG_COLL_RING + 5, &r) == 0 &&
           whole(&r, 2 * NCG_COLL_RING + 5));
    EXPECT(ncg_ring_read(slot, NCG_RING_COLL, 3 * NCG_COLL_RING + 4, &r) == 0);
    EXPECT(ncg_ring_read(slot, NCG_RING_COLL, 3 * NCG_COLL_RING + 5, &r) == -EAGAIN);
    /* A writer caught mid-record (odd stamp): not accepted. */
    uint64_t mid = 3 * NCG_COLL_RING + 5;
    slot->coll[mid & (NCG_COLL_RING - 1)].stamp = 2 * mid + 1;
    EXPECT(ncg_ring_read(slot, NCG_RING_COLL, mid, &r) == -EAGAIN);
    /* Far past 2^32 records: stamps are 64-bit, the index mask still selects the right position. */
    uint64_t big = (1ull << 33) + 17;
    put(big);
    EXPECT(ncg_ring_read(slot, NCG_RING_COLL, big, &r) == 0 && whole(&r, big));
    EXPECT(ncg_ring_read(slot, NCG_RING_COLL, big - NCG_COLL_RING, &r) == -ENOENT);
    EXPECT(ncg_ring_read(slot, NCG_RING_COLL, big + NCG_COLL_RING, &r) == -EAGAIN);
    /* p2p ring: same protocol, its own positions. */
    struct ncg_shm_record p = {.seq = 4, .func = 9, .root_or_peer = 2};
    ncg_ring_put(&slot->p2p[3], 3, &p);
    EXPECT(ncg_ring_read(slot, NCG_RING_P2P, 3, &r) == 0 && r.seq == 4 && r.func == 9 &&
           r.root_or_peer == 2);

    memset(slot, 0, sizeof *slot);
    slots = calloc(PRODUCERS, sizeof *slots);
    pthread_t th[2 * PRODUCERS], rd;
    pthread_create(&rd, NULL, reader, NULL);
    for (int i = 0; i < PRODUCERS; i++) {
        pthread_create(&th[i], NULL, producer_shared, NULL);
        pthread_create(&th[PRODUCERS + i], NULL, producer_own, &slots[i]);
    }
    for (int i = 0; i < 2 * PRODUCERS; i++)
        pthread_join(th[i], NULL);
    ck_pr_store_int(&producers_done, 1);
    pthread_join(rd, NULL);
    uint64_t n = reserve_ctr;
    EXPECT(n == (uint64_t)PRODUCERS * SHARED_PER);
    unsigned whole_after = 0;
    for (uint64_t k = 0; k < n; k++) /* every reserved position written exactly once */
        whole_after += ncg_ring_read(slot, NCG_RING_COLL, k, &r) == 0 && whole(&r, k);
    EXPECT(whole_after == n);
    for (int i = 0; i < PRODUCERS; i++) {
        whole_after = 0;
        for (uint64_t k = OWN_PER - NCG_COLL_RING; k < OWN_PER; k++)
            whole_after += ncg_ring_read(&slots[i], NCG_RING_COLL, k, &r) == 0 && whole(&r, k);
        EXPECT(whole_after == NCG_COLL_RING);
    }
    free(slots);
    EXPECT(reader_bad == 0);
    printf("ring_test: reader accepted %llu records while writers ran, %llu torn\n", reader_ok,
           reader_bad);
    free(slot);
    if (fails)
        return 1;
    printf("ring_test ok\n");
    return 0;
}
