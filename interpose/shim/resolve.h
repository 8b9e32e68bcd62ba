/* The real NCCL functions: one pointer per api.def entry, resolved lazily and thread-safely on
 * first use (dlsym(RTLD_NEXT, "pncclX"), then the already-loaded libnccl.so.2 via RTLD_NOLOAD for
 * a libnccl dlopen()ed RTLD_LOCAL). A function the library lacks resolves to NULL, once. */
#ifndef NCG_RESOLVE_H
#define NCG_RESOLVE_H

#include <stdint.h>

#include "ncclguard/nccl_abi.h"
#include "ncclguard/shm.h"

enum ncg_api_idx {
#define NCG_API(ret, name, params, args, cls, wrap, fail, fp) NCG_IDX_##name,
#include "api.def"
#undef NCG_API
    NCG_API_COUNT
};

#define NCG_API(ret, name, params, args, cls, wrap, fail, fp) typedef ret(*ncg_fn_##name) params;
#include "api.def"
#undef NCG_API

#define NCG_RESOLVE_MISSING ((void *)1) /* resolved, and the real library lacks it */

/* ncg_real[i]: NULL = not resolved yet, NCG_RESOLVE_MISSING, or the real function. */
extern void *ncg_real[NCG_API_COUNT];
/* The API names, in api.def order. */
extern const char *const ncg_api_names[NCG_API_COUNT];

/* Resolve entry idx (racing callers resolve the same value; benign). Returns NULL when missing,
 * after one "ncclguard:" warning naming it. Any thread; may take the dynamic linker's lock. */
void *ncg_resolve_slow(int idx);

/* The real function for idx, or NULL when missing. Any thread; lock-free once resolved. */
static inline void *ncg_real_get(int idx)
{
    void *p = __atomic_load_n(&ncg_real[idx], __ATOMIC_ACQUIRE);
    if (__builtin_expect((uintptr_t)p <= (uintptr_t)NCG_RESOLVE_MISSING, 0))
        p = ncg_resolve_slow(idx);
    return p;
}

#define NCG_REAL(name) ((ncg_fn_##name)ncg_real_get(NCG_IDX_##name))

#endif
