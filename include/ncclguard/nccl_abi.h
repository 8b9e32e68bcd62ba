/* ncclguard's own declaration of the NCCL 2.28 host API (types, constants, functions).
 * Written from the documented ABI, not copied from nccl.h; tests/abi checks it against the
 * real header where present. Used by the shim, the CPU NCCL (tests/fakenccl) and the tests.
 * Do not include together with NVIDIA's nccl.h (same names). */
#ifndef NCG_NCCL_ABI_H
#define NCG_NCCL_ABI_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NCG_NCCL_ABI_MAJOR 2
#define NCG_NCCL_ABI_MINOR 28
#define NCG_NCCL_ABI_PATCH 9
/* NCCL's version code for X.Y.Z with Y > 8: X*10000 + Y*100 + Z. */
#define NCG_NCCL_VERSION_CODE(x, y, z)                                                             \
    (((x) <= 2 && (y) <= 8) ? (x)*1000 + (y)*100 + (z) : (x)*10000 + (y)*100 + (z))

typedef struct ncclComm *ncclComm_t;
typedef struct ncclWindow_vidmem *ncclWindow_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclNumResults = 8
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01
#define NCCL_REVOKE_DEFAULT 0x00
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_SUSPEND_MEM 0x01 /* 2.30: ncclCommSuspend releases dynamic allocations */

/* ncclConfig_t of 2.28 (struct tag ncclConfig_v22800); size/magic/version first. */
typedef struct ncclConfig_v22800 {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
    int trafficClass;
    const char *commName;
    int collnetEnable;
    int CTAPolicy;
    int shrinkShare;
    int nvlsCTAs;
    int nChannelsPerNetPeer;
    int nvlinkCentricSched;
} ncclConfig_t;

#define NCG_NCCL_CONFIG_MAGIC 0xcafebeefu
#define NCCL_CONFIG_INITIALIZER                                                                    \
    {                                                                                              \
        sizeof(ncclConfig_t), NCG_NCCL_CONFIG_MAGIC,                                               \
            NCG_NCCL_VERSION_CODE(NCG_NCCL_ABI_MAJOR, NCG_NCCL_ABI_MINOR, NCG_NCCL_ABI_PATCH),     \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                   \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT                                           \
    }

typedef struct ncclSimInfo_v22200 {
    size_t size;
    unsigned int magic;
    unsigned int version;
    float estimatedTime;
} ncclSimInfo_t;

typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
    ncclSum = 0,
    ncclProd = 1,
    ncclMax = 2,
    ncclMin = 3,
    ncclAvg = 4,
    ncclNumOps = 5, /* first value of user (dynamic) reduction ops */
    ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum {
    ncclInt8 = 0,
    ncclChar = 0,
    ncclUint8 = 1,
    ncclInt32 = 2,
    ncclInt = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6,
    ncclHalf = 6,
    ncclFloat32 = 7,
    ncclFloat = 7,
    ncclFloat64 = 8,
    ncclDouble = 8,
    ncclBfloat16 = 9,
    ncclFloat8e4m3 = 10,
    ncclFloat8e5m2 = 11,
    ncclNumTypes = 12
} ncclDataType_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* 2.30: ncclCommMemStats' statistics. */
typedef enum {
    ncclStatGpuMemSuspend = 0,
    ncclStatGpuMemSuspended = 1,
    ncclStatGpuMemPersist = 2,
    ncclStatGpuMemTotal = 3
} ncclCommMemStat_t;

/* 2.30: one descriptor of ncclWaitSignal: wait for opCnt more signals from peer on (sigIdx, ctx).
 */
typedef struct {
    int opCnt;
    int peer;
    int sigIdx;
    int ctx;
} ncclWaitSignalDesc_t;

/* 2.30: a parameter of NCCL's parameter system (opaque). */
typedef struct ncclParamHandle *ncclParamHandle_t;

/* cudaStream_t as an opaque pointer: no CUDA headers needed. */
#ifndef NCG_HAVE_CUDA_STREAM_T
typedef struct CUstream_st *cudaStream_t;
#endif

/* The host API of 2.30.7 (2.28's plus the functions added since), in nccl.h's order. Each has a
 * strong pnccl twin in the real library. */
#define NCG_DECLARE_BOTH(ret, name, params)                                                        \
    ret name params;                                                                               \
    ret p##name params;

NCG_DECLARE_BOTH(ncclResult_t, ncclMemAlloc, (void **ptr, size_t size))
NCG_DECLARE_BOTH(ncclResult_t, ncclMemFree, (void *ptr))
NCG_DECLARE_BOTH(ncclResult_t, ncclGetVersion, (int *version))
NCG_DECLARE_BOTH(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommInitRankConfig,
                 (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank,
                  ncclConfig_t *config))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommInitRank,
                 (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommInitAll, (ncclComm_t * comm, int ndev, const int *devlist))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommFinalize, (ncclComm_t comm))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommDestroy, (ncclComm_t comm))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommAbort, (ncclComm_t comm))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommSplit,
                 (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommShrink,
                 (ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                  ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommGetUniqueId, (ncclComm_t comm, ncclUniqueId *uniqueId))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommGrow,
                 (ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank,
                  ncclComm_t *newcomm, ncclConfig_t *config))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommInitRankScalable,
                 (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds,
                  ncclConfig_t *config))
