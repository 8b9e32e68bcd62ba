/* Events: a never-recorded event is complete; record/query/synchronize; elapsed time between
 * two records around a 50 ms host function; cudaStreamWaitEvent across streams; errors. */
#include "fc_test.h"

static void sleep50(void *arg)
{
    (void)arg;
    sleep_ms(50);
}

static int flag;
static void set_flag(void *arg)
{
    __atomic_store_n(&flag, (int)(long)arg, __ATOMIC_RELEASE);
}

static void check_flag(void *arg)
{
    /* runs on stream b after waiting for a's event: a's host function already ran */
    REQUIRE(__atomic_load_n(&flag, __ATOMIC_ACQUIRE) == 1);
    *(int *)arg = 1;
}

int main(void)
{
    static struct gate g = GATE_INIT;
    cudaStream_t a, b;
    cudaEvent_t e0, e1, nt;
    float ms = -1;
    int seen = 0;

    CK(cudaStreamCreate(&a));
    CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreateWithFlags(&e1, cudaEventDefault));
    CK(cudaEventCreateWithFlags(&nt, cudaEventDisableTiming | cudaEventBlockingSync));
    EXPECT(cudaEventCreateWithFlags(&nt, cudaEventInterprocess), cudaErrorInvalidValue);
    EXPECT(cudaEventCreateWithFlags(&nt, 0x100), cudaErrorInvalidValue);

    /* never recorded: complete, synchronize returns, elapsed time is an error */
    CK(cudaEventQuery(e0));
    CK(cudaEventSynchronize(e0));
    EXPECT(cudaEventElapsedTime(&ms, e0, e1), cudaErrorInvalidResourceHandle);
    EXPECT(cudaGetLastError(), cudaErrorInvalidResourceHandle);

    /* record, sleep 50 ms on the stream, record: elapsed >= 50 ms */
    CK(cudaLaunchHostFunc(a, gate_wait, &g));
    CK(cudaEventRecord(e0, a));
    CK(cudaLaunchHostFunc(a, sleep50, NULL));
    CK(cudaEventRecordWithFlags(e1, a, cudaEventRecordDefault));
    EXPECT(cudaEventQuery(e0), cudaErrorNotReady);
    EXPECT(cudaEventElapsedTime(&ms, e0, e1), cudaErrorNotReady);
    CK(cudaPeekAtLastError()); /* NotReady is not recorded as an error */
    gate_open(&g);
    CK(cudaEventSynchronize(e1));
    CK(cudaEventQuery(e0));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    REQUIRE(ms >= 49.0f && ms < 5000.0f);
    CK(cudaEventRecord(nt, a));
    CK(cudaEventSynchronize(nt));
    EXPECT(cudaEventElapsedTime(&ms, e0, nt), cudaErrorInvalidResourceHandle);
    EXPECT(cudaEventElapsedTime(NULL, e0, e1), cudaErrorInvalidValue);

    /* wait-event across streams: b's work waits for a's record */
    {
        static struct gate g2 = GATE_INIT;
        CK(cudaLaunchHostFunc(a, gate_wait, &g2));
        CK(cudaLaunchHostFunc(a, set_flag, (void *)1L));
        CK(cudaEventRecord(e0, a));
        CK(cudaStreamWaitEvent(b, e0, 0));
        CK(cudaLaunchHostFunc(b, check_flag, &seen));
        CK(cudaEventRecord(e1, b));
        gate_entered(&g2);
        sleep_ms(20);
        EXPECT(cudaStreamQuery(b), cudaErrorNotReady);
        EXPECT(cudaEventQuery(e1), cudaErrorNotReady);
        REQUIRE(!seen);
        /* re-recording e0 later does not change what b waits for */
        gate_open(&g2);
        CK(cudaEventSynchronize(e1));
        REQUIRE(seen);
        CK(cudaStreamSynchronize(b));
    }
    /* waiting on a complete (or never-recorded) event is a no-op */
    CK(cudaStreamWaitEvent(b, e0, cudaEventWaitDefault));
    CK(cudaStreamQuery(b));
    EXPECT(cudaStreamWaitEvent(b, e0, 0x10), cudaErrorInvalidValue);

    /* destroy while a record is pending: returns at once, the stream still completes */
    {
        static struct gate g3 = GATE_INIT;
        cudaEvent_t tmp;
        CK(cudaEventCreate(&tmp));
        CK(cudaLaunchHostFunc(a, gate_wait, &g3));
        CK(cudaEventRecord(tmp, a));
        CK(cudaStreamWaitEvent(b, tmp, 0));
        CK(cudaEventDestroy(tmp));
        EXPECT(cudaEventQuery(tmp), cudaErrorInvalidResourceHandle);
        EXPECT(cudaEventDestroy(tmp), cudaErrorInvalidResourceHandle);
        EXPECT(cudaEventRecord(tmp, a), cudaErrorInvalidResourceHandle);
        EXPECT(cudaStreamQuery(b), cudaErrorNotReady);
        gate_open(&g3);
        CK(cudaStreamSynchronize(b));
        CK(cudaStreamSynchronize(a));
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaEventDestroy(nt));
    CK(cudaStreamDestroy(a));
    CK(cudaStreamDestroy(b));
    printf("events: ok (elapsed %.1f ms)\n", ms);
    return 0;
}
