/* The shim's end-to-end test program, written like an NCCL application (run under ncg-launch on
 * the CPU NCCL). One scenario per argv[1]; at the end it dumps its own segment to
 * $NCG_DUMP.<scenario>.<rank> (segdump.h) for the test script to assert on, since the shim
 * unlinks the segment at exit. Prints "<scenario> ok" on success. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"
#include "segdump.h"

static int rank, world;

#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, "calls: rank %d: ", rank);                                                 \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        exit(1);                                                                                   \
    } while (0)

static ncclComm_t init_world(const char *suffix)
{
    ncclUniqueId id;
    if (ncg_test_share_id_named(&id, suffix))
        exit(1);
    ncclComm_t c;
    NCG_CHECK(ncclCommInitRank(&c, world, id, rank));
    return c;
}

static void dump(const char *scenario)
{
    const char *base = getenv("NCG_DUMP");
    if (!base)
        return;
    char path[512];
    snprintf(path, sizeof path, "%s.%s.%d", base, scenario, rank);
    segdump_self(path);
}

static int seg_exists(int pid)
{
    char path[128];
    snprintf(path, sizeof path, "/dev/shm/%s%u.%d", NCG_SHM_PREFIX, (unsigned)getuid(), pid);
    struct stat st;
    return stat(path, &st) == 0;
}

/* Every collective and a p2p ring exchange; results appended to out (compared across runs). */
static void scenario_colls(const char *out)
{
    ncclComm_t comm = init_world(NULL);
    FILE *f = fopen(out, "wb");
    if (!f)
        DIE("cannot write %s", out);
    enum { N = 64 };
    size_t big = (size_t)N * world;
    float *s = malloc(big * sizeof *s), *r = malloc(big * sizeof *r);
    double *sd = malloc(big * sizeof *sd), *rd = malloc(big * sizeof *rd);
    int32_t *si = malloc(big * sizeof *si), *ri = malloc(big * sizeof *ri);
    for (size_t i = 0; i < big; i++) {
        s[i] = (float)(rank * 1000 + i) * 0.25f;
        sd[i] = (double)(rank + 1) * 1.5 + (double)i;
        si[i] = (int32_t)(rank * 7 + (int)i);
    }
#define EMIT(buf, n) fwrite(buf, sizeof *(buf), n, f)
    static const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
    for (int o = 0; o < 5; o++) {
        memset(rd, 0, big * sizeof *rd);
        NCG_CHECK(ncclAllReduce(sd, rd, N, ncclDouble, ops[o], comm, NULL));
        EMIT(rd, N);
        memset(ri, 0, big * sizeof *ri);
        if (ops[o] != ncclAvg) {
            NCG_CHECK(ncclAllReduce(si, ri, N, ncclInt32, ops[o], comm, NULL));
            EMIT(ri, N);
        }
    }
    memset(r, 0, big * sizeof *r);
    NCG_CHECK(ncclBroadcast(s, r, N, ncclFloat, world - 1, comm, NULL));
    EMIT(r, N);
    memcpy(r, s, big * sizeof *r);
    NCG_CHECK(ncclBcast(r, N, ncclFloat, 0, comm, NULL));
    EMIT(r, N);
    memset(r, 0, big * sizeof *r);
    NCG_CHECK(ncclReduce(s, r, N, ncclFloat, ncclSum, 0, comm, NULL));
    if (rank == 0)
        EMIT(r, N);
    memset(r, 0, big * sizeof *r);
    NCG_CHECK(ncclAllGather(s, r, N, ncclFloat, comm, NULL));
    EMIT(r, big);
    memset(r, 0, big * sizeof *r);
    NCG_CHECK(ncclReduceScatter(s, r, N, ncclFloat, ncclMax, comm, NULL));
    EMIT(r, N);
    memset(r, 0, big * sizeof *r);
    NCG_CHECK(ncclAlltoAll(s, r, N, ncclFloat, comm, NULL));
    EMIT(r, big);
    memset(r, 0, big * sizeof *r);
    NCG_CHECK(ncclGather(s, r, N, ncclFloat, 0, comm, NULL));
    if (rank == 0)
        EMIT(r, big);
    memset(r, 0, big * sizeof *r);
    NCG_CHECK(ncclScatter(s, r, N, ncclFloat, world - 1, comm, NULL));
    EMIT(r, N);
    /* p2p ring: send to the right, receive from the left, twice. */
    for (int k = 0; k < 2; k++) {
        memset(r, 0, big * sizeof *r);
        NCG_CHECK(ncclGroupStart());
        NCG_CHECK(ncclSend(s, N, ncclFloat, (rank + 1) % world, comm, NULL));
        NCG_CHECK(ncclRecv(r, N, ncclFloat, (rank + world - 1) % world, comm, NULL));
        NCG_CHECK(ncclGroupEnd());
        EMIT(r, N);
    }
    /* A user reduction op (PreMulSum): recorded as the class "user op". */
    ncclRedOp_t pms;
    float scalar = 2.0f;
    if (ncclRedOpCreatePreMulSum(&pms, &scalar, ncclFloat, ncclScalarHostImmediate, comm) ==
        ncclSuccess) {
        memset(r, 0, big * sizeof *r);
        NCG_CHECK(ncclAllReduce(s, r, N, ncclFloat, pms, comm, NULL));
        EMIT(r, N);
        NCG_CHECK(ncclRedOpDestroy(pms, comm));
    }
    fclose(f);
    dump("colls");
    NCG_CHECK(ncclCommDestroy(comm));
    printf("colls ok\n");
}

