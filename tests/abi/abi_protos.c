/* Compiles only if every prototype of interpose/shim/api.def (ncclguard's view of the NCCL API, the
 * one its wrappers are generated from) is compatible with NVIDIA's nccl.h: each function and
 * its pnccl twin is redeclared after the real header, and C rejects conflicting types. */
#include <nccl.h>

#define NCG_API(ret, name, params, args, cls, wrap, fail, fp)                                      \
    ret name params;                                                                               \
    ret p##name params;
#include "api.def"
#undef NCG_API

/* Type identity, beyond compatibility: the handle and id types are the same types. */
_Static_assert(sizeof(ncclUniqueId) == 128, "id size");

int main(void)
{
    return 0;
}

#ifdef NCG_ABI_NEGATIVE_CONTROL
/* t_abi.sh builds this too and expects a failure: proof that a mismatch would be caught. */
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, int count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
#endif
