/* Completion by CUDA events against the genuine CUDA 13 runtime (no GPU here): the prototypes
 * ncclguard calls through dlsym match cuda_runtime_api.h (checked at compile time), and a
 * process linked with libcudart.so.13 runs a guarded NCCL call with completion degrading to
 * "a call's return is its completion" (one verbose line). Built only when CUDA is installed. */
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "completion.h"
#include "ncclguard/nccl_abi.h"

#define SAME(f, T) _Static_assert(__builtin_types_compatible_p(__typeof__(&f), T), #f)
SAME(cudaEventCreateWithFlags, cudaError_t (*)(cudaEvent_t *, unsigned int));
SAME(cudaEventRecord, cudaError_t (*)(cudaEvent_t, cudaStream_t));
SAME(cudaEventQuery, cudaError_t (*)(cudaEvent_t));
SAME(cudaStreamQuery, cudaError_t (*)(cudaStream_t));
_Static_assert(sizeof(cudaError_t) == sizeof(int) && cudaSuccess == NCG_CUDA_SUCCESS &&
                   cudaErrorNotReady == NCG_CUDA_NOT_READY &&
                   cudaEventDisableTiming == NCG_CUDA_EVENT_DISABLE_TIMING,
               "CUDA constants");
_Static_assert(sizeof(cudaEvent_t) == sizeof(void *) && sizeof(cudaStream_t) == sizeof(void *),
               "handles are pointers");

int main(void)
{
    int n = -1;
    printf("cuda_bind: cudaGetDeviceCount -> %d (devices %d)\n", (int)cudaGetDeviceCount(&n), n);
    ncclUniqueId id;
    ncclComm_t comm;
    float a[4] = {1, 2, 3, 4}, b[4];
    if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess)
        return 1;
    for (int i = 0; i < 20; i++)
        if (ncclAllReduce(a, b, 4, ncclFloat, ncclSum, comm, (cudaStream_t)0) != ncclSuccess)
            return 1;
    ncclCommDestroy(comm);
    printf("cuda_bind: done\n");
    return 0;
}
