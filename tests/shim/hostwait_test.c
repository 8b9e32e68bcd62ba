/* Unit test of the host waits (interpose/shim/hostwait.c) on the CPU CUDA runtime
 * (tests/fakecuda), whose streams are held busy by a host function waiting at a gate: threads
 * blocked in cudaStreamSynchronize / cudaEventSynchronize / cudaDeviceSynchronize show in a
 * snapshot with their stream (and for an event its recorder and launch order) and are gone
 * after; NotReady polls; what passes through unrecorded (inside NCCL, NCCLGUARD=0, dormant,
 * ncclguard's own calls); results equal the runtime's; slots of exited threads are reused; a
 * full thread table; many events; snapshots consistent under a thread rewriting its wait. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fc_test.h"
#include "hostwait.h"
#include "shim.h"

/* The per-thread-default-stream entry points (declared by the header only in such builds). */
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *arg);
/* tests/shim/hostwait_lib.c: calls from inside the interposing object. */
int hw_lib_stream_sync(void *stream);
int hw_lib_stream_query(void *stream);

/* Our prototypes (void pointers, ints) have CUDA's shape. */
#define SAME(f, T) _Static_assert(__builtin_types_compatible_p(__typeof__(&f), T), #f)
SAME(cudaStreamSynchronize, cudaError_t (*)(cudaStream_t));
SAME(cudaEventSynchronize, cudaError_t (*)(cudaEvent_t));
SAME(cudaDeviceSynchronize, cudaError_t (*)(void));
SAME(cudaEventRecord, cudaError_t (*)(cudaEvent_t, cudaStream_t));
SAME(cudaEventRecordWithFlags, cudaError_t (*)(cudaEvent_t, cudaStream_t, unsigned int));
SAME(cudaEventQuery, cudaError_t (*)(cudaEvent_t));
SAME(cudaStreamQuery, cudaError_t (*)(cudaStream_t));
_Static_assert(sizeof(cudaError_t) == sizeof(int) && cudaErrorInitializationError == 3 &&
                   cudaErrorNotReady == 600,
               "CUDA constants");

static int failures;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "FAIL line %d: %s\n", __LINE__, #c);                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t gettid_(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

static struct ncg_hostwait snap[NCG_HW_SLOTS + 8];

/* The snapshot's entry of tid, or NULL. */
static const struct ncg_hostwait *entry_of(uint32_t tid, uint64_t now)
{
    size_t n = ncg_hostwait_snapshot(snap, sizeof snap / sizeof *snap, now);
    for (size_t i = 0; i < n; i++)
        if (snap[i].tid == tid)
            return &snap[i];
    return NULL;
}

/* tid's entry once it shows (up to 5 s), or NULL. */
static const struct ncg_hostwait *await_entry(uint32_t tid, uint64_t *now)
{
    for (int i = 0; i < 5000; i++) {
        const struct ncg_hostwait *w = entry_of(tid, *now = now_ns());
        if (w)
            return w;
        sleep_ms(1);
    }
    return NULL;
}

/* ---- waiting threads ---- */

enum { OP_SSYNC, OP_SSYNC_PTSZ, OP_ESYNC, OP_DSYNC, OP_LIB_SSYNC, OP_RECORD };
struct waiter {
    pthread_t th;
    int op, depth;
    void *h, *h2;      /* the stream or event; OP_RECORD: event h on stream h2 */
    uint32_t order;    /* OP_RECORD: ncg_tls.order at the record */
    struct gate *gate; /* OP_SSYNC_PTSZ: held on the thread's per-thread stream */
    uint32_t tid;
    int ret;
};

