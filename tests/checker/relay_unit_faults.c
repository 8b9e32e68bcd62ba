/* Relay unit tests, faults: a client's and a relay's death (RANK DIED), faults while a relay
 * is detached, a silent (frozen) relay, the bounds on connections, comms and pending faults,
 * re-registration, and allocations that fail. */
#include "relay_unit.h"

void test_client_died(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    ncg_relay_closed(T.r[2], 1, T.now); /* rank 5's process */
    T.cl[5].relay = -1;
    pump();
    for (int i = 0; i < 5; i++)
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].v && T.cl[i].v->kind == NCG_V_RANK_DIED &&
              !strcmp(T.cl[i].v->subject, "5"));
    CHECK(T.cl[5].verdicts == 0);
    if (T.cl[0].v)
        CHECK(strstr(T.cl[0].v->detail, "pid 1005") != NULL);
    tree_free(3);
}

void test_relay_died(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3); /* relay 1 reports its own rank (2, pid 1002) */
    /* relay 1's process dies: its rank 2 with it; rank 3 and relay 2 reattach to the root */
    ncg_relay_closed(T.r[0], 2, T.now);
    T.cl[2].relay = T.cl[3].relay = -1;
    pump();
    for (int i = 0; i < 2; i++)
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].v && T.cl[i].v->kind == NCG_V_RANK_DIED &&
              !strcmp(T.cl[i].v->subject, "2"));
    if (T.cl[0].v)
        CHECK(strstr(T.cl[0].v->detail, "relay of node 1") != NULL);
    /* reattach: relay 2 as a child of the root on conn 3, rank 3 as a client on conn 4 */
    ncg_relay_parent_down(T.r[2]);
    T.parent[2] = 0;
    T.parent_conn[2] = 3;
    T.child_relay[0][3] = 2;
    ncg_relay_connected(T.r[0], 3, T.now);
    ncg_relay_parent_up(T.r[2], T.now);
    T.cl[3].relay = 0;
    T.cl[3].conn = 4;
    ncg_relay_connected(T.r[0], 4, T.now);
    struct ncg_msg h = {.type = NCG_MSG_HELLO};
    h.u.hello.pid = T.cl[3].pid;
    push(TO_CHILD, 0, 4, &h);
    pump();
    report_all();
    tick_all(3);
    for (int i = 3; i < 6; i++) /* the late ones get it from the root, once */
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].v && T.cl[i].v->kind == NCG_V_RANK_DIED);
    tree_free(3);
}

void test_detached_fault(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    ncg_relay_parent_down(T.r[2]);      /* relay 2 lost its parent... */
    ncg_relay_closed(T.r[2], 0, T.now); /* ...and then rank 4 died: the fault waits */
    T.cl[4].relay = -1;
    pump();
    CHECK(T.cl[0].verdicts == 0);
    T.parent_conn[2] = 3; /* reattached on a new connection: the fault goes up */
    T.child_relay[1][3] = 2;
    ncg_relay_connected(T.r[1], 3, T.now);
    ncg_relay_parent_up(T.r[2], T.now);
    pump();
    CHECK(T.cl[0].verdicts == 0); /* decided: its figures gathered first */
    for (int t = 0; t < 4; t++)   /* relay 1 still waits on relay 2's old link: its deadline */
        tick_all(3);
    CHECK(T.cl[0].verdicts == 1 && T.cl[0].v && !strcmp(T.cl[0].v->subject, "4"));
    CHECK(T.cl[5].verdicts == 1);
    tree_free(3);
}

/* A frozen relay (SIGSTOP, a partitioned host): its parent hears nothing for the heartbeat
 * timeout and declares its own ranks dead; its child relay sees a silent parent. */
void test_silent_relay(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    CHECK(!ncg_relay_parent_silent(T.r[2], T.now));
    /* relay 1 freezes: only the root, relay 2 and their own clients go on */
    T.frozen = 1;
    for (int t = 0; t < 60; t++) {
        T.now += 200000000ull;
        for (int i = 0; i < T.ncl; i++)
            if (T.cl[i].relay == 0 || T.cl[i].relay == 2) {
                struct ncg_msg m = {.type = NCG_MSG_REPORT};
                m.u.report.n = 1;
                m.u.report.e[0].comm_id = 0xc0;
                m.u.report.e[0].nranks = (uint32_t)T.ncl;
                m.u.report.e[0].rank = (uint32_t)T.cl[i].rank;
                m.u.report.e[0].count = 10;
                push(TO_CHILD, T.cl[i].relay, T.cl[i].conn, &m);
            }
        ncg_relay_tick(T.r[2], T.now);
        ncg_relay_tick(T.r[0], T.now);
        pump();
    }
    CHECK(ncg_relay_parent_silent(T.r[2], T.now)); /* its caller reattaches it */
    CHECK(T.cl[0].verdicts == 1 && T.cl[0].v && T.cl[0].v->kind == NCG_V_RANK_DIED &&
          !strcmp(T.cl[0].v->subject, "2"));
    if (T.cl[0].v)
        CHECK(strstr(T.cl[0].v->detail, "silent for") != NULL);
    tree_free(3);
}

