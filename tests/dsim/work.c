/* ncg-dsim's simulated shim and workloads: each rank runs a program of NCCL calls (collectives
 * on several communicators, a split, send/recv pairs), its counts, ring records and p2p records
 * kept as the shim keeps them; a collective completes when every member issued its slot, a
 * send when its receive was posted (synchronous NCCL: the caller blocks until then). Each
 * workload injects one fault and states the verdict it expects (struct expect). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsim.h"

static void *xcalloc(size_t n, size_t s)
{
    void *p = calloc(n ? n : 1, s);
    if (!p)
        abort();
    return p;
}

static uint32_t comm_new(uint64_t id, const uint32_t *granks, uint32_t n, int active)
{
    W.comm = realloc(W.comm, (W.ncomm + 1) * sizeof *W.comm);
    if (!W.comm)
        abort();
    struct comm *c = &W.comm[W.ncomm];
    memset(c, 0, sizeof *c);
    c->id = id;
    c->nranks = n;
    c->grank = xcalloc(n, sizeof *c->grank);
    memcpy(c->grank, granks, n * sizeof *granks);
    c->m = xcalloc(n, sizeof *c->m);
    for (uint32_t i = 0; i < n; i++) {
        c->m[i].active = (uint8_t)active;
        c->m[i].sent_to = xcalloc(n, sizeof(uint64_t));
        c->m[i].recv_from = xcalloc(n, sizeof(uint64_t));
    }
    c->stuck_slot = UINT64_MAX;
    return W.ncomm++;
}

static uint32_t crank_of(const struct comm *c, uint32_t g)
{
    for (uint32_t i = 0; i < c->nranks; i++)
        if (c->grank[i] == g)
            return i;
    return UINT32_MAX;
}

static void emit(struct rank *r, struct op o)
{
    r->prog = realloc(r->prog, (r->nprog + 1) * sizeof *r->prog);
    if (!r->prog)
        abort();
    r->prog[r->nprog++] = o;
}

static uint64_t digest_of(const struct rec *x)
{
    uint64_t h = 0xcbf29ce484222325ull;
    uint64_t f[5] = {x->func, x->count, x->dtype, x->redop, (uint64_t)(int64_t)x->root};
    for (int i = 0; i < 5; i++)
        h = (h ^ f[i]) * 0x100000001b3ull;
    return h;
}

/* ---- running ---- */
static void wake(struct rank *r)
{
    r->state = R_RUN;
    r->pc++;
    struct proc *p = &W.proc[r->proc];
    ev_push(W.now + proc_delay(p, rnd_range(r->compute_lo, r->compute_hi)), EV_RANK, r->g, 0);
}

static void coll_check(uint32_t ci, uint64_t slot)
{
    struct comm *c = &W.comm[ci];
    if (slot == c->stuck_slot)
        return;
    for (uint32_t i = 0; i < c->nranks; i++)
        if (c->m[i].issued <= slot)
            return;
    for (uint32_t i = 0; i < c->nranks; i++) {
        struct member *m = &c->m[i];
        if (m->done <= slot)
            m->done = slot + 1;
        struct rank *r = &W.rank[c->grank[i]];
        if (r->state == R_BLOCKED && !r->bp2p && r->bcomm == ci && r->bslot == slot) {
            const struct op *o = &r->prog[r->pc];
            if (o->kind == OP_SPLIT) { /* the child exists once the split returns */
                struct comm *ch = &W.comm[o->peer];
                uint32_t k = crank_of(ch, r->g);
                if (k != UINT32_MAX)
                    ch->m[k].active = 1;
            }
            wake(r);
        }
    }
}