NCG_DECLARE_BOTH(const char *, ncclGetErrorString, (ncclResult_t result))
NCG_DECLARE_BOTH(const char *, ncclGetLastError, (ncclComm_t comm))
NCG_DECLARE_BOTH(void, ncclResetDebugInit, (void))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t *asyncError))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int *count))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int *device))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int *rank))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommRegister,
                 (const ncclComm_t comm, void *buff, size_t size, void **handle))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void *handle))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommSuspend, (ncclComm_t comm, int flags))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommResume, (ncclComm_t comm))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommMemStats,
                 (ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommWindowRegister,
                 (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags))
NCG_DECLARE_BOTH(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win))
NCG_DECLARE_BOTH(ncclResult_t, ncclWinGetUserPtr,
                 (ncclComm_t comm, ncclWindow_t win, void **outUserPtr))
NCG_DECLARE_BOTH(ncclResult_t, ncclRedOpCreatePreMulSum,
                 (ncclRedOp_t * op, void *scalar, ncclDataType_t datatype,
                  ncclScalarResidence_t residence, ncclComm_t comm))
NCG_DECLARE_BOTH(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm))
NCG_DECLARE_BOTH(ncclResult_t, ncclReduce,
                 (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                  ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream))
NCG_DECLARE_BOTH(ncclResult_t, ncclBcast,
                 (void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                  cudaStream_t stream))
NCG_DECLARE_BOTH(ncclResult_t, ncclBroadcast,
                 (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                  int root, ncclComm_t comm, cudaStream_t stream))
NCG_DECLARE_BOTH(ncclResult_t, ncclAllReduce,
                 (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream))
NCG_DECLARE_BOTH(ncclResult_t, ncclReduceScatter,
                 (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream))
NCG_DECLARE_BOTH(ncclResult_t, ncclAllGather,
                 (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                  ncclComm_t comm, cudaStream_t stream))
NCG_DECLARE_BOTH(ncclResult_t, ncclAlltoAll,
                 (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                  ncclComm_t comm, cudaStream_t stream))
NCG_DECLARE_BOTH(ncclResult_t, ncclGather,
                 (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                  int root, ncclComm_t comm, cudaStream_t stream))
NCG_DECLARE_BOTH(ncclResult_t, ncclScatter,
                 (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                  int root, ncclComm_t comm, cudaStream_t stream))
NCG_DECLARE_BOTH(ncclResult_t, ncclSend,
                 (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                  ncclComm_t comm, cudaStream_t stream))
NCG_DECLARE_BOTH(ncclResult_t, ncclRecv,
                 (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                  cudaStream_t stream))
NCG_DECLARE_BOTH(ncclResult_t, ncclPutSignal,
                 (const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
                  ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                  unsigned int flags, ncclComm_t comm, cudaStream_t stream))
NCG_DECLARE_BOTH(ncclResult_t, ncclSignal,
                 (int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                  cudaStream_t stream))
NCG_DECLARE_BOTH(ncclResult_t, ncclWaitSignal,
                 (int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm,
                  cudaStream_t stream))
NCG_DECLARE_BOTH(ncclResult_t, ncclGroupStart, (void))
NCG_DECLARE_BOTH(ncclResult_t, ncclGroupEnd, (void))
NCG_DECLARE_BOTH(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo))
NCG_DECLARE_BOTH(ncclResult_t, ncclParamBind, (ncclParamHandle_t * out, const char *key))
NCG_DECLARE_BOTH(ncclResult_t, ncclParamGetI8, (ncclParamHandle_t h, int8_t *out))
NCG_DECLARE_BOTH(ncclResult_t, ncclParamGetI16, (ncclParamHandle_t h, int16_t *out))
NCG_DECLARE_BOTH(ncclResult_t, ncclParamGetI32, (ncclParamHandle_t h, int32_t *out))
NCG_DECLARE_BOTH(ncclResult_t, ncclParamGetI64, (ncclParamHandle_t h, int64_t *out))
NCG_DECLARE_BOTH(ncclResult_t, ncclParamGetU8, (ncclParamHandle_t h, uint8_t *out))
NCG_DECLARE_BOTH(ncclResult_t, ncclParamGetU16, (ncclParamHandle_t h, uint16_t *out))
NCG_DECLARE_BOTH(ncclResult_t, ncclParamGetU32, (ncclParamHandle_t h, uint32_t *out))
NCG_DECLARE_BOTH(ncclResult_t, ncclParamGetU64, (ncclParamHandle_t h, uint64_t *out))
NCG_DECLARE_BOTH(ncclResult_t, ncclParamGetStr, (ncclParamHandle_t h, const char **out))
NCG_DECLARE_BOTH(ncclResult_t, ncclParamGet, (ncclParamHandle_t h, void *out, int maxLen, int *len))
NCG_DECLARE_BOTH(ncclResult_t, ncclParamGetParameter,
                 (const char *key, const char **value, int *valueLen))
NCG_DECLARE_BOTH(ncclResult_t, ncclParamGetAllParameterKeys, (const char ***table, int *tableLen))
NCG_DECLARE_BOTH(void, ncclParamDumpAll, (void))

#undef NCG_DECLARE_BOTH

/* NCCL's bootstrap handle layout inside ncclUniqueId (2.28): a 64-bit magic followed by the
 * root's socket address (union of sockaddr_in / sockaddr_in6), 40 bytes used, the rest zero.
 * NCCL_COMM_ID-derived ids carry the fixed magic below. */
#define NCG_NCCL_ID_USED_BYTES 40
#define NCG_NCCL_COMM_ID_MAGIC 0x0280028002800280ull

#ifdef __cplusplus
}
#endif
#endif /* NCG_NCCL_ABI_H */
