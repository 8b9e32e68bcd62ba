/* Relay unit tests, DEADLOCK through the tree (relay_dl.c): the RWAIT codec, a lock-order
 * inversion of threads and of streams found at the root, no verdict once the waits end, and the
 * root's table of waiting processes at 5,000 processes. */
#include "relay_unit.h"

/* Comms A (0xa0) and B (0xb0) of the 6 ranks, taken A then B; rank `inv` (under relay `inv /
 * 2`) takes B first at slot 20: each rank's REPORT (both comms) and WAIT (streams 0: the
 * blocked thread's call; 1: the calls queued on its stream, asynchronous NCCL). */
static void dl_report(int inv, int streams, int waits)
{
    for (int i = 0; i < T.ncl; i++) {
        struct client *c = &T.cl[i];
        int me = c->rank == inv;
        static struct ncg_msg m;
        memset(&m, 0, sizeof m);
        m.type = NCG_MSG_REPORT;
        m.u.report.n = 2;
        for (int k = 0; k < 2; k++) { /* A: the others issued 21; B: rank inv did */
            struct ncg_report_entry *e = &m.u.report.e[k];
            e->comm_id = k ? 0xb0 : 0xa0;
            e->nranks = (uint32_t)T.ncl;
            e->rank = (uint32_t)c->rank;
            e->count = (k == 1) == me ? 21 : 20;
            e->done = e->done_hi = 20;
            e->global_rank = c->rank;
            e->tid = c->pid;
        }
        push(TO_CHILD, c->relay, c->conn, &m);
        memset(&m, 0, sizeof m);
        m.type = NCG_MSG_WAIT;
        for (int q = 0; waits && q < (streams ? 2 : 1); q++) {
            struct ncg_wait_ent *w = &m.u.wait.w[m.u.wait.n++];
            w->comm_id = (q == 1) != me ? 0xb0 : 0xa0;
            w->rank = (uint32_t)c->rank;
            w->tid = c->pid;
            w->queued = (uint8_t)streams;
            w->stream = streams ? 1 : 0;
            w->order = streams ? (uint32_t)q + 1 : 0;
            w->call = (struct ncg_call){20, 8, -1, 1, 7, 0};
            snprintf(w->site, sizeof w->site, "train_step+0x%x", 16 * (q + 1));
        }
        push(TO_CHILD, c->relay, c->conn, &m);
    }
    pump();
}

static void dl_run(int inv, int streams, int ticks, int waits_until)
{
    for (int t = 0; t < ticks; t++) {
        dl_report(inv, streams, t < waits_until);
        tick_all(3);
    }
}

void test_deadlock(void)
{
    static struct ncg_msg m, o;
    /* the RWAIT codec: a round trip, and refused fields */
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RWAIT;
    struct ncg_msg_rwait *w = calloc(1, sizeof *w);
    w->node = 3;
    w->conn = 5;
    w->pid = 77;
    w->grank = 12;
    strcpy(w->host, "node3");
    w->gen = 9;
    w->nm = 2;
    w->m[0] = (struct ncg_rwait_mem){0xa0, 16, 12, 777, 21, 20};
    w->m[1] = (struct ncg_rwait_mem){0xb0, 4, 3, 778, 5, 4};
    w->w.n = 1;
    w->w.w[0] = (struct ncg_wait_ent){.comm_id = 0xa0,
                                      .rank = 12,
                                      .tid = 777,
                                      .queued = 1,
                                      .stream = 2,
                                      .order = 5,
                                      .call = {20, 8, -1, 1, 7, 0}};
    strcpy(w->w.w[0].site, "f+0x10");
    m.u.rwait = w;
    roundtrip(&m, &o);
    CHECK(o.type == NCG_MSG_RWAIT && o.u.rwait && !memcmp(o.u.rwait, w, sizeof *w));
    ncg_msg_release(&o);
    w->m[1].rank = 4; /* not below its nranks */
    CHECK(encode_decode(&m) < 0);
    w->m[1].rank = 3;
    w->nm = NCG_WIRE_MAX_COMMS + 1;
    CHECK(encode_decode(&m) < 0);
    free(w);

    /* threads: rank 0 (at the root) in A's slot 20, which rank 4 (two levels down) has not
     * issued, being in B's slot 20, which the others have not: every rank gets a DEADLOCK on
     * each comm, naming the cycle */
    for (int inv = 4; inv >= 1; inv -= 3) { /* rank 4: two levels down; rank 1: at the root */
        tree(1);
        dl_run(inv, 0, 6, 6);
        for (int i = 0; i < T.ncl; i++)
            CHECK(T.cl[i].verdicts == 2 && T.cl[i].v && T.cl[i].v->kind == NCG_V_DEADLOCK &&
                  T.cl[i].v->severity == NCG_SEV_ERROR && T.cl[i].v->slot == 20);
        const struct ncg_verdict *v = T.cl[5].v;
        char want[160];
        snprintf(want, sizeof want,
                 "global rank %d (rank %d of comm 00000000000000b0, pid %d on h, thread %d): "
                 "in slot 20 AllReduce(count=8, float32, sum) from train_step+0x10; waits for",
                 inv, inv, 1000 + inv, 1000 + inv);
        if (v) {
            CHECK(!strncmp(v->detail, "global ranks ", 13) &&
                  strstr(v->detail, " wait on each other across comms ") &&
                  strstr(v->detail, "00000000000000a0") && strstr(v->detail, "00000000000000b0"));
            CHECK(v->notes && strstr(v->notes, "cycle of 2 (each waits for the next") == v->notes &&
                  strstr(v->notes, want));
        }
        struct ncg_relay_stats st;
        ncg_relay_get_stats(T.r[0], &st);
        CHECK(st.verdicts == 2);
        tree_free(3);
    }

    /* asynchronous NCCL: the same inversion in the order on the ranks' streams */
    tree(1);
    dl_run(4, 1, 6, 6);
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 2 && T.cl[i].v && T.cl[i].v->kind == NCG_V_DEADLOCK);
    if (T.cl[2].v)
        CHECK(T.cl[2].v->notes && strstr(T.cl[2].v->notes, "asynchronous NCCL: each rank below") &&
              strstr(T.cl[2].v->notes, "global rank 4 (rank 4 of comm 00000000000000b0, pid 1004 "
                                       "on h, thread 1004, stream 1): in slot 20"));
    tree_free(3);

    /* seen once, then the WAITs stop (the calls completed): no verdict; nor when nobody
     * inverted (everyone in A's slot 20 waits for nobody) */
    tree(1);
    dl_run(4, 0, 8, 1);
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 0);
    tree_free(3);
    /* and WAITs that repeat go up once: 30 intervals of a hang without a cycle cost the leaf
     * relay one RWAIT per process (with the cycle: the first ones and one refresh each after
     * the root's RASK) */
    tree(1);
    dl_run(-1, 0, 30, 30);
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 0);
    CHECK(T.rwait_up[2] == 2 && T.rwait_up[1] == 4);
    tree_free(3);
    tree(1);
    dl_run(4, 0, 30, 30);
    CHECK(T.cl[0].verdicts == 2);
    CHECK(T.rwait_up[2] >= 4 && T.rwait_up[2] <= 6);
    tree_free(3);
}

