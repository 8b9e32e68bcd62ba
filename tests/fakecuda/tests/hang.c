/* A host function that blocks (as a stuck collective would) blocks its stream and only what
 * waits on it: other streams keep running, queries say not ready, and nobody spins. Another
 * thread then sets the flag it waits on and everything queued after it completes, in order. */
#include <string.h>
#include <sys/resource.h>

#include "fc_test.h"

static struct gate g = GATE_INIT;
static int order[8], n_order;
static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;

static void note(void *arg)
{
    pthread_mutex_lock(&order_mu);
    order[n_order++] = (int)(long)arg;
    pthread_mutex_unlock(&order_mu);
}

static int count;
static void bump(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED);
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void *releaser(void *arg)
{
    (void)arg;
    sleep_ms(100);
    gate_open(&g);
    return NULL;
}

int main(void)
{
    cudaStream_t hung, other, waiter, nb;
    cudaEvent_t after_hang;
    unsigned char *buf;
    double c0, c1;
    pthread_t t;
    int i;

    CK(cudaStreamCreate(&hung));
    CK(cudaStreamCreate(&other));
    CK(cudaStreamCreate(&waiter));
    CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&after_hang, cudaEventDisableTiming));
    CK(cudaMalloc((void **)&buf, 1 << 20));

    CK(cudaLaunchHostFunc(hung, gate_wait, &g));
    CK(cudaLaunchHostFunc(hung, note, (void *)1L));
    CK(cudaMemsetAsync(buf, 0x33, 1 << 20, hung));
    CK(cudaEventRecord(after_hang, hung));
    CK(cudaLaunchHostFunc(hung, note, (void *)2L));
    CK(cudaStreamWaitEvent(waiter, after_hang, 0));
    CK(cudaLaunchHostFunc(waiter, note, (void *)3L));
    gate_entered(&g);

    /* other streams keep running while it hangs */
    for (i = 0; i < 1000; i++)
        CK(cudaLaunchHostFunc(other, bump, NULL));
    CK(cudaStreamSynchronize(other));
    for (i = 0; i < 1000; i++)
        CK(cudaLaunchHostFunc(nb, bump, NULL));
    CK(cudaStreamSynchronize(nb));
    REQUIRE(__atomic_load_n(&count, __ATOMIC_RELAXED) == 2000);
    CK(cudaStreamQuery(other));
    CK(cudaStreamQuery(cudaStreamPerThread)); /* never used: nothing pending */

    /* legacy-stream work waits for every blocking stream, so now a blocking stream's new work
     * waits too (behind the legacy op); a non-blocking stream still runs */
    CK(cudaLaunchHostFunc(cudaStreamLegacy, note, (void *)4L));
    CK(cudaLaunchHostFunc(other, bump, NULL));
    CK(cudaLaunchHostFunc(nb, bump, NULL));
    CK(cudaStreamSynchronize(nb));
    REQUIRE(__atomic_load_n(&count, __ATOMIC_RELAXED) == 2001);

    /* what is behind it, or waits on it, is not ready, and waiting costs no CPU */
    c0 = cpu_s();
    sleep_ms(300);
    c1 = cpu_s();
    EXPECT(cudaStreamQuery(hung), cudaErrorNotReady);
    EXPECT(cudaEventQuery(after_hang), cudaErrorNotReady);
    EXPECT(cudaStreamQuery(waiter), cudaErrorNotReady);
    EXPECT(cudaStreamQuery(cudaStreamLegacy), cudaErrorNotReady);
    EXPECT(cudaStreamQuery(other), cudaErrorNotReady);
    CK(cudaStreamQuery(nb));
    CK(cudaPeekAtLastError());
    pthread_mutex_lock(&order_mu);
    REQUIRE(n_order == 0);
    pthread_mutex_unlock(&order_mu);
    REQUIRE(c1 - c0 < 0.1);

    /* a host thread blocks in a synchronize until another thread releases the flag */
    REQUIRE(pthread_create(&t, NULL, releaser, NULL) == 0);
    CK(cudaEventSynchronize(after_hang));
    CK(cudaStreamSynchronize(waiter));
    CK(cudaDeviceSynchronize());
    pthread_join(t, NULL);
    REQUIRE(n_order == 4 && count == 2002);
    REQUIRE(order[0] == 1); /* then 2, 3 and 4, each on its own stream, in any order */
    for (i = 1; i < 4; i++)
        REQUIRE(order[i] >= 2 && order[i] <= 4);
    REQUIRE(buf[0] == 0x33 && buf[(1 << 20) - 1] == 0x33);
    CK(cudaStreamQuery(hung));
    CK(cudaEventQuery(after_hang));
    CK(cudaFree(buf));
    CK(cudaEventDestroy(after_hang));
    CK(cudaStreamDestroy(hung));
    CK(cudaStreamDestroy(other));
    CK(cudaStreamDestroy(waiter));
    CK(cudaStreamDestroy(nb));
    printf("hang: only the hung stream and its dependants waited (%.3f s CPU while hung)\n",
           c1 - c0);
    return 0;
}
