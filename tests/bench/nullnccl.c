/* A NCCL whose calls do nothing: every pnccl* returns ncclSuccess at once (init hands out a
 * distinct handle that knows its rank and size), with nccl* weak aliases like the genuine
 * library. The baseline for the per-call cost benchmark, and the "library lacking a function"
 * in tests (built with -DNULL_OMIT_REVOKE it has no ncclCommRevoke). */
#include <stdlib.h>
#include <string.h>

#include "ncclguard/nccl_abi.h"

#define API __attribute__((visibility("default")))
#define ALIAS(ret, name, params) API ret name params __attribute__((weak, alias("p" #name)));

struct ncclComm {
    int rank, nranks;
};

static ncclResult_t mk(ncclComm_t *c, int nranks, int rank)
{
    if (!c || !(*c = malloc(sizeof **c)))
        return ncclInvalidArgument;
    (*c)->rank = rank;
    (*c)->nranks = nranks;
    return ncclSuccess;
}

API ncclResult_t pncclMemAlloc(void **ptr, size_t size)
{
    *ptr = malloc(size);
    return ncclSuccess;
}
API ncclResult_t pncclMemFree(void *ptr)
{
    free(ptr);
    return ncclSuccess;
}
API ncclResult_t pncclGetVersion(int *v)
{
    *v = 22809;
    return ncclSuccess;
}
API ncclResult_t pncclGetUniqueId(ncclUniqueId *id)
{
    static unsigned n;
    memset(id, 0, sizeof *id);
    id->internal[0] = 0x11;
    id->internal[8] = (char)__atomic_add_fetch(&n, 1, __ATOMIC_RELAXED);
    return ncclSuccess;
}
API ncclResult_t pncclCommInitRankConfig(ncclComm_t *c, int nranks, ncclUniqueId id, int rank,
                                         ncclConfig_t *cfg)
{
    (void)id;
    (void)cfg;
    return mk(c, nranks, rank);
}
API ncclResult_t pncclCommInitRank(ncclComm_t *c, int nranks, ncclUniqueId id, int rank)
{
    (void)id;
    return mk(c, nranks, rank);
}
API ncclResult_t pncclCommInitAll(ncclComm_t *c, int ndev, const int *d)
{
    (void)d;
    for (int i = 0; i < ndev; i++)
        mk(&c[i], ndev, i);
    return ncclSuccess;
}
API ncclResult_t pncclCommFinalize(ncclComm_t c)
{
    (void)c;
    return ncclSuccess;
}
API ncclResult_t pncclCommDestroy(ncclComm_t c)
{
    free(c);
    return ncclSuccess;
}
API ncclResult_t pncclCommAbort(ncclComm_t c)
{
    free(c);
    return ncclSuccess;
}
#ifndef NULL_OMIT_REVOKE
API ncclResult_t pncclCommRevoke(ncclComm_t c, int f)
{
    (void)c;
    (void)f;
    return ncclSuccess;
}
ALIAS(ncclResult_t, ncclCommRevoke, (ncclComm_t c, int f))
#endif
API ncclResult_t pncclCommSplit(ncclComm_t c, int color, int key, ncclComm_t *n, ncclConfig_t *cfg)
{
    (void)key;
    (void)cfg;
    if (color == NCCL_SPLIT_NOCOLOR) {
        *n = NULL;
        return ncclSuccess;
    }
    return mk(n, c->nranks, c->rank);
}
API ncclResult_t pncclCommShrink(ncclComm_t c, int *ex, int nex, ncclComm_t *n, ncclConfig_t *cfg,
                                 int f)
{
    (void)ex;
    (void)cfg;
    (void)f;
    return mk(n, c->nranks - nex, c->rank);
}
API ncclResult_t pncclCommInitRankScalable(ncclComm_t *c, int nranks, int rank, int nid,
                                           ncclUniqueId *ids, ncclConfig_t *cfg)
{
    (void)nid;
    (void)ids;
    (void)cfg;
    return mk(c, nranks, rank);
}
API const char *pncclGetErrorString(ncclResult_t r)
{
    (void)r;
    return "null";
}
API const char *pncclGetLastError(ncclComm_t c)
{
    (void)c;
    return "";
}
API void pncclResetDebugInit(void)
{
}
API ncclResult_t pncclCommGetAsyncError(ncclComm_t c, ncclResult_t *e)
{
    (void)c;
    *e = ncclSuccess;
    return ncclSuccess;
}
API ncclResult_t pncclCommCount(const ncclComm_t c, int *n)
{
    *n = c->nranks;
    return ncclSuccess;
}
API ncclResult_t pncclCommCuDevice(const ncclComm_t c, int *d)
{
    (void)c;
    *d = 0;
    return ncclSuccess;
}
API ncclResult_t pncclCommUserRank(const ncclComm_t c, int *r)
{
    *r = c->rank;
    return ncclSuccess;
}
API ncclResult_t pncclCommRegister(const ncclComm_t c, void *b, size_t s, void **h)
{
    (void)c;
    (void)s;
    *h = b;
    return ncclSuccess;
}
API ncclResult_t pncclCommDeregister(const ncclComm_t c, void *h)
{
    (void)c;
    (void)h;
    return ncclSuccess;
}
API ncclResult_t pncclCommWindowRegister(ncclComm_t c, void *b, size_t s, ncclWindow_t *w, int f)
{
    (void)c;
    (void)b;
    (void)s;
    (void)f;
    *w = NULL;
    return ncclSuccess;
}
API ncclResult_t pncclCommWindowDeregister(ncclComm_t c, ncclWindow_t w)
{
    (void)c;
    (void)w;
    return ncclSuccess;
}
API ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *s, ncclDataType_t t,
                                           ncclScalarResidence_t r, ncclComm_t c)
{
    (void)s;
    (void)t;
    (void)r;
    (void)c;
    *op = (ncclRedOp_t)ncclNumOps;
    return ncclSuccess;
}
API ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t c)
{
    (void)op;
    (void)c;
    return ncclSuccess;
}
#define COLLARGS const void *s, void *r, size_t n, ncclDataType_t t
#define UNUSED4                                                                                    \
    (void)s;                                                                                       \
    (void)r;                                                                                       \
    (void)n;                                                                                       \
    (void)t
