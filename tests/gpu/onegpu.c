/* onegpu: an LD_PRELOAD for nccl-tests `-t N` on a machine with fewer GPUs than threads
 * (scripts/gpu-check.sh step 6). nccl-tests gives thread t device t (and refuses to start when
 * fewer are visible); this folds the device numbers the program passes to the CUDA runtime onto
 * the visible ones (device d -> d % count) and reports at least NCG_ONEGPU_RANKS devices (default
 * 2), so every thread's rank lands on GPU 0. Only the program's own calls through the dynamic
 * libcudart are folded: NCCL (its runtime is linked in statically) sees the real device, which is
 * what makes it the "several ranks on one GPU" case NCCL >= 2.30 accepts with
 * NCCL_MULTI_RANK_GPU_ENABLE=1. No CUDA header needed: the handful of prototypes is below. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

int cudaGetDeviceCount(int *count);
int cudaSetDevice(int d);
int cudaDeviceGetAttribute(int *v, int attr, int d);
int cudaGetDeviceProperties(void *p, int d);
int cudaGetDeviceProperties_v2(void *p, int d);

typedef int (*count_fn)(int *);
typedef int (*dev_fn)(int);
typedef int (*attr_fn)(int *, int, int);
typedef int (*prop_fn)(void *, int);

static int real_count(void)
{
    static int n = -1;
    if (n < 0) {
        count_fn f = (count_fn)dlsym(RTLD_NEXT, "cudaGetDeviceCount");
        int c = 0;
        n = (f && f(&c) == 0 && c > 0) ? c : 1;
    }
    return n;
}

static int fold(int d)
{
    return d >= 0 ? d % real_count() : d;
}

int cudaGetDeviceCount(int *count)
{
    count_fn f = (count_fn)dlsym(RTLD_NEXT, "cudaGetDeviceCount");
    if (!f)
        return 35; /* cudaErrorInsufficientDriver */
    int rc = f(count);
    const char *s = getenv("NCG_ONEGPU_RANKS");
    int want = s && *s ? atoi(s) : 2;
    if (rc == 0 && *count > 0 && *count < want)
        *count = want;
    return rc;
}

int cudaSetDevice(int d)
{
    dev_fn f = (dev_fn)dlsym(RTLD_NEXT, "cudaSetDevice");
    return f ? f(fold(d)) : 35;
}

int cudaDeviceGetAttribute(int *v, int attr, int d)
{
    attr_fn f = (attr_fn)dlsym(RTLD_NEXT, "cudaDeviceGetAttribute");
    return f ? f(v, attr, fold(d)) : 35;
}

int cudaGetDeviceProperties(void *p, int d)
{
    prop_fn f = (prop_fn)dlsym(RTLD_NEXT, "cudaGetDeviceProperties");
    return f ? f(p, fold(d)) : 35;
}

int cudaGetDeviceProperties_v2(void *p, int d)
{
    prop_fn f = (prop_fn)dlsym(RTLD_NEXT, "cudaGetDeviceProperties_v2");
    return f ? f(p, fold(d)) : 35;
}
