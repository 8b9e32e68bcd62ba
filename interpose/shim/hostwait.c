/* Host waits (hostwait.h): the CUDA runtime's synchronizing and query functions and
 * cudaEventRecord, interposed as graph.c's are (lazy resolution, pass-through inside NCCL, with
 * NCCLGUARD=0, while dormant, and for ncclguard's own calls); one slot per waiting host thread
 * (a seqlock with one writer, the thread that claimed it) and a table of recorded events. Never
 * a lock, an allocation or a line of output on the call path. */
#define _GNU_SOURCE
#include "hostwait.h"

#include <ck_pr.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "graph.h"
#include "shim.h"

#define NCG_EXPORT __attribute__((visibility("default")))
#define CUDA_ERROR_INIT 3 /* cudaErrorInitializationError: no runtime to forward to (graph.c) */
#define PER_THREAD_STREAM ((void *)2) /* cudaStreamPerThread */

/* The interposed runtime functions (CUDA's types as void pointers and ints). */
int cudaStreamSynchronize(void *stream);
int cudaStreamSynchronize_ptsz(void *stream);
int cudaEventSynchronize(void *event);
int cudaDeviceSynchronize(void);
int cudaEventRecord(void *event, void *stream);
int cudaEventRecord_ptsz(void *event, void *stream);
int cudaEventRecordWithFlags(void *event, void *stream, unsigned int flags);
int cudaEventRecordWithFlags_ptsz(void *event, void *stream, unsigned int flags);
int cudaEventQuery(void *event);
int cudaStreamQuery(void *stream);
int cudaStreamQuery_ptsz(void *stream);

enum {
    R_SSYNC,
    R_SSYNC_PTSZ,
    R_ESYNC,
    R_DSYNC,
    R_REC,
    R_REC_PTSZ,
    R_RECF,
    R_RECF_PTSZ,
    R_EQUERY,
    R_SQUERY,
    R_SQUERY_PTSZ,
    R_COUNT
};
static const char *const names[R_COUNT] = {
    "cudaStreamSynchronize",    "cudaStreamSynchronize_ptsz",
    "cudaEventSynchronize",     "cudaDeviceSynchronize",
    "cudaEventRecord",          "cudaEventRecord_ptsz",
    "cudaEventRecordWithFlags", "cudaEventRecordWithFlags_ptsz",
    "cudaEventQuery",           "cudaStreamQuery",
    "cudaStreamQuery_ptsz",
};
static void *real_fn[R_COUNT];

#define MISSING ((void *)1)

void *ncg_cuda_real(void **slot, const char *name, int *first)
{
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (__builtin_expect(p != NULL && p != MISSING, 1))
        return p;
    if (p == MISSING)
        return NULL;
    p = dlsym(RTLD_NEXT, name);
    static const char *const libs[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                                       "libcudart.so"};
    for (unsigned k = 0; !p && k < sizeof libs / sizeof libs[0]; k++) {
        void *h = dlopen(libs[k], RTLD_NOLOAD | RTLD_LAZY); /* loaded RTLD_LOCAL (Python) */
        if (h) {
            p = dlsym(h, name);
            dlclose(h);
        }
    }
    __atomic_store_n(slot, p ? p : MISSING, __ATOMIC_RELEASE);
    if (first)
        *first = 1;
    return p;
}

/* The runtime's own definition of names[i], or NULL (silent, unlike graph.c's functions: these
 * run on every synchronization). */
static void *real(int i)
{
    return ncg_cuda_real(&real_fn[i], names[i], NULL);
}

/* This object, from its ELF header to the end of its data (linker-defined symbols). */
extern const ElfW(Ehdr) __ehdr_start;
extern char _end[] __attribute__((visibility("hidden")));

/* The application's call, to be recorded: not inside NCCL, a communicator exists (so not
 * NCCLGUARD=0 nor dormant either), and not ncclguard's own call. completion.c and slow.c
 * resolve the runtime with dlsym(RTLD_DEFAULT) first, which finds these functions: their
 * event polling (the checker thread's too) must not read as the application's waits. */
