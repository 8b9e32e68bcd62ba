/* Per-communicator state kept by the shim (process-private), one per ncclComm_t the process
 * created. The fields below are the contract the checker reads; the shim may add more. */
#ifndef NCG_COMM_H
#define NCG_COMM_H

#include <stdint.h>
#include "ncclguard/nccl_abi.h"
#include "ncclguard/shm.h"

struct ncg_comm {
    ncclComm_t handle;          /* the real communicator */
    uint64_t id;                /* identity, equal on every member */
    uint64_t parent_id;         /* 0 for root comms */
    int32_t rank, nranks;
    uint32_t origin;            /* enum ncg_comm_origin */
    ncclUniqueId root_uid;      /* the id of the root comm this one descends from (for split and
                                   shrink children: the ancestor's), with ncclguard's tail */
    struct ncg_shm_comm *shm;   /* its slot in the segment, or NULL when not recorded */
    volatile int failed;        /* set by the checker (soft action): calls on it return an error */
};

#endif
