/* Every exported nccl* function, generated from api.def: forward to the real pnccl* function,
 * numbering and recording the application's collective and p2p calls on the way (depth 0
 * only). Also the group hooks (per-thread nesting). No hand-written wrapper per collective. */
#include <stddef.h>

#include "ncclguard/nccl_abi.h"
#include "completion.h"
#include "shim.h"

#define NCG_EXPORT __attribute__((visibility("default")))

/* fp tuples of api.def, unpacked. */
#define NCG_FP_COLL(func, count, dtype, op, root, comm) func, count, dtype, op, root, comm
#define NCG_FP_P2P(func, count, dtype, peer, comm) func, count, dtype, peer, comm

/* The wrapper's `real`: the real function, or the wrapper returns `fail` when the loaded NCCL
 * lacks it. */
#define NCG_REAL_OR(name, fail)                                                                    \
    ncg_fn_##name real = NCG_REAL(name);                                                           \
    if (__builtin_expect(!real, 0))                                                                \
        return fail;

/* Collective or p2p: `record` numbers the call (collective ring: slot, fingerprint, digest;
 * p2p ring: pair sequence) before forwarding. It is expanded inside the wrapper, so
 * __builtin_return_address(0) there is the application's call site. */
#define NCG_WRAP_REC(ret, name, params, args, fail, record)                                        \
    NCG_EXPORT ret name params                                                                     \
    {                                                                                              \
        NCG_REAL_OR(name, fail)                                                                    \
        if (ncg_tls.depth != 0 || __atomic_load_n(&ncg_state, __ATOMIC_RELAXED) != NCG_ST_ACTIVE)  \
            return real args;                                                                      \
        if (record < 0)                                                                            \
            return ncclRemoteError;                                                                \
        ncg_tls.depth++;                                                                           \
        ret r_ = real args;                                                                        \
        ncg_tls.depth--;                                                                           \
        ncg_done_after_call((void *)stream); /* every recorded call has a stream parameter */      \
        return r_;                                                                                 \
    }
#define NCG_WRAP_REC_COLL(ret, name, params, args, fail, fp)                                       \
    NCG_WRAP_REC(ret, name, params, args, fail,                                                    \
                 ncg_record_coll(__builtin_return_address(0), NCG_FP_COLL fp, (void *)stream))
#define NCG_WRAP_REC_P2P(ret, name, params, args, fail, fp)                                        \
    NCG_WRAP_REC(ret, name, params, args, fail,                                                    \
                 ncg_record_p2p(__builtin_return_address(0), NCG_FP_P2P fp, (void *)stream))

/* Lifecycle, identity, groups: the hand-written hook runs for the application's calls. */
#define NCG_WRAP_HOOK(ret, name, params, args, fail, fp)                                           \
    NCG_EXPORT ret name params                                                                     \
    {                                                                                              \
        NCG_REAL_OR(name, fail)                                                                    \
        if (ncg_tls.depth != 0 || ncg_state_get() == NCG_ST_DISABLED)                              \
            return real args;                                                                      \
        ncg_tls.pc = __builtin_return_address(0);                                                  \
        ncg_tls.depth++;                                                                           \
        ret r_ = ncg_hook_##name args;                                                             \
        ncg_tls.depth--;                                                                           \
        return r_;                                                                                 \
    }

#define NCG_WRAP_PASS(ret, name, params, args, fail, fp)                                           \
    NCG_EXPORT ret name params                                                                     \
    {                                                                                              \
        NCG_REAL_OR(name, fail)                                                                    \
        return real args;                                                                          \
    }

#define NCG_WRAP_PASSVOID(ret, name, params, args, fail, fp)                                       \
    NCG_EXPORT ret name params                                                                     \
    {                                                                                              \
        ncg_fn_##name real = NCG_REAL(name);                                                       \
        if (real)                                                                                  \
            real args;                                                                             \
    }

#define NCG_API(ret, name, params, args, cls, wrap, fail, fp)                                      \
    NCG_WRAP_##wrap(ret, name, params, args, fail, fp)
#include "api.def"
#undef NCG_API

/* ---- groups: only the application's outermost End launches; nesting is per thread ---- */

ncclResult_t ncg_hook_ncclGroupStart(void)
{
    ncclResult_t r = NCG_REAL(ncclGroupStart)();
    if (r == ncclSuccess)
        ncg_tls.group++;
    return r;
}

/* NCCL leaves the group level on End whatever the outcome (errors included). */
ncclResult_t ncg_hook_ncclGroupEnd(void)
{
    if (ncg_tls.group == 1)
        ncg_group_launch(); /* the group's calls are launched: peers may now wait on them */
    ncclResult_t r = NCG_REAL(ncclGroupEnd)();
    if (ncg_tls.group > 0 && --ncg_tls.group == 0)
        ncg_group_done(); /* returned, whatever the outcome: the calls are no longer pending */
    return r;
}

/* Launches nothing: the group's calls never run, so they are not pending either. */
ncclResult_t ncg_hook_ncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
    ncclResult_t r = NCG_REAL(ncclGroupSimulateEnd)(simInfo);
    if (ncg_tls.group > 0 && --ncg_tls.group == 0) {
        ncg_group_launch();
        ncg_group_done();
    }
    return r;
}