static inline int observed(const void *ra)
{
    return __atomic_load_n(&ncg_state, __ATOMIC_RELAXED) == NCG_ST_ACTIVE && ncg_tls.depth == 0 &&
           (uintptr_t)ra - (uintptr_t)&__ehdr_start >= (uintptr_t)_end - (uintptr_t)&__ehdr_start;
}

/* The stream index of a stream argument; per-thread-default-stream builds (_ptsz) mean
 * cudaStreamPerThread by NULL. */
static inline uint8_t stream_of(void *stream, int ptsz)
{
    return ncg_stream_index(ptsz && !stream ? PER_THREAD_STREAM : stream);
}

/* ---- the thread slots ---- */

/* One host thread's current wait. Written only by the thread that claimed it (owner), read by
 * anyone through the seqlock; a cache line each. */
struct hw_slot {
    uint64_t owner;   /* pid << 32 | tid of the claiming thread; 0: never claimed */
    uint32_t seq;     /* odd while the owner rewrites the fields below */
    uint32_t what;    /* kind | stream << 8; kind 0: not waiting */
    uint32_t rec_tid; /* struct ncg_hostwait's fields */
    uint32_t order;
    uint64_t since_ns;
    uint64_t last_ns; /* polls: the owner refreshes it alone, without the seqlock */
    uint8_t pad[24];
};
_Static_assert(sizeof(struct hw_slot) == 64, "one cache line per slot");

static struct hw_slot g_slots[NCG_HW_SLOTS] __attribute__((aligned(64)));

#define NCG_HW_RETRY 1024u /* no slot free: calls that pass unrecorded before looking again */

struct hw_tls {
    struct hw_slot *slot; /* this thread's slot, claimed for tid (NULL: none) */
    uint32_t tid;         /* ncg_tid() at the claim: a fork child's thread has another */
    uint32_t retry;       /* no slot: calls left before the next claim */
    const void *poll;     /* the stream or event polled while poll_kind != 0 */
    uint8_t poll_kind;    /* NCG_HW_POLL_* while the slot says polling, else 0 */
    uint8_t victim;       /* event table: next entry of a full window to replace */
};
static __thread struct hw_tls hw_tls __attribute__((tls_model("initial-exec")));

/* The owner's rewrite of its wait (one writer: no compare-and-swap). */
static void slot_put(struct hw_slot *s, uint32_t what, uint32_t rec_tid, uint32_t order,
                     uint64_t since_ns, uint64_t last_ns)
{
    uint32_t q = ck_pr_load_32(&s->seq);
    ck_pr_store_32(&s->seq, q + 1);
    /* Odd stamp before any field: a reader that sees a new field re-reads a changed stamp. */
    ck_pr_fence_store();
    ck_pr_store_32(&s->what, what);
    ck_pr_store_32(&s->rec_tid, rec_tid);
    ck_pr_store_32(&s->order, order);
    ck_pr_store_64(&s->since_ns, since_ns);
    ck_pr_store_64(&s->last_ns, last_ns);
    /* Fields before the even stamp: a reader that sees it unchanged saw the whole wait. */
    ck_pr_fence_store();
    ck_pr_store_32(&s->seq, q + 2);
}

static void slot_clear(struct hw_slot *s)
{
    uint32_t q = ck_pr_load_32(&s->seq);
    ck_pr_store_32(&s->seq, q + 1);
    /* Odd stamp before the field (as in slot_put). */
    ck_pr_fence_store();
    ck_pr_store_32(&s->what, 0);
    /* The field before the even stamp. */
    ck_pr_fence_store();
    ck_pr_store_32(&s->seq, q + 2);
}

/* Whether the owner of a slot is gone: another process's (a fork child sees its parent's
 * threads), or a thread of ours that exited (tgkill signal 0: ESRCH). A slot is never freed by
 * its thread (no destructor runs without allocating): it is taken over once its tid is gone. */