/* Nested groups: every collective still takes its own slot, flagged IN_GROUP inside. */
static void scenario_groups(void)
{
    ncclComm_t comm = init_world(NULL);
    float a[8] = {0}, b[8];
    NCG_CHECK(ncclAllReduce(a, b, 1, ncclFloat, ncclSum, comm, NULL));
    NCG_CHECK(ncclGroupStart());
    NCG_CHECK(ncclGroupStart());
    NCG_CHECK(ncclAllReduce(a, b, 2, ncclFloat, ncclSum, comm, NULL));
    NCG_CHECK(ncclAllReduce(a, b, 3, ncclFloat, ncclSum, comm, NULL));
    NCG_CHECK(ncclGroupEnd());
    NCG_CHECK(ncclAllReduce(a, b, 4, ncclFloat, ncclSum, comm, NULL));
    NCG_CHECK(ncclGroupEnd());
    NCG_CHECK(ncclAllReduce(a, b, 5, ncclFloat, ncclSum, comm, NULL));
    dump("groups");
    NCG_CHECK(ncclCommDestroy(comm));
    printf("groups ok\n");
}

static void scenario_bcast(void)
{
    ncclComm_t comm = init_world(NULL);
    float a[4] = {1, 2, 3, 4};
    NCG_CHECK(ncclBcast(a, 4, ncclFloat, 0, comm, NULL));
    NCG_CHECK(ncclBroadcast(a, a, 3, ncclFloat, 0, comm, NULL));
    dump("bcast");
    NCG_CHECK(ncclCommDestroy(comm));
    printf("bcast ok\n");
}

/* Split twice (the second with NOCOLOR on the last rank), then shrink excluding the last rank;
 * one AllReduce of a distinct count on each child. */
static void scenario_split(void)
{
    ncclComm_t comm = init_world(NULL);
    float a[8] = {0}, b[8];
    ncclComm_t half, most = NULL, shrunk = NULL;
    NCG_CHECK(ncclCommSplit(comm, rank % 2, rank, &half, NULL));
    NCG_CHECK(ncclAllReduce(a, b, 2, ncclFloat, ncclSum, half, NULL));
    int color = rank == world - 1 ? NCCL_SPLIT_NOCOLOR : 7;
    NCG_CHECK(ncclCommSplit(comm, color, rank, &most, NULL));
    if (most)
        NCG_CHECK(ncclAllReduce(a, b, 3, ncclFloat, ncclSum, most, NULL));
    int excl[1] = {world - 1};
    if (rank != world - 1) {
        NCG_CHECK(ncclCommShrink(comm, excl, 1, &shrunk, NULL, NCCL_SHRINK_DEFAULT));
        NCG_CHECK(ncclAllReduce(a, b, 4, ncclFloat, ncclSum, shrunk, NULL));
    }
    NCG_CHECK(ncclAllReduce(a, b, 1, ncclFloat, ncclSum, comm, NULL));
    dump("split");
    if (shrunk)
        NCG_CHECK(ncclCommDestroy(shrunk));
    if (most)
        NCG_CHECK(ncclCommDestroy(most));
    NCG_CHECK(ncclCommDestroy(half));
    NCG_CHECK(ncclCommDestroy(comm));
    printf("split ok\n");
}

/* Threads: each with its own comm (M calls, count = 10 + thread), and all taking turns on one
 * shared comm (K calls each, serialised by a mutex as NCCL requires). */
enum { MAXT = 16 };
static int nthreads, ncalls;
static ncclComm_t shared, own[MAXT];
static pthread_mutex_t turn = PTHREAD_MUTEX_INITIALIZER;