static void *waiter_run(void *arg)
{
    struct waiter *w = arg;
    ncg_tls.depth = w->depth;
    if (w->op == OP_SSYNC_PTSZ) {
        CK(cudaLaunchHostFunc_ptsz(NULL, gate_wait, w->gate));
        gate_entered(w->gate);
    }
    __atomic_store_n(&w->tid, gettid_(), __ATOMIC_RELEASE);
    switch (w->op) {
    case OP_SSYNC:
        w->ret = cudaStreamSynchronize(w->h);
        break;
    case OP_SSYNC_PTSZ:
        w->ret = cudaStreamSynchronize_ptsz(NULL);
        break;
    case OP_ESYNC:
        w->ret = cudaEventSynchronize(w->h);
        break;
    case OP_DSYNC:
        w->ret = cudaDeviceSynchronize();
        break;
    case OP_LIB_SSYNC:
        w->ret = hw_lib_stream_sync(w->h);
        break;
    case OP_RECORD:
        ncg_tls.order = w->order;
        w->ret = cudaEventRecord(w->h, w->h2);
        break;
    }
    return NULL;
}

static void start(struct waiter *w)
{
    REQUIRE(pthread_create(&w->th, NULL, waiter_run, w) == 0);
    while (!__atomic_load_n(&w->tid, __ATOMIC_ACQUIRE))
        sleep_ms(1);
}

/* A stream held busy by a host function at gate g (opened by the caller). */
static cudaStream_t busy_stream(struct gate *g)
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaLaunchHostFunc(s, gate_wait, g));
    gate_entered(g);
    return s;
}

static void test_stream_sync(void)
{
    struct gate g1 = GATE_INIT, g2 = GATE_INIT;
    cudaStream_t s1 = busy_stream(&g1), s2 = busy_stream(&g2);
    struct waiter a = {.op = OP_SSYNC, .h = s1}, b = {.op = OP_SSYNC, .h = s2};
    start(&a);
    start(&b);
    uint64_t t0 = now_ns(), now;
    const struct ncg_hostwait *w = await_entry(a.tid, &now);
    CHECK(w && w->kind == NCG_HW_STREAM && w->stream == ncg_stream_index_slow(s1) &&
          w->stream != 0 && w->rec_tid == 0 && w->order == NCG_HW_ORDER_NONE &&
          w->since_ns >= t0 - 1000000000ull && w->since_ns <= now && w->last_ns == now);
    w = await_entry(b.tid, &now);
    CHECK(w && w->kind == NCG_HW_STREAM && w->stream == ncg_stream_index_slow(s2) &&
          w->stream != ncg_stream_index_slow(s1) && w->last_ns == now);
    CHECK(ncg_hostwait_snapshot(snap, 1, now) == 1); /* cap */
    CHECK(ncg_hostwait_snapshot(snap, 0, now) == 0);
    gate_open(&g1);
    pthread_join(a.th, NULL);
    CHECK(a.ret == cudaSuccess && !entry_of(a.tid, now_ns()) && entry_of(b.tid, now_ns()));
    gate_open(&g2);
    pthread_join(b.th, NULL);
    CHECK(b.ret == cudaSuccess && !entry_of(b.tid, now_ns()));
    CHECK(ncg_hostwait_snapshot(snap, NCG_HW_SLOTS, now_ns()) == 0);
    /* cudaStreamPerThread through the per-thread-default-stream entry point */
    struct gate g3 = GATE_INIT;
    struct waiter c = {.op = OP_SSYNC_PTSZ, .gate = &g3};
    start(&c);
    w = await_entry(c.tid, &now);
    CHECK(w && w->kind == NCG_HW_STREAM && w->stream == ncg_stream_index_slow((void *)2));
    gate_open(&g3);
    pthread_join(c.th, NULL);
    CHECK(c.ret == cudaSuccess && !entry_of(c.tid, now_ns()));
}

