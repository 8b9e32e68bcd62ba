/* Calls NCCL through the global symbol scope, as an application bound to libnccl does, with
 * or without the shim in front. `realnccl lib` dlopen()s libnccl.so.2 RTLD_GLOBAL (the genuine
 * one from LD_LIBRARY_PATH, or any), prints the version, ncclGetUniqueId's result, and the
 * result of a 1-rank ncclCommInitRank (without a usable GPU NCCL fails it with its own code).
 * `realnccl none` loads no libnccl: the shim's ncclGetVersion has nothing to forward to. `realnccl
 * version` only asks the version and reports whether this process got a segment (it must not: no
 * communicator). `realnccl revoke` calls ncclCommRevoke twice (a library without it: the shim
 * returns ncclInvalidUsage, warns once). Each line is compared between runs by the t_*.sh scripts.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncclguard/nccl_abi.h"

typedef ncclResult_t (*ver_fn)(int *);
typedef ncclResult_t (*uid_fn)(ncclUniqueId *);
typedef ncclResult_t (*init_fn)(ncclComm_t *, int, ncclUniqueId, int);

static const char *owner(void *fn)
{
    Dl_info di;
    if (!fn || !dladdr(fn, &di) || !di.dli_fname)
        return "?";
    return basename((char *)di.dli_fname);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "none";
    int load = strcmp(mode, "none") != 0;
    if (load && !dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL)) {
        printf("nolib %s\n", dlerror());
        return 3;
    }
    ver_fn ver = (ver_fn)dlsym(RTLD_DEFAULT, "ncclGetVersion");
    printf("ncclGetVersion from %s\n", owner((void *)ver));
    if (!ver) {
        printf("absent\n");
        return 0;
    }
    int v = -1;
    ncclResult_t r = ver(&v);
    printf("version rc=%d v=%d\n", r, v);
    if (!strcmp(mode, "version")) {
        char path[128];
        struct stat st;
        snprintf(path, sizeof path, "/dev/shm/ncclguard.%u.%d", (unsigned)getuid(), (int)getpid());
        printf("segment=%d\n", stat(path, &st) == 0);
        return 0;
    }
    if (!strcmp(mode, "revoke")) {
        typedef ncclResult_t (*revoke_fn)(ncclComm_t, int);
        revoke_fn rv = (revoke_fn)dlsym(RTLD_DEFAULT, "ncclCommRevoke");
        if (!rv) {
            printf("revoke absent\n");
            return 0;
        }
        ncclResult_t r1 = rv(NULL, 0), r2 = rv(NULL, 0);
        printf("revoke rc=%d rc=%d\n", r1, r2);
        return 0;
    }
    if (!load)
        return 0;
    uid_fn uid = (uid_fn)dlsym(RTLD_DEFAULT, "ncclGetUniqueId");
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    r = uid(&id);
    int nz = 0;
    for (int i = 0; i < NCG_NCCL_ID_USED_BYTES; i++)
        nz += id.internal[i] != 0;
    printf("uniqueid rc=%d nonzero=%d\n", r, nz > 0);
    /* What lies past the bytes NCCL uses: zero from NCCL itself, the checker's tail
     * ("NCGD", version, port, token) when the shim stamped the id. */
    int tailnz = 0;
    for (int i = NCG_NCCL_ID_USED_BYTES; i < NCCL_UNIQUE_ID_BYTES; i++)
        tailnz += id.internal[i] != 0;
    printf("idtail nonzero=%d tag=%d\n", tailnz,
           memcmp(id.internal + NCG_NCCL_ID_USED_BYTES, "NCGD", 4) == 0);
    init_fn init = (init_fn)dlsym(RTLD_DEFAULT, "ncclCommInitRank");
    ncclComm_t c = NULL;
    r = init(&c, 1, id, 0); /* one rank: fails without a usable GPU, never waits for peers */
    printf("initrank rc=%d\n", r);
    return 0;
}
