/* Completion tracking (completion.h): the mode decision (synchronous NCCL: a call's return is
 * its completion; asynchronous NCCL on a CUDA runtime found at run time: events), grouped
 * calls (completed at the outermost ncclGroupEnd), and the event engine: per communicator an
 * SPSC ring of CUDA events that the application thread records on the call's stream at most
 * once per NCG_CEV_GAP_NS and the checker thread polls. */
#define _GNU_SOURCE
#include "completion.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "config.h"
#include "log.h"
#include "publist.h"
#include "slow.h"

int ncg_cmode = NCG_CMODE_RETURN;
static struct ncg_cuda_api cuda;
static int probes_left = NCG_CEV_PROBES;

/* ---- mode ---- */

void ncg_completion_set_cuda(const struct ncg_cuda_api *api, int mode)
{
    cuda = *api;
    probes_left = NCG_CEV_PROBES;
    __atomic_store_n(&ncg_cmode, mode, __ATOMIC_RELEASE);
}

const struct ncg_cuda_api *ncg_cuda_api_get(void)
{
    return &cuda;
}

int ncg_cuda_device_now(void)
{
    int dev = 0;
    if (__atomic_load_n(&ncg_cmode, __ATOMIC_ACQUIRE) != NCG_CMODE_EVENTS || !cuda.get_device ||
        cuda.get_device(&dev) != NCG_CUDA_SUCCESS || dev < 0)
        return 0;
    return dev;
}

/* The process's CUDA runtime: global symbols first, then a libcudart already loaded with
 * RTLD_LOCAL (Python extensions such as PyTorch's load it so). Never loads one. 0 / -1. */
