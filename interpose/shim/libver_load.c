/* The first communicator's look at the loaded NCCL (libver.h): its ncclGetVersion, and the
 * NCCL functions its dynamic symbol table exports that this build does not know, computed at run
 * time against api.def's names (a newer NCCL's additions pass through unchecked: said once). */
#define _GNU_SOURCE
#include "libver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "dlsym.h"
#include "log.h"
#include "resolve.h"

/* The library's exported function names, gathered by ncg_dyn_functions. */
struct ncg_names {
    const char **v;
    size_t n, cap;
};

static void ncg_names_add(const char *name, void *arg)
{
    struct ncg_names *l = arg;
    if (strncmp(name, "nccl", 4) && strncmp(name, "pnccl", 5))
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 128;
        const char **p = realloc(l->v, cap * sizeof *p);
        if (!p)
            return;
        l->v = p;
        l->cap = cap;
    }
    l->v[l->n++] = name;
}

void ncg_libver_check(int32_t comm_rank)
{
    static int done;
    if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
        return;
    ncg_fn_ncclGetVersion getv = NCG_REAL(ncclGetVersion);
    if (!getv)
        return; /* said once by the resolver */
    int code = 0;
    struct ncg_nccl_version v = {0, 0, 0};
    if (getv(&code) != ncclSuccess || ncg_nccl_version_decode(code, &v) != 0)
        code = 0;
    struct ncg_names have = {NULL, 0, 0};
    const char *path = "";
    if (ncg_dyn_functions((const void *)getv, ncg_names_add, &have, &path) < 0)
        return;
    const char *known[NCG_API_COUNT + NCG_LIBVER_NLEFT];
    memcpy(known, ncg_api_names, sizeof ncg_api_names);
    memcpy(known + NCG_API_COUNT, ncg_libver_left, sizeof ncg_libver_left);
    const char **unknown = have.n ? malloc(have.n * sizeof *unknown) : NULL;
    size_t nu = unknown ? ncg_libver_unknown(have.v, have.n, known,
                                             NCG_API_COUNT + NCG_LIBVER_NLEFT, unknown)
                        : 0;
    char ver[48];
    if (code)
        snprintf(ver, sizeof ver, "NCCL %d.%d.%d", v.major, v.minor, v.patch);
    else
        snprintf(ver, sizeof ver, "NCCL (version unknown)");
    ncg_debug(1, "%s loaded from %s", ver, path);
    struct ncg_launch_ranks lr;
    ncg_launch_ranks_parse(&lr, ncg_env_process, NULL);
    if (nu && ncg_libver_speaks(lr.global, comm_rank, ncg_cfg.verbose)) {
        char list[640];
        ncg_libver_join(unknown, nu, list, sizeof list);
        ncg_log("%s (%s) exports %zu function%s this ncclguard (written for NCCL %d.%d) does not "
                "know; %s through unchecked: %s",
                ver, path, nu, nu == 1 ? "" : "s", NCG_NCCL_ABI_MAJOR, NCG_NCCL_ABI_MINOR,
                nu == 1 ? "it passes" : "they pass", list);
    }
    free(unknown);
    free(have.v);
}
