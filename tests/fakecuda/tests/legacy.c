/* The default streams. Legacy (NULL / cudaStreamLegacy): its work waits for earlier work of
 * blocking streams, and blocking streams' work waits for it; cudaStreamNonBlocking streams do
 * neither. cudaStreamPerThread: one per host thread, blocking. Built a second time with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM (legacy-ptds), where NULL means cudaStreamPerThread. */
#include "fc_test.h"

static int ran[8];
static void mark(void *arg)
{
    __atomic_store_n(&ran[(long)arg], 1, __ATOMIC_RELEASE);
}
static int has_run(int i)
{
    return __atomic_load_n(&ran[i], __ATOMIC_ACQUIRE);
}

static struct gate tg = GATE_INIT;
static void *other_thread(void *arg)
{
    (void)arg;
    /* this thread's NULL stream: legacy, or its own per-thread stream with ptds */
    CK(cudaLaunchHostFunc(NULL, mark, (void *)5L));
    CK(cudaLaunchHostFunc(cudaStreamPerThread, mark, (void *)6L));
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    return NULL;
}

int main(void)
{
    static struct gate g = GATE_INIT, g2 = GATE_INIT, g3 = GATE_INIT;
    cudaStream_t blk, nb;
    unsigned flags = 99;
    pthread_t t;

    CK(cudaStreamCreate(&blk));
    CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    CK(cudaStreamGetFlags(nb, &flags));
    REQUIRE(flags == cudaStreamNonBlocking);
    CK(cudaStreamGetFlags(cudaStreamLegacy, &flags));
    REQUIRE(flags == 0);

    /* 1. a blocking stream hung: legacy work waits, non-blocking work runs */
    CK(cudaLaunchHostFunc(blk, gate_wait, &g));
    gate_entered(&g);
    CK(cudaLaunchHostFunc(cudaStreamLegacy, mark, (void *)0L));
    CK(cudaLaunchHostFunc(nb, mark, (void *)1L));
    CK(cudaStreamSynchronize(nb));
    REQUIRE(has_run(1));
    sleep_ms(20);
    REQUIRE(!has_run(0));
    EXPECT(cudaStreamQuery(cudaStreamLegacy), cudaErrorNotReady);
    CK(cudaStreamQuery(nb));
    gate_open(&g);
    CK(cudaStreamSynchronize(cudaStreamLegacy));
    REQUIRE(has_run(0));

    /* 2. the legacy stream hung: a blocking stream's later work waits, non-blocking does not */
    CK(cudaLaunchHostFunc(cudaStreamLegacy, gate_wait, &g2));
    gate_entered(&g2);
    CK(cudaLaunchHostFunc(blk, mark, (void *)2L));
    CK(cudaLaunchHostFunc(nb, mark, (void *)3L));
    CK(cudaLaunchHostFunc(cudaStreamPerThread, mark, (void *)4L));
    CK(cudaStreamSynchronize(nb));
    REQUIRE(has_run(3));
    sleep_ms(20);
    REQUIRE(!has_run(2) && !has_run(4)); /* the per-thread stream is blocking too */
    EXPECT(cudaStreamQuery(blk), cudaErrorNotReady);
    gate_open(&g2);
    CK(cudaStreamSynchronize(blk));
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    REQUIRE(has_run(2) && has_run(4));

    /* 3. NULL from another thread, while this thread's NULL stream is hung */
    CK(cudaLaunchHostFunc(NULL, gate_wait, &g3));
    gate_entered(&g3);
    REQUIRE(pthread_create(&t, NULL, other_thread, NULL) == 0);
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
    /* NULL is each thread's own stream: the other thread's work is not held up */
    pthread_join(t, NULL);
    REQUIRE(has_run(5) && has_run(6));
    EXPECT(cudaStreamQuery(NULL), cudaErrorNotReady);
    gate_open(&g3);
    CK(cudaStreamSynchronize(NULL));
    printf("legacy: per-thread default stream build ok\n");
#else
    /* NULL is the one legacy stream: the other thread's work waits behind ours, and so does
     * its per-thread stream (blocking, queued after the legacy work) */
    sleep_ms(30);
    REQUIRE(!has_run(5) && !has_run(6));
    gate_open(&g3);
    pthread_join(t, NULL);
    REQUIRE(has_run(5) && has_run(6));
    CK(cudaStreamSynchronize(NULL));
    printf("legacy: legacy default stream build ok\n");
#endif
    (void)tg;
    CK(cudaStreamDestroy(blk));
    CK(cudaStreamDestroy(nb));
    EXPECT(cudaStreamDestroy(NULL), cudaErrorInvalidResourceHandle);
    EXPECT(cudaStreamDestroy(cudaStreamPerThread), cudaErrorInvalidResourceHandle);
    CK(cudaDeviceSynchronize());
    return 0;
}