static int find_cuda(struct ncg_cuda_api *a)
{
    static const char *const libs[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
    void *h = RTLD_DEFAULT;
    for (size_t i = 0; i <= sizeof libs / sizeof *libs; i++) {
        if (i > 0 && !(h = dlopen(libs[i - 1], RTLD_NOLOAD | RTLD_LAZY)))
            continue;
        *a = (struct ncg_cuda_api){
            .event_create_with_flags =
                (int (*)(void **, unsigned))dlsym(h, "cudaEventCreateWithFlags"),
            .event_record = (int (*)(void *, void *))dlsym(h, "cudaEventRecord"),
            .event_query = (int (*)(void *))dlsym(h, "cudaEventQuery"),
            .stream_query = (int (*)(void *))dlsym(h, "cudaStreamQuery"),
            .get_device = (int (*)(int *))dlsym(h, "cudaGetDevice"),
            .event_elapsed = (int (*)(float *, void *, void *))dlsym(h, "cudaEventElapsedTime"),
        };
        /* the handle stays open: the runtime is in use by the process anyway */
        if (a->event_create_with_flags && a->event_record && a->event_query && a->stream_query)
            return 0;
    }
    return -1;
}

void ncg_cuda_bus_id(char *buf, size_t len)
{
    static const char *const libs[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
    void *h = RTLD_DEFAULT;
    buf[0] = 0;
    for (size_t i = 0; i <= sizeof libs / sizeof *libs; i++) {
        if (i > 0 && !(h = dlopen(libs[i - 1], RTLD_NOLOAD | RTLD_LAZY)))
            continue;
        int (*get_device)(int *) = (int (*)(int *))dlsym(h, "cudaGetDevice");
        int (*bus_id)(char *, int, int) =
            (int (*)(char *, int, int))dlsym(h, "cudaDeviceGetPCIBusId");
        int dev = -1;
        if (!get_device || !bus_id)
            continue;
        if (get_device(&dev) == 0 && bus_id(buf, (int)len, dev) == 0)
            buf[len - 1] = 0;
        else
            buf[0] = 0;
        return;
    }
}

/* auto mode without a runtime at activation: the application may load one later (before its
 * first stream exists). The checker thread looks again each interval (g_unresolved); a call
 * given a stream looks at once (ncg_cuda_late, up to NCG_LATE_TRIES times), since a stream
 * means a runtime is loaded: until it is found, an asynchronous call would count as complete
 * when it returns. find_lk keeps the two from installing it twice. */
static int g_unresolved;
int ncg_cuda_late;
static int late_tries;
static pthread_mutex_t find_lk = PTHREAD_MUTEX_INITIALIZER;
#define NCG_LATE_TRIES 16

void ncg_completion_init(void)
{
    if (ncg_cfg.completion == NCG_COMPL_RETURN) {
        ncg_debug(1, "completion: a call's return is its completion (NCCLGUARD_COMPLETION)");
        return;
    }
    struct ncg_cuda_api a;
    if (find_cuda(&a) != 0) {
        ncg_debug(1, "completion: no CUDA runtime in this process (yet); a call's return is its "
                     "completion");
        __atomic_store_n(&g_unresolved, 1, __ATOMIC_RELEASE);
        __atomic_store_n(&ncg_cuda_late, 1, __ATOMIC_RELEASE);
        return;
    }
    int forced = ncg_cfg.completion == NCG_COMPL_EVENTS;
    ncg_debug(1, "completion: CUDA runtime found; %s",
              forced ? "CUDA events (NCCLGUARD_COMPLETION)" : "probing whether NCCL is async");
    ncg_completion_set_cuda(&a, forced ? NCG_CMODE_EVENTS : NCG_CMODE_PROBE);
}

/* A runtime loaded after activation switches to probing. caller: 1 from an application
 * thread, 0 from the checker thread. Neither waits for the lock (whoever holds it is looking:
 * the other looks next time; and a fork child must not wait on a holder that is gone). */
static void retry_find(int caller)
{
    if (pthread_mutex_trylock(&find_lk) != 0)
        return;
    struct ncg_cuda_api a;
    if (!__atomic_load_n(&g_unresolved, __ATOMIC_ACQUIRE) || find_cuda(&a) != 0) {
        if (caller && __atomic_add_fetch(&late_tries, 1, __ATOMIC_RELAXED) >= NCG_LATE_TRIES)
            __atomic_store_n(&ncg_cuda_late, 0, __ATOMIC_RELAXED); /* the checker keeps looking */
        pthread_mutex_unlock(&find_lk);
        return;
    }
    __atomic_store_n(&g_unresolved, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&ncg_cuda_late, 0, __ATOMIC_RELEASE);
    int forced = ncg_cfg.completion == NCG_COMPL_EVENTS;
    ncg_debug(1, "completion: a CUDA runtime was loaded (found by %s); %s",
              caller ? "a call's stream" : "the checker",
              forced ? "CUDA events (NCCLGUARD_COMPLETION)" : "probing whether NCCL is async");
    ncg_completion_set_cuda(&a, forced ? NCG_CMODE_EVENTS : NCG_CMODE_PROBE);
    pthread_mutex_unlock(&find_lk);
}

void ncg_cuda_find_late(void)
{
    retry_find(1);
}

static void cmode_return(const char *why)
{
    if (__atomic_exchange_n(&ncg_cmode, NCG_CMODE_RETURN, __ATOMIC_ACQ_REL) != NCG_CMODE_RETURN)
        ncg_debug(1, "completion: %s; a call's return is its completion", why);
}

/* ---- the event engine ---- */

static struct ncg_publist cev_all = {.lk = PTHREAD_MUTEX_INITIALIZER};

static void cev_register(struct ncg_cev *e)
{
    if (ncg_publist_add(&cev_all, e, &e->registered) < 0)
        NCG_LOG_ONCE("completion: more than %u communicators use events; later ones are "
                     "tracked at call return",
                     NCG_PUBLIST_MAX);
}

static void *cev_event(struct ncg_cev *e)
{
    /* acquire: the slot the poller filled before publishing it; release: read before the
     * poller may refill it */
    if (__atomic_load_n(&e->spare_tail, __ATOMIC_ACQUIRE) != e->spare_head) { /* recycled */
        void *ev = e->spare[e->spare_head % NCG_CEV_RING];
        __atomic_store_n(&e->spare_head, e->spare_head + 1, __ATOMIC_RELEASE);
        return ev;
    }
    void *ev = NULL;
    if (cuda.event_create_with_flags(&ev, NCG_CUDA_EVENT_DISABLE_TIMING) != NCG_CUDA_SUCCESS)
        return NULL;
    return ev;
}

void ncg_cev_after_call(struct ncg_cev *e, uint64_t val, void *stream)
{
    if (!e || !e->done)
        return;
    int mode = __atomic_load_n(&ncg_cmode, __ATOMIC_ACQUIRE);
    if (mode == NCG_CMODE_PROBE) {
        int q = cuda.stream_query(stream);
        if (q == NCG_CUDA_NOT_READY) {
            __atomic_store_n(&ncg_cmode, NCG_CMODE_EVENTS, __ATOMIC_RELEASE);
            ncg_debug(1, "completion: NCCL calls return before their work is done: CUDA events");
            mode = NCG_CMODE_EVENTS;
        } else {
            ck_pr_store_64(e->done, val);
            if (q != NCG_CUDA_SUCCESS)
                cmode_return("cudaStreamQuery fails (no usable GPU?)");
            else if (__atomic_sub_fetch(&probes_left, 1, __ATOMIC_RELAXED) <= 0)
                cmode_return("NCCL calls complete before they return");
            return;
        }
    }
    if (mode == NCG_CMODE_RETURN) {
        ck_pr_store_64(e->done, val);
        return;
    }
    if (!__atomic_load_n(&e->registered, __ATOMIC_ACQUIRE))
        cev_register(e);
    e->stream = stream;
    ck_pr_store_64(&e->issued, val); /* a drained stream completes up to here */
    uint64_t now = ncg_coarse_ns();
    if (now - e->last_ev_ns < NCG_CEV_GAP_NS ||
        e->head - __atomic_load_n(&e->tail, __ATOMIC_ACQUIRE) >= NCG_CEV_RING)
        return; /* the next event, or the stream query, covers this call */
    void *ev = cev_event(e);
    if (!ev || cuda.event_record(ev, stream) != NCG_CUDA_SUCCESS) {
        cmode_return("cudaEventCreateWithFlags/cudaEventRecord fail");
        ck_pr_store_64(e->done, val);
        return;
    }
    e->last_ev_ns = now;
    e->ev[e->head % NCG_CEV_RING] = ev;
    e->val[e->head % NCG_CEV_RING] = val;
    /* Event and value before the head that publishes them to the poller (release). */
    __atomic_store_n(&e->head, e->head + 1, __ATOMIC_RELEASE);
}

static void cev_poll_one(struct ncg_cev *e)
{
    uint64_t head = __atomic_load_n(&e->head, __ATOMIC_ACQUIRE); /* before the slots it covers */
    while (e->tail != head) {
        void *ev = e->ev[e->tail % NCG_CEV_RING];
        if (cuda.event_query(ev) != NCG_CUDA_SUCCESS)
            break; /* not reached yet (or an error: retried next poll) */
        uint64_t v = e->val[e->tail % NCG_CEV_RING];
        if (v > ck_pr_load_64(e->done))
            ck_pr_store_64(e->done, v);
        if (e->spare_tail - __atomic_load_n(&e->spare_head, __ATOMIC_ACQUIRE) < NCG_CEV_RING) {
            e->spare[e->spare_tail % NCG_CEV_RING] = ev;
            __atomic_store_n(&e->spare_tail, e->spare_tail + 1, __ATOMIC_RELEASE);
        }
        /* release: the slot is read before the producer may reuse it */
        __atomic_store_n(&e->tail, e->tail + 1, __ATOMIC_RELEASE);
    }
    /* Calls after the last event: a drained stream has finished everything issued before the
     * query (issued is read first; later calls are not claimed). */
    uint64_t iss = ck_pr_load_64(&e->issued);
    void *st = ck_pr_load_ptr(&e->stream);
    if (iss > ck_pr_load_64(e->done) && e->tail == head) {
        int q = cuda.stream_query(st);
        if (q == NCG_CUDA_SUCCESS && iss > ck_pr_load_64(e->done))
            ck_pr_store_64(e->done, iss);
        else if (q == NCG_CUDA_NOT_READY) /* issued read after the query: it covers the work */
            ck_pr_store_64(&e->undrained, ck_pr_load_64(&e->issued));
    }
}

int ncg_cev_bounds(const struct ncg_cev *e, uint64_t done, uint64_t issued, uint64_t *hi)
{
    *hi = done;
    if (!e || !__atomic_load_n(&e->registered, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&ncg_cmode, __ATOMIC_ACQUIRE) != NCG_CMODE_EVENTS)
        return 0;
    uint64_t tail = __atomic_load_n(&e->tail, __ATOMIC_ACQUIRE),
             head = __atomic_load_n(&e->head, __ATOMIC_ACQUIRE); /* before the slot it covers */
    uint64_t h = issued;
    if (tail != head) {
        uint64_t v = e->val[tail % NCG_CEV_RING]; /* not reached: fewer than v completed */
        h = v > 0 ? v - 1 : 0;
    } else {
        uint64_t u = ck_pr_load_64(&e->undrained); /* the stream had work left then */
        if (u > done && u - 1 < h)
            h = u - 1;
    }
    *hi = h < done ? done : h > issued ? issued : h;
    return 1;
}

void ncg_completion_poll(void)
{
    if (__atomic_load_n(&g_unresolved, __ATOMIC_ACQUIRE))
        retry_find(0);
    if (__atomic_load_n(&ncg_cmode, __ATOMIC_ACQUIRE) != NCG_CMODE_EVENTS)
        return;
    uint32_t n = ncg_publist_count(&cev_all);
    for (uint32_t i = 0; i < n; i++)
        cev_poll_one(ncg_publist_at(&cev_all, i));
    ncg_slow_poll(); /* the timed event pairs of the straggler samples (slow.h) */
}

/* ---- groups ---- */

struct gent {
    struct ncg_shm_comm *s;
    struct ncg_cev *cev; /* [0] collectives, [1] p2p (adjacent in struct ncg_comm) */
    uint64_t end[2];     /* value to complete: last slot + 1, last p2p index + 1 (0: none) */
    void *stream;
};
static __thread struct gent *g_ent __attribute__((tls_model("initial-exec")));
static __thread int g_n __attribute__((tls_model("initial-exec")));

void ncg_group_note(struct ncg_shm_comm *s, struct ncg_cev *cev, int p2p, uint64_t idx,
                    void *stream)
{
    if (!g_ent && !(g_ent = calloc(NCG_SHM_MAX_COMMS, sizeof *g_ent)))
        return; /* out of memory: this group's calls stay incomplete (never a false verdict:
                   STUCK needs equal calls everywhere, DEADLOCK a cycle) */
    int i;
    for (i = 0; i < g_n; i++)
        if (g_ent[i].s == s)
            break;
    if (i == g_n) {
        if (g_n == (int)NCG_SHM_MAX_COMMS)
            return;
        g_ent[g_n++] = (struct gent){.s = s, .cev = cev};
    }
    uint64_t *held = p2p ? &s->p2p_held : &s->coll_held;
    if (!g_ent[i].end[p2p] && !ck_pr_load_64(held))
        ck_pr_store_64(held, idx + 1);
    g_ent[i].end[p2p] = idx + 1;
    g_ent[i].stream = stream;
}

void ncg_group_launch(void)
{
    ncg_tls.order++; /* the group's calls were recorded with this launch order (streamtab.h) */
    for (int i = 0; i < g_n; i++) {
        ck_pr_store_64(&g_ent[i].s->coll_held, 0);
        ck_pr_store_64(&g_ent[i].s->p2p_held, 0);
    }
}

void ncg_group_done(void)
{
    int mode = __atomic_load_n(&ncg_cmode, __ATOMIC_RELAXED);
    if (mode == NCG_CMODE_RETURN && g_n > 0 && g_ent[0].stream &&
        __atomic_load_n(&ncg_cuda_late, __ATOMIC_RELAXED)) {
        retry_find(1); /* as ncg_done_after_call: a stream means a runtime */
        mode = __atomic_load_n(&ncg_cmode, __ATOMIC_ACQUIRE);
    }
    for (int i = 0; i < g_n; i++) {
        struct gent *g = &g_ent[i];
        for (int k = 0; k < 2; k++) {
            if (!g->end[k])
                continue;
            if (mode == NCG_CMODE_RETURN || !g->cev)
                ck_pr_store_64(k ? &g->s->p2p_done : &g->s->coll_done, g->end[k]);
            else
                ncg_cev_after_call(&g->cev[k], g->end[k], g->stream);
        }
    }
    g_n = 0;
}
