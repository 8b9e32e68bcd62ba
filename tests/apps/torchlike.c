/* torchlike: an NCCL application driven the way PyTorch's ProcessGroupNCCL drives NCCL on a GPU,
 * written against NVIDIA's nccl.h and cuda_runtime_api.h and linked with libcudart.so.13 (runs
 * on the CPU runtime of tests/fakecuda and the CPU NCCL in asynchronous mode). Per process group
 * an NCCL stream; "compute" (host functions) on a compute stream joined to it by events; every
 * collective is a work item with an end event; the host runs ahead and synchronizes every
 * --sync-every steps (loss.item()); a watchdog thread polls ncclCommGetAsyncError and the works'
 * end events every 100 ms and, on an error or a work older than --timeout, aborts the
 * communicators and ends the process with its own error (TORCH_NCCL_ASYNC_ERROR_HANDLING).
 * Usage (under ncg-launch): torchlike [--steps N] [--mode ddp|fsdp|both] [--groups 1|2]
 *   [--nonblocking] [--scalable] [--sync-every K] [--timeout S] [--pause RANK:SECONDS]
 *   [--fault incident|count|kill|stop|exit] [--fault-rank R] [--fault-step S]
 * Exit 0 ("torchlike: N ranks, M collectives per rank ok" from rank 0), 1 on a wrong result or
 * a failed call, TL_EXIT_WATCHDOG (6, as the SIGABRT PyTorch ends with) when its watchdog
 * fired. */
#include <nccl.h>

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ncg_test.h"

#define TL_EXIT_WATCHDOG 6
#define NBUCKETS 4
#define BUCKET 256 /* floats per DDP bucket */
#define SHARD 128  /* floats per rank in the FSDP shard */
#define MAX_WORKS 4096

static int g_rank, g_world;

#define CUDA_CK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "torchlike: rank %d: %s: %s\n", g_rank, #call,                         \
                    cudaGetErrorString(e_));                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* One process group: a communicator, its NCCL stream, and its work list (as WorkNCCL). */
struct pg {
    const char *name;
    ncclComm_t comm;
    cudaStream_t stream;
    uint64_t seq;
};

struct work {
    struct pg *pg;
    uint64_t seq;
    const char *op;
    cudaEvent_t end;
    double enqueued;
};

static struct {
    pthread_mutex_t lock;
    struct work w[MAX_WORKS];
    uint64_t head, tail; /* works [tail, head) are not known complete */
} g_works = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct pg g_pgs[2];
static atomic_int g_npgs; /* read by the watchdog thread */
static double g_timeout = 600;
static atomic_int g_stop;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nccl_ck(ncclResult_t r, const char *what)
{
    if (r == ncclSuccess || r == ncclInProgress)
        return;
    fprintf(stderr, "torchlike: rank %d: %s failed: %s (%s)\n", g_rank, what, ncclGetErrorString(r),
            ncclGetLastError(NULL));
    exit(1);
}
#define NCCL_CK(call) nccl_ck((call), #call)

/* After a collective was enqueued on pg's stream: its end event, as WorkNCCL records. */
static void work_end(struct pg *pg, const char *op)
{
    cudaEvent_t ev;
    CUDA_CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CUDA_CK(cudaEventRecord(ev, pg->stream));
    pthread_mutex_lock(&g_works.lock);
    if (g_works.head - g_works.tail == MAX_WORKS) {
        pthread_mutex_unlock(&g_works.lock);
        fprintf(stderr, "torchlike: rank %d: more than %d works in flight\n", g_rank, MAX_WORKS);
        exit(1);
    }
    struct work *w = &g_works.w[g_works.head % MAX_WORKS];
    *w = (struct work){pg, pg->seq++, op, ev, now_s()};
    g_works.head++;
    pthread_mutex_unlock(&g_works.lock);
}

static void abort_all_and_exit(const char *why)
{
    fprintf(stderr,
            "torchlike: rank %d: [watchdog] %s; aborting the NCCL communicators and "
            "terminating the process\n",
            g_rank, why);
    for (int i = 0; i < g_npgs; i++)
        if (g_pgs[i].comm)
            ncclCommAbort(g_pgs[i].comm);
    _exit(TL_EXIT_WATCHDOG);
}

/* ProcessGroupNCCL's watchdog: every 100 ms, each communicator's async error and each work's
 * completion; an error or a work older than the timeout ends the process. */