static void test_event_sync(void)
{
    struct gate g = GATE_INIT;
    cudaStream_t s = busy_stream(&g);
    cudaEvent_t ev, unknown;
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&unknown, cudaEventDisableTiming));
    /* recorded twice by one thread (the second record counts), waited for by another */
    struct waiter r1 = {.op = OP_RECORD, .h = ev, .h2 = s, .order = 7};
    start(&r1);
    pthread_join(r1.th, NULL);
    struct waiter r2 = {.op = OP_RECORD, .h = ev, .h2 = s, .order = NCG_ORDER_MASK + 1u + 41};
    start(&r2);
    pthread_join(r2.th, NULL);
    CHECK(r1.ret == cudaSuccess && r2.ret == cudaSuccess);
    /* recorded while dormant: not noted, the event is unknown */
    __atomic_store_n(&ncg_state, NCG_ST_DORMANT, __ATOMIC_RELEASE);
    CK(cudaEventRecord(unknown, s));
    __atomic_store_n(&ncg_state, NCG_ST_ACTIVE, __ATOMIC_RELEASE);
    struct waiter a = {.op = OP_ESYNC, .h = ev}, b = {.op = OP_ESYNC, .h = unknown};
    start(&a);
    start(&b);
    uint64_t now;
    const struct ncg_hostwait *w = await_entry(a.tid, &now);
    CHECK(w && w->kind == NCG_HW_EVENT && w->stream == ncg_stream_index_slow(s) &&
          w->rec_tid == r2.tid && w->order == 41 && w->last_ns == now);
    w = await_entry(b.tid, &now);
    CHECK(w && w->kind == NCG_HW_EVENT && w->stream == NCG_HW_STREAM_UNKNOWN && w->rec_tid == 0 &&
          w->order == NCG_HW_ORDER_NONE);
    /* the device: every stream */
    struct waiter d = {.op = OP_DSYNC};
    start(&d);
    w = await_entry(d.tid, &now);
    CHECK(w && w->kind == NCG_HW_DEVICE && w->stream == NCG_HW_STREAM_ALL &&
          w->order == NCG_HW_ORDER_NONE);
    gate_open(&g);
    pthread_join(a.th, NULL);
    pthread_join(b.th, NULL);
    pthread_join(d.th, NULL);
    CHECK(a.ret == cudaSuccess && b.ret == cudaSuccess && d.ret == cudaSuccess);
    CHECK(ncg_hostwait_snapshot(snap, NCG_HW_SLOTS, now_ns()) == 0);
}

static void test_polls(void)
{
    struct gate g = GATE_INIT;
    cudaStream_t s = busy_stream(&g), idle;
    cudaEvent_t ev, ev2;
    CK(cudaStreamCreateWithFlags(&idle, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&ev2, cudaEventDisableTiming));
    ncg_tls.order = 5;
    CK(cudaEventRecord(ev, s));
    uint32_t me = gettid_();
    uint8_t si = ncg_stream_index_slow(s);

    EXPECT(cudaStreamQuery(s), cudaErrorNotReady);
    const struct ncg_hostwait *w = entry_of(me, now_ns());
    CHECK(w && w->kind == NCG_HW_POLL_STREAM && w->stream == si && w->rec_tid == 0 &&
          w->order == NCG_HW_ORDER_NONE && w->since_ns == w->last_ns);
    uint64_t since = w ? w->since_ns : 0;
    sleep_ms(2);
    EXPECT(cudaStreamQuery(s), cudaErrorNotReady); /* the same poll: last_ns moves */
    w = entry_of(me, now_ns());
    CHECK(w && w->since_ns == since && w->last_ns > since + 1000000);
    EXPECT(cudaEventQuery(ev), cudaErrorNotReady); /* another target: a new poll */
    w = entry_of(me, now_ns());
    CHECK(w && w->kind == NCG_HW_POLL_EVENT && w->stream == si && w->rec_tid == me &&
          w->order == 5 && w->since_ns > since && w->since_ns == w->last_ns);
    CK(cudaStreamQuery(idle)); /* ready: the poll is over */
    CHECK(!entry_of(me, now_ns()));
    EXPECT(cudaEventQuery(ev), cudaErrorNotReady);
    CHECK(entry_of(me, now_ns()));
    CK(cudaEventRecord(ev2, idle)); /* any other interposed call ends it */
    CHECK(!entry_of(me, now_ns()));
    EXPECT(cudaStreamQuery(s), cudaErrorNotReady);
    CHECK(entry_of(me, now_ns()));
    CK(cudaStreamSynchronize(idle));
    CHECK(!entry_of(me, now_ns()));
    EXPECT(cudaStreamQuery(s), cudaErrorNotReady);
    CHECK(entry_of(me, now_ns()));
    EXPECT(cudaStreamQuery((cudaStream_t)(uintptr_t)0xdead0), cudaErrorInvalidResourceHandle);
    CHECK(!entry_of(me, now_ns())); /* an error ends it too */
    gate_open(&g);
    CK(cudaStreamSynchronize(s));
    CK(cudaEventQuery(ev));
    CHECK(ncg_hostwait_snapshot(snap, NCG_HW_SLOTS, now_ns()) == 0);
    ncg_tls.order = 0;
}