static void p2p_post(struct rank *r, const struct op *o)
{
    struct comm *c = &W.comm[o->comm];
    uint32_t me = crank_of(c, r->g), peer = o->peer;
    struct member *m = &c->m[me];
    int send = o->kind == OP_SEND;
    uint64_t k = send ? m->sent_to[peer]++ : m->recv_from[peer]++;
    if (m->np2p == m->p2pcap) {
        m->p2pcap = m->p2pcap ? m->p2pcap * 2 : 16;
        m->p2p = realloc(m->p2p, m->p2pcap * sizeof *m->p2p);
        if (!m->p2p)
            abort();
    }
    m->p2p[m->np2p++] = (struct p2prec){.seq = k,
                                        .count = o->count,
                                        .peer = (int32_t)peer,
                                        .func = send ? NCG_F_SEND : NCG_F_RECV,
                                        .dtype = 7};
    r->state = R_BLOCKED;
    r->blocked_since = W.now;
    r->bcomm = o->comm;
    r->bcrank = me;
    r->bp2p = 1;
    r->bfunc = send ? NCG_F_SEND : NCG_F_RECV;
    r->bpeer = peer;
    r->bslot = k;
    /* the other side posted already: both complete */
    struct member *pm = &c->m[peer];
    uint64_t other = send ? pm->recv_from[me] : pm->sent_to[me];
    /* a send and its receive of different counts never complete (NCCL hangs or fails) */
    const struct p2prec *mine = &m->p2p[m->np2p - 1];
    int agree = 1;
    for (size_t i = 0; other > k && i < pm->np2p; i++)
        if (pm->p2p[i].seq == k && pm->p2p[i].peer == (int32_t)me && pm->p2p[i].func != mine->func)
            agree = pm->p2p[i].count == mine->count;
    if (other > k && agree) {
        struct rank *pr = &W.rank[c->grank[peer]];
        if (pr->state == R_BLOCKED && pr->bp2p && pr->bcomm == o->comm && pr->bpeer == me &&
            pr->bslot == k && pr->bfunc != r->bfunc)
            wake(pr);
        wake(r);
    }
}

void rank_step(struct rank *r)
{
    if (r->state != R_RUN || r->pc >= r->nprog)
        return;
    const struct op *o = &r->prog[r->pc];
    if (W.verbose > 2)
        trace("rank %u: op %zu of %zu: kind %u func %u comm %u", r->g, r->pc, r->nprog, o->kind,
              o->func, o->comm);
    switch (o->kind) {
    case OP_COLL:
    case OP_SPLIT: {
        struct comm *c = &W.comm[o->comm];
        uint32_t me = crank_of(c, r->g);
        struct member *m = &c->m[me];
        if (m->issued == m->cap) {
            m->cap = m->cap ? m->cap * 2 : 64;
            m->ring = realloc(m->ring, m->cap * sizeof *m->ring);
            if (!m->ring)
                abort();
        }
        struct rec *x = &m->ring[m->issued];
        *x = (struct rec){.count = o->count, .root = o->root, .func = o->func, .dtype = 7};
        x->digest = digest_of(x);
        r->state = R_BLOCKED;
        r->blocked_since = W.now;
        r->bcomm = o->comm;
        r->bcrank = me;
        r->bp2p = 0;
        r->bfunc = o->func;
        r->bslot = m->issued++;
        if (W.fault_rank == r->g && W.fault_comm == o->comm && W.fault_slot == r->bslot)
            check_fault_armed();
        coll_check(o->comm, r->bslot);
        break;
    }
    case OP_SEND:
    case OP_RECV:
        p2p_post(r, o);
        break;
    case OP_DESTROY: {
        struct comm *c = &W.comm[o->comm];
        check_fault_armed();
        agent_destroyed(&W.proc[r->proc], o->comm, crank_of(c, r->g));
        r->pc++;
        ev_push(W.now + 1 * MS, EV_RANK, r->g, 0);
        break;
    }
    case OP_SLEEP: /* a long stretch outside NCCL (a checkpoint written) */
        check_fault_armed();
        r->pc++;
        ev_push(W.now + o->count, EV_RANK, r->g, 0);
        break;
    case OP_END: {
        r->state = R_FINISHED;
        struct proc *p = &W.proc[r->proc];
        int all = 1;
        for (uint32_t i = 0; i < p->nranks; i++)
            all &= W.rank[p->first_rank + i].state == R_FINISHED;
        if (all) {
            if (W.early_proc == (int)p->id)
                check_fault_armed();
            agent_app_done(p);
        }
        break;
    }
    }
}

