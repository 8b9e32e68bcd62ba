/* The CUDA runtime's capture and graph functions, interposed (see graph.h): lazy resolution of
 * the real ones (RTLD_NEXT, else a runtime loaded RTLD_LOCAL), pass-through inside NCCL and
 * with NCCLGUARD=0, and the three maps: capture id -> calls so far, graph -> calls, executable
 * -> calls. Signatures are CUDA 13's; where CUDA 11 differed (cudaGraphInstantiate,
 * cudaGraphExecUpdate) every argument register is forwarded, so either ABI passes through. */
#define _GNU_SOURCE
#include "graph.h"
#include "hostwait.h"

#include <dlfcn.h>
#include <pthread.h>

#include "completion.h"
#include "ncclguard/shm.h"
#include "comm.h"
#include "log.h"
#include "shim.h"

#define NCG_EXPORT __attribute__((visibility("default")))
#define CUDA_ERROR_INIT 3        /* cudaErrorInitializationError: no runtime to forward to */
#define CAPTURE_STATUS_ACTIVE 1  /* cudaStreamCaptureStatusActive */
#define CAPTURE_STATUS_INVALID 2 /* cudaStreamCaptureStatusInvalidated */

int ncg_graph_captures;

/* The interposed runtime functions (CUDA's types as void pointers and ints). */
int cudaStreamBeginCapture(void *stream, int mode);
int cudaStreamBeginCapture_ptsz(void *stream, int mode);
int cudaStreamBeginCaptureToGraph(void *stream, void *graph, const void *deps, const void *edges,
                                  size_t ndeps, int mode);
int cudaStreamBeginCaptureToGraph_ptsz(void *stream, void *graph, const void *deps,
                                       const void *edges, size_t ndeps, int mode);
int cudaStreamEndCapture(void *stream, void **pgraph);
int cudaStreamEndCapture_ptsz(void *stream, void **pgraph);
int cudaGraphInstantiate(void **pexec, void *graph, void *a3, void *a4, size_t a5);
int cudaGraphInstantiateWithFlags(void **pexec, void *graph, unsigned long long flags);
int cudaGraphInstantiateWithParams(void **pexec, void *graph, void *params);
int cudaGraphInstantiateWithParams_ptsz(void **pexec, void *graph, void *params);
int cudaGraphExecUpdate(void *exec, void *graph, void *a3, void *a4);
int cudaGraphClone(void **pclone, void *graph);
int cudaGraphExecDestroy(void *exec);
int cudaGraphDestroy(void *graph);
int cudaGraphLaunch(void *exec, void *stream);
int cudaGraphLaunch_ptsz(void *exec, void *stream);

enum {
    R_BEGIN,
    R_BEGIN_PTSZ,
    R_BEGIN_TO,
    R_BEGIN_TO_PTSZ,
    R_END,
    R_END_PTSZ,
    R_INFO,
    R_INFO_PTSZ,
    R_INST,
    R_INST_FLAGS,
    R_INST_PARAMS,
    R_INST_PARAMS_PTSZ,
    R_UPDATE,
    R_EXEC_DESTROY,
    R_DESTROY,
    R_CLONE,
    R_LAUNCH,
    R_LAUNCH_PTSZ,
    R_COUNT
};
static const char *const names[R_COUNT] = {
    "cudaStreamBeginCapture",
    "cudaStreamBeginCapture_ptsz",
    "cudaStreamBeginCaptureToGraph",
    "cudaStreamBeginCaptureToGraph_ptsz",
    "cudaStreamEndCapture",
    "cudaStreamEndCapture_ptsz",
    "cudaStreamGetCaptureInfo",
    "cudaStreamGetCaptureInfo_ptsz",
    "cudaGraphInstantiate",
    "cudaGraphInstantiateWithFlags",
    "cudaGraphInstantiateWithParams",
    "cudaGraphInstantiateWithParams_ptsz",
    "cudaGraphExecUpdate",
    "cudaGraphExecDestroy",
    "cudaGraphDestroy",
    "cudaGraphClone",
    "cudaGraphLaunch",
    "cudaGraphLaunch_ptsz",
};
static void *real_fn[R_COUNT];

/* The runtime's own definition of names[i], or NULL (one line, once per function). */
static void *real(int i)
{
    int first = 0;
    void *p = ncg_cuda_real(&real_fn[i], names[i], &first);
    if (!p && first)
        ncg_log("%s: not found in a loaded CUDA runtime; the call returns "
                "cudaErrorInitializationError",
                names[i]);
    return p;
}