/* (Found in review.) Ranks die while their relay is detached from its parent, and the relay
 * ticks while it redials: the queued RANK DIED survives and goes up on reattach. */
void probe_detached(int tick_between)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    ncg_relay_parent_down(T.r[2]);
    ncg_relay_closed(T.r[2], 0, T.now); /* rank 4 died */
    ncg_relay_closed(T.r[2], 1, T.now); /* rank 5 died (node-wide kill) */
    T.cl[4].relay = T.cl[5].relay = -1;
    pump();
    if (tick_between) { /* the relay keeps ticking while it redials (200 ms) */
        T.now += 20000000ull;
        ncg_relay_tick(T.r[2], T.now);
        pump();
    }
    T.parent_conn[2] = 3;
    T.child_relay[1][3] = 2;
    ncg_relay_connected(T.r[1], 3, T.now);
    ncg_relay_parent_up(T.r[2], T.now);
    pump();
    CHECK(T.cl[0].verdicts == 0); /* decided: its figures gathered first */
    for (int t = 0; t < 4; t++)   /* relay 1 still waits on relay 2's old link: its deadline */
        tick_all(3);
    CHECK(T.cl[0].verdicts == 1 && T.cl[0].v && !strcmp(T.cl[0].v->subject, "4"));
    tree_free(3);
}

/* A client connection registers more comm ranks than a process holds (NCG_RELAY_CONN_RANKS):
 * the rest are refused with one event line, and only the first go up. */
void test_conn_cap(void)
{
    tree(1);
    struct ncg_msg m = {.type = NCG_MSG_REPORT};
    for (uint32_t b = 0; b < 2; b++) { /* rank 4 (relay 2, conn 0): 100 comms in two reports */
        m.u.report.n = 50;
        for (uint32_t e = 0; e < 50; e++) {
            m.u.report.e[e].comm_id = 0x1000 + b * 50 + e;
            m.u.report.e[e].nranks = 6;
            m.u.report.e[e].rank = 4;
            m.u.report.e[e].count = 5;
        }
        ncg_relay_message(T.r[2], 0, &m, T.now);
    }
    tick_all(3);
    CHECK(T.stat_ents[2] == (int)NCG_RELAY_CONN_RANKS && T.refused_ev[2] == 1);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[2], &st);
    CHECK(st.comms == NCG_RELAY_CONN_RANKS && st.refused == 100 - NCG_RELAY_CONN_RANKS);
    tree_free(3);
}

static void count_unauthed(void *arg, const struct ncg_relay_conn_view *c)
{
    int *n = arg;
    n[0] += !c->authed;
    n[1] += c->conn == 200 && !c->authed; /* the oldest */
}

/* More connections without a HELLO than a relay holds (NCG_RELAY_MAX_UNAUTHED): the oldest is
 * dropped, one event line each, the job's own connections untouched. */
void test_unauthed_cap(void)
{
    tree(0);
    int ev0 = T.refused_ev[0];
    for (int i = 0; i < (int)NCG_RELAY_MAX_UNAUTHED; i++)
        ncg_relay_connected(T.r[0], 200 + i, T.now);
    int n[2] = {0, 0};
    struct ncg_relay_view_ops vo = {count_unauthed, NULL, n};
    ncg_relay_view(T.r[0], T.now, &vo);
    CHECK(n[0] == (int)NCG_RELAY_MAX_UNAUTHED && n[1] == 1 && T.refused_ev[0] == ev0);
    ncg_relay_connected(T.r[0], 200 + (int)NCG_RELAY_MAX_UNAUTHED, T.now); /* one more */
    n[0] = n[1] = 0;
    ncg_relay_view(T.r[0], T.now, &vo);
    CHECK(n[0] == (int)NCG_RELAY_MAX_UNAUTHED && n[1] == 0 && T.refused_ev[0] == ev0 + 1);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.dropped == 1);
    report_all(); /* the tree's own clients still report and agree */
    tick_all(2);
    CHECK(T.cl[0].v == NULL && T.cl[3].v == NULL);
    tree_free(2);
}