static int owner_gone(uint64_t owner, uint32_t pid)
{
    return (uint32_t)(owner >> 32) != pid ||
           (syscall(SYS_tgkill, (pid_t)pid, (pid_t)(uint32_t)owner, 0) != 0 && errno == ESRCH);
}

/* Claim a slot for the calling thread (tid): a free one, else one whose owner is gone. Once
 * per thread; syscalls (getpid, tgkill when the table is full), no allocation. NULL when all
 * NCG_HW_SLOTS threads are alive: its waits go unrecorded (the next NCG_HW_RETRY calls pass
 * without looking again). */
static struct hw_slot *slot_claim(uint32_t tid)
{
    if (hw_tls.tid == tid && !hw_tls.slot && hw_tls.retry) {
        hw_tls.retry--;
        return NULL;
    }
    int saved = errno; /* the application's errno survives its CUDA call */
    uint32_t pid = (uint32_t)getpid();
    uint64_t me = (uint64_t)pid << 32 | tid, o;
    uint32_t h = tid * 2654435761u;
    struct hw_slot *got = NULL;
    for (uint32_t n = 0; n < NCG_HW_SLOTS && !got; n++) {
        struct hw_slot *s = &g_slots[(h + n) % NCG_HW_SLOTS];
        if (ck_pr_load_64(&s->owner) == 0 && ck_pr_cas_64(&s->owner, 0, me))
            got = s;
    }
    for (uint32_t n = 0; n < NCG_HW_SLOTS && !got; n++) {
        struct hw_slot *s = &g_slots[(h + n) % NCG_HW_SLOTS];
        if ((o = ck_pr_load_64(&s->owner)) != me && owner_gone(o, pid) &&
            ck_pr_cas_64(&s->owner, o, me))
            got = s;
    }
    errno = saved;
    hw_tls.slot = got;
    hw_tls.tid = tid;
    hw_tls.retry = got ? 0 : NCG_HW_RETRY;
    hw_tls.poll_kind = 0;
    if (got) {
        uint32_t q = ck_pr_load_32(&got->seq);
        if (q & 1) /* a previous owner ended mid-rewrite (only a fork child can see that) */
            ck_pr_store_32(&got->seq, q + 1);
        slot_clear(got); /* it may have exited (been cancelled) while waiting */
    }
    return got;
}

/* The calling thread's slot, or NULL. Application thread; TLS only after the claim. */
static inline struct hw_slot *my_slot(void)
{
    uint32_t tid = ncg_tid();
    struct hw_slot *s = hw_tls.slot;
    if (__builtin_expect(s != NULL && hw_tls.tid == tid, 1))
        return s;
    return slot_claim(tid);
}

/* The thread's poll is over (a query said ready, or another interposed call came). */
static void poll_end(void)
{
    hw_tls.poll_kind = 0;
    if (hw_tls.slot && hw_tls.tid == ncg_tid())
        slot_clear(hw_tls.slot);
}

/* The read side of the seqlocks (a slot's, an event entry's): begin takes the stamp to read the
 * fields under (0, after a short stall, while a writer holds it: odd); ok, after the fields are
 * read, says whether they are one consistent copy. Any thread; lock-free. */
static inline int seq_read_begin(const uint32_t *seq, uint32_t *s1)
{
    *s1 = ck_pr_load_32(seq);
    if (*s1 & 1) {
        ck_pr_stall();
        return 0;
    }
    /* Stamp before fields: pairs with the writer's first store fence. */
    ck_pr_fence_load();
    return 1;
}

static inline int seq_read_ok(const uint32_t *seq, uint32_t s1)
{
    /* Fields before the second stamp read: a changed stamp reveals a rewrite. */
    ck_pr_fence_load();
    return ck_pr_load_32(seq) == s1;
}

/* ---- the recorded events ---- */

/* An event's latest record by an observed call: open addressing on the handle within a window
 * of NCG_HW_EV_WINDOW entries; a full window replaces one of its entries (round robin per
 * thread), so a job that creates events forever keeps its recent ones. Entries never become
 * empty again. Writers are any threads: an entry is taken with a compare-and-swap of its stamp
 * (even -> odd); a writer that finds it taken forgets its record (the event is then unknown or
 * one record old), it never waits. */
