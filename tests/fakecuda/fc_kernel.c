/* fakecuda kernels: what an nvcc-built program calls before main and at each <<<>>> launch.
 * Registrations (fat binaries, kernels by host stub address and device name, __device__
 * variables) are recorded so launches can be checked and named; a launch runs nothing (there
 * is no GPU code on the CPU): it is validated, counted, and the first one is reported once on
 * stderr, so a program that relies on a kernel's output does not pass silently. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "fc_internal.h"

#define FC_CONFIG_DEPTH 16 /* nested <<<>>> configurations per thread (argument expressions) */

/* One registered kernel; its address is the cudaKernel_t handed out by __cudaGetKernel. */
struct fc_kernel {
    struct fc_kernel *next;
    void **module; /* the fat binary handle it was registered with */
    const void *host_fun;
    const char *name; /* the device (mangled) name, static in the program's image */
};

/* A fat binary handle: the program stores it and passes it back; we only need its identity. */
struct fc_module {
    void *fat_cubin;
};

struct fc_launch_config {
    dim3 grid, block;
    size_t shared;
    cudaStream_t stream;
};

static pthread_mutex_t kern_lock = PTHREAD_MUTEX_INITIALIZER; /* guards kernels */
static struct fc_kernel *kernels;
static atomic_ulong launches;
static __thread struct fc_launch_config t_config[FC_CONFIG_DEPTH];
static __thread int t_depth;

FC_API void **__cudaRegisterFatBinary(void *fatCubin)
{
    struct fc_module *m = calloc(1, sizeof(*m));

    if (!m) {
        fprintf(stderr, "fakecuda: out of memory registering a fat binary\n");
        abort();
    }
    m->fat_cubin = fatCubin;
    return (void **)m;
}

FC_API void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
    (void)fatCubinHandle;
}

/* Called from the program's atexit handler: forgets the module's kernels. */
FC_API void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
    struct fc_kernel **pp, *k;

    if (!fatCubinHandle)
        return;
    pthread_mutex_lock(&kern_lock);
    for (pp = &kernels; (k = *pp);) {
        if (k->module == fatCubinHandle) {
            *pp = k->next;
            free(k);
        } else {
            pp = &k->next;
        }
    }
    pthread_mutex_unlock(&kern_lock);
    free(fatCubinHandle);
}

FC_API void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                   const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                                   dim3 *bDim, dim3 *gDim, int *wSize)
{
    struct fc_kernel *k = calloc(1, sizeof(*k));

    (void)deviceFun;
    (void)thread_limit;
    (void)tid;
    (void)bid;
    (void)bDim;
    (void)gDim;
    (void)wSize;
    if (!k) {
        fprintf(stderr, "fakecuda: out of memory registering kernel %s\n", deviceName);
        abort();
    }
    k->module = fatCubinHandle;
    k->host_fun = hostFun;
    k->name = deviceName ? deviceName : "(unnamed)";
    pthread_mutex_lock(&kern_lock);
    k->next = kernels;
    kernels = k;
    pthread_mutex_unlock(&kern_lock);
}

/* __device__ / __constant__ variables: the host shadow is all there is (cudaMemcpyToSymbol and
 * friends are not implemented), so nothing is recorded. */
FC_API void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                              const char *deviceName, int ext, size_t size, int constant,
                              int global)
{
    (void)fatCubinHandle;
    (void)hostVar;
    (void)deviceAddress;
    (void)deviceName;
    (void)ext;
    (void)size;
    (void)constant;
    (void)global;
}

/* Managed-variable initialization of a module: nothing to do, success. */
FC_API char __cudaInitModule(void **fatCubinHandle)
{
    (void)fatCubinHandle;
    return 1;
}

static struct fc_kernel *find_kernel(const void *host_fun)
{
    struct fc_kernel *k;

    pthread_mutex_lock(&kern_lock);
    for (k = kernels; k && k->host_fun != host_fun; k = k->next)
        ;
    pthread_mutex_unlock(&kern_lock);
    return k;
}

FC_API cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
    struct fc_kernel *k;

    if (!kernel)
        return fc_ret(cudaErrorInvalidValue);
    k = find_kernel(hostFun);
    *kernel = (cudaKernel_t)k;
    return fc_ret(k ? cudaSuccess : cudaErrorInvalidDeviceFunction);
}

/* <<<grid, block, shared, stream>>> pushes its configuration, the launch stub pops it. */
FC_API unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                            struct CUstream_st *stream)
{
    if (t_depth == FC_CONFIG_DEPTH)
        return 1;
    t_config[t_depth++] = (struct fc_launch_config){
        .grid = gridDim, .block = blockDim, .shared = sharedMem, .stream = stream};
    return 0;
}

FC_API cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                              void *stream)
{
    struct fc_launch_config *c;

    if (t_depth == 0)
        return fc_ret(cudaErrorInvalidConfiguration);
    c = &t_config[--t_depth];
    *gridDim = c->grid;
    *blockDim = c->block;
    *sharedMem = c->shared;
    *(cudaStream_t *)stream = c->stream;
    return cudaSuccess;
}

/* A launch runs nothing; it is checked as CUDA checks it (a registered kernel, a valid
 * configuration, a live stream), counted, and the first one per process is named. */
static cudaError_t launch(const struct fc_kernel *k, dim3 grid, dim3 block, cudaStream_t stream,
                          int ptds)
{
    cudaError_t err = cudaSuccess;
    unsigned long n;

    fc_init();
    if (fc_rt.ndevices == 0)
        return fc_ret(cudaErrorNoDevice);
    if (!k)
        return fc_ret(cudaErrorInvalidDeviceFunction);
    if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z ||
        (unsigned long long)block.x * block.y * block.z > 1024 || block.z > 64 || grid.y > 65535 ||
        grid.z > 65535)
        return fc_ret(cudaErrorInvalidConfiguration);
    pthread_mutex_lock(&fc_rt.lock);
    fc_resolve_locked(stream, ptds, &err);
    pthread_mutex_unlock(&fc_rt.lock);
    if (err != cudaSuccess)
        return fc_ret(err);
    n = atomic_fetch_add(&launches, 1) + 1;
    if (n == 1)
        fprintf(stderr,
                "fakecuda: kernel %s launched; kernels do not run on the CPU runtime (reported "
                "once per process)\n",
                k->name);
    return cudaSuccess;
}

FC_API cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                      size_t sharedMem, cudaStream_t stream)
{
    (void)args;
    (void)sharedMem;
    return launch((const struct fc_kernel *)kernel, gridDim, blockDim, stream, 0);
}

FC_API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                           void **args, size_t sharedMem, cudaStream_t stream)
{
    (void)args;
    (void)sharedMem;
    return launch((const struct fc_kernel *)kernel, gridDim, blockDim, stream, 1);
}

FC_API cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream)
{
    (void)args;
    (void)sharedMem;
    return launch(find_kernel(func), gridDim, blockDim, stream, 0);
}

FC_API cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                         size_t sharedMem, cudaStream_t stream)
{
    (void)args;
    (void)sharedMem;
    return launch(find_kernel(func), gridDim, blockDim, stream, 1);
}
