/* dlopen(argv[1], RTLD_LOCAL) a library linked with -lnccl, run its NCCL calls, and report
 * whether the shim recorded them (this process's segment holds one comm with one call): the
 * shim's RTLD_NOLOAD fallback found the locally loaded libnccl. Prints "recorded N" / "noseg". */
#include <dlfcn.h>
#include <stdio.h>

#include "segdump.h"

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen failed: %s\n", dlerror());
        return 2;
    }
    int (*run)(void) = (int (*)(void))dlsym(h, "uses_nccl_run");
    int (*fini)(void) = (int (*)(void))dlsym(h, "uses_nccl_fini");
    int rc = run();
    printf("run rc=%d\n", rc);
    if (rc)
        return 1;
    struct ncg_shm_header *s = segdump_map(getpid());
    if (s)
        printf("recorded %llu\n", (unsigned long long)ncg_shm_comm_at(s, 0)->coll_seq);
    else
        printf("noseg\n");
    return fini();
}