static void *watchdog(void *arg)
{
    (void)arg;
    char why[256];
    while (!atomic_load(&g_stop)) {
        usleep(100 * 1000);
        for (int i = 0; i < g_npgs; i++) {
            ncclResult_t ae = ncclSuccess;
            if (!g_pgs[i].comm || ncclCommGetAsyncError(g_pgs[i].comm, &ae) != ncclSuccess)
                continue;
            if (ae != ncclSuccess && ae != ncclInProgress) {
                snprintf(why, sizeof why, "process group %s: NCCL error: %s, NCCL version %d (%s)",
                         g_pgs[i].name, ncclGetErrorString(ae), NCCL_VERSION_CODE,
                         ncclGetLastError(g_pgs[i].comm));
                abort_all_and_exit(why);
            }
        }
        pthread_mutex_lock(&g_works.lock);
        while (g_works.tail < g_works.head) {
            struct work *w = &g_works.w[g_works.tail % MAX_WORKS];
            cudaError_t q = cudaEventQuery(w->end);
            if (q == cudaErrorNotReady) {
                double age = now_s() - w->enqueued;
                if (age > g_timeout) {
                    snprintf(why, sizeof why,
                             "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%llu, "
                             "OpType=%s, process group %s) ran for %.0f ms",
                             (unsigned long long)w->seq, w->op, w->pg->name, age * 1000);
                    pthread_mutex_unlock(&g_works.lock);
                    abort_all_and_exit(why);
                }
                break;
            }
            cudaEventDestroy(w->end);
            g_works.tail++;
        }
        pthread_mutex_unlock(&g_works.lock);
    }
    return NULL;
}

/* work.wait() after a synchronization: a failed communicator's results are garbage; the
 * watchdog ends the process within its next poll (as ProcessGroupNCCL tears down). */
static void await_watchdog_on_error(void)
{
    for (int i = 0; i < g_npgs; i++) {
        ncclResult_t ae = ncclSuccess;
        if (g_pgs[i].comm && ncclCommGetAsyncError(g_pgs[i].comm, &ae) == ncclSuccess &&
            ae != ncclSuccess && ae != ncclInProgress)
            for (;;)
                pause();
    }
}

struct opts {
    int steps, groups, nonblocking, scalable, sync_every;
    int pause_rank;
    double pause_s;
    const char *mode, *fault;
    int fault_rank, fault_step;
};

static void await_init(ncclComm_t c, ncclResult_t r, const char *what)
{
    nccl_ck(r, what);
    ncclResult_t ae = ncclInProgress;
    /* nonblocking init (TORCH_NCCL_USE_COMM_NONBLOCKING): poll until ready */
    while (ae == ncclInProgress) {
        NCCL_CK(ncclCommGetAsyncError(c, &ae));
        if (ae == ncclInProgress)
            usleep(1000);
    }
    nccl_ck(ae, what);
}

static void init_world(struct pg *pg, const struct opts *o)
{
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = o->nonblocking ? 0 : 1;
    ncclResult_t r;
    if (o->scalable) {
        /* above TORCH_NCCL_RANKS_PER_ROOT ranks: several roots' ids */
        ncclUniqueId ids[2];
        if (ncg_test_share_id(&ids[0]) != 0 || ncg_test_share_id_named(&ids[1], "s2") != 0)
            exit(1);
        r = ncclCommInitRankScalable(&pg->comm, g_world, g_rank, 2, ids, &cfg);
    } else {
        ncclUniqueId id;
        if (ncg_test_share_id(&id) != 0)
            exit(1);
        r = ncclCommInitRankConfig(&pg->comm, g_world, id, g_rank, &cfg);
    }
    await_init(pg->comm, r, "init world");
}

/* new_group: a split of the world communicator (the sub-group of even/odd ranks). */
static void new_group(struct pg *pg, struct pg *parent, const struct opts *o)
{
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = o->nonblocking ? 0 : 1;
    ncclResult_t r = ncclCommSplit(parent->comm, g_rank % 2, g_rank, &pg->comm, &cfg);
    await_init(pg->comm, r, "ncclCommSplit");
}

struct compute_arg {
    float *buf;
    size_t n;
    float v;
};

/* "backward": fills gradients on the compute stream */
static void compute(void *p)
{
    struct compute_arg *a = p;
    for (size_t i = 0; i < a->n; i++)
        a->buf[i] = a->v;
}

static void check(int ok, const char *what, int step)
{
    if (!ok) {
        fprintf(stderr, "torchlike: rank %d: wrong result in %s at step %d\n", g_rank, what, step);
        exit(1);
    }
}

