/* A library linked with -lnccl (the CPU NCCL), dlopen()ed RTLD_LOCAL by dlopen_local.c, as
 * Python loads its extension modules: libnccl then sits in a local scope RTLD_NEXT cannot see. */
#include "ncclguard/nccl_abi.h"

int uses_nccl_run(void);
int uses_nccl_fini(void);

static ncclComm_t comm;

__attribute__((visibility("default"))) int uses_nccl_run(void)
{
    ncclUniqueId id;
    float a[4] = {1, 2, 3, 4}, b[4] = {0};
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess || v <= 0)
        return 1;
    if (ncclGetUniqueId(&id) != ncclSuccess)
        return 2;
    if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess)
        return 3;
    if (ncclAllReduce(a, b, 4, ncclFloat, ncclSum, comm, NULL) != ncclSuccess || b[3] != 4.0f)
        return 4;
    return 0;
}

__attribute__((visibility("default"))) int uses_nccl_fini(void)
{
    return ncclCommDestroy(comm) == ncclSuccess ? 0 : 1;
}