#define NCG_HW_EV_WINDOW 8u
struct hw_event {
    uint32_t seq; /* odd while a writer rewrites the entry */
    uint32_t pad;
    uint64_t key; /* the cudaEvent_t; 0: empty */
    uint64_t val; /* rec_tid << 32 | stream << 24 | order; 0: unknown (recorded in a capture) */
    uint64_t pad2;
};
_Static_assert((NCG_HW_EVENTS & (NCG_HW_EVENTS - 1)) == 0, "NCG_HW_EVENTS: a power of two");
static struct hw_event g_events[NCG_HW_EVENTS] __attribute__((aligned(64)));

static inline uint32_t ev_home(uint64_t key)
{
    return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 40);
}

/* A consistent copy of entry e's key and value; 0 when it is being rewritten throughout. */
static int ev_read(const struct hw_event *e, uint64_t *key, uint64_t *val)
{
    for (int tries = 0; tries < 4; tries++) {
        uint32_t s1;
        if (!seq_read_begin(&e->seq, &s1))
            continue;
        *key = ck_pr_load_64(&e->key);
        *val = ck_pr_load_64(&e->val);
        if (seq_read_ok(&e->seq, s1))
            return 1;
    }
    return 0;
}

/* Remember val for event key. Any thread; lock-free, no allocation. */
static void ev_note(uint64_t key, uint64_t val)
{
    uint32_t h = ev_home(key);
    struct hw_event *dst = NULL, *empty = NULL;
    for (uint32_t n = 0; n < NCG_HW_EV_WINDOW && !dst; n++) {
        struct hw_event *e = &g_events[(h + n) & (NCG_HW_EVENTS - 1)];
        uint64_t k = ck_pr_load_64(&e->key);
        if (k == key)
            dst = e;
        else if (!k && !empty)
            empty = e;
    }
    if (!dst)
        dst = empty ? empty
                    : &g_events[(h + hw_tls.victim++ % NCG_HW_EV_WINDOW) & (NCG_HW_EVENTS - 1)];
    uint32_t q = ck_pr_load_32(&dst->seq);
    if ((q & 1) || !ck_pr_cas_32(&dst->seq, q, q + 1))
        return; /* another thread is writing it */
    /* Odd stamp before the fields (the compare-and-swap is a full barrier on x86; the fence
     * says so for the others). */
    ck_pr_fence_store();
    ck_pr_store_64(&dst->key, key);
    ck_pr_store_64(&dst->val, val);
    /* Fields before the even stamp. */
    ck_pr_fence_store();
    ck_pr_store_32(&dst->seq, q + 2);
}

/* The latest value noted for key, 0 when unknown. Any thread; lock-free. */
static uint64_t ev_lookup(uint64_t key)
{
    uint32_t h = ev_home(key);
    for (uint32_t n = 0; n < NCG_HW_EV_WINDOW; n++) {
        uint64_t k, v;
        if (!ev_read(&g_events[(h + n) & (NCG_HW_EVENTS - 1)], &k, &v))
            continue;
        if (k == key)
            return v;
        if (!k)
            return 0; /* inserts take the window's first empty entry: it is not further */
    }
    return 0;
}

/* An event wait's fields from what its record noted. */
static void ev_wait(void *event, uint32_t kind, uint32_t *what, uint32_t *rec, uint32_t *order)
{
    uint64_t v = ev_lookup((uint64_t)(uintptr_t)event);
    *what = kind | (uint32_t)(v >> NCG_ORDER_BITS & 0xffu) << 8;
    *rec = (uint32_t)(v >> 32);
    *order = v ? (uint32_t)v & NCG_ORDER_MASK : NCG_HW_ORDER_NONE;
}

/* ---- blocking waits ---- */