/* The application's call, to be observed (not a call from inside NCCL, not NCCLGUARD=0). */
static int observed(void)
{
    return ncg_tls.depth == 0 && ncg_state_get() != NCG_ST_DISABLED;
}

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ncg_pmap g_caps, g_graphs, g_execs; /* under g_mu */
static int g_nexecs;                              /* g_execs.n, read without the lock */

static void put_locked(struct ncg_pmap *m, uintptr_t key, struct ncg_glist *l)
{
    struct ncg_glist *old = NULL;
    if (!l)
        old = ncg_pmap_del(m, key); /* a reused handle must not keep a stale list */
    else if (ncg_pmap_put(m, key, l, &old) != 0) {
        ncg_log("out of memory: a CUDA graph's NCCL calls are not checked when it is launched");
        ncg_glist_unref(l);
        old = ncg_pmap_del(m, key);
    }
    ncg_glist_unref(old);
    if (m == &g_execs)
        ck_pr_store_int(&g_nexecs, (int)m->n);
}

/* cudaStreamGetCaptureInfo(stream, &status, &id): 0 when not capturing or unknown. Extra
 * optional out-parameters of CUDA 12/13 are passed as NULL (CUDA 11 has only these three). */
static int capture_of(int ptsz, void *stream, unsigned long long *id)
{
    int (*f)(void *, int *, unsigned long long *, void *, void *, void *, void *) =
        real(ptsz ? R_INFO_PTSZ : R_INFO);
    int st = 0;
    *id = 0;
    if (!f && ptsz)
        f = real(R_INFO);
    if (!f || f(stream, &st, id, NULL, NULL, NULL, NULL) != 0)
        return 0;
    return st;
}

/* A capture id as a map key: ids start at 1 (CUDA's and the CPU runtime's), keys 0 and 1 are
 * the map's own. */
static uintptr_t cap_key(unsigned long long id)
{
    return (uintptr_t)id + 2;
}

int ncg_graph_capture_call(void *stream, const struct ncg_gcall *c)
{
    unsigned long long id;
    int st = capture_of(0, stream, &id);
    if (st == CAPTURE_STATUS_INVALID)
        return 1; /* part of a capture that will fail: not an eager call either */
    if (st != CAPTURE_STATUS_ACTIVE)
        return 0;
    pthread_mutex_lock(&g_mu);
    struct ncg_glist **slot = ncg_pmap_slot(&g_caps, cap_key(id)), *l = NULL, *old;
    int e;
    if (slot) {
        e = ncg_glist_append(slot, c); /* the capture's list has one reference: the map's */
    } else if ((e = ncg_glist_append(&l, c)) == 0 &&
               (e = ncg_pmap_put(&g_caps, cap_key(id), l, &old)) != 0) {
        ncg_glist_unref(l);
    }
    pthread_mutex_unlock(&g_mu);
    if (e != 0)
        ncg_log("out of memory: a captured NCCL call is not checked when its graph is launched");
    return 1;
}

/* ---- capture ---- */

static void capture_begun(int r)
{
    if (r == 0)
        ck_pr_inc_int(&ncg_graph_captures);
}

typedef int (*begin_fn)(void *, int);
typedef int (*begin_to_fn)(void *, void *, const void *, const void *, size_t, int);

static int begin(int i, void *stream, int mode)
{
    begin_fn f = real(i);
    if (!f)
        return CUDA_ERROR_INIT;
    int r = f(stream, mode);
    if (observed())
        capture_begun(r);
    return r;
}

static int begin_to(int i, void *stream, void *graph, const void *deps, const void *edges,
                    size_t ndeps, int mode)
{
    begin_to_fn f = real(i);
    if (!f)
        return CUDA_ERROR_INIT;
    int r = f(stream, graph, deps, edges, ndeps, mode);
    if (observed())
        capture_begun(r);
    return r;
}

NCG_EXPORT int cudaStreamBeginCapture(void *stream, int mode)
{
    return begin(R_BEGIN, stream, mode);
}

NCG_EXPORT int cudaStreamBeginCapture_ptsz(void *stream, int mode)
{
    return begin(R_BEGIN_PTSZ, stream, mode);
}

