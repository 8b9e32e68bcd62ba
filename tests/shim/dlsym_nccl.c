/* NCCL reached only through dlopen(RTLD_LOCAL) + dlsym/dlvsym, as ctypes bindings do (vLLM
 * pynccl): with the shim preloaded the looked-up functions must be ncclguard's wrappers, so the
 * calls are recorded and a divergence is caught. One rank per process (ncg-launch).
 *   dlsym_nccl check              lookups only: prints where each lookup landed, one per line
 *   dlsym_nccl run STEPS [ODD]    STEPS AllReduces; rank 1 issues a Broadcast at step ODD
 * Also: a library with its own ncclAllReduce (argv via $NCG_OWN_LIB) is left alone. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncclguard/nccl_abi.h"

static const char *module(void *p)
{
    Dl_info di;
    if (!p)
        return "NULL";
    if (!dladdr(p, &di) || !di.dli_fname)
        return "?";
    const char *b = strrchr(di.dli_fname, '/');
    return b ? b + 1 : di.dli_fname;
}

static int share_id(int rank, ncclResult_t (*getid)(ncclUniqueId *), ncclUniqueId *id)
{
    const char *f = getenv("NCG_ID_FILE");
    char tmp[4200];
    if (!f)
        return -1;
    if (rank == 0) {
        if (getid(id) != ncclSuccess)
            return -1;
        snprintf(tmp, sizeof tmp, "%s.tmp", f);
        FILE *o = fopen(tmp, "wb");
        if (!o || fwrite(id, sizeof *id, 1, o) != 1 || fclose(o) != 0)
            return -1;
        return rename(tmp, f);
    }
    for (int i = 0; i < 6000; i++) {
        FILE *in = fopen(f, "rb");
        if (in) {
            size_t n = fread(id, sizeof *id, 1, in);
            fclose(in);
            if (n == 1)
                return 0;
        }
        usleep(10000);
    }
    return -1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "check";
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 2;
    }
    if (!strcmp(mode, "check")) {
        printf("handle ncclAllReduce %s\n", module(dlsym(h, "ncclAllReduce")));
        printf("handle pncclAllReduce %s\n", module(dlsym(h, "pncclAllReduce")));
        printf("handle ncclGetVersion %s\n", module(dlsym(h, "ncclGetVersion")));
        printf("handle ncclDevCommCreate %s\n", module(dlsym(h, "ncclDevCommCreate")));
        printf("handle nosuch %s\n", module(dlsym(h, "ncclNoSuchFunction")));
        printf("default ncclAllReduce %s\n", module(dlsym(RTLD_DEFAULT, "ncclAllReduce")));
        printf("next ncclAllReduce %s\n", module(dlsym(RTLD_NEXT, "ncclAllReduce")));
        printf("next malloc %s\n", module(dlsym(RTLD_NEXT, "malloc")));
        printf("default printf %s\n", module(dlsym(RTLD_DEFAULT, "printf")));
        printf("vsym dlsym %s\n", module(dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.34")));
        printf("vsym ncclAllReduce %s\n", module(dlvsym(h, "ncclAllReduce", "NCCL_NONE")));
        printf("vsym memcpy %s\n", module(dlvsym(RTLD_DEFAULT, "memcpy", "GLIBC_2.14")));
        const char *own = getenv("NCG_OWN_LIB");
        if (own) {
            void *o = dlopen(own, RTLD_NOW | RTLD_LOCAL);
            printf("own ncclAllReduce %s\n", o ? module(dlsym(o, "ncclAllReduce")) : dlerror());
        }
        return 0;
    }
    int steps = argc > 2 ? atoi(argv[2]) : 10, odd = argc > 3 ? atoi(argv[3]) : -1;
    int rank = getenv("RANK") ? atoi(getenv("RANK")) : 0;
    int world = getenv("WORLD_SIZE") ? atoi(getenv("WORLD_SIZE")) : 1;
    ncclResult_t (*getid)(ncclUniqueId *) =
        (ncclResult_t(*)(ncclUniqueId *))dlsym(h, "ncclGetUniqueId");
    ncclResult_t (*init)(ncclComm_t *, int, ncclUniqueId, int) =
        (ncclResult_t(*)(ncclComm_t *, int, ncclUniqueId, int))dlsym(h, "ncclCommInitRank");
    ncclResult_t (*allreduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                              cudaStream_t) =
        (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                         cudaStream_t))dlsym(h, "ncclAllReduce");
    ncclResult_t (*bcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                          cudaStream_t) =
        (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                         cudaStream_t))dlvsym(h, "ncclBroadcast", "NCCL_NONE");
    if (!bcast)
        bcast = (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                                 cudaStream_t))dlsym(h, "ncclBroadcast");
    ncclResult_t (*destroy)(ncclComm_t) = (ncclResult_t(*)(ncclComm_t))dlsym(h, "ncclCommDestroy");
    ncclUniqueId id;
    ncclComm_t comm;
    if (!getid || !init || !allreduce || !bcast || !destroy || share_id(rank, getid, &id) != 0 ||
        init(&comm, world, id, rank) != ncclSuccess) {
        printf("rank %d: setup failed\n", rank);
        return 1;
    }
    float buf[64] = {0};
    for (int s = 0; s < steps; s++) {
        ncclResult_t r = rank == 1 && s == odd
                             ? bcast(buf, buf, 64, ncclFloat32, 0, comm, NULL)
                             : allreduce(buf, buf, 64, ncclFloat32, ncclSum, comm, NULL);
        if (r != ncclSuccess) {
            printf("rank %d: step %d failed (%d)\n", rank, s, r);
            return 1;
        }
    }
    destroy(comm);
    printf("rank %d: done %d steps\n", rank, steps);
    return 0;
}