/* Unrecorded: inside NCCL, NCCLGUARD=0, dormant, ncclguard's own calls. */
static void test_unrecorded(void)
{
    struct gate g = GATE_INIT;
    cudaStream_t s = busy_stream(&g);
    struct waiter in_nccl = {.op = OP_SSYNC, .h = s, .depth = 1};
    struct waiter own = {.op = OP_LIB_SSYNC, .h = s};
    start(&in_nccl);
    start(&own);
    /* (each state held until its thread is inside the runtime's wait) */
    __atomic_store_n(&ncg_state, NCG_ST_DISABLED, __ATOMIC_RELEASE);
    struct waiter off = {.op = OP_SSYNC, .h = s};
    start(&off);
    sleep_ms(50);
    __atomic_store_n(&ncg_state, NCG_ST_DORMANT, __ATOMIC_RELEASE);
    struct waiter dormant = {.op = OP_DSYNC};
    start(&dormant);
    sleep_ms(50);
    EXPECT(cudaStreamQuery(s), cudaErrorNotReady);
    __atomic_store_n(&ncg_state, NCG_ST_ACTIVE, __ATOMIC_RELEASE);
    EXPECT(hw_lib_stream_query(s), cudaErrorNotReady);
    sleep_ms(100); /* they are in the runtime's wait by now */
    CHECK(ncg_hostwait_snapshot(snap, NCG_HW_SLOTS, now_ns()) == 0);
    struct waiter seen = {.op = OP_SSYNC, .h = s}; /* the same wait, observed: the check works */
    start(&seen);
    uint64_t now;
    CHECK(await_entry(seen.tid, &now) && ncg_hostwait_snapshot(snap, NCG_HW_SLOTS, now) == 1);
    gate_open(&g);
    struct waiter *all[] = {&in_nccl, &own, &off, &dormant, &seen};
    for (unsigned i = 0; i < sizeof all / sizeof *all; i++) {
        pthread_join(all[i]->th, NULL);
        CHECK(all[i]->ret == cudaSuccess);
    }
}

/* Every function returns what the runtime returned, recorded or not. */
static void test_results(void)
{
    void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(rt);
    cudaError_t (*r_ssync)(void *) = (cudaError_t(*)(void *))dlsym(rt, "cudaStreamSynchronize");
    cudaError_t (*r_squery)(void *) = (cudaError_t(*)(void *))dlsym(rt, "cudaStreamQuery");
    cudaError_t (*r_esync)(void *) = (cudaError_t(*)(void *))dlsym(rt, "cudaEventSynchronize");
    cudaError_t (*r_equery)(void *) = (cudaError_t(*)(void *))dlsym(rt, "cudaEventQuery");
    cudaError_t (*r_rec)(void *, void *) =
        (cudaError_t(*)(void *, void *))dlsym(rt, "cudaEventRecord");
    cudaError_t (*r_recf)(void *, void *, unsigned) =
        (cudaError_t(*)(void *, void *, unsigned))dlsym(rt, "cudaEventRecordWithFlags");
    REQUIRE(r_ssync && r_squery && r_esync && r_equery && r_rec && r_recf);
    REQUIRE((void *)r_ssync != (void *)&cudaStreamSynchronize); /* the runtime's, not ours */
    struct gate g = GATE_INIT;
    cudaStream_t busy = busy_stream(&g), idle;
    cudaEvent_t ev, pending;
    CK(cudaStreamCreate(&idle));
    CK(cudaEventCreate(&ev));
    CK(cudaEventCreate(&pending));
    CK(cudaEventRecord(pending, busy));
    void *bad = (void *)(uintptr_t)0xbad0;
    int states[] = {NCG_ST_ACTIVE, NCG_ST_DISABLED};
    for (unsigned k = 0; k < 2; k++) {
        __atomic_store_n(&ncg_state, states[k], __ATOMIC_RELEASE);
        CHECK(cudaStreamSynchronize(idle) == r_ssync(idle) && r_ssync(idle) == 0);
        CHECK(cudaStreamSynchronize(bad) == r_ssync(bad) && r_ssync(bad) == 400);
        CHECK(cudaStreamQuery(busy) == r_squery(busy) && r_squery(busy) == 600);
        CHECK(cudaStreamQuery(bad) == r_squery(bad) && r_squery(bad) == 400);
        CHECK(cudaEventQuery(pending) == r_equery(pending) && r_equery(pending) == 600);
        CHECK(cudaEventQuery(bad) == r_equery(bad) && r_equery(bad) == 400);
        CHECK(cudaEventSynchronize(bad) == r_esync(bad) && r_esync(bad) == 400);
        CHECK(cudaEventRecord(ev, idle) == 0 && r_rec(ev, idle) == 0);
        CHECK(cudaEventRecord(bad, idle) == r_rec(bad, idle) && r_rec(bad, idle) == 400);
        CHECK(cudaEventRecordWithFlags(ev, idle, 0x4) == r_recf(ev, idle, 0x4) &&
              r_recf(ev, idle, 0x4) == 1); /* cudaErrorInvalidValue: a bad flag */
        CHECK(cudaEventRecordWithFlags(ev, idle, 0) == 0);
        CHECK(cudaEventSynchronize(ev) == 0);
    }
    __atomic_store_n(&ncg_state, NCG_ST_ACTIVE, __ATOMIC_RELEASE);
    cudaGetLastError();
    gate_open(&g);
    CK(cudaStreamSynchronize(busy));
    CHECK(ncg_hostwait_snapshot(snap, NCG_HW_SLOTS, now_ns()) == 0);
    dlclose(rt);
}

