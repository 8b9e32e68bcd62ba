/* fakenccl device API (NCCL 2.28, nccl_device/ headers): the host-side entry points exist, as in
 * the genuine library, so programs that link them (nccl-tests) load; what needs a GPU (device
 * communicators, barrier and all-to-all resources) returns ncclInvalidUsage with a last-error
 * text, and the team queries answer for a single host (LSA team = world, one rail). */
#include <stdint.h>

#include "fn_internal.h"

/* nccl_device/core.h's types (C++ headers, so spelled here): a team is plain data, the rest
 * is only passed through pointers. */
typedef struct {
    int nRanks, rank, stride;
} fn_team_t;
struct ncclDevComm;
struct ncclDevCommRequirements;
struct ncclDevResourceRequirements;
struct ncclLsaBarrierHandle;
struct ncclGinBarrierHandle;
struct ncclLLA2AHandle;

ncclResult_t pncclDevCommCreate(ncclComm_t comm, const struct ncclDevCommRequirements *reqs,
                                struct ncclDevComm *outDevComm);
ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const struct ncclDevComm *devComm);
ncclResult_t pncclLsaBarrierCreateRequirement(fn_team_t team, int nBarriers,
                                              struct ncclLsaBarrierHandle *outHandle,
                                              struct ncclDevResourceRequirements *outReq);
ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, fn_team_t team, int nBarriers,
                                              struct ncclGinBarrierHandle *outHandle,
                                              struct ncclDevResourceRequirements *outReq);
int pncclLLA2ACalcSlots(int maxElts, int maxEltSize);
ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, struct ncclLLA2AHandle *outHandle,
                                         struct ncclDevResourceRequirements *outReq);
fn_team_t pncclTeamWorld(ncclComm_t comm);
fn_team_t pncclTeamLsa(ncclComm_t comm);
fn_team_t pncclTeamRail(ncclComm_t comm);
int pncclTeamRankToWorld(ncclComm_t comm, fn_team_t team, int rank);
int pncclTeamRankToLsa(ncclComm_t comm, fn_team_t team, int rank);

static ncclResult_t no_gpu(const char *call)
{
    fn_set_last_error("%s: the device API needs a GPU; the CPU NCCL has none", call);
    return ncclInvalidUsage;
}

FN_API ncclResult_t pncclDevCommCreate(ncclComm_t comm, const struct ncclDevCommRequirements *reqs,
                                       struct ncclDevComm *outDevComm)
{
    (void)comm;
    (void)reqs;
    (void)outDevComm; /* its layout is the device's: never written */
    return no_gpu("ncclDevCommCreate");
}
FN_ALIAS(ncclDevCommCreate);

FN_API ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const struct ncclDevComm *devComm)
{
    (void)comm;
    (void)devComm;
    return no_gpu("ncclDevCommDestroy");
}
FN_ALIAS(ncclDevCommDestroy);

FN_API ncclResult_t pncclLsaBarrierCreateRequirement(fn_team_t team, int nBarriers,
                                                     struct ncclLsaBarrierHandle *outHandle,
                                                     struct ncclDevResourceRequirements *outReq)
{
    (void)team;
    (void)nBarriers;
    (void)outHandle;
    (void)outReq;
    return no_gpu("ncclLsaBarrierCreateRequirement");
}
FN_ALIAS(ncclLsaBarrierCreateRequirement);

FN_API ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, fn_team_t team, int nBarriers,
                                                     struct ncclGinBarrierHandle *outHandle,
                                                     struct ncclDevResourceRequirements *outReq)
{
    (void)comm;
    (void)team;
    (void)nBarriers;
    (void)outHandle;
    (void)outReq;
    return no_gpu("ncclGinBarrierCreateRequirement");
}
FN_ALIAS(ncclGinBarrierCreateRequirement);

/* No all-to-all slots without a device. */
FN_API int pncclLLA2ACalcSlots(int maxElts, int maxEltSize)
{
    (void)maxElts;
    (void)maxEltSize;
    return 0;
}
FN_ALIAS(ncclLLA2ACalcSlots);

FN_API ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots,
                                                struct ncclLLA2AHandle *outHandle,
                                                struct ncclDevResourceRequirements *outReq)
{
    (void)nBlocks;
    (void)nSlots;
    (void)outHandle;
    (void)outReq;
    return no_gpu("ncclLLA2ACreateRequirement");
}
FN_ALIAS(ncclLLA2ACreateRequirement);

/* Teams as NCCL defines them, for one host: world and LSA (load/store accessible: every rank
 * here) are all ranks, stride 1; the rail team (the same local rank on every node) is this rank
 * alone. An invalid communicator gives the empty team. */
static int comm_valid(ncclComm_t comm)
{
    return comm && comm->magic == FN_COMM_MAGIC && !comm->init_pending;
}

FN_API fn_team_t pncclTeamWorld(ncclComm_t comm)
{
    return comm_valid(comm) ? (fn_team_t){comm->nranks, comm->rank, 1} : (fn_team_t){0, 0, 0};
}
FN_ALIAS(ncclTeamWorld);

FN_API fn_team_t pncclTeamLsa(ncclComm_t comm)
{
    return pncclTeamWorld(comm);
}
FN_ALIAS(ncclTeamLsa);

FN_API fn_team_t pncclTeamRail(ncclComm_t comm)
{
    return comm_valid(comm) ? (fn_team_t){1, 0, comm->nranks} : (fn_team_t){0, 0, 0};
}
FN_ALIAS(ncclTeamRail);

/* A team's rank r is world rank (mine) + (r - my team rank) * stride; -1 outside the team. */
FN_API int pncclTeamRankToWorld(ncclComm_t comm, fn_team_t team, int rank)
{
    if (!comm_valid(comm) || rank < 0 || rank >= team.nRanks)
        return -1;
    return comm->rank + (rank - team.rank) * team.stride;
}
FN_ALIAS(ncclTeamRankToWorld);

FN_API int pncclTeamRankToLsa(ncclComm_t comm, fn_team_t team, int rank)
{
    return pncclTeamRankToWorld(comm, team, rank); /* the LSA team is the world */
}
FN_ALIAS(ncclTeamRankToLsa);