static void *thread_main(void *arg)
{
    int t = (int)(intptr_t)arg;
    float a[64] = {0}, b[64];
    for (int i = 0; i < ncalls; i++) {
        NCG_CHECK(ncclAllReduce(a, b, (size_t)(10 + t), ncclFloat, ncclSum, own[t], NULL));
        if (i < 4) {
            pthread_mutex_lock(&turn);
            NCG_CHECK(ncclAllReduce(a, b, 50, ncclFloat, ncclSum, shared, NULL));
            pthread_mutex_unlock(&turn);
        }
    }
    return NULL;
}

static void scenario_threads(int t, int m)
{
    nthreads = t < MAXT ? t : MAXT;
    ncalls = m;
    shared = init_world(NULL);
    for (int i = 0; i < nthreads; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        own[i] = init_world(name);
    }
    /* The turns on the shared comm may interleave differently on each rank: every shared call
     * is identical (count 50), so the streams still match slot for slot. */
    pthread_t th[MAXT];
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)i);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    dump("threads");
    for (int i = 0; i < nthreads; i++)
        NCG_CHECK(ncclCommDestroy(own[i]));
    NCG_CHECK(ncclCommDestroy(shared));
    printf("threads ok\n");
}

/* More calls than the ring holds: the count keeps going, old records are gone (-ENOENT). */
static void scenario_wrap(int n)
{
    ncclComm_t comm = init_world(NULL);
    float a[4] = {0}, b[4];
    for (int i = 0; i < n; i++)
        NCG_CHECK(ncclAllReduce(a, b, 1 + (size_t)(i % 3), ncclFloat, ncclSum, comm, NULL));
    struct ncg_shm_header *h = segdump_map(getpid());
    if (!h)
        DIE("no segment");
    const struct ncg_shm_comm *c = ncg_shm_comm_at(h, 0);
    struct ncg_shm_record r;
    if (c->coll_seq != (uint64_t)n)
        DIE("coll_seq %llu != %d", (unsigned long long)c->coll_seq, n);
    int rc0 = ncg_ring_read(c, NCG_RING_COLL, 0, &r);
    int rcold = ncg_ring_read(c, NCG_RING_COLL, (uint64_t)n - NCG_COLL_RING - 1, &r);
    int rcnext = ncg_ring_read(c, NCG_RING_COLL, (uint64_t)n, &r);
    int rcfirst = ncg_ring_read(c, NCG_RING_COLL, (uint64_t)n - NCG_COLL_RING, &r);
    uint64_t firstseq = r.seq;
    int rclast = ncg_ring_read(c, NCG_RING_COLL, (uint64_t)n - 1, &r);
    printf("wrap: read(0)=%d read(n-ring-1)=%d read(n)=%d read(n-ring)=%d seq=%llu read(n-1)=%d "
           "seq=%llu count=%llu\n",
           rc0, rcold, rcnext, rcfirst, (unsigned long long)firstseq, rclast,
           (unsigned long long)r.seq, (unsigned long long)r.count);
    if (rc0 != -ENOENT || rcold != -ENOENT || rcnext != -EAGAIN || rcfirst != 0 || rclast != 0 ||
        r.seq != (uint64_t)n - 1 || r.count != 1 + (uint64_t)((n - 1) % 3) ||
        firstseq != (uint64_t)n - NCG_COLL_RING)
        DIE("unexpected ring reads");
    dump("wrap");
    NCG_CHECK(ncclCommDestroy(comm));
    printf("wrap ok\n");
}

/* fork after init: the child starts with no segment and no comms; a comm of its own gives it its
 * own segment, removed at its exit; the parent's stays intact and keeps counting. */
