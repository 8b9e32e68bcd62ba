/* mx: the one NCCL program behind the divergence matrix (tests/matrix/README.md). Every case is
 * `mx KIND FAULT [VICTIM]` under ncg-launch (one process per rank), or `mx -T N KIND FAULT
 * [VICTIM]` (N ranks as threads of one process, one ncclCommInitRank each). Each rank runs 20
 * iterations of KIND on its communicators, completing each as $MX_COMPLETE says (sync: the
 * host's synchronization; event: a CUDA event polled every 1 ms, asynchronous mode only; group:
 * the whole iteration in one ncclGroupStart/End, the host waits only at the end), then destroys
 * its communicators and returns 0. At iteration 10 the victim (default: the last rank) applies
 * FAULT, printing "mx: diverge at <unix time>" to stderr first. What each KIND and FAULT do, and
 * which pairs make sense: usage() below and the README. Unexpected NCCL errors exit 5. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"

#define MX_ITERS 20
#define MX_FAULT_ITER 10
#define MX_COUNT 16
#define MX_MAX_RANKS 16
#define MX_MAX_OPS (2 * MX_MAX_RANKS + 4)
#define MX_BUF_FLOATS (4 * MX_MAX_RANKS * (MX_COUNT + 1))

enum fn {
    F_ALLREDUCE,
    F_BROADCAST,
    F_REDUCE,
    F_ALLGATHER,
    F_REDUCESCATTER,
    F_ALLTOALL,
    F_GATHER,
    F_SCATTER,
    F_SEND,
    F_RECV
};

static const char *const kinds[] = {
    "coll_allreduce",     "coll_broadcast", "coll_reduce", "coll_allgather",
    "coll_reducescatter", "coll_alltoall",  "coll_gather", "coll_scatter",
    "p2p_ring",           "p2p_pair",       "p2p_gather",  "p2p_scatter",
    "p2p_alltoall",       "mixed",          "split",       "dup"};
enum kind {
    K_ALLREDUCE,
    K_BROADCAST,
    K_REDUCE,
    K_ALLGATHER,
    K_REDUCESCATTER,
    K_ALLTOALL,
    K_GATHER,
    K_SCATTER,
    K_RING,
    K_PAIR,
    K_P2P_GATHER,
    K_P2P_SCATTER,
    K_P2P_ALLTOALL,
    K_MIXED,
    K_SPLIT,
    K_DUP,
    K_NKINDS
};

static const char *const faults[] = {"none",  "swap",  "skip",    "extra",   "count",
                                     "dtype", "op",    "root",    "peer",    "comm",
                                     "exit",  "crash", "ncclerr", "recvrecv"};
enum fault {
    X_NONE,
    X_SWAP,
    X_SKIP,
    X_EXTRA,
    X_COUNT,
    X_DTYPE,
    X_OP,
    X_ROOT,
    X_PEER,
    X_COMM,
    X_EXIT,
    X_CRASH,
    X_NCCLERR,
    X_RECVRECV,
    X_NFAULTS
};

enum complete { C_SYNC, C_EVENT, C_GROUP };

struct op {
    enum fn fn;
    ncclComm_t comm;
    size_t count;
    ncclDataType_t dt;
    ncclRedOp_t rop;
    int peer; /* the root of a rooted collective, the peer of a send/recv */
};
/* One step: a single call, or several inside one ncclGroupStart/End. */
struct step {
    int grouped, nops;
    struct op ops[MX_MAX_OPS];
};
struct iter {
    int nsteps;
    struct step steps[3];
};

/* One rank: a process's only one, or one thread's. */
struct rk {
    int rank, n;
    ncclComm_t world, child, dup, other; /* child: split by rank%2; dup, other: one color */
    cudaStream_t s;
    float *bufs; /* per op index: a send and a receive buffer */
    struct iter it;
};

static enum kind g_kind;
static enum fault g_fault;
static enum complete g_complete;
static int g_victim = -1;