/* ---- workloads ---- */
static const char *const NAMES[] = {"healthy",  "mismatch", "p2p",       "death",     "exit",
                                    "deadlock", "stuck",    "hostfirst", "hostcrash", "reset",
                                    "lag",      "destroy",  NULL};
const char *const *work_names(void)
{
    return NAMES;
}

/* The common program: iterations of an AllReduce on the world, a split by parity at the
 * second, an AllReduce on the child from then on, a send/recv with the partner (rank ^ 1),
 * a Broadcast every fourth. The fault's knobs: the rank/iteration whose call differs. */
struct knobs {
    uint32_t iters;
    uint32_t odd_rank, odd_iter;   /* MISMATCH: its AllReduce's count differs */
    uint32_t p2p_rank, p2p_iter;   /* P2P MISMATCH: its send's count differs */
    uint32_t end_proc, end_iter;   /* the application of end_proc returns at end_iter */
    uint32_t lag_rank, lag_iter;   /* LAG: it spends 70 s outside NCCL before that iteration */
    uint32_t dest_rank, dest_iter; /* it destroys its child comm alone at that iteration */
};

static void program(struct rank *r, const struct knobs *k, uint32_t world, uint32_t child0)
{
    uint32_t n = W.nranks, g = r->g;
    int split = n >= 4;
    for (uint32_t i = 0; i < k->iters; i++) {
        if (r->proc == k->end_proc && i == k->end_iter)
            break;
        if (g == k->lag_rank && i == k->lag_iter)
            emit(r, (struct op){.kind = OP_SLEEP, .count = 70 * SEC});
        uint64_t cnt = (g == k->odd_rank && i == k->odd_iter) ? 1000 : 1024;
        emit(
            r,
            (struct op){
                .kind = OP_COLL, .func = NCG_F_ALLREDUCE, .comm = world, .count = cnt, .root = -1});
        if (split && i == 1)
            emit(r, (struct op){.kind = OP_SPLIT,
                                .func = NCG_F_COMMSPLIT,
                                .comm = world,
                                .peer = child0 + (g & 1),
                                .count = 0,
                                .root = -1});
        if (split && g == k->dest_rank && i == k->dest_iter)
            emit(r, (struct op){.kind = OP_DESTROY, .comm = child0 + (g & 1)});
        if (split && i >= 2 && !(g == k->dest_rank && i >= k->dest_iter))
            emit(r, (struct op){.kind = OP_COLL,
                                .func = NCG_F_ALLREDUCE,
                                .comm = child0 + (g & 1),
                                .count = 256,
                                .root = -1});
        uint32_t partner = g ^ 1;
        if (partner < n) {
            uint64_t pc = (g == k->p2p_rank && i == k->p2p_iter) ? 65 : 64;
            struct op s = {.kind = OP_SEND, .comm = world, .peer = partner, .count = pc};
            struct op v = {.kind = OP_RECV, .comm = world, .peer = partner, .count = 64};
            emit(r, (g & 1) ? v : s);
            emit(r, (g & 1) ? s : v);
        }
        if (i % 4 == 3)
            emit(r, (struct op){.kind = OP_COLL,
                                .func = NCG_F_BROADCAST,
                                .comm = world,
                                .count = 32,
                                .root = 0});
    }
    emit(r, (struct op){.kind = OP_END});
}

