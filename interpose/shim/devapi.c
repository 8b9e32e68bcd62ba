/* The device API's entry point ncclDevCommCreate (nccl_device/core.h): a communicator used from
 * kernels moves data that no host call announces, so ncclguard cannot see it. The wrapper says
 * so once per process, naming the communicator, and forwards unchanged. Not in api.def: the
 * device API's types are not nccl.h's (the ABI tests read api.def against nccl.h). */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "comm.h"
#include "log.h"
#include "shim.h"

struct ncclDevCommRequirements;
struct ncclDevComm;
typedef ncclResult_t (*devcomm_create_fn)(ncclComm_t, const struct ncclDevCommRequirements *,
                                          struct ncclDevComm *);
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const struct ncclDevCommRequirements *reqs,
                               struct ncclDevComm *outDevComm);

/* The real pncclDevCommCreate, as resolve.c finds api.def's; NULL when missing. Any thread. */
static devcomm_create_fn real_create(void)
{
    static devcomm_create_fn fn;
    static int done;
    if (__atomic_load_n(&done, __ATOMIC_ACQUIRE))
        return fn;
    void *p = dlsym(RTLD_NEXT, "pncclDevCommCreate");
    if (!p) {
        void *h = dlopen("libnccl.so.2", RTLD_NOLOAD | RTLD_LAZY);
        if (h)
            p = dlsym(h, "pncclDevCommCreate"); /* the handle is kept: libnccl stays loaded */
    }
    fn = (devcomm_create_fn)p;
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    return fn;
}

__attribute__((visibility("default"))) ncclResult_t
ncclDevCommCreate(ncclComm_t comm, const struct ncclDevCommRequirements *reqs,
                  struct ncclDevComm *outDevComm)
{
    devcomm_create_fn real = real_create();
    if (!real) {
        NCG_LOG_ONCE("pncclDevCommCreate not found in the loaded NCCL library; ncclDevCommCreate "
                     "returns an error");
        return ncclInvalidUsage;
    }
    if (ncg_tls.depth == 0 && ncg_state_get() == NCG_ST_ACTIVE) {
        static int said;
        struct ncg_comm *c = ncg_comm_find(comm);
        if (c && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
            ncg_log("ncclDevCommCreate on communicator %016llx (rank %d of %d): traffic its "
                    "kernels initiate through the device API is not seen by ncclguard; only "
                    "its host calls are checked",
                    (unsigned long long)c->id, c->rank, c->nranks);
    }
    return real(comm, reqs, outDevComm);
}