API ncclResult_t pncclReduce(COLLARGS, ncclRedOp_t op, int root, ncclComm_t c, cudaStream_t st)
{
    UNUSED4;
    (void)op;
    (void)root;
    (void)c;
    (void)st;
    return ncclSuccess;
}
API ncclResult_t pncclBcast(void *b, size_t n, ncclDataType_t t, int root, ncclComm_t c,
                            cudaStream_t st)
{
    (void)b;
    (void)n;
    (void)t;
    (void)root;
    (void)c;
    (void)st;
    return ncclSuccess;
}
API ncclResult_t pncclBroadcast(COLLARGS, int root, ncclComm_t c, cudaStream_t st)
{
    UNUSED4;
    (void)root;
    (void)c;
    (void)st;
    return ncclSuccess;
}
API ncclResult_t pncclAllReduce(COLLARGS, ncclRedOp_t op, ncclComm_t c, cudaStream_t st)
{
    UNUSED4;
    (void)op;
    (void)c;
    (void)st;
    return ncclSuccess;
}
API ncclResult_t pncclReduceScatter(COLLARGS, ncclRedOp_t op, ncclComm_t c, cudaStream_t st)
{
    UNUSED4;
    (void)op;
    (void)c;
    (void)st;
    return ncclSuccess;
}
API ncclResult_t pncclAllGather(COLLARGS, ncclComm_t c, cudaStream_t st)
{
    UNUSED4;
    (void)c;
    (void)st;
    return ncclSuccess;
}
API ncclResult_t pncclAlltoAll(COLLARGS, ncclComm_t c, cudaStream_t st)
{
    UNUSED4;
    (void)c;
    (void)st;
    return ncclSuccess;
}
API ncclResult_t pncclGather(COLLARGS, int root, ncclComm_t c, cudaStream_t st)
{
    UNUSED4;
    (void)root;
    (void)c;
    (void)st;
    return ncclSuccess;
}
API ncclResult_t pncclScatter(COLLARGS, int root, ncclComm_t c, cudaStream_t st)
{
    UNUSED4;
    (void)root;
    (void)c;
    (void)st;
    return ncclSuccess;
}
API ncclResult_t pncclSend(const void *s, size_t n, ncclDataType_t t, int peer, ncclComm_t c,
                           cudaStream_t st)
{
    (void)s;
    (void)n;
    (void)t;
    (void)peer;
    (void)c;
    (void)st;
    return ncclSuccess;
}
API ncclResult_t pncclRecv(void *r, size_t n, ncclDataType_t t, int peer, ncclComm_t c,
                           cudaStream_t st)
{
    (void)r;
    (void)n;
    (void)t;
    (void)peer;
    (void)c;
    (void)st;
    return ncclSuccess;
}
API ncclResult_t pncclGroupStart(void)
{
    return ncclSuccess;
}
API ncclResult_t pncclGroupEnd(void)
{
    return ncclSuccess;
}
API ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *i)
{
    (void)i;
    return ncclSuccess;
}

