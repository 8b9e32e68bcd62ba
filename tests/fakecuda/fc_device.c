/* fakecuda devices: runtime init, how many devices there are (FAKECUDA_DEVICES, then
 * CUDA_VISIBLE_DEVICES as CUDA parses it), the per-thread current device, properties,
 * attributes and versions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fc_internal.h"

struct fc_runtime fc_rt = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static __thread int t_device;

/* How many of the `physical` devices CUDA_VISIBLE_DEVICES leaves visible: entries are read in
 * order up to the first invalid one (not an index below physical, a repeat, or not a GPU-/MIG-
 * UUID), as CUDA does. Unset: all. */
static int visible_devices(const char *cvd, int physical)
{
    char seen[FC_MAX_DEVICES] = {0};
    int n = 0;

    if (!cvd)
        return physical;
    while (*cvd && n < physical) {
        const char *end = strchr(cvd, ',');
        size_t len = end ? (size_t)(end - cvd) : strlen(cvd);
        char item[128];
        char *p, *stop;
        long idx;

        if (len >= sizeof(item))
            break;
        memcpy(item, cvd, len);
        item[len] = '\0';
        for (p = item; *p == ' ' || *p == '\t'; p++)
            ;
        if (!strncmp(p, "GPU-", 4) || !strncmp(p, "MIG-", 4)) {
            n++;
        } else {
            idx = strtol(p, &stop, 10);
            while (*stop == ' ' || *stop == '\t')
                stop++;
            if (stop == p || *stop || idx < 0 || idx >= physical || seen[idx])
                break;
            seen[idx] = 1;
            n++;
        }
        if (!end)
            break;
        cvd = end + 1;
    }
    return n;
}

static void init_once_fn(void)
{
    const char *env = getenv("FAKECUDA_DEVICES");
    int physical = FC_DEFAULT_DEVICES;

    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end || v < 0 || v > FC_MAX_DEVICES)
            fprintf(stderr, "fakecuda: FAKECUDA_DEVICES=%s ignored (0..%d)\n", env, FC_MAX_DEVICES);
        else
            physical = (int)v;
    }
    fc_rt.ndevices = visible_devices(getenv("CUDA_VISIBLE_DEVICES"), physical);
    pthread_atfork(fc_fork_prepare, fc_fork_parent, fc_fork_child);
}

void fc_init(void)
{
    pthread_once(&init_once, init_once_fn);
}

int fc_current_device(void)
{
    return t_device;
}

void fc_set_current_device(int device)
{
    t_device = device;
}

static cudaError_t check_device(int device)
{
    fc_init();
    if (fc_rt.ndevices == 0)
        return cudaErrorNoDevice;
    if (device < 0 || device >= fc_rt.ndevices)
        return cudaErrorInvalidDevice;
    return cudaSuccess;
}

FC_API cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count)
        return fc_ret(cudaErrorInvalidValue);
    fc_init();
    *count = fc_rt.ndevices;
    return fc_ret(fc_rt.ndevices ? cudaSuccess : cudaErrorNoDevice);
}

FC_API cudaError_t cudaSetDevice(int device)
{
    cudaError_t err = check_device(device);

    if (err == cudaSuccess)
        t_device = device;
    return fc_ret(err);
}

FC_API cudaError_t cudaGetDevice(int *device)
{
    cudaError_t err;

    if (!device)
        return fc_ret(cudaErrorInvalidValue);
    err = check_device(t_device);
    if (err == cudaSuccess)
        *device = t_device;
    return fc_ret(err);
}

/* A stable, distinct bus id per device, in the runtime's format: "0000:BB:00.0", bus 0x10 +
 * the device's index (what a fake NVML keys its GPUs by). */
FC_API cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    cudaError_t err;

    if (!pciBusId || len <= 0)
        return fc_ret(cudaErrorInvalidValue);
    err = check_device(device);
    if (err != cudaSuccess)
        return fc_ret(err);
    if (snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", 0x10 + device) >= len)
        return fc_ret(cudaErrorInvalidValue);
    return fc_ret(cudaSuccess);
}