static void scenario_fork(void)
{
    ncclComm_t comm = init_world(NULL);
    float a[4] = {0}, b[4];
    NCG_CHECK(ncclAllReduce(a, b, 1, ncclFloat, ncclSum, comm, NULL));
    int parent = getpid();
    if (!seg_exists(parent))
        DIE("parent has no segment before fork");
    pid_t pid = fork();
    if (pid == 0) {
        if (seg_exists(getpid()))
            _exit(10);
        /* Calls on the parent's comm are not the child's: forwarded, not recorded. */
        ncclUniqueId id;
        ncclComm_t mine;
        if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&mine, 1, id, 0) != ncclSuccess)
            _exit(11);
        if (!seg_exists(getpid()))
            _exit(12);
        if (ncclAllReduce(a, b, 2, ncclFloat, ncclSum, mine, NULL) != ncclSuccess)
            _exit(13);
        struct ncg_shm_header *h = segdump_map(getpid());
        if (!h || h->ncomms != 1 || ncg_shm_comm_at(h, 0)->coll_seq != 1 || h->pid != getpid())
            _exit(14);
        if (ncclCommDestroy(mine) != ncclSuccess)
            _exit(15);
        exit(0); /* clean exit: atexit unlinks the child's segment, not the parent's */
    }
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        DIE("child failed: %s %d", WIFEXITED(st) ? "status" : "signal",
            WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    if (seg_exists(pid))
        DIE("child's segment left behind");
    if (!seg_exists(parent))
        DIE("parent's segment gone after the child exited");
    NCG_CHECK(ncclAllReduce(a, b, 3, ncclFloat, ncclSum, comm, NULL));
    dump("fork");
    NCG_CHECK(ncclCommDestroy(comm));
    printf("fork ok\n");
}

/* Producers for the concurrent-reader test: T threads, each on its own 1-rank comm, issuing
 * AllReduce with count = i % 16 + 1 and dtype = (i / 16) % 8 (i = that comm's slot), so a reader
 * can check every record it accepts (shmread --watch). Runs until the file STOPFILE exists. */
static const char *stop_file;
static void *stress_main(void *arg)
{
    ncclComm_t c = arg;
    static const char a[128];
    char b[128];
    struct stat st;
    for (uint64_t i = 0;; i++) {
        if ((i & 255) == 0 && stat(stop_file, &st) == 0)
            break;
        NCG_CHECK(
            ncclAllReduce(a, b, i % 16 + 1, (ncclDataType_t)((i / 16) % 8), ncclSum, c, NULL));
    }
    return NULL;
}

static void scenario_stress(int t, const char *stop)
{
    stop_file = stop;
    pthread_t th[MAXT];
    ncclComm_t cs[MAXT];
    t = t < MAXT ? t : MAXT;
    for (int i = 0; i < t; i++) {
        ncclUniqueId id;
        NCG_CHECK(ncclGetUniqueId(&id));
        NCG_CHECK(ncclCommInitRank(&cs[i], 1, id, 0));
    }
    printf("stress pid %d ready\n", getpid());
    fflush(stdout);
    for (int i = 0; i < t; i++)
        pthread_create(&th[i], NULL, stress_main, cs[i]);
    for (int i = 0; i < t; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < t; i++)
        NCG_CHECK(ncclCommDestroy(cs[i]));
    printf("stress ok\n");
}

/* More communicators than the segment has slots: destroyed comms' slots are recycled; beyond
 * 64 live ones the extras are counted (comms_dropped), forwarded and not recorded. */
static void scenario_many(void)
{
    enum { MANY = NCG_SHM_MAX_COMMS + 6 };
    static ncclComm_t cs[MANY];
    static float a[MANY + 1], b[MANY + 1];
    for (int i = 0; i < MANY; i++) { /* one at a time: every slot reused when they run out */
        ncclUniqueId id;
        NCG_CHECK(ncclGetUniqueId(&id));
        NCG_CHECK(ncclCommInitRank(&cs[i], 1, id, 0));
        NCG_CHECK(ncclAllReduce(a, b, 1 + (size_t)i, ncclFloat, ncclSum, cs[i], NULL));
        NCG_CHECK(ncclCommDestroy(cs[i]));
    }
    struct ncg_shm_header *h = segdump_map(getpid());
    if (!h || h->ncomms != NCG_SHM_MAX_COMMS || h->comms_dropped != 0)
        DIE("sequential comms: ncomms %u dropped %u", h ? h->ncomms : 0, h ? h->comms_dropped : 0);
    int found_last = 0;
    for (uint32_t i = 0; i < NCG_SHM_MAX_COMMS; i++) {
        const struct ncg_shm_comm *c = ncg_shm_comm_at(h, i);
        struct ncg_shm_record r;
        if (c->state != NCG_COMM_DESTROYED || c->coll_seq != 1 ||
            ncg_ring_read(c, NCG_RING_COLL, 0, &r))
            DIE("slot %u: state %u coll_seq %llu", i, c->state, (unsigned long long)c->coll_seq);
        found_last += r.count == MANY;
    }
    if (!found_last)
        DIE("the last comm was not recorded in a recycled slot");
    for (int i = 0; i < MANY; i++) { /* all alive at once: 6 beyond the segment */
        ncclUniqueId id;
        NCG_CHECK(ncclGetUniqueId(&id));
        NCG_CHECK(ncclCommInitRank(&cs[i], 1, id, 0));
        NCG_CHECK(ncclAllReduce(a, b, 1, ncclFloat, ncclSum, cs[i], NULL));
    }
    if (h->comms_dropped != MANY - NCG_SHM_MAX_COMMS)
        DIE("live comms: dropped %u", h->comms_dropped);
    for (int i = 0; i < MANY; i++)
        NCG_CHECK(ncclCommDestroy(cs[i]));
    printf("many ok\n");
}

