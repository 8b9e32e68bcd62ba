// A CUDA program as nvcc builds it (fakecuda.mk: only where nvcc exists), linked against the
// genuine libcudart.so.13 and run on the CPU runtime: kernel and variable registration before
// main, <<<>>> and cudaLaunchKernel launches (run nothing; the first is named on stderr),
// launch errors, cudaMemGetInfo around a cudaMalloc, cudaDeviceReset. Prints "kernel: ok".
#include <cuda_runtime.h>

#include "fc_test.h"

__device__ int counter;

__global__ void fill(int *p, int v)
{
    p[blockIdx.x * blockDim.x + threadIdx.x] = v;
    atomicAdd(&counter, 1);
}

__global__ void never_launched(void) {}

int main(void)
{
    const size_t n = 1 << 20;
    size_t free0, total0, free1, total1;
    cudaStream_t s;
    int *d;

    CK(cudaMemGetInfo(&free0, &total0));
    REQUIRE(free0 <= total0 && total0 > 0);
    CK(cudaMalloc(&d, n * sizeof(int)));
    CK(cudaMemGetInfo(&free1, &total1));
    REQUIRE(total1 == total0 && free1 + n * sizeof(int) <= free0);
    CK(cudaMemset(d, 0, n * sizeof(int)));

    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    fill<<<n / 256, 256>>>(d, 1);
    CK(cudaGetLastError());
    fill<<<n / 256, 256, 0, s>>>(d, 2);
    CK(cudaGetLastError());
    void *args[] = {&d, (void *)&n};
    CK(cudaLaunchKernel((const void *)fill, dim3(1), dim3(32), args, 0, s));
    CK(cudaDeviceSynchronize());
    CK(cudaStreamSynchronize(s));

    // launch errors are CUDA's (and the thread's last error)
    fill<<<1, 2048>>>(d, 3);
    EXPECT(cudaGetLastError(), cudaErrorInvalidConfiguration);
    fill<<<0, 32>>>(d, 3);
    EXPECT(cudaGetLastError(), cudaErrorInvalidConfiguration);
    EXPECT(cudaLaunchKernel((const void *)main, dim3(1), dim3(1), args, 0, 0),
           cudaErrorInvalidDeviceFunction);
    CK(cudaStreamDestroy(s));
    EXPECT(cudaLaunchKernel((const void *)fill, dim3(1), dim3(1), args, 0, s),
           cudaErrorInvalidResourceHandle);
    EXPECT(cudaGetLastError(), cudaErrorInvalidResourceHandle);
    CK(cudaGetLastError());

    // the kernels ran nothing: the memory holds what cudaMemset wrote
    int h = -1;
    CK(cudaMemcpy(&h, d + 5, sizeof(h), cudaMemcpyDeviceToHost));
    REQUIRE(h == 0);

    CK(cudaDeviceReset()); // frees d
    CK(cudaMemGetInfo(&free1, &total1));
    REQUIRE(free1 == free0);
    printf("kernel: ok\n");
    return 0;
}
