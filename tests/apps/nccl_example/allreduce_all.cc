// allreduce_all [NDEV]: an NCCL program of the shape of NVIDIA's NCCL examples (one process
// drives several GPUs): ncclCommInitAll over NDEV devices (default: every device, at most 4),
// one ncclAllReduce per device inside a group, cudaStreamSynchronize on each stream, the result
// checked on the host. Written for ncclguard's CPU stack (docs/launchers.md, "Your own NCCL
// program on the CPU stack"), built by this directory's Makefile from NCCL_HOME and CUDA_HOME
// as those examples' Makefiles are; nothing in it knows about ncclguard.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "allreduce_all: %s:%d: %s\n", __FILE__, __LINE__,                 \
                         cudaGetErrorString(e_));                                                  \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)
#define NCCL_OK(call)                                                                              \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != ncclSuccess) {                                                                   \
            std::fprintf(stderr, "allreduce_all: %s:%d: %s\n", __FILE__, __LINE__,                 \
                         ncclGetErrorString(r_));                                                  \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    int ndev = 0;
    CUDA_OK(cudaGetDeviceCount(&ndev));
    if (argc > 1)
        ndev = std::atoi(argv[1]);
    else if (ndev > 4)
        ndev = 4;
    if (ndev < 1) {
        std::fprintf(stderr, "allreduce_all: no device\n");
        return 1;
    }
    const size_t count = 1024;
    std::vector<int> devs(ndev);
    std::vector<ncclComm_t> comms(ndev);
    std::vector<float *> send(ndev), recv(ndev);
    std::vector<cudaStream_t> streams(ndev);
    std::vector<float> host(count);

    for (int i = 0; i < ndev; i++) {
        devs[i] = i;
        CUDA_OK(cudaSetDevice(i));
        CUDA_OK(cudaMalloc(reinterpret_cast<void **>(&send[i]), count * sizeof(float)));
        CUDA_OK(cudaMalloc(reinterpret_cast<void **>(&recv[i]), count * sizeof(float)));
        for (size_t k = 0; k < count; k++)
            host[k] = float(i + 1);
        CUDA_OK(cudaMemcpy(send[i], host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_OK(cudaStreamCreate(&streams[i]));
    }
    NCCL_OK(ncclCommInitAll(comms.data(), ndev, devs.data()));

    const int iters = 20;
    for (int it = 0; it < iters; it++) {
        NCCL_OK(ncclGroupStart());
        for (int i = 0; i < ndev; i++)
            NCCL_OK(ncclAllReduce(send[i], recv[i], count, ncclFloat, ncclSum, comms[i], streams[i]));
        NCCL_OK(ncclGroupEnd());
        for (int i = 0; i < ndev; i++) {
            CUDA_OK(cudaSetDevice(i));
            CUDA_OK(cudaStreamSynchronize(streams[i]));
        }
    }

    const float want = float(ndev) * float(ndev + 1) / 2;
    int bad = 0;
    for (int i = 0; i < ndev; i++) {
        CUDA_OK(cudaMemcpy(host.data(), recv[i], count * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < count; k++)
            bad += host[k] != want;
    }
    for (int i = 0; i < ndev; i++) {
        CUDA_OK(cudaSetDevice(i));
        CUDA_OK(cudaFree(send[i]));
        CUDA_OK(cudaFree(recv[i]));
        CUDA_OK(cudaStreamDestroy(streams[i]));
        NCCL_OK(ncclCommDestroy(comms[i]));
    }
    std::printf("allreduce_all: %d devices, %d AllReduce of %zu floats each: %s\n", ndev, iters,
                count, bad ? "WRONG" : "correct");
    return bad ? 1 : 0;
}