/* The thread enters a blocking wait (its poll, if any, is over); slot_clear(s) ends it. */
static inline void wait_begin(struct hw_slot *s, uint32_t what, uint32_t rec, uint32_t order)
{
    hw_tls.poll_kind = 0;
    slot_put(s, what, rec, order, ncg_now_ns(), 0);
}

static int stream_sync(int i, void *stream, int ptsz, const void *ra)
{
    int (*f)(void *) = real(i);
    struct hw_slot *s;
    if (!f)
        return CUDA_ERROR_INIT;
    if (!observed(ra) || !(s = my_slot()))
        return f(stream);
    wait_begin(s, NCG_HW_STREAM | (uint32_t)stream_of(stream, ptsz) << 8, 0, NCG_HW_ORDER_NONE);
    int r = f(stream);
    slot_clear(s);
    return r;
}

NCG_EXPORT int cudaStreamSynchronize(void *stream)
{
    return stream_sync(R_SSYNC, stream, 0, __builtin_return_address(0));
}

NCG_EXPORT int cudaStreamSynchronize_ptsz(void *stream)
{
    return stream_sync(R_SSYNC_PTSZ, stream, 1, __builtin_return_address(0));
}

NCG_EXPORT int cudaEventSynchronize(void *event)
{
    int (*f)(void *) = real(R_ESYNC);
    struct hw_slot *s;
    if (!f)
        return CUDA_ERROR_INIT;
    if (!observed(__builtin_return_address(0)) || !(s = my_slot()))
        return f(event);
    uint32_t what, rec, order;
    ev_wait(event, NCG_HW_EVENT, &what, &rec, &order);
    wait_begin(s, what, rec, order);
    int r = f(event);
    slot_clear(s);
    return r;
}

NCG_EXPORT int cudaDeviceSynchronize(void)
{
    int (*f)(void) = real(R_DSYNC);
    struct hw_slot *s;
    if (!f)
        return CUDA_ERROR_INIT;
    if (!observed(__builtin_return_address(0)) || !(s = my_slot()))
        return f();
    wait_begin(s, NCG_HW_DEVICE | NCG_HW_STREAM_ALL << 8, 0, NCG_HW_ORDER_NONE);
    int r = f();
    slot_clear(s);
    return r;
}

/* ---- event records ---- */

/* After the application's record of event on stream (r: the runtime's result): remember the
 * stream and the calls this thread enqueued so far. A record inside a capture runs only at a
 * graph launch: the event is unknown until recorded again. */
static int recorded(int r, void *event, void *stream, int ptsz, const void *ra)
{
    if (!observed(ra))
        return r;
    if (hw_tls.poll_kind)
        poll_end();
    if (r != 0 || !event)
        return r;
    uint64_t val = 0;
    if (!ncg_graph_capturing())
        val = (uint64_t)ncg_tid() << 32 | (uint64_t)stream_of(stream, ptsz) << NCG_ORDER_BITS |
              (ncg_tls.order & NCG_ORDER_MASK);
    ev_note((uint64_t)(uintptr_t)event, val);
    return r;
}

static int record(int i, void *event, void *stream, const void *ra)
{
    int (*f)(void *, void *) = real(i);
    if (!f)
        return CUDA_ERROR_INIT;
    return recorded(f(event, stream), event, stream, i == R_REC_PTSZ, ra);
}

static int record_flags(int i, void *event, void *stream, unsigned int flags, const void *ra)
{
    int (*f)(void *, void *, unsigned int) = real(i);
    if (!f)
        return CUDA_ERROR_INIT;
    return recorded(f(event, stream, flags), event, stream, i == R_RECF_PTSZ, ra);
}

NCG_EXPORT int cudaEventRecord(void *event, void *stream)
{
    return record(R_REC, event, stream, __builtin_return_address(0));
}

NCG_EXPORT int cudaEventRecord_ptsz(void *event, void *stream)
{
    return record(R_REC_PTSZ, event, stream, __builtin_return_address(0));
}

NCG_EXPORT int cudaEventRecordWithFlags(void *event, void *stream, unsigned int flags)
{
    return record_flags(R_RECF, event, stream, flags, __builtin_return_address(0));
}

