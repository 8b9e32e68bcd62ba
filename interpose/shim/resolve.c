/* Lazy resolution of the real pnccl* functions (see resolve.h). Looked up by the strong pnccl
 * alias so that our own nccl* definitions are never found; the plain nccl* name in libnccl's
 * own scope is the last resort for builds without the p-aliases. */
#define _GNU_SOURCE
#include "resolve.h"

#include <dlfcn.h>
#include <stdio.h>

#include "log.h"

void *ncg_real[NCG_API_COUNT];
static int ncg_warned[NCG_API_COUNT];

const char *const ncg_api_names[NCG_API_COUNT] = {
#define NCG_API(ret, name, params, args, cls, wrap, fail, fp) #name,
#include "api.def"
#undef NCG_API
};

/* A libnccl loaded RTLD_LOCAL is invisible to RTLD_NEXT; RTLD_NOLOAD finds it without loading
 * anything new. The handle is kept (never dlclose'd): libnccl stays loaded while we call it. */
static void *ncg_local_handle(void)
{
    static void *h;
    void *cur = __atomic_load_n(&h, __ATOMIC_ACQUIRE);
    if (cur)
        return cur;
    cur = dlopen("libnccl.so.2", RTLD_NOLOAD | RTLD_LAZY);
    if (cur) {
        void *expected = NULL;
        if (!__atomic_compare_exchange_n(&h, &expected, cur, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
            dlclose(cur); /* another thread won; drop our extra reference */
            cur = expected;
        }
    }
    return cur;
}

void *ncg_resolve_slow(int idx)
{
    void *p = __atomic_load_n(&ncg_real[idx], __ATOMIC_ACQUIRE);
    if (p == NCG_RESOLVE_MISSING)
        return NULL;
    if (p)
        return p;
    char sym[80];
    snprintf(sym, sizeof sym, "p%s", ncg_api_names[idx]);
    p = dlsym(RTLD_NEXT, sym);
    if (!p) {
        void *h = ncg_local_handle();
        if (h) {
            p = dlsym(h, sym);
            if (!p)
                p = dlsym(h, ncg_api_names[idx]); /* libnccl's own scope: never our definition */
        }
    }
    __atomic_store_n(&ncg_real[idx], p ? p : NCG_RESOLVE_MISSING, __ATOMIC_RELEASE);
    if (!p && !__atomic_exchange_n(&ncg_warned[idx], 1, __ATOMIC_RELAXED))
        ncg_log("%s not found in the loaded NCCL library (or no libnccl.so.2 is loaded); %s "
                "returns an error",
                sym, ncg_api_names[idx]);
    return p;
}