#define CK(r_, call)                                                                               \
    do {                                                                                           \
        ncclResult_t e_ = (call);                                                                  \
        if (e_ != ncclSuccess) {                                                                   \
            fprintf(stderr, "mx: rank %d: %s: %s\n", (r_)->rank, #call, ncclGetErrorString(e_));   \
            exit(5);                                                                               \
        }                                                                                          \
    } while (0)

static void usage(void)
{
    fprintf(stderr,
            "usage: mx [-T NRANKS] KIND FAULT [VICTIM]   (env MX_COMPLETE=sync|event|group)\n"
            "  KIND:  coll_allreduce coll_broadcast coll_reduce coll_allgather coll_reducescatter\n"
            "         coll_alltoall coll_gather coll_scatter p2p_ring p2p_pair p2p_gather\n"
            "         p2p_scatter p2p_alltoall mixed split dup\n"
            "  FAULT: none swap skip extra count dtype op root peer comm exit crash ncclerr\n"
            "         recvrecv (applied by VICTIM, default the last rank, at iteration %d)\n",
            MX_FAULT_ITER);
    exit(2);
}

static int lookup(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

static void mark(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    fprintf(stderr, "mx: diverge at %ld.%03ld\n", (long)tv.tv_sec, (long)tv.tv_usec / 1000);
}

/* ---- one iteration, as a list of steps ---- */

static struct step *new_step(struct iter *it, int grouped)
{
    struct step *s = &it->steps[it->nsteps++];
    s->grouped = grouped;
    s->nops = 0;
    return s;
}

static void add(struct step *s, enum fn f, ncclComm_t c, int peer)
{
    s->ops[s->nops++] = (struct op){f, c, MX_COUNT, ncclFloat32, ncclSum, peer};
}

static int has_rop(enum fn f)
{
    return f == F_ALLREDUCE || f == F_REDUCE || f == F_REDUCESCATTER;
}

/* The body of iteration i on rank r, root as given (the victim of "root" passes another). */
static void build(struct rk *k, int i, int root)
{
    static const enum fn coll_fn[] = {F_ALLREDUCE,     F_BROADCAST, F_REDUCE, F_ALLGATHER,
                                      F_REDUCESCATTER, F_ALLTOALL,  F_GATHER, F_SCATTER};
    struct iter *it = &k->it;
    int r = k->rank, n = k->n, next = (r + 1) % n, prev = (r + n - 1) % n;
    struct step *s;
    it->nsteps = 0;
    switch (g_kind) {
    case K_RING:
        s = new_step(it, 1);
        add(s, F_SEND, k->world, next);
        add(s, F_RECV, k->world, prev);
        break;
    case K_PAIR: { /* 0-1, 2-3, ...; an odd last rank idles; blocking order, no group */
        int partner = r ^ 1;
        if (partner >= n)
            break;
        enum fn first = r % 2 ? F_RECV : F_SEND, second = r % 2 ? F_SEND : F_RECV;
        add(new_step(it, 0), first, k->world, partner);
        add(new_step(it, 0), second, k->world, partner);
        break;
    }
    case K_P2P_GATHER:
    case K_P2P_SCATTER: {
        int gather = g_kind == K_P2P_GATHER;
        s = new_step(it, 1);
        if (r == root) {
            for (int p = 0; p < n; p++)
                if (p != root)
                    add(s, gather ? F_RECV : F_SEND, k->world, p);
        } else {
            add(s, gather ? F_SEND : F_RECV, k->world, root);
        }
        break;
    }
    case K_P2P_ALLTOALL:
        s = new_step(it, 1);
        for (int d = 1; d < n; d++) {
            add(s, F_SEND, k->world, (r + d) % n);
            add(s, F_RECV, k->world, (r + n - d) % n);
        }
        break;
    case K_MIXED:
        add(new_step(it, 0), F_ALLREDUCE, k->world, 0);
        s = new_step(it, 1);
        add(s, F_SEND, k->world, next);
        add(s, F_RECV, k->world, prev);
        break;
    case K_SPLIT:
        add(new_step(it, 0), F_ALLREDUCE, k->child, 0);
        add(new_step(it, 0), F_ALLREDUCE, k->world, 0);
        break;
    case K_DUP:
        add(new_step(it, 0), F_ALLREDUCE, i % 2 ? k->dup : k->world, 0);
        break;
    default:
        add(new_step(it, 0), coll_fn[g_kind], k->world, root);
        break;
    }
}

static struct op *first_op(struct iter *it)
{
    for (int s = 0; s < it->nsteps; s++)
        if (it->steps[s].nops > 0)
            return &it->steps[s].ops[0];
    return NULL;
}

/* Another peer than p and than the rank itself (n >= 3). */
static int other_peer(const struct rk *k, int p)
{
    int q = (p + 1) % k->n;
    if (q == k->rank)
        q = (q + 1) % k->n;
    return q;
}

/* The fault, on the iteration's steps of the rank that applies it (the process-level faults
 * end here). */
static void apply(struct rk *k, int i)
{
    struct iter *it = &k->it;
    struct op *o = first_op(it);
    switch (g_fault) {
    case X_SWAP:
        if (g_kind == K_DUP) { /* this iteration's call and the next one's, on the other comm */
            it->steps[0].ops[0].comm = i % 2 ? k->world : k->dup;
        } else if (it->nsteps >= 2) {
            struct step t = it->steps[0];
            it->steps[0] = it->steps[1];
            it->steps[1] = t;
        } else if (it->nsteps == 1) { /* one group: its calls in the other order */
            struct step *s = &it->steps[0];
            for (int a = 0, b = s->nops - 1; a < b; a++, b--) {
                struct op t = s->ops[a];
                s->ops[a] = s->ops[b];
                s->ops[b] = t;
            }
        }
        break;
    case X_SKIP:
        it->nsteps = 0;
        break;
    case X_EXTRA:
        if (o)
            add(new_step(it, 0), o->fn, o->comm, o->peer);
        break;
    case X_COUNT:
        if (o)
            o->count++;
        break;
    case X_DTYPE: /* same size: a send/recv pair still matches in bytes */
        if (o)
            o->dt = ncclInt32;
        break;
    case X_OP:
        for (int s = 0; s < it->nsteps; s++)
            for (int j = 0; j < it->steps[s].nops; j++)
                if (has_rop(it->steps[s].ops[j].fn)) {
                    it->steps[s].ops[j].rop = ncclMax;
                    return;
                }
        break;
    case X_PEER: /* the first send or receive (mixed: after the AllReduce) */
        for (int s = 0; s < it->nsteps; s++)
            for (int j = 0; j < it->steps[s].nops; j++) {
                struct op *p = &it->steps[s].ops[j];
                if (p->fn == F_SEND || p->fn == F_RECV) {
                    p->peer = other_peer(k, p->peer);
                    return;
                }
            }
        break;
    case X_COMM:
        if (o)
            o->comm = k->other;
        break;
    case X_RECVRECV: /* the even rank of the pair receives first too */
        if (it->nsteps == 2) {
            struct step t = it->steps[0];
            it->steps[0] = it->steps[1];
            it->steps[1] = t;
        }
        break;
    case X_EXIT:
        exit(0); /* no destroy: atexit handlers run */
    case X_CRASH:
        raise(SIGKILL);
        break;
    case X_NCCLERR: {
        ncclResult_t r = ncclSend(k->bufs, 8, ncclFloat32, k->n, k->world, k->s);
        fprintf(stderr, "mx: rank %d: ncclSend to peer %d: %s\n", k->rank, k->n,
                ncclGetErrorString(r));
        exit(r == ncclSuccess ? 4 : 3);
    }
    default:
        break;
    }
}

static void issue(struct rk *k, const struct op *o, int idx)
{
    float *sb = k->bufs + (size_t)idx * 2 * MX_BUF_FLOATS, *rb = sb + MX_BUF_FLOATS;
    switch (o->fn) {
    case F_ALLREDUCE:
        CK(k, ncclAllReduce(sb, rb, o->count, o->dt, o->rop, o->comm, k->s));
        break;
    case F_BROADCAST:
        CK(k, ncclBroadcast(sb, rb, o->count, o->dt, o->peer, o->comm, k->s));
        break;
    case F_REDUCE:
        CK(k, ncclReduce(sb, rb, o->count, o->dt, o->rop, o->peer, o->comm, k->s));
        break;
    case F_ALLGATHER:
        CK(k, ncclAllGather(sb, rb, o->count, o->dt, o->comm, k->s));
        break;
    case F_REDUCESCATTER:
        CK(k, ncclReduceScatter(sb, rb, o->count, o->dt, o->rop, o->comm, k->s));
        break;
    case F_ALLTOALL:
        CK(k, ncclAlltoAll(sb, rb, o->count, o->dt, o->comm, k->s));
        break;
    case F_GATHER:
        CK(k, ncclGather(sb, rb, o->count, o->dt, o->peer, o->comm, k->s));
        break;
    case F_SCATTER:
        CK(k, ncclScatter(sb, rb, o->count, o->dt, o->peer, o->comm, k->s));
        break;
    case F_SEND:
        CK(k, ncclSend(sb, o->count, o->dt, o->peer, o->comm, k->s));
        break;
    case F_RECV:
        CK(k, ncclRecv(rb, o->count, o->dt, o->peer, o->comm, k->s));
        break;
    }
}

/* ---- completion by a CUDA event (asynchronous mode) ---- */

static struct {
    int (*create)(void **, unsigned int);
    int (*record)(void *, cudaStream_t);
    int (*query)(void *);
    int (*destroy)(void *);
} g_ev;

static pthread_once_t g_ev_once = PTHREAD_ONCE_INIT;
static int g_ev_ok;

/* The runtime ncg_test_stream() loaded (libcudart.so.13 of tests/fakecuda), its functions
 * looked up through the dynamic linker as a program linked with it calls them (a preloaded
 * library sees them; the handle's own symbols are the fallback). */
static void *ev_sym(void *h, const char *name)
{
    void *f = dlsym(RTLD_DEFAULT, name);
    return f ? f : dlsym(h, name);
}

static void event_load_once(void)
{
    void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return;
    g_ev.create = (int (*)(void **, unsigned int))ev_sym(h, "cudaEventCreateWithFlags");
    g_ev.record = (int (*)(void *, cudaStream_t))ev_sym(h, "cudaEventRecord");
    g_ev.query = (int (*)(void *))ev_sym(h, "cudaEventQuery");
    g_ev.destroy = (int (*)(void *))ev_sym(h, "cudaEventDestroy");
    g_ev_ok = g_ev.create && g_ev.record && g_ev.query && g_ev.destroy;
}

/* 0, or -1 when no CUDA runtime runs the calls (synchronous mode: event is sync there). Any
 * thread, after ncg_test_stream(). */
static int event_load(void)
{
    if (!ncg_test_async())
        return -1;
    pthread_once(&g_ev_once, event_load_once);
    return g_ev_ok ? 0 : -1;
}

static void event_wait(struct rk *k, void *ev)
{
    int e = g_ev.record(ev, k->s);
    if (e == 0)
        while ((e = g_ev.query(ev)) == 600 /* cudaErrorNotReady */)
            usleep(1000);
    if (e != 0) {
        fprintf(stderr, "mx: rank %d: CUDA event: error %d\n", k->rank, e);
        exit(5);
    }
    ncclResult_t ae = ncclSuccess;
    CK(k, ncclCommGetAsyncError(k->world, &ae));
    CK(k, ae);
}

/* ---- one rank ---- */

static void run_rank(struct rk *k)
{
    int n = k->n, r = k->rank, victim = g_victim >= 0 ? g_victim : n - 1;
    /* recvrecv: the even rank of the victim's pair turns (the odd one receives first anyway) */
    int applier = g_fault == X_RECVRECV ? victim & ~1 : victim;
    void *ev = NULL;
    k->s = ncg_test_stream();
    k->bufs = calloc((size_t)MX_MAX_OPS * 2 * MX_BUF_FLOATS, sizeof(float));
    if (!k->bufs) {
        fprintf(stderr, "mx: out of memory\n");
        exit(5);
    }
    if (g_kind == K_SPLIT)
        CK(k, ncclCommSplit(k->world, r % 2, r, &k->child, NULL));
    if (g_kind == K_DUP)
        CK(k, ncclCommSplit(k->world, 0, r, &k->dup, NULL));
    if (g_fault == X_COMM) /* a comm every rank has, that only the victim will use */
        CK(k, ncclCommSplit(k->world, 0, r, &k->other, NULL));
    if (g_complete == C_EVENT && event_load() == 0 && g_ev.create(&ev, 0x02 /* DisableTiming */))
        ev = NULL;
    for (int i = 0; i < MX_ITERS; i++) {
        int faulty = r == applier && g_fault != X_NONE &&
                     (i == MX_FAULT_ITER ||
                      (g_fault == X_SWAP && g_kind == K_DUP && i == MX_FAULT_ITER + 1));
        build(k, i, faulty && g_fault == X_ROOT ? 1 % n : 0);
        if (faulty) {
            if (i == MX_FAULT_ITER)
                mark();
            apply(k, i);
        }
        if (g_complete == C_GROUP)
            CK(k, ncclGroupStart());
        int idx = 0;
        for (int s = 0; s < k->it.nsteps; s++) {
            struct step *st = &k->it.steps[s];
            if (st->grouped)
                CK(k, ncclGroupStart());
            for (int j = 0; j < st->nops; j++)
                issue(k, &st->ops[j], idx++);
            if (st->grouped)
                CK(k, ncclGroupEnd());
        }
        if (g_complete == C_GROUP)
            CK(k, ncclGroupEnd());
        else if (ev)
            event_wait(k, ev);
        else
            CK(k, ncg_test_sync(k->world));
    }
    CK(k, ncg_test_sync(k->world));
    if (ev)
        g_ev.destroy(ev);
    if (k->child)
        CK(k, ncclCommDestroy(k->child));
    if (k->dup)
        CK(k, ncclCommDestroy(k->dup));
    if (k->other)
        CK(k, ncclCommDestroy(k->other));
    CK(k, ncclCommDestroy(k->world));
    free(k->bufs);
}

/* ---- the thread layout ---- */

struct thr {
    struct rk k;
    ncclUniqueId id;
    pthread_t th;
};

static void *rank_thread(void *arg)
{
    struct thr *t = arg;
    CK(&t->k, ncclCommInitRank(&t->k.world, t->k.n, t->id, t->k.rank));
    run_rank(&t->k);
    return NULL;
}

int main(int argc, char **argv)
{
    int a = 1, threads = 0;
    if (a + 1 < argc && !strcmp(argv[a], "-T")) {
        threads = atoi(argv[a + 1]);
        a += 2;
        if (threads < 1 || threads > MX_MAX_RANKS)
            usage();
    }
    if (argc - a < 2 || argc - a > 3)
        usage();
    int kd = lookup(argv[a], kinds, K_NKINDS), ft = lookup(argv[a + 1], faults, X_NFAULTS);
    if (kd < 0 || ft < 0)
        usage();
    g_kind = (enum kind)kd;
    g_fault = (enum fault)ft;
    if (argc - a == 3)
        g_victim = atoi(argv[a + 2]);
    const char *c = getenv("MX_COMPLETE");
    if (!c || !*c || !strcmp(c, "sync"))
        g_complete = C_SYNC;
    else if (!strcmp(c, "event"))
        g_complete = C_EVENT;
    else if (!strcmp(c, "group"))
        g_complete = C_GROUP;
    else
        usage();

    if (threads) {
        ncclUniqueId id;
        ncclResult_t r = ncclGetUniqueId(&id);
        if (r != ncclSuccess) {
            fprintf(stderr, "mx: ncclGetUniqueId: %s\n", ncclGetErrorString(r));
            return 5;
        }
        struct thr *t = calloc((size_t)threads, sizeof *t);
        if (!t)
            return 5;
        for (int i = 0; i < threads; i++) {
            t[i].k.rank = i;
            t[i].k.n = threads;
            t[i].id = id;
            if (pthread_create(&t[i].th, NULL, rank_thread, &t[i]) != 0) {
                fprintf(stderr, "mx: pthread_create failed\n");
                return 5;
            }
        }
        for (int i = 0; i < threads; i++)
            pthread_join(t[i].th, NULL);
        free(t);
        return 0;
    }
    struct rk k = {.rank = ncg_test_rank(), .n = ncg_test_world()};
    if (k.n > MX_MAX_RANKS) {
        fprintf(stderr, "mx: at most %d ranks\n", MX_MAX_RANKS);
        return 2;
    }
    ncclUniqueId id;
    if (ncg_test_share_id(&id) != 0)
        return 5;
    CK(&k, ncclCommInitRank(&k.world, k.n, id, k.rank));
    run_rank(&k);
    return 0;
}