/* The nccl* names: weak aliases of the pnccl* definitions (as in the genuine libnccl). */
#define NCG_API(ret, name, params, args, cls, wrap, fail, fp) NULL_ALIAS_##name(ret, name, params)
#define NULL_ALIAS_ncclCommRevoke(ret, name, params) /* above, when present */
#define NULL_ALIAS_ncclMemAlloc ALIAS
#define NULL_ALIAS_ncclMemFree ALIAS
#define NULL_ALIAS_ncclGetVersion ALIAS
#define NULL_ALIAS_ncclGetUniqueId ALIAS
#define NULL_ALIAS_ncclCommInitRankConfig ALIAS
#define NULL_ALIAS_ncclCommInitRank ALIAS
#define NULL_ALIAS_ncclCommInitAll ALIAS
#define NULL_ALIAS_ncclCommFinalize ALIAS
#define NULL_ALIAS_ncclCommDestroy ALIAS
#define NULL_ALIAS_ncclCommAbort ALIAS
#define NULL_ALIAS_ncclCommSplit ALIAS
#define NULL_ALIAS_ncclCommShrink ALIAS
#define NULL_ALIAS_ncclCommInitRankScalable ALIAS
#define NULL_ALIAS_ncclGetErrorString ALIAS
#define NULL_ALIAS_ncclGetLastError ALIAS
#define NULL_ALIAS_ncclResetDebugInit ALIAS
#define NULL_ALIAS_ncclCommGetAsyncError ALIAS
#define NULL_ALIAS_ncclCommCount ALIAS
#define NULL_ALIAS_ncclCommCuDevice ALIAS
#define NULL_ALIAS_ncclCommUserRank ALIAS
#define NULL_ALIAS_ncclCommRegister ALIAS
#define NULL_ALIAS_ncclCommDeregister ALIAS
#define NULL_ALIAS_ncclCommWindowRegister ALIAS
#define NULL_ALIAS_ncclCommWindowDeregister ALIAS
#define NULL_ALIAS_ncclRedOpCreatePreMulSum ALIAS
#define NULL_ALIAS_ncclRedOpDestroy ALIAS
#define NULL_ALIAS_ncclReduce ALIAS
#define NULL_ALIAS_ncclBcast ALIAS
#define NULL_ALIAS_ncclBroadcast ALIAS
#define NULL_ALIAS_ncclAllReduce ALIAS
#define NULL_ALIAS_ncclReduceScatter ALIAS
#define NULL_ALIAS_ncclAllGather ALIAS
#define NULL_ALIAS_ncclAlltoAll ALIAS
#define NULL_ALIAS_ncclGather ALIAS
#define NULL_ALIAS_ncclScatter ALIAS
#define NULL_ALIAS_ncclSend ALIAS
#define NULL_ALIAS_ncclRecv ALIAS
#define NULL_ALIAS_ncclGroupStart ALIAS
#define NULL_ALIAS_ncclGroupEnd ALIAS
#define NULL_ALIAS_ncclGroupSimulateEnd ALIAS
/* NCCL 2.30's additions: absent from the null library (an older NCCL's case). */
#define NULL_ABSENT(ret, name, params)
#define NULL_ALIAS_ncclCommGetUniqueId NULL_ABSENT
#define NULL_ALIAS_ncclCommGrow NULL_ABSENT
#define NULL_ALIAS_ncclCommSuspend NULL_ABSENT
#define NULL_ALIAS_ncclCommResume NULL_ABSENT
#define NULL_ALIAS_ncclCommMemStats NULL_ABSENT
#define NULL_ALIAS_ncclWinGetUserPtr NULL_ABSENT
#define NULL_ALIAS_ncclPutSignal NULL_ABSENT
#define NULL_ALIAS_ncclSignal NULL_ABSENT
#define NULL_ALIAS_ncclWaitSignal NULL_ABSENT
#define NULL_ALIAS_ncclParamBind NULL_ABSENT
#define NULL_ALIAS_ncclParamGetI8 NULL_ABSENT
#define NULL_ALIAS_ncclParamGetI16 NULL_ABSENT
#define NULL_ALIAS_ncclParamGetI32 NULL_ABSENT
#define NULL_ALIAS_ncclParamGetI64 NULL_ABSENT
#define NULL_ALIAS_ncclParamGetU8 NULL_ABSENT
#define NULL_ALIAS_ncclParamGetU16 NULL_ABSENT
#define NULL_ALIAS_ncclParamGetU32 NULL_ABSENT
#define NULL_ALIAS_ncclParamGetU64 NULL_ABSENT
#define NULL_ALIAS_ncclParamGetStr NULL_ABSENT
#define NULL_ALIAS_ncclParamGet NULL_ABSENT
#define NULL_ALIAS_ncclParamGetParameter NULL_ABSENT
#define NULL_ALIAS_ncclParamGetAllParameterKeys NULL_ABSENT
#define NULL_ALIAS_ncclParamDumpAll NULL_ABSENT
#include "api.def"