/* A child relay announces more communicators than a relay tracks (NCG_RELAY_MAX_COMMS). */
void test_comm_cap(void)
{
    tree(1);
    static struct ncg_msg m;
    uint32_t total = NCG_RELAY_MAX_COMMS + 100;
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RSTAT;
    for (uint32_t b = 0; b * NCG_RELAY_STAT < total; b++) { /* to relay 1 from relay 2 (conn 2) */
        m.u.rstat.n = 0;
        for (uint32_t e = 0; e < NCG_RELAY_STAT && b * NCG_RELAY_STAT + e < total; e++) {
            struct ncg_rstat_ent *x = &m.u.rstat.e[m.u.rstat.n++];
            memset(x, 0, sizeof *x);
            x->comm_id = 0x100000 + b * NCG_RELAY_STAT + e;
            x->nranks = 6;
            x->known = x->active = 1;
            x->min = x->max = 5;
        }
        ncg_relay_message(T.r[1], 2, &m, T.now);
    }
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[1], &st);
    CHECK(st.comms == NCG_RELAY_MAX_COMMS && st.refused == 100 && T.refused_ev[1] == 1);
    T.now += 100000000ull;
    ncg_relay_tick(T.r[1], T.now);
    CHECK(T.stat_ents[1] == (int)NCG_RELAY_MAX_COMMS);
    tree_free(3);
}

/* Rank 4's process says goodbye and exits, then the same rank registers again, twenty times,
 * on new connections: its one kid is reused (was one more per registration). */
void test_reregister(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    struct client *c = &T.cl[4];
    for (int t = 0; t < 20; t++) {
        goodbye(c, 10, 0);
        c->relay = 2;
        ncg_relay_connected(T.r[2], c->conn, T.now);
        struct ncg_msg h = {.type = NCG_MSG_HELLO};
        h.u.hello.pid = c->pid;
        push(TO_CHILD, 2, c->conn, &h);
        pump();
        report_all();
    }
    T.now += 100000000ull;
    ncg_relay_tick(T.r[2], T.now);
    pump();
    const struct ncg_rstat_ent *e = &T.stat_last[2];
    CHECK(e->comm_id == 0xc0 && e->known == 2 && e->active == 1 && e->ngone == 1 &&
          e->gone[0].rank == 4);
    tree_free(3);
}

/* Faults keep coming while a relay is detached (a child relay floods RFAULTs): at most
 * NCG_RELAY_PEND are queued, the later ranks merged into the last, the first kept as it was;
 * one event line. */
void test_pend_cap(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    ncg_relay_parent_down(T.r[1]);
    for (uint32_t i = 0; i < 40; i++) {
        struct ncg_msg f = {.type = NCG_MSG_RFAULT};
        f.u.rfault.comm_id = 0xe0;
        f.u.rfault.nranks = 1000;
        f.u.rfault.n = 1;
        f.u.rfault.rank[0] = 100 + i;
        snprintf(f.u.rfault.detail, sizeof f.u.rfault.detail, "fault %u", i);
        ncg_relay_message(T.r[1], 2, &f, T.now);
        if (i == 20) /* a duplicate: nothing new */
            ncg_relay_message(T.r[1], 2, &f, T.now);
    }
    CHECK(T.rfaults[1] == 0 && T.merged_ev[1] == 1);
    T.parent_conn[1] = 3; /* reattached to the root on a new connection */
    T.child_relay[0][3] = 1;
    ncg_relay_connected(T.r[0], 3, T.now);
    ncg_relay_parent_up(T.r[1], T.now);
    pump();
    CHECK(T.rfaults[1] == (int)NCG_RELAY_PEND && T.rfault_ranks[1] == 40);
    CHECK(T.rfault_first[1].n == 1 && T.rfault_first[1].rank[0] == 100 &&
          !strcmp(T.rfault_first[1].detail, "fault 0"));
    tree_free(3);
}

/* A report for a new comm while allocations fail: the relay says it lost state, and the root
 * issues no verdict from it (as coord.c: its host stops the checker instead). */
void test_nomem(void)
{
#ifdef NCG_SANITIZED
    printf("relay_unit: out-of-memory case skipped (sanitizer allocator)\n");
    return;
#endif
    tree(0); /* root: ranks 0,1; relay 1: ranks 2,3 */
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(2);
    CHECK(!ncg_relay_out_of_memory(T.r[0]) && !ncg_relay_out_of_memory(T.r[1]));
    struct ncg_msg m = {.type = NCG_MSG_REPORT};
    m.u.report.n = 1;
    m.u.report.e[0].comm_id = 0xd0;
    m.u.report.e[0].nranks = 4;
    m.u.report.e[0].count = 3;
    for (int i = 0; i < 2; i++) {
        m.u.report.e[0].rank = (uint32_t)(2 * i);
        fail_alloc = 1;
        ncg_relay_message(T.r[i], 0, &m, T.now);
        fail_alloc = 0;
        CHECK(ncg_relay_out_of_memory(T.r[i]));
    }
    ncg_relay_closed(T.r[0], 1, T.now); /* rank 1 dies: a RANK DIED, judged from lost state */
    T.cl[1].relay = -1;
    pump();
    tick_all(2);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.verdicts == 0 && T.cl[0].verdicts == 0 && T.cl[2].verdicts == 0);
    tree_free(2);
}
