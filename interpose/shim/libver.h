/* Which NCCL release the process loaded, and the NCCL functions it exports that this build of
 * ncclguard does not know (they pass through unchecked): read once, at the first communicator.
 * The pure part (decoding ncclGetVersion's code, the set difference of two name lists, who
 * speaks: libver.c, unit-tested by tests/shim/libver_test.c) is apart from the hook that reads
 * the library (libver_load.c). */
#ifndef NCG_LIBVER_H
#define NCG_LIBVER_H

#include <stddef.h>
#include <stdint.h>

/* The host functions of nccl_device.h (NCCL 2.28) that the shim leaves to libnccl on purpose
 * (docs/shim.md): known to this build, not wrapped, so never reported as unknown. */
#define NCG_LIBVER_NLEFT 11
extern const char *const ncg_libver_left[NCG_LIBVER_NLEFT];

struct ncg_nccl_version {
    int major, minor, patch;
};

/* Decodes ncclGetVersion's code: X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z from 2.9
 * (NCCL_VERSION in nccl.h). Returns 0, or -1 for a code no release gives (<= 0). Pure. */
int ncg_nccl_version_decode(int code, struct ncg_nccl_version *v);

/* The NCCL API functions among a library's exported function names (have, nhave) that are not
 * in known (nknown): a name counts as API when it starts with "nccl" and its PMPI twin
 * "p<name>" is exported too (NCCL's NCCL_API macro defines both; internal helpers have none).
 * Writes them to out (room for nhave), sorted by name and without duplicates, and returns how
 * many. Pure: no allocation, any thread. */
size_t ncg_libver_unknown(const char *const *have, size_t nhave, const char *const *known,
                          size_t nknown, const char **out);

/* Whether this process prints the unknown-functions line: every process at NCCLGUARD_VERBOSE
 * >= 1; otherwise the launcher's global rank 0, or, when the launcher gives none (global < 0),
 * the process whose first communicator has rank 0 (or a rank not known yet, < 0). Pure. */
int ncg_libver_speaks(int32_t global_rank, int32_t first_comm_rank, int verbose);

/* Writes "a, b, c" (names[0..n)) into buf (cap bytes, always terminated; "..." when cut).
 * Pure. */
void ncg_libver_join(const char *const *names, size_t n, char *buf, size_t cap);

/* The first communicator's hook (comm.c, ncg_comm_add): once per process, reads the loaded
 * library's ncclGetVersion and dynamic symbol table, and prints one "ncclguard:" line naming
 * the NCCL functions it exports that api.def does not wrap and ncclguard does not leave to
 * NCCL on purpose (ncg_libver_speaks decides where). comm_rank: the first comm's rank, or -1.
 * Application thread, no lock held; allocates and reads the loader's tables once; later calls
 * return at once. */
void ncg_libver_check(int32_t comm_rank);

#endif