/* ncclCommInitAll: all members in this process (NCCL's internal ncclGetUniqueId not seen as
 * the application's); one grouped AllReduce over them. */
static void scenario_initall(void)
{
    enum { ND = 3 };
    ncclComm_t cs[ND];
    float a[ND][4], b[ND][4];
    memset(a, 0, sizeof a);
    NCG_CHECK(ncclCommInitAll(cs, ND, NULL));
    NCG_CHECK(ncclGroupStart());
    for (int i = 0; i < ND; i++)
        NCG_CHECK(ncclAllReduce(a[i], b[i], 4, ncclFloat, ncclSum, cs[i], NULL));
    NCG_CHECK(ncclGroupEnd());
    dump("initall");
    for (int i = 0; i < ND; i++)
        NCG_CHECK(ncclCommDestroy(cs[i]));
    printf("initall ok\n");
}

/* Waits (bounded, sleeping) until a nonblocking comm is ready. */
static void wait_ready(ncclComm_t c)
{
    ncclResult_t st = ncclInProgress;
    for (int i = 0; i < 10000 && st == ncclInProgress; i++) {
        NCG_CHECK(ncclCommGetAsyncError(c, &st));
        if (st == ncclInProgress)
            usleep(1000);
    }
    if (st != ncclSuccess)
        DIE("nonblocking comm not ready: %d", st);
}

/* Nonblocking root comm (ncclInProgress: recorded from the init arguments) and a nonblocking
 * split child (rank and size learnt from NCCL once ready). */
static void scenario_nonblocking(void)
{
    ncclUniqueId id;
    if (ncg_test_share_id(&id))
        exit(1);
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclComm_t comm, child;
    ncclResult_t r = ncclCommInitRankConfig(&comm, world, id, rank, &cfg);
    if (r != ncclSuccess && r != ncclInProgress)
        DIE("nonblocking init: %d", r);
    wait_ready(comm);
    r = ncclCommSplit(comm, 0, world - rank, &child, &cfg); /* reversed ranks */
    if (r != ncclSuccess && r != ncclInProgress)
        DIE("nonblocking split: %d", r);
    wait_ready(child);
    float a[4] = {0}, b[4];
    NCG_CHECK(ncclAllReduce(a, b, 4, ncclFloat, ncclSum, comm, NULL));
    NCG_CHECK(ncclAllReduce(a, b, 2, ncclFloat, ncclSum, child, NULL));
    ncclResult_t st;
    NCG_CHECK(ncclCommGetAsyncError(child, &st));
    dump("nonblocking");
    NCG_CHECK(ncclCommDestroy(child));
    NCG_CHECK(ncclCommDestroy(comm));
    printf("nonblocking ok\n");
}

int main(int argc, char **argv)
{
    if (argc < 2)
        DIE("usage: calls colls OUT | groups | bcast | split | threads T M | wrap N | fork | many "
            "| initall | nonblocking | stress T STOPFILE");
    rank = ncg_test_rank();
    world = ncg_test_world();
    const char *s = argv[1];
    if (!strcmp(s, "colls") && argc > 2)
        scenario_colls(argv[2]);
    else if (!strcmp(s, "groups"))
        scenario_groups();
    else if (!strcmp(s, "bcast"))
        scenario_bcast();
    else if (!strcmp(s, "split"))
        scenario_split();
    else if (!strcmp(s, "threads") && argc > 3)
        scenario_threads(atoi(argv[2]), atoi(argv[3]));
    else if (!strcmp(s, "wrap") && argc > 2)
        scenario_wrap(atoi(argv[2]));
    else if (!strcmp(s, "fork"))
        scenario_fork();
    else if (!strcmp(s, "initall"))
        scenario_initall();
    else if (!strcmp(s, "nonblocking"))
        scenario_nonblocking();
    else if (!strcmp(s, "many"))
        scenario_many();
    else if (!strcmp(s, "stress") && argc > 3)
        scenario_stress(atoi(argv[2]), argv[3]);
    else
        DIE("unknown scenario %s", s);
    return 0;
}