/* ---- the thread table ---- */

static cudaStream_t g_busy;
static pthread_barrier_t g_bar;
static void *poll_once(void *arg)
{
    (void)arg;
    EXPECT(cudaStreamQuery(g_busy), cudaErrorNotReady); /* claims a slot, left polling */
    return NULL;
}
static void *poll_and_hold(void *arg)
{
    poll_once(arg);
    pthread_barrier_wait(&g_bar);
    pthread_barrier_wait(&g_bar);
    return NULL;
}

static void test_slots(void)
{
    struct gate g = GATE_INIT;
    g_busy = busy_stream(&g);
    /* 3 x the table of threads, one after the other: each exits polling; never shown, and
     * their slots are taken over */
    for (int i = 0; i < 3 * (int)NCG_HW_SLOTS; i++) {
        pthread_t t;
        REQUIRE(pthread_create(&t, NULL, poll_once, NULL) == 0);
        pthread_join(t, NULL);
    }
    CHECK(ncg_hostwait_snapshot(snap, NCG_HW_SLOTS, now_ns()) == 0);
    /* more live threads than slots: NCG_HW_SLOTS are shown (main holds one already) */
    enum { N = NCG_HW_SLOTS + 4 };
    static pthread_t th[N];
    pthread_barrier_init(&g_bar, NULL, N + 1);
    for (int i = 0; i < N; i++)
        REQUIRE(pthread_create(&th[i], NULL, poll_and_hold, NULL) == 0);
    pthread_barrier_wait(&g_bar);
    size_t n = ncg_hostwait_snapshot(snap, sizeof snap / sizeof *snap, now_ns());
    CHECK(n == NCG_HW_SLOTS - 1);
    for (size_t i = 0; i < n; i++)
        CHECK(snap[i].kind == NCG_HW_POLL_STREAM &&
              snap[i].stream == ncg_stream_index_slow(g_busy));
    pthread_barrier_wait(&g_bar);
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&g_bar);
    CHECK(ncg_hostwait_snapshot(snap, NCG_HW_SLOTS, now_ns()) == 0);
    /* a new thread gets a slot again */
    struct waiter a = {.op = OP_SSYNC, .h = g_busy};
    start(&a);
    uint64_t now;
    CHECK(await_entry(a.tid, &now));
    gate_open(&g);
    pthread_join(a.th, NULL);
}