FC_API cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    cudaError_t err;

    if (!prop)
        return fc_ret(cudaErrorInvalidValue);
    err = check_device(device);
    if (err != cudaSuccess)
        return fc_ret(err);
    memset(prop, 0, sizeof(*prop));
    snprintf(prop->name, sizeof(prop->name), "fakecuda CPU device");
    memcpy(prop->uuid.bytes, "fakecuda-dev", 12);
    prop->uuid.bytes[15] = (char)device;
    prop->totalGlobalMem = FC_DEVICE_MEM_BYTES;
    prop->sharedMemPerBlock = 48 << 10;
    prop->sharedMemPerBlockOptin = 227 << 10;
    prop->sharedMemPerMultiprocessor = 228 << 10;
    prop->regsPerBlock = 65536;
    prop->regsPerMultiprocessor = 65536;
    prop->warpSize = 32;
    prop->memPitch = (size_t)2147483647;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 2147483647;
    prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
    prop->totalConstMem = 64 << 10;
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = 132;
    prop->maxThreadsPerMultiProcessor = 2048;
    prop->maxBlocksPerMultiProcessor = 32;
    prop->canMapHostMemory = 1;
    prop->concurrentKernels = 1;
    prop->asyncEngineCount = 2;
    prop->unifiedAddressing = 1;
    prop->managedMemory = 1;
    prop->streamPrioritiesSupported = 1;
    prop->memoryBusWidth = 5120;
    prop->l2CacheSize = 50 << 20;
    prop->pciBusID = device + 1;
    prop->hostNumaId = -1;
    return fc_ret(cudaSuccess);
}

FC_API cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    struct cudaDeviceProp p;
    cudaError_t err;

    if (!value || (int)attr < 1 || attr >= cudaDevAttrMax)
        return fc_ret(cudaErrorInvalidValue);
    err = cudaGetDeviceProperties(&p, device);
    if (err != cudaSuccess)
        return err;
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
        *value = p.maxThreadsPerBlock;
        break;
    case cudaDevAttrMaxBlockDimX:
        *value = p.maxThreadsDim[0];
        break;
    case cudaDevAttrMaxGridDimX:
        *value = p.maxGridSize[0];
        break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
        *value = (int)p.sharedMemPerBlock;
        break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
        *value = (int)p.sharedMemPerBlockOptin;
        break;
    case cudaDevAttrWarpSize:
        *value = p.warpSize;
        break;
    case cudaDevAttrMultiProcessorCount:
        *value = p.multiProcessorCount;
        break;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
        *value = p.maxThreadsPerMultiProcessor;
        break;
    case cudaDevAttrComputeCapabilityMajor:
        *value = p.major;
        break;
    case cudaDevAttrComputeCapabilityMinor:
        *value = p.minor;
        break;
    case cudaDevAttrPciBusId:
        *value = p.pciBusID;
        break;
    case cudaDevAttrPciDeviceId:
    case cudaDevAttrPciDomainId:
    case cudaDevAttrIntegrated:
        *value = 0;
        break;
    case cudaDevAttrCanMapHostMemory:
    case cudaDevAttrConcurrentKernels:
    case cudaDevAttrUnifiedAddressing:
    case cudaDevAttrManagedMemory:
    case cudaDevAttrStreamPrioritiesSupported:
        *value = 1;
        break;
    case cudaDevAttrAsyncEngineCount:
        *value = p.asyncEngineCount;
        break;
    case cudaDevAttrL2CacheSize:
        *value = p.l2CacheSize;
        break;
    case cudaDevAttrGlobalMemoryBusWidth:
        *value = p.memoryBusWidth;
        break;
    case cudaDevAttrClockRate:
    case cudaDevAttrMemoryClockRate:
        *value = 1000000; /* kHz */
        break;
    default:
        *value = 0; /* an attribute fakecuda does not model */
        break;
    }
    return cudaSuccess;
}

FC_API cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (!runtimeVersion)
        return fc_ret(cudaErrorInvalidValue);
    *runtimeVersion = CUDART_VERSION;
    return cudaSuccess;
}

FC_API cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return fc_ret(cudaErrorInvalidValue);
    *driverVersion = CUDART_VERSION;
    return cudaSuccess;
}
