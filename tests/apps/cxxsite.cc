// cxxsite: a C++ NCCL program whose call site is a method of a class template in nested
// namespaces, as in PyTorch, DeepSpeed or nccl-tests: its mangled name is far longer than a
// call site's 128 bytes on the wire. Under ncg-launch: ITERS (argv[1], default 40) AllReduces;
// with "count" (argv[2]), rank 1 passes count+1 at the middle iteration (a MISMATCH). The call
// is on the line marked "the call site" (the test reads its number from this file).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"

namespace trainer
{
namespace distributed
{
namespace checkpointing
{

template <typename T, int Buckets> class DistributedCheckpointer
{
  public:
    explicit DistributedCheckpointer(ncclComm_t comm) : comm_(comm), buf_(64)
    {
    }

    // noinline: the frame of this method is the recorded call site
    template <typename Alloc>
    __attribute__((noinline)) void
    all_reduce_gradient_buckets_for_sharded_state(const std::vector<T, Alloc> &scale,
                                                  unsigned long count)
    {
        (void)scale;
        T *p = buf_.data();
        cudaStream_t st = ncg_test_stream();
        ncclResult_t r =
            ncclAllReduce(p, p, count, ncclFloat32, ncclSum, comm_, st); // the call site
        NCG_CHECK(r);
        NCG_CHECK(ncg_test_sync(comm_));
    }

  private:
    ncclComm_t comm_;
    std::vector<T> buf_;
};

} // namespace checkpointing
} // namespace distributed
} // namespace trainer

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 40;
    bool mismatch = argc > 2 && !strcmp(argv[2], "count");
    int rank = ncg_test_rank(), world = ncg_test_world();
    ncclUniqueId id;
    if (ncg_test_share_id(&id) != 0)
        return 1;
    ncclComm_t comm;
    NCG_CHECK(ncclCommInitRank(&comm, world, id, rank));
    trainer::distributed::checkpointing::DistributedCheckpointer<float, 4> ck(comm);
    std::vector<float> scale(1, 1.0f);
    for (int i = 0; i < iters; i++) {
        unsigned long count = 8 + (mismatch && rank == 1 && i == iters / 2);
        ck.all_reduce_gradient_buckets_for_sharded_state(scale, count);
    }
    NCG_CHECK(ncclCommDestroy(comm));
    return 0;
}