NCG_EXPORT int cudaEventRecordWithFlags_ptsz(void *event, void *stream, unsigned int flags)
{
    return record_flags(R_RECF_PTSZ, event, stream, flags, __builtin_return_address(0));
}

/* ---- polls ---- */

/* After the application's query of handle h (r: the runtime's result): NotReady marks the
 * thread polling h (a repeated poll of h only refreshes last_ns), anything else ends a poll. */
static int queried(int r, uint32_t kind, void *h, int ptsz, const void *ra)
{
    if (__builtin_expect(r != NCG_CUDA_NOT_READY, 1)) {
        if (hw_tls.poll_kind && observed(ra))
            poll_end();
        return r;
    }
    struct hw_slot *s;
    if (!observed(ra) || !(s = my_slot()))
        return r;
    uint64_t now = ncg_now_ns();
    if (hw_tls.poll_kind == kind && hw_tls.poll == h) {
        ck_pr_store_64(&s->last_ns, now); /* one word: a reader takes either value */
        return r;
    }
    uint32_t what, rec = 0, order = NCG_HW_ORDER_NONE;
    if (kind == NCG_HW_POLL_EVENT)
        ev_wait(h, kind, &what, &rec, &order);
    else
        what = kind | (uint32_t)stream_of(h, ptsz) << 8;
    slot_put(s, what, rec, order, now, now);
    hw_tls.poll_kind = (uint8_t)kind;
    hw_tls.poll = h;
    return r;
}

NCG_EXPORT int cudaEventQuery(void *event)
{
    int (*f)(void *) = real(R_EQUERY);
    if (!f)
        return CUDA_ERROR_INIT;
    return queried(f(event), NCG_HW_POLL_EVENT, event, 0, __builtin_return_address(0));
}

NCG_EXPORT int cudaStreamQuery(void *stream)
{
    int (*f)(void *) = real(R_SQUERY);
    if (!f)
        return CUDA_ERROR_INIT;
    return queried(f(stream), NCG_HW_POLL_STREAM, stream, 0, __builtin_return_address(0));
}

NCG_EXPORT int cudaStreamQuery_ptsz(void *stream)
{
    int (*f)(void *) = real(R_SQUERY_PTSZ);
    if (!f)
        return CUDA_ERROR_INIT;
    return queried(f(stream), NCG_HW_POLL_STREAM, stream, 1, __builtin_return_address(0));
}

/* ---- the checker's view ---- */

size_t ncg_hostwait_snapshot(struct ncg_hostwait *out, size_t cap, uint64_t now_ns)
{
    int saved = errno;
    uint32_t pid = (uint32_t)getpid();
    size_t n = 0;
    for (uint32_t i = 0; i < NCG_HW_SLOTS && n < cap; i++) {
        const struct hw_slot *s = &g_slots[i];
        if (!ck_pr_load_64(&s->owner))
            continue;
        for (int tries = 0; tries < 4; tries++) {
            uint32_t s1;
            if (!seq_read_begin(&s->seq, &s1)) /* pairs with slot_put's first store fence */
                continue;
            uint64_t owner = ck_pr_load_64(&s->owner);
            uint32_t what = ck_pr_load_32(&s->what);
            struct ncg_hostwait w = {
                .tid = (uint32_t)owner,
                .kind = (uint8_t)what,
                .stream = (uint8_t)(what >> 8),
                .rec_tid = ck_pr_load_32(&s->rec_tid),
                .order = ck_pr_load_32(&s->order),
                .since_ns = ck_pr_load_64(&s->since_ns),
                .last_ns = ck_pr_load_64(&s->last_ns),
            };
            if (!seq_read_ok(&s->seq, s1))
                continue;
            /* A thread that exited (or was cancelled) in a wait left its slot saying so. */
            if (w.kind && !owner_gone(owner, pid)) {
                if (!(w.kind & NCG_HW_POLL))
                    w.last_ns = now_ns;
                out[n++] = w;
            }
            break;
        }
    }
    errno = saved;
    return n;
}