/* The root's table of waiting processes at scale, fed RWAITs as if from child relay 1 (conn 2):
 * NP processes of comms 0xe0 and 0xf0 (NP ranks each) blocked in 0xe0's slot 20, `inv` (or
 * none: -1) in 0xf0's first; the rest (`from` on) only, as earlier ones left. */
#define DL_NP 5000u
static void dl_many(int inv, uint32_t from, uint64_t gen, int empty_below)
{
    static struct ncg_msg_rwait w;
    struct ncg_msg m = {.type = NCG_MSG_RWAIT};
    m.u.rwait = &w;
    for (uint32_t k = 0; k < DL_NP; k++) {
        if (k < from && !empty_below)
            continue;
        memset(&w, 0, sizeof w);
        w.node = 1 + k % 7; /* keys that collide on pid across nodes and connections */
        w.conn = k / 7;
        w.pid = 4242;
        w.grank = (int32_t)k;
        strcpy(w.host, "same-host");
        w.gen = gen;
        if (k >= from) {
            w.nm = 2;
            for (int c = 0; c < 2; c++)
                w.m[c] = (struct ncg_rwait_mem){
                    c ? 0xf0 : 0xe0, DL_NP, k, 7, (c == 1) == ((int)k == inv) ? 21 : 20, 20};
            w.w.n = 1;
            w.w.w[0] = (struct ncg_wait_ent){.comm_id = (int)k == inv ? 0xf0 : 0xe0,
                                             .rank = k,
                                             .tid = 7,
                                             .call = {20, 8, -1, 1, 7, 0}};
        }
        push(TO_CHILD, 0, 2, &m);
        if (k % 1000 == 999)
            pump();
    }
    pump();
}

void test_deadlock_many(void)
{
    tree(1);
    static struct ncg_msg st;
    memset(&st, 0, sizeof st);
    st.type = NCG_MSG_RSTAT;
    st.u.rstat.n = 2;
    for (int c = 0; c < 2; c++)
        st.u.rstat.e[c] = (struct ncg_rstat_ent){.comm_id = c ? 0xf0 : 0xe0,
                                                 .nranks = DL_NP,
                                                 .known = DL_NP,
                                                 .active = DL_NP,
                                                 .min = 20,
                                                 .max = 21,
                                                 .dmin = 20,
                                                 .dhi = 20};
    uint64_t gen = 1;
    for (int t = 0; t < 4; t++) { /* every process waits; nobody inverted: no verdict */
        push(TO_CHILD, 0, 2, &st);
        dl_many(-1, 0, gen++, 0);
        T.now += 100000000ull;
        ncg_relay_tick(T.r[0], T.now);
        pump();
    }
    struct ncg_relay_stats s0;
    ncg_relay_get_stats(T.r[0], &s0);
    CHECK(s0.verdicts == 0);
    /* 4,000 leave (empty RWAITs: removals, the index rebuilt), then process 4,500 of the
     * others is found inverted: its record, not a stale copy, makes the cycle */
    dl_many(-1, 4000, gen++, 1);
    for (int t = 0; t < 6; t++) {
        push(TO_CHILD, 0, 2, &st);
        dl_many(4500, 4000, gen++, 0);
        T.now += 100000000ull;
        ncg_relay_tick(T.r[0], T.now);
        pump();
    }
    ncg_relay_get_stats(T.r[0], &s0);
    CHECK(s0.verdicts == 2 && s0.refused == 0);
    tree_free(3);
}