static void deadlock_program(struct rank *r, uint32_t a, uint32_t b, uint32_t iters)
{
    for (uint32_t i = 0; i < iters; i++) {
        emit(r, (struct op){
                    .kind = OP_COLL, .func = NCG_F_ALLREDUCE, .comm = a, .count = 8, .root = -1});
        emit(r, (struct op){
                    .kind = OP_COLL, .func = NCG_F_ALLREDUCE, .comm = b, .count = 8, .root = -1});
    }
    /* rank 0 then waits on a first, every other rank on b first: a cycle across the two */
    uint32_t first = r->g == 0 ? a : b, second = r->g == 0 ? b : a;
    emit(r, (struct op){
                .kind = OP_COLL, .func = NCG_F_ALLREDUCE, .comm = first, .count = 8, .root = -1});
    emit(r, (struct op){
                .kind = OP_COLL, .func = NCG_F_ALLREDUCE, .comm = second, .count = 8, .root = -1});
    emit(r, (struct op){.kind = OP_END});
}

int work_build(const char *name)
{
    uint32_t n = W.nranks;
    uint32_t *all = xcalloc(n, sizeof *all);
    for (uint32_t i = 0; i < n; i++)
        all[i] = i;
    uint32_t world = comm_new(0xc0000000000001ull, all, n, 1), child0 = 0;
    if (n >= 4) {
        uint32_t *half = xcalloc(n, sizeof *half);
        for (uint32_t col = 0; col < 2; col++) {
            uint32_t m = 0;
            for (uint32_t i = col; i < n; i += 2)
                half[m++] = i;
            uint32_t ci = comm_new(0xc1000000000000ull + col, half, m, 0);
            if (col == 0)
                child0 = ci;
        }
        free(half);
    }
    uint64_t budget = 240000 / n;
    struct knobs k = {.iters = (uint32_t)(budget < 6    ? 6
                                          : budget > 40 ? 40
                                                        : budget),
                      .odd_rank = UINT32_MAX,
                      .p2p_rank = UINT32_MAX,
                      .end_proc = UINT32_MAX,
                      .lag_rank = UINT32_MAX,
                      .dest_rank = UINT32_MAX};
    W.fault_rank = UINT32_MAX;
    W.early_proc = -1;
    struct expect *ex = &W.ex;
    memset(ex, 0, sizeof *ex);
    ex->kind = NCG_V_NONE;
    ex->severity = NCG_SEV_ERROR;
    ex->comm = world;
    ex->crank = UINT32_MAX;
    ex->bound = 15 * SEC;
    uint32_t victim = 1 + (uint32_t)rnd_below(W.nproc - 1); /* a process other than the host */
    uint32_t vrank = W.proc[victim].first_rank + (uint32_t)rnd_below(W.k);
    uint32_t it = 1 + (uint32_t)rnd_below(k.iters - 2);
    uint64_t at = rnd_range(50 * MS, 400 * MS);
    int deadlock = 0;
    uint32_t ca = 0, cb = 0;
    if (!strcmp(name, "healthy")) {
    } else if (!strcmp(name, "mismatch")) {
        k.odd_rank = vrank;
        k.odd_iter = it;
        ex->kind = NCG_V_MISMATCH;
        ex->crank = vrank;
        W.fault_rank = vrank;
        W.fault_comm = world;
        W.fault_slot = UINT64_MAX; /* found below from the program */
    } else if (!strcmp(name, "p2p")) {
        if (n < 2)
            return -1;
        k.p2p_rank = vrank;
        k.p2p_iter = it;
        ex->kind = NCG_V_P2P_MISMATCH;
        W.arm_at_start = 1;
    } else if (!strcmp(name, "death") || !strcmp(name, "reset")) {
        int reset = name[0] == 'r';
        W.fault = xcalloc(1, sizeof *W.fault);
        W.fault[W.nfault++] =
            (struct fault){.at = at, .kind = reset ? F_RESET : F_CRASH, .a = victim};
        ex->kind = NCG_V_RANK_DIED;
        ex->crank = W.proc[victim].first_rank;
        ex->comm = UINT32_MAX;
        ex->local_ok = 1;
    } else if (!strcmp(name, "exit") || !strcmp(name, "hostfirst")) {
        uint32_t who = name[0] == 'h' ? 0 : victim;
        k.end_proc = who;
        k.end_iter = it;
        W.early_proc = (int)who;
        ex->kind = NCG_V_RANK_EXITED;
        ex->crank = W.proc[who].first_rank;
    } else if (!strcmp(name, "hostcrash")) {
        W.fault = xcalloc(1, sizeof *W.fault);
        W.fault[W.nfault++] = (struct fault){.at = at, .kind = F_CRASH, .a = 0};
        ex->kind = NCG_V_RANK_DIED;
        ex->crank = 0;
        ex->local_ok = 1;
    } else if (!strcmp(name, "deadlock")) {
        deadlock = 1;
        ca = comm_new(0xd0000000000001ull, all, n, 1);
        cb = comm_new(0xd0000000000002ull, all, n, 1);
        ex->kind = NCG_V_DEADLOCK;
        ex->comm = UINT32_MAX;
        W.arm_at_start = 1;
    } else if (!strcmp(name, "destroy")) {
        if (n < 4) /* no split below 4 ranks: nothing to destroy alone, a healthy run */
            goto done;
        k.dest_rank = vrank;
        k.dest_iter = it < 2 ? 2 : it;
        ex->kind = NCG_V_RANK_EXITED;
        ex->comm = UINT32_MAX;
    } else if (!strcmp(name, "lag")) {
        k.lag_rank = vrank;
        k.lag_iter = it;
        ex->kind = NCG_V_LAG;
        ex->severity = NCG_SEV_WARN;
        ex->comm = UINT32_MAX;
        ex->bound = 80 * SEC;
    } else if (!strcmp(name, "stuck")) {
        W.comm[world].stuck_slot = 2 + rnd_below(6);
        ex->kind = NCG_V_STUCK;
        ex->severity = NCG_SEV_WARN;
        ex->bound = 80 * SEC;
        W.arm_at_start = 1;
    } else {
        free(all);
        return -1;
    }
done:
    free(all);
    uint32_t dl_iters = 2 + (uint32_t)rnd_below(4); /* the same on every rank */
    for (uint32_t g = 0; g < n; g++) {
        struct rank *r = &W.rank[g];
        r->compute_lo = 2 * MS;
        r->compute_hi = 2 * MS + rnd_range(2 * MS, 10 * MS);
        if (deadlock)
            deadlock_program(r, ca, cb, dl_iters);
        else
            program(r, &k, world, child0);
    }
    if (k.odd_rank != UINT32_MAX) { /* the world slot of the odd call */
        const struct rank *r = &W.rank[k.odd_rank];
        uint64_t s = 0;
        for (size_t i = 0; i < r->nprog; i++) {
            const struct op *o = &r->prog[i];
            if ((o->kind == OP_COLL || o->kind == OP_SPLIT) && o->comm == world) {
                if (o->count == 1000) { /* NCCL hangs on it (or corrupts): make it hang */
                    W.fault_slot = s;
                    W.comm[world].stuck_slot = s;
                    break;
                }
                s++;
            }
        }
    }
    if (W.arm_at_start)
        check_fault_armed();
    return 0;
}

void work_free(void)
{
    for (uint32_t i = 0; i < W.ncomm; i++) {
        struct comm *c = &W.comm[i];
        for (uint32_t j = 0; j < c->nranks; j++) {
            free(c->m[j].ring);
            free(c->m[j].p2p);
            free(c->m[j].sent_to);
            free(c->m[j].recv_from);
        }
        free(c->m);
        free(c->grank);
    }
    free(W.comm);
    for (uint32_t r = 0; r < W.nranks; r++)
        free(W.rank[r].prog);
    free(W.rank);
    free(W.proc);
    free(W.fault);
}