NCG_EXPORT int cudaStreamBeginCaptureToGraph(void *stream, void *graph, const void *deps,
                                             const void *edges, size_t ndeps, int mode)
{
    return begin_to(R_BEGIN_TO, stream, graph, deps, edges, ndeps, mode);
}

NCG_EXPORT int cudaStreamBeginCaptureToGraph_ptsz(void *stream, void *graph, const void *deps,
                                                  const void *edges, size_t ndeps, int mode)
{
    return begin_to(R_BEGIN_TO_PTSZ, stream, graph, deps, edges, ndeps, mode);
}

/* The capture on stream ends (whatever the outcome): its calls go to the graph made, appended
 * to the graph's own when it was captured into an existing graph (BeginCaptureToGraph). */
static int end_capture(int ptsz, void *stream, void **pgraph)
{
    int (*f)(void *, void **) = real(ptsz ? R_END_PTSZ : R_END);
    if (!f)
        return CUDA_ERROR_INIT;
    if (!observed())
        return f(stream, pgraph);
    unsigned long long id;
    int st = capture_of(ptsz, stream, &id);
    int r = f(stream, pgraph);
    if (st == 0)
        return r;
    for (int n = ck_pr_load_int(&ncg_graph_captures); n > 0;)
        if (ck_pr_cas_int_value(&ncg_graph_captures, n, n - 1, &n))
            break;
    pthread_mutex_lock(&g_mu);
    struct ncg_glist *cap = ncg_pmap_del(&g_caps, cap_key(id));
    if (r == 0 && pgraph && *pgraph && cap) {
        struct ncg_glist *prev = ncg_pmap_get(&g_graphs, (uintptr_t)*pgraph);
        int oom = 0;
        struct ncg_glist *l = prev ? ncg_glist_concat(prev, cap, &oom) : ncg_glist_ref(cap);
        put_locked(&g_graphs, (uintptr_t)*pgraph, l);
    }
    pthread_mutex_unlock(&g_mu);
    ncg_glist_unref(cap);
    return r;
}

NCG_EXPORT int cudaStreamEndCapture(void *stream, void **pgraph)
{
    return end_capture(0, stream, pgraph);
}

NCG_EXPORT int cudaStreamEndCapture_ptsz(void *stream, void **pgraph)
{
    return end_capture(1, stream, pgraph);
}

/* ---- graphs and executables ---- */

/* *pexec was instantiated from graph (r: the runtime's result). */
static int instantiated(int r, void **pexec, void *graph)
{
    if (r != 0 || !pexec || !*pexec || !observed())
        return r;
    pthread_mutex_lock(&g_mu);
    put_locked(&g_execs, (uintptr_t)*pexec,
               ncg_glist_ref(ncg_pmap_get(&g_graphs, (uintptr_t)graph)));
    pthread_mutex_unlock(&g_mu);
    return r;
}

/* CUDA 12/13: (exec*, graph, flags); CUDA 11: (exec*, graph, errorNode*, logBuffer, size). */
NCG_EXPORT int cudaGraphInstantiate(void **pexec, void *graph, void *a3, void *a4, size_t a5)
{
    int (*f)(void **, void *, void *, void *, size_t) = real(R_INST);
    if (!f)
        return CUDA_ERROR_INIT;
    return instantiated(f(pexec, graph, a3, a4, a5), pexec, graph);
}

NCG_EXPORT int cudaGraphInstantiateWithFlags(void **pexec, void *graph, unsigned long long flags)
{
    int (*f)(void **, void *, unsigned long long) = real(R_INST_FLAGS);
    if (!f)
        return CUDA_ERROR_INIT;
    return instantiated(f(pexec, graph, flags), pexec, graph);
}

static int inst_params(int i, void **pexec, void *graph, void *params)
{
    int (*f)(void **, void *, void *) = real(i);
    if (!f)
        return CUDA_ERROR_INIT;
    return instantiated(f(pexec, graph, params), pexec, graph);
}

NCG_EXPORT int cudaGraphInstantiateWithParams(void **pexec, void *graph, void *params)
{
    return inst_params(R_INST_PARAMS, pexec, graph, params);
}

NCG_EXPORT int cudaGraphInstantiateWithParams_ptsz(void **pexec, void *graph, void *params)
{
    return inst_params(R_INST_PARAMS_PTSZ, pexec, graph, params);
}

/* CUDA 12/13: (exec, graph, resultInfo*); CUDA 11: (exec, graph, errorNode*, result*). On
 * success the executable runs graph's calls from now on. */