/* Many events: the latest records are known (a full window replaces an old entry). */
static void test_many_events(void)
{
    enum { N = 4 * NCG_HW_EVENTS };
    static cudaEvent_t evs[N];
    cudaStream_t idle;
    CK(cudaStreamCreateWithFlags(&idle, cudaStreamNonBlocking));
    for (int i = 0; i < N; i++) {
        CK(cudaEventCreateWithFlags(&evs[i], cudaEventDisableTiming));
        CK(cudaEventRecord(evs[i], idle));
    }
    struct gate g = GATE_INIT;
    cudaStream_t s = busy_stream(&g);
    ncg_tls.order = 99;
    CK(cudaEventRecord(evs[N - 1], s));
    ncg_tls.order = 0;
    struct waiter a = {.op = OP_ESYNC, .h = evs[N - 1]};
    start(&a);
    uint64_t now;
    const struct ncg_hostwait *w = await_entry(a.tid, &now);
    CHECK(w && w->stream == ncg_stream_index_slow(s) && w->order == 99);
    gate_open(&g);
    pthread_join(a.th, NULL);
    for (int i = 0; i < N; i++)
        CK(cudaEventDestroy(evs[i]));
}

/* A thread switching between two polls as fast as it can; every snapshot entry is one of them
 * whole (the seqlock), never a mix. */
static volatile int g_stop;
static cudaEvent_t g_ev;
static cudaStream_t g_other;
static uint32_t g_flipper;
static void *flip(void *arg)
{
    (void)arg;
    __atomic_store_n(&g_flipper, gettid_(), __ATOMIC_RELEASE);
    while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
        cudaEventQuery(g_ev);
        cudaStreamQuery(g_other);
    }
    return NULL;
}

static void test_consistency(void)
{
    struct gate g = GATE_INIT, g2 = GATE_INIT;
    cudaStream_t s = busy_stream(&g);
    g_other = busy_stream(&g2);
    CK(cudaEventCreateWithFlags(&g_ev, cudaEventDisableTiming));
    ncg_tls.order = 3;
    CK(cudaEventRecord(g_ev, s));
    ncg_tls.order = 0;
    uint8_t si = ncg_stream_index_slow(s), oi = ncg_stream_index_slow(g_other);
    uint32_t me = gettid_();
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, flip, NULL) == 0);
    while (!__atomic_load_n(&g_flipper, __ATOMIC_ACQUIRE))
        sleep_ms(1);
    long seen_ev = 0, seen_st = 0, bad = 0;
    uint64_t end = now_ns() + 300000000ull;
    while (now_ns() < end) {
        size_t n = ncg_hostwait_snapshot(snap, NCG_HW_SLOTS, 0);
        for (size_t i = 0; i < n; i++) {
            const struct ncg_hostwait *w = &snap[i];
            if (w->kind == NCG_HW_POLL_EVENT && w->stream == si && w->rec_tid == me &&
                w->order == 3 && w->since_ns <= w->last_ns && w->tid == g_flipper)
                seen_ev++;
            else if (w->kind == NCG_HW_POLL_STREAM && w->stream == oi && w->rec_tid == 0 &&
                     w->order == NCG_HW_ORDER_NONE && w->since_ns <= w->last_ns &&
                     w->tid == g_flipper)
                seen_st++;
            else
                bad++;
        }
    }
    __atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    printf("hostwait_test: consistency: %ld event polls, %ld stream polls, %ld torn\n", seen_ev,
           seen_st, bad);
    CHECK(bad == 0 && seen_ev > 0 && seen_st > 0);
    gate_open(&g);
    gate_open(&g2);
    CK(cudaDeviceSynchronize());
}

int main(void)
{
    CK(cudaFree(0));
    __atomic_store_n(&ncg_state, NCG_ST_ACTIVE, __ATOMIC_RELEASE);
    test_stream_sync();
    test_event_sync();
    test_polls();
    test_unrecorded();
    test_results();
    test_slots();
    test_many_events();
    test_consistency();
    if (failures) {
        printf("hostwait_test: %d failures\n", failures);
        return 1;
    }
    printf("hostwait_test: ok\n");
    return 0;
}
