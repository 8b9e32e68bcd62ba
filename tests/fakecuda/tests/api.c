/* The rest of the API: device count and selection (per thread), properties and attributes,
 * versions, memory and pointer attributes, argument errors and the last error, stream
 * priorities, dlsym detection, and fork. `api count` prints the device count. */
#include <dlfcn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fc_test.h"

static void *device_thread(void *arg)
{
    int dev = -1;
    CK(cudaGetDevice(&dev));
    REQUIRE(dev == 0); /* a new thread starts on device 0 */
    CK(cudaSetDevice(1));
    CK(cudaGetDevice(&dev));
    REQUIRE(dev == 1);
    *(int *)arg = 1;
    return NULL;
}

static void on_worker(void *arg)
{
    int *dev = arg;
    CK(cudaGetDevice(dev));                                 /* the stream's device */
    EXPECT(cudaDeviceSynchronize(), cudaErrorNotPermitted); /* would deadlock */
}

static void basics(void)
{
    struct cudaDeviceProp prop;
    struct cudaPointerAttributes at;
    int n = 0, dev = -1, v = 0, least = 1, greatest = 1, done = 0, prio = 1;
    void *d, *h, *h2;
    char local[16];
    cudaStream_t s;
    pthread_t t;

    CK(cudaFree(0));
    CK(cudaGetDeviceCount(&n));
    REQUIRE(n >= 2);
    CK(cudaRuntimeGetVersion(&v));
    REQUIRE(v == 13000);
    CK(cudaDriverGetVersion(&v));
    REQUIRE(v == 13000);
    CK(cudaGetDeviceProperties(&prop, 0));
    REQUIRE(!strcmp(prop.name, "fakecuda CPU device") && prop.warpSize == 32 && prop.major >= 9);
    CK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0));
    REQUIRE(v == prop.multiProcessorCount);
    CK(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, 1));
    REQUIRE(v == prop.major);
    EXPECT(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, n), cudaErrorInvalidDevice);
    EXPECT(cudaGetDeviceProperties(&prop, -1), cudaErrorInvalidDevice);
    EXPECT(cudaSetDevice(n), cudaErrorInvalidDevice);
    EXPECT(cudaGetLastError(), cudaErrorInvalidDevice);
    CK(cudaGetLastError());
    EXPECT(cudaGetDeviceCount(NULL), cudaErrorInvalidValue);
    EXPECT(cudaPeekAtLastError(), cudaErrorInvalidValue);
    EXPECT(cudaPeekAtLastError(), cudaErrorInvalidValue); /* peek does not reset */
    CK(cudaSetDevice(0));                                 /* success does not reset either */
    EXPECT(cudaGetLastError(), cudaErrorInvalidValue);
    CK(cudaGetLastError());

    /* current device is per thread; the stream's worker runs on the stream's device */
    REQUIRE(pthread_create(&t, NULL, device_thread, &done) == 0);
    pthread_join(t, NULL);
    REQUIRE(done);
    CK(cudaGetDevice(&dev));
    REQUIRE(dev == 0);
    CK(cudaSetDevice(1));
    CK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, -100));
    CK(cudaSetDevice(0));
    CK(cudaLaunchHostFunc(s, on_worker, &dev));
    CK(cudaStreamSynchronize(s));
    REQUIRE(dev == 1);
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    REQUIRE(least == 0 && greatest < 0);
    CK(cudaStreamGetPriority(s, &prio));
    REQUIRE(prio == greatest); /* clamped */
    CK(cudaStreamDestroy(s));
    EXPECT(cudaStreamCreateWithFlags(&s, 4), cudaErrorInvalidValue);
    EXPECT(cudaStreamCreate(NULL), cudaErrorInvalidValue);
    EXPECT(cudaStreamQuery((cudaStream_t)local), cudaErrorInvalidResourceHandle);
    EXPECT(cudaEventQuery((cudaEvent_t)local), cudaErrorInvalidResourceHandle);
    EXPECT(cudaLaunchHostFunc(NULL, NULL, NULL), cudaErrorInvalidValue);

    /* memory and pointer attributes */
    CK(cudaSetDevice(1));
    CK(cudaMalloc(&d, 1000));
    CK(cudaSetDevice(0));
    REQUIRE(((unsigned long)d & 255) == 0);
    CK(cudaMallocHost(&h, 100));
    CK(cudaHostAlloc(&h2, 100, cudaHostAllocPortable | cudaHostAllocMapped));
    EXPECT(cudaHostAlloc(&h2, 100, 0x80), cudaErrorInvalidValue);
    CK(cudaPointerGetAttributes(&at, d));
    REQUIRE(at.type == cudaMemoryTypeDevice && at.device == 1 && at.devicePointer == d);
    CK(cudaPointerGetAttributes(&at, (char *)d + 999)); /* inside the allocation */
    REQUIRE(at.type == cudaMemoryTypeDevice && at.device == 1);
    CK(cudaPointerGetAttributes(&at, (char *)d + 1000)); /* just past it */
    REQUIRE(at.type != cudaMemoryTypeDevice);
    CK(cudaPointerGetAttributes(&at, h));
    REQUIRE(at.type == cudaMemoryTypeHost && at.device == 0 && at.hostPointer == h);
    CK(cudaPointerGetAttributes(&at, local));
    REQUIRE(at.type == cudaMemoryTypeUnregistered);
    EXPECT(cudaPointerGetAttributes(NULL, d), cudaErrorInvalidValue);
    EXPECT(cudaMemcpy(d, h, 10, (enum cudaMemcpyKind)7), cudaErrorInvalidMemcpyDirection);
    EXPECT(cudaMemcpy(NULL, h, 10, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    CK(cudaMemcpy(NULL, NULL, 0, cudaMemcpyHostToDevice));
    EXPECT(cudaFree(h), cudaErrorInvalidValue); /* host memory is not cudaFree's */
    EXPECT(cudaFreeHost(d), cudaErrorInvalidValue);
    EXPECT(cudaFree(local), cudaErrorInvalidValue);
    CK(cudaMalloc(&h2, 0) == cudaSuccess && h2 == NULL ? cudaSuccess : cudaErrorUnknown);
    CK(cudaFree(d));
    CK(cudaFreeHost(h));
    CK(cudaPointerGetAttributes(&at, d));
    REQUIRE(at.type == cudaMemoryTypeUnregistered);
    CK(cudaGetLastError() == cudaErrorInvalidValue ? cudaSuccess : cudaErrorUnknown);
    printf("api: basics ok\n");
}

static void dlsym_check(void)
{
    void *p = dlsym(RTLD_DEFAULT, "cudaLaunchHostFunc");
    REQUIRE(p != NULL && p == (void *)cudaLaunchHostFunc);
    REQUIRE(dlsym(RTLD_DEFAULT, "fc_enqueue") == NULL); /* internals stay hidden */
    printf("api: dlsym ok\n");
}

static int child_ran;
static void child_fn(void *arg)
{
    (void)arg;
    child_ran = 1;
}

/* fork while a worker is inside a host function and another thread waits on the runtime:
 * the child starts with no streams and can use the runtime at once. */
static void fork_check(void)
{
    static struct gate g = GATE_INIT;
    cudaStream_t s, cs;
    cudaEvent_t ev;
    void *d;
    pid_t pid;
    int status;

    CK(cudaStreamCreate(&s));
    CK(cudaEventCreate(&ev));
    CK(cudaMalloc(&d, 64));
    CK(cudaLaunchHostFunc(s, gate_wait, &g));
    CK(cudaEventRecord(ev, s));
    gate_entered(&g);
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        struct cudaPointerAttributes at;
        alarm(10);
        EXPECT(cudaStreamQuery(s), cudaErrorInvalidResourceHandle); /* gone in the child */
        CK(cudaPointerGetAttributes(&at, d));                       /* memory stays */
        REQUIRE(at.type == cudaMemoryTypeDevice);
        CK(cudaStreamCreate(&cs));
        CK(cudaLaunchHostFunc(cs, child_fn, NULL));
        CK(cudaLaunchHostFunc(NULL, child_fn, NULL));
        CK(cudaStreamSynchronize(cs));
        CK(cudaDeviceSynchronize());
        REQUIRE(child_ran);
        _exit(0);
    }
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT(cudaEventQuery(ev), cudaErrorNotReady);
    gate_open(&g);
    CK(cudaEventSynchronize(ev));
    CK(cudaEventDestroy(ev));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(d));
    printf("api: fork ok\n");
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "all";
    int n = -1;

    if (!strcmp(what, "count")) {
        cudaError_t e = cudaGetDeviceCount(&n);
        printf("%d %s\n", n, cudaGetErrorName(e));
        return 0;
    }
    basics();
    dlsym_check();
    fork_check();
    return 0;
}
