/* What the application reads after NCCLGUARD_ACTION=fail failed a communicator: the strings of
 * ncclGetLastError and ncclGetErrorString(ncclRemoteError) carry one ncclguard line (verdict,
 * slot, calls, report), so a framework that builds its exception from them names the cause. */
#ifndef NCG_LASTERROR_H
#define NCG_LASTERROR_H

#include "ncclguard/nccl_abi.h"

/* Records the summary line for a communicator handle the fail action just failed. Checker
 * thread, before the comm's failed flag is set; no allocation; at most 16 handles (later ones
 * share the last entry's line). */
void ncg_lasterror_set(ncclComm_t handle, const char *line);

#endif
