/* Prints the NCCL ABI facts that matter to a caller (sizes, field offsets, enum values,
 * constants, NCCL_CONFIG_INITIALIZER's header) from whichever header it is built with:
 * -DNCG_USE_REAL_NCCL_H: NVIDIA's nccl.h; otherwise ncclguard's nccl_abi.h. t_abi.sh diffs the
 * two outputs. */
#include <stddef.h>
#include <stdio.h>

#ifdef NCG_USE_REAL_NCCL_H
#include <nccl.h>
#else
#include "ncclguard/nccl_abi.h"
#endif

#define SZ(t) printf("sizeof %s %zu\n", #t, sizeof(t))
#define OFF(t, f) printf("offsetof %s.%s %zu\n", #t, #f, offsetof(t, f))
#define VAL(v) printf("value %s %lld\n", #v, (long long)(v))

int main(void)
{
    SZ(ncclUniqueId);
    SZ(ncclComm_t);
    SZ(ncclWindow_t);
    SZ(ncclResult_t);
    SZ(ncclRedOp_t);
    SZ(ncclDataType_t);
    SZ(ncclScalarResidence_t);
    SZ(ncclConfig_t);
    OFF(ncclConfig_t, size);
    OFF(ncclConfig_t, magic);
    OFF(ncclConfig_t, version);
    OFF(ncclConfig_t, blocking);
    OFF(ncclConfig_t, cgaClusterSize);
    OFF(ncclConfig_t, minCTAs);
    OFF(ncclConfig_t, maxCTAs);
    OFF(ncclConfig_t, netName);
    OFF(ncclConfig_t, splitShare);
    OFF(ncclConfig_t, trafficClass);
    OFF(ncclConfig_t, commName);
    OFF(ncclConfig_t, collnetEnable);
    OFF(ncclConfig_t, CTAPolicy);
    OFF(ncclConfig_t, shrinkShare);
    OFF(ncclConfig_t, nvlsCTAs);
    OFF(ncclConfig_t, nChannelsPerNetPeer);
    OFF(ncclConfig_t, nvlinkCentricSched);
    SZ(ncclSimInfo_t);
    OFF(ncclSimInfo_t, size);
    OFF(ncclSimInfo_t, magic);
    OFF(ncclSimInfo_t, version);
    OFF(ncclSimInfo_t, estimatedTime);
    VAL(NCCL_UNIQUE_ID_BYTES);
    VAL(NCCL_SPLIT_NOCOLOR);
    VAL(NCCL_CONFIG_UNDEF_INT);
    VAL(NCCL_SHRINK_DEFAULT);
    VAL(NCCL_SHRINK_ABORT);
    VAL(NCCL_REVOKE_DEFAULT);
    VAL(NCCL_WIN_DEFAULT);
    VAL(NCCL_WIN_COLL_SYMMETRIC);
    VAL(ncclSuccess);
    VAL(ncclUnhandledCudaError);
    VAL(ncclSystemError);
    VAL(ncclInternalError);
    VAL(ncclInvalidArgument);
    VAL(ncclInvalidUsage);
    VAL(ncclRemoteError);
    VAL(ncclInProgress);
    VAL(ncclNumResults);
    VAL(ncclSum);
    VAL(ncclProd);
    VAL(ncclMax);
    VAL(ncclMin);
    VAL(ncclAvg);
    VAL(ncclNumOps);
    VAL(ncclMaxRedOp);
    VAL(ncclInt8);
    VAL(ncclChar);
    VAL(ncclUint8);
    VAL(ncclInt32);
    VAL(ncclInt);
    VAL(ncclUint32);
    VAL(ncclInt64);
    VAL(ncclUint64);
    VAL(ncclFloat16);
    VAL(ncclHalf);
    VAL(ncclFloat32);
    VAL(ncclFloat);
    VAL(ncclFloat64);
    VAL(ncclDouble);
    VAL(ncclBfloat16);
    VAL(ncclFloat8e4m3);
    VAL(ncclFloat8e5m2);
    VAL(ncclNumTypes);
    VAL(ncclScalarDevice);
    VAL(ncclScalarHostImmediate);
    ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
    printf(
        "initializer size=%zu magic=%#x version=%u blocking=%d cga=%d minCTAs=%d maxCTAs=%d net=%p "
        "split=%d tc=%d name=%p collnet=%d policy=%d shrink=%d nvls=%d perpeer=%d nvlink=%d\n",
        c.size, c.magic, c.version, c.blocking, c.cgaClusterSize, c.minCTAs, c.maxCTAs,
        (void *)c.netName, c.splitShare, c.trafficClass, (void *)c.commName, c.collnetEnable,
        c.CTAPolicy, c.shrinkShare, c.nvlsCTAs, c.nChannelsPerNetPeer, c.nvlinkCentricSched);
    return 0;
}
