/* Process-wide state of the shim: per-thread call depth and group nesting, the lifecycle state
 * (uninitialised -> configured -> active at the first communicator), and the one lock taken
 * off the hot path (comm creation/removal, activation, fork). */
#ifndef NCG_SHIM_H
#define NCG_SHIM_H

#include <pthread.h>
#include <stdint.h>

enum ncg_state {
    NCG_ST_UNINIT = 0,   /* config not read yet */
    NCG_ST_DISABLED = 1, /* NCCLGUARD=0: every wrapper forwards, nothing else ever happens */
    NCG_ST_DORMANT = 2,  /* enabled, no communicator yet: no segment, thread or output */
    NCG_ST_ACTIVE = 3,   /* a communicator exists: calls are recorded */
};

struct ncg_cev;
struct ncg_tls {
    int depth;    /* >0 while inside a real NCCL call: NCCL's calls into its own API pass through */
    int group;    /* ncclGroupStart nesting of the application on this thread */
    uint32_t tid; /* cached gettid(), 0 = not yet */
    void *pc;     /* the application's call site of the lifecycle hook now running */
    /* completion of the call being forwarded (completion.h): set by the record, used after it */
    uint64_t *done_at;        /* the segment counter to advance, or NULL */
    uint64_t done_val;        /* its new value (slot + 1, or p2p index + 1) */
    struct ncg_cev *done_cev; /* the comm's event tracker (asynchronous NCCL only) */
    uint8_t rec_flags;        /* NCG_REC_* of the calls a graph replay records (graph.c), else 0 */
    uint8_t last_sidx;        /* streamtab.h: index of last_stream (0: not looked up yet) */
    uint32_t order;           /* streamtab.h: launch order of this thread's latest call */
    void *last_stream;        /* the stream of this thread's latest recorded call */
    struct ncg_comm *slow_c;  /* the comm of the call in flight when its slot is sampled (slow.h) */
};

extern __thread struct ncg_tls ncg_tls __attribute__((tls_model("initial-exec")));
extern int ncg_state;
extern pthread_mutex_t ncg_lock; /* creation/removal/activation; never on the hot path */

/* Read the configuration once (racing threads wait for the first). Returns the new state.
 * Any thread; calls getenv, no output (warnings are kept until activation). */
int ncg_init_slow(void);

/* The lifecycle state, reading the configuration on first use. Any thread; lock-free after. */
static inline int ncg_state_get(void)
{
    int s = __atomic_load_n(&ncg_state, __ATOMIC_ACQUIRE);
    return __builtin_expect(s == NCG_ST_UNINIT, 0) ? ncg_init_slow() : s;
}

/* First communicator: print kept config warnings, create the segment, register atfork/atexit.
 * Caller holds ncg_lock. Returns 0, or -errno when the segment could not be mapped at all. */
int ncg_activate(void);

/* The calling thread's id, cached in TLS. Any thread; one syscall on a thread's first call
 * (ncg_tid_slow fills the cache). */
uint32_t ncg_tid_slow(void);
static inline uint32_t ncg_tid(void)
{
    uint32_t t = ncg_tls.tid;
    return __builtin_expect(t != 0, 1) ? t : ncg_tid_slow();
}

#endif

/* The hand-written halves of the wrappers whose api.def entry says HOOK: same parameters as
 * the API function, run by the generated wrapper at depth 1 for the application's calls only
 * (comm.c: lifecycle and identity; wrappers.c: groups). Application threads; may lock ncg_lock
 * and allocate (never in the steady-state call path). */
#include "resolve.h"
#define NCG_HOOKDECL_HOOK(ret, name, params) ret ncg_hook_##name params;
#define NCG_HOOKDECL_REC_COLL(ret, name, params)
#define NCG_HOOKDECL_REC_P2P(ret, name, params)
#define NCG_HOOKDECL_PASS(ret, name, params)
#define NCG_HOOKDECL_PASSVOID(ret, name, params)
#define NCG_API(ret, name, params, args, cls, wrap, fail, fp) NCG_HOOKDECL_##wrap(ret, name, params)
#include "api.def"
#undef NCG_API

#define NCG_NO_OP (-1) /* "this call takes no reduction op" in api.def fingerprints */

/* The application's collective / p2p call about to be forwarded: number and record it (a call
 * on a capturing stream is kept with its capture instead, graph.h; a graph replay calls these
 * for each captured call). Returns 0 to forward, -1 when the checker failed the comm (return
 * ncclRemoteError).
 * Hot path: lock-free, no syscall (vDSO clock), no allocation, no output. */
int ncg_record_coll(void *pc, uint32_t func, size_t count, int dtype, int op, int root,
                    ncclComm_t comm, void *stream);
int ncg_record_p2p(void *pc, uint32_t func, size_t count, int dtype, int peer, ncclComm_t comm,
                   void *stream);

/* Forget every communicator (fork child; single-threaded, no locks, no free). */
void ncg_comm_fork_child(void);
