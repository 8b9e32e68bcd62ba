/* The pure part of libver.h: decoding ncclGetVersion's code, which exported names are NCCL API
 * functions this build does not know (a set difference), and which process says so. No I/O, no
 * allocation: unit-tested by tests/shim/libver_test.c, linked into the shim's pure archive. */
#define _GNU_SOURCE
#include "libver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const ncg_libver_left[NCG_LIBVER_NLEFT] = {
    "ncclDevCommCreate",
    "ncclDevCommDestroy",
    "ncclTeamWorld",
    "ncclTeamLsa",
    "ncclTeamRail",
    "ncclTeamRankToWorld",
    "ncclTeamRankToLsa",
    "ncclLsaBarrierCreateRequirement",
    "ncclGinBarrierCreateRequirement",
    "ncclLLA2ACalcSlots",
    "ncclLLA2ACreateRequirement",
};

int ncg_nccl_version_decode(int code, struct ncg_nccl_version *v)
{
    if (code <= 0)
        return -1;
    int big = code >= 10000; /* 2.9.0 is 20900; 2.8.99 was 2899 */
    v->major = big ? code / 10000 : code / 1000;
    v->minor = big ? code / 100 % 100 : code / 100 % 10;
    v->patch = code % 100;
    return 0;
}

static int ncg_in(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, list[i]))
            return 1;
    return 0;
}

static int ncg_twin(const char *name, const char *const *have, size_t nhave)
{
    for (size_t i = 0; i < nhave; i++)
        if (have[i][0] == 'p' && !strcmp(have[i] + 1, name))
            return 1;
    return 0;
}

static int ncg_cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t ncg_libver_unknown(const char *const *have, size_t nhave, const char *const *known,
                          size_t nknown, const char **out)
{
    size_t n = 0;
    for (size_t i = 0; i < nhave; i++)
        if (!strncmp(have[i], "nccl", 4) && ncg_twin(have[i], have, nhave) &&
            !ncg_in(have[i], known, nknown) && !ncg_in(have[i], out, n))
            out[n++] = have[i];
    qsort(out, n, sizeof *out, ncg_cmp_name);
    return n;
}

int ncg_libver_speaks(int32_t global_rank, int32_t first_comm_rank, int verbose)
{
    if (verbose >= 1)
        return 1;
    if (global_rank >= 0)
        return global_rank == 0;
    return first_comm_rank <= 0;
}

void ncg_libver_join(const char *const *names, size_t n, char *buf, size_t cap)
{
    size_t len = 0;
    if (!cap)
        return;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= cap - len) { /* cut: end on "..." after the last whole name */
            if (cap >= 4)
                memcpy(buf + (len + 4 <= cap ? len : cap - 4), "...", 4);
            return;
        }
        len += (size_t)w;
    }
}