static int parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.steps = 200,
                       .groups = 2,
                       .sync_every = 8,
                       .pause_rank = -1,
                       .mode = "both",
                       .fault = "",
                       .fault_rank = -1,
                       .fault_step = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--nonblocking"))
            o->nonblocking = 1;
        else if (!strcmp(a, "--scalable"))
            o->scalable = 1;
        else if (v && !strcmp(a, "--steps"))
            o->steps = atoi(argv[++i]);
        else if (v && !strcmp(a, "--groups"))
            o->groups = atoi(argv[++i]);
        else if (v && !strcmp(a, "--mode"))
            o->mode = argv[++i];
        else if (v && !strcmp(a, "--sync-every"))
            o->sync_every = atoi(argv[++i]);
        else if (v && !strcmp(a, "--timeout"))
            g_timeout = atof(argv[++i]);
        else if (v && !strcmp(a, "--pause") &&
                 sscanf(v, "%d:%lf", &o->pause_rank, &o->pause_s) == 2)
            i++;
        else if (v && !strcmp(a, "--fault"))
            o->fault = argv[++i];
        else if (v && !strcmp(a, "--fault-rank"))
            o->fault_rank = atoi(argv[++i]);
        else if (v && !strcmp(a, "--fault-step"))
            o->fault_step = atoi(argv[++i]);
        else
            return -1;
    }
    if (o->steps < 1 || o->groups < 1 || o->groups > 2 || o->sync_every < 1 || o->sync_every > 64)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: torchlike [--steps N] [--mode ddp|fsdp|both] [--groups 1|2] "
                        "[--nonblocking] [--scalable] [--sync-every K] [--timeout S] "
                        "[--pause RANK:SECONDS] [--fault incident|count|kill|stop|exit] "
                        "[--fault-rank R] [--fault-step S]\n");
        return 2;
    }
    g_rank = ncg_test_rank();
    g_world = ncg_test_world();
    int n = g_world, me = g_rank;
    int ddp = strcmp(o.mode, "fsdp") != 0, fsdp = strcmp(o.mode, "ddp") != 0;
    int frank = o.fault_rank >= 0 ? o.fault_rank : (n > 3 ? 3 : n - 1);
    int fstep = o.fault_step >= 0 ? o.fault_step : o.steps / 2;
    int steps = o.steps;
    /* the incident: this rank's data runs out first (fewer steps), then the barrier */
    if (!strcmp(o.fault, "incident") && me == frank)
        steps = fstep;

    CUDA_CK(cudaSetDevice(0));
    int lo, hi;
    CUDA_CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    cudaStream_t compute_stream;
    CUDA_CK(cudaStreamCreateWithFlags(&compute_stream, cudaStreamNonBlocking));
    struct pg *world = &g_pgs[0], *sub = &g_pgs[1];
    world->name = "default_pg";
    sub->name = "new_group";
    CUDA_CK(cudaStreamCreateWithPriority(&world->stream, cudaStreamNonBlocking, hi));
    CUDA_CK(cudaStreamCreateWithPriority(&sub->stream, cudaStreamNonBlocking, hi));
    init_world(world, &o);
    g_npgs = 1;
    pthread_t wd;
    pthread_create(&wd, NULL, watchdog, NULL);

    float *grads, *shard, *params;
    size_t gsize = (size_t)SHARD * (size_t)n > NBUCKETS * BUCKET ? (size_t)SHARD * (size_t)n
                                                                 : NBUCKETS * BUCKET;
    /* + 1: the count fault's last bucket is one element longer */
    CUDA_CK(cudaMalloc((void **)&grads, sizeof(float) * (gsize + 1)));
    CUDA_CK(cudaMalloc((void **)&shard, sizeof(float) * SHARD));
    CUDA_CK(cudaMalloc((void **)&params, sizeof(float) * SHARD * (size_t)n));
    float *sub_buf;
    CUDA_CK(cudaMalloc((void **)&sub_buf, sizeof(float) * 64));
    float *host = malloc(sizeof(float) *
                         (gsize > (size_t)SHARD * (size_t)n ? gsize : (size_t)SHARD * (size_t)n));
    if (!host)
        return 1;
    cudaEvent_t grads_ready, comm_done;
    CUDA_CK(cudaEventCreateWithFlags(&grads_ready, cudaEventDisableTiming));
    CUDA_CK(cudaEventCreateWithFlags(&comm_done, cudaEventDisableTiming));
    /* one argument per step of a synchronization window: a queued host function reads its own */
    struct compute_arg cargs[64];
    long colls = 0;

    for (int step = 0; step < steps; step++) {
        if (!strcmp(o.fault, "kill") && me == frank && step == fstep)
            kill(getpid(), SIGKILL);
        if (!strcmp(o.fault, "stop") && me == frank && step == fstep)
            raise(SIGSTOP); /* a frozen rank: its process lives, it says nothing */
        if (!strcmp(o.fault, "exit") && me == frank && step == fstep) {
            fprintf(stderr, "torchlike: rank %d leaves early at step %d\n", me, step);
            exit(0);
        }
        /* backward on the compute stream, then the gradient buckets' all-reduce on the NCCL
         * stream once the gradients are ready (the compute stream waits for the previous
         * step's communication before overwriting the buckets) */
        CUDA_CK(cudaStreamWaitEvent(compute_stream, comm_done, 0));
        struct compute_arg *carg = &cargs[step % o.sync_every];
        *carg = (struct compute_arg){grads, gsize, (float)(step % 5 + 1)};
        CUDA_CK(cudaLaunchHostFunc(compute_stream, compute, carg));
        CUDA_CK(cudaEventRecord(grads_ready, compute_stream));
        CUDA_CK(cudaStreamWaitEvent(world->stream, grads_ready, 0));
        if (ddp) {
            size_t cnt = BUCKET;
            if (!strcmp(o.fault, "count") && me == frank && step == fstep)
                cnt = BUCKET + 1;      /* one rank's bucket has another size */
            NCCL_CK(ncclGroupStart()); /* coalesced buckets */
            for (int b = 0; b < NBUCKETS; b++)
                NCCL_CK(ncclAllReduce(grads + b * BUCKET, grads + b * BUCKET,
                                      b == NBUCKETS - 1 ? cnt : BUCKET, ncclFloat32, ncclSum,
                                      world->comm, world->stream));
            NCCL_CK(ncclGroupEnd());
            work_end(world, "ALLREDUCE_COALESCED");
            colls += NBUCKETS;
        }
        if (fsdp) {
            NCCL_CK(ncclReduceScatter(grads, shard, SHARD, ncclFloat32, ncclAvg, world->comm,
                                      world->stream));
            work_end(world, "_REDUCE_SCATTER_BASE");
            CUDA_CK(cudaMemsetAsync(params + (size_t)me * SHARD, 0, sizeof(float) * SHARD,
                                    world->stream));
            NCCL_CK(ncclAllGather(params + (size_t)me * SHARD, params, SHARD, ncclFloat32,
                                  world->comm, world->stream));
            work_end(world, "_ALLGATHER_BASE");
            colls += 2;
        }
        CUDA_CK(cudaEventRecord(comm_done, world->stream));
        if (o.groups == 2 && step % 4 == 1) {
            if (!sub->comm) {
                /* lazily created inside a coalesced region: the group is closed around the
                 * init and reopened, as ProcessGroupNCCL does */
                NCCL_CK(ncclGroupStart());
                NCCL_CK(ncclGroupEnd());
                new_group(sub, world, &o);
                g_npgs = 2;
                NCCL_CK(ncclGroupStart());
                NCCL_CK(ncclGroupEnd());
            }
            CUDA_CK(cudaMemsetAsync(sub_buf, 0, sizeof(float) * 64, sub->stream));
            NCCL_CK(
                ncclAllReduce(sub_buf, sub_buf, 64, ncclFloat32, ncclSum, sub->comm, sub->stream));
            work_end(sub, "ALLREDUCE");
            colls++;
        }
        if ((step + 1) % o.sync_every == 0 || step == steps - 1) {
            /* loss.item(): the host waits for the device */
            CUDA_CK(cudaStreamSynchronize(world->stream));
            await_watchdog_on_error();
            if (ddp) {
                CUDA_CK(cudaMemcpy(host, grads, sizeof(float) * NBUCKETS * BUCKET,
                                   cudaMemcpyDeviceToHost));
                float want = carg->v * (float)n;
                check(host[0] == want && host[NBUCKETS * BUCKET - 1] == want,
                      "DDP bucket all-reduce", step);
            }
            if (fsdp) {
                CUDA_CK(cudaMemcpy(host, params, sizeof(float) * SHARD * (size_t)n,
                                   cudaMemcpyDeviceToHost));
                check(host[0] == 0 && host[SHARD * (size_t)n - 1] == 0, "FSDP all-gather", step);
            }
            if (sub->comm)
                CUDA_CK(cudaStreamSynchronize(sub->stream));
        }
        if (me == o.pause_rank && step == steps / 2) {
            /* a slow rank with all its work complete (a checkpoint write, a data stall) */
            CUDA_CK(cudaDeviceSynchronize());
            usleep((useconds_t)(o.pause_s * 1e6));
        }
    }
    /* epoch end: dist.barrier() before the checkpoint, an all-reduce of one element */
    CUDA_CK(cudaMemsetAsync(sub_buf, 0, sizeof(float), world->stream));
    NCCL_CK(ncclAllReduce(sub_buf, sub_buf, 1, ncclFloat32, ncclSum, world->comm, world->stream));
    work_end(world, "ALLREDUCE");
    colls++;
    CUDA_CK(cudaStreamSynchronize(world->stream));
    await_watchdog_on_error();
    atomic_store(&g_stop, 1);
    pthread_join(wd, NULL);
    if (sub->comm)
        NCCL_CK(ncclCommDestroy(sub->comm));
    NCCL_CK(ncclCommDestroy(world->comm));
    if (me == 0)
        printf("torchlike: %d ranks, %ld collectives per rank ok\n", n, colls);
    free(host);
    return 0;
}