NCG_EXPORT int cudaGraphExecUpdate(void *exec, void *graph, void *a3, void *a4)
{
    int (*f)(void *, void *, void *, void *) = real(R_UPDATE);
    if (!f)
        return CUDA_ERROR_INIT;
    int r = f(exec, graph, a3, a4);
    if (r == 0 && exec && observed()) {
        pthread_mutex_lock(&g_mu);
        put_locked(&g_execs, (uintptr_t)exec,
                   ncg_glist_ref(ncg_pmap_get(&g_graphs, (uintptr_t)graph)));
        pthread_mutex_unlock(&g_mu);
    }
    return r;
}

NCG_EXPORT int cudaGraphClone(void **pclone, void *graph)
{
    int (*f)(void **, void *) = real(R_CLONE);
    if (!f)
        return CUDA_ERROR_INIT;
    int r = f(pclone, graph);
    if (r == 0 && pclone && *pclone && observed()) {
        pthread_mutex_lock(&g_mu);
        put_locked(&g_graphs, (uintptr_t)*pclone,
                   ncg_glist_ref(ncg_pmap_get(&g_graphs, (uintptr_t)graph)));
        pthread_mutex_unlock(&g_mu);
    }
    return r;
}

/* The runtime's destroy function fn (R_EXEC_DESTROY or R_DESTROY) on key, which m forgets
 * first. */
static int destroy(int fn, struct ncg_pmap *m, void *key)
{
    int (*f)(void *) = real(fn);
    if (!f)
        return CUDA_ERROR_INIT;
    if (observed() && key && (m != &g_execs || ck_pr_load_int(&g_nexecs) != 0)) {
        pthread_mutex_lock(&g_mu);
        put_locked(m, (uintptr_t)key, NULL);
        pthread_mutex_unlock(&g_mu);
    }
    return f(key);
}

NCG_EXPORT int cudaGraphExecDestroy(void *exec)
{
    return destroy(R_EXEC_DESTROY, &g_execs, exec);
}

NCG_EXPORT int cudaGraphDestroy(void *graph)
{
    return destroy(R_DESTROY, &g_graphs, graph);
}

/* ---- replay ---- */

/* The launched executable's calls, recorded as issued now on stream, in capture order, as one
 * group (their completion is the last one's, like a group's). Application thread. */
static void replay(const struct ncg_glist *l, void *stream)
{
    int outer = ncg_tls.group == 0;
    ncg_tls.group++;
    for (uint32_t i = 0; i < l->n; i++) {
        const struct ncg_gcall *c = &l->call[i];
        ncg_tls.rec_flags = (uint8_t)(NCG_REC_GRAPH | (c->in_group ? NCG_REC_IN_GROUP : 0));
        if (c->p2p)
            ncg_record_p2p(c->pc, c->func, c->count, c->dtype, c->root_or_peer, c->comm, stream);
        else
            ncg_record_coll(c->pc, c->func, c->count, c->dtype, c->op, c->root_or_peer, c->comm,
                            stream);
    }
    ncg_tls.rec_flags = 0;
    if (outer)
        ncg_group_launch();
    if (--ncg_tls.group == 0)
        ncg_group_done();
}

static int launch(int ptsz, void *exec, void *stream)
{
    int (*f)(void *, void *) = real(ptsz ? R_LAUNCH_PTSZ : R_LAUNCH);
    if (!f)
        return CUDA_ERROR_INIT;
    if (ck_pr_load_int(&g_nexecs) == 0 || ncg_tls.depth != 0 ||
        __atomic_load_n(&ncg_state, __ATOMIC_RELAXED) != NCG_ST_ACTIVE)
        return f(exec, stream);
    pthread_mutex_lock(&g_mu);
    struct ncg_glist *l = ncg_glist_ref(ncg_pmap_get(&g_execs, (uintptr_t)exec));
    pthread_mutex_unlock(&g_mu);
    int r = f(exec, stream);
    if (r == 0 && l)
        replay(l, stream); /* after the launch: a refused launch runs nothing */
    ncg_glist_unref(l);
    return r;
}

NCG_EXPORT int cudaGraphLaunch(void *exec, void *stream)
{
    return launch(0, exec, stream);
}

NCG_EXPORT int cudaGraphLaunch_ptsz(void *exec, void *stream)
{
    return launch(1, exec, stream);
}
