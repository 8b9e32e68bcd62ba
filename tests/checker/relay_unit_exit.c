/* Relay unit tests, members leaving: RANK EXITED through the tree, members that register
 * late or come to the root directly, and the exit release (DONE, RELEASE) through three levels,
 * with a relay detached on the way. */
#include "relay_unit.h"

void test_exited(void)
{
    /* everyone leaves after the same count: no verdict */
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    for (int i = T.ncl - 1; i >= 1; i--)
        goodbye(&T.cl[i], 10, 0);
    for (int t = 0; t < 3; t++)
        tick_all(3);
    CHECK(T.cl[0].verdicts == 0);
    tree_free(3);
    /* rank 5 (beneath two relays) leaves after 10 calls, the others go on to 20 */
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    goodbye(&T.cl[5], 10, NCG_BYE_ABORT);
    for (int t = 0; t < 2; t++)
        tick_all(3);
    CHECK(T.cl[0].verdicts == 0); /* nobody went beyond it yet */
    for (int i = 0; i < 5; i++)
        T.cl[i].count = 20;
    report_all();
    for (int t = 0; t < 3; t++)
        tick_all(3);
    for (int i = 0; i < 5; i++)
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].v && T.cl[i].v->kind == NCG_V_RANK_EXITED &&
              !strcmp(T.cl[i].v->subject, "5"));
    if (T.cl[0].v)
        CHECK(strstr(T.cl[0].v->detail, NCG_EXITED_ABORT " after 10 calls; others issued up to "
                                                         "20") == T.cl[0].v->detail);
    tree_free(3);
}

/* (Found in review.) Every rank under relay 2 leaves, then relayd's frequent ticks come before
 * the next RSTAT: the comm must not be forgotten before its last RSTAT says the ranks left
 * (fast = a tick 20 ms later); RANK EXITED reaches the others either way. */
void probe_exited(int fast)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    goodbye(&T.cl[4], 10, 0);
    goodbye(&T.cl[5], 10, 0);
    if (fast) { /* relayd ticks every poll (<= 20 ms), not once per interval */
        T.now += 20000000ull;
        ncg_relay_tick(T.r[2], T.now);
        pump();
    }
    for (int i = 0; i < 4; i++)
        T.cl[i].count = 20;
    report_all();
    for (int t = 0; t < 5; t++)
        tick_all(3);
    CHECK(T.cl[0].verdicts == 1 && T.cl[0].v && T.cl[0].v->kind == NCG_V_RANK_EXITED &&
          !strcmp(T.cl[0].v->subject, "4-5"));
    (void)fast;
    tree_free(3);
}

/* (Issue 35 item 5: t_blame's "ranks 0,2 exited" for 0,2-3.) A node relay's process leaves
 * (its own rank 2 said goodbye, an RSTAT told the root) and rank 3 of its node says goodbye
 * after that RSTAT, before the relay leaves: an exiting process does not reattach, so the
 * relay's last RSTAT on leaving (ncg_relay_leaving) is the only way the root hears of it. With
 * it, rank 1's extra call names 2-3; without (leaving 0), rank 2 alone. */
void probe_relay_leaves(int leaving)
{
    tree(0); /* root: ranks 0,1; relay 1 (the root's conn 2): ranks 2,3 */
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(2);
    goodbye(&T.cl[2], 10, 0);
    tick_all(2);
    goodbye(&T.cl[3], 10, 0);
    if (leaving) {
        ncg_relay_leaving(T.r[1], T.now);
        pump();
    }
    ncg_relay_closed(T.r[0], 2, T.now); /* relay 1's process is gone */
    T.cl[1].count = 11;
    report_all();
    for (int t = 0; t < 3; t++)
        tick_all(1);
    CHECK(T.cl[1].verdicts == 1 && T.cl[1].v && T.cl[1].v->kind == NCG_V_RANK_EXITED);
    if (T.cl[1].v)
        CHECK(!strcmp(T.cl[1].v->subject, leaving ? "2-3" : "2"));
    tree_free(2);
}

/* (Found in review.) A member that registers after the verdict, once the other members under its
 * relay ended, still gets it. */
void probe_late(void)
{
    tree(0); /* root: ranks 0,1; relay 1: ranks 2,3 */
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    T.cl[3].relay = -1; /* rank 3 slow to register */
    report_all();
    tick_all(2);
    ncg_relay_closed(T.r[0], 0, T.now); /* rank 0 died */
    T.cl[0].relay = -1;
    pump();
    CHECK(T.cl[1].verdicts == 1 && T.cl[2].verdicts == 1);
    goodbye(&T.cl[2], 10, NCG_BYE_VERDICT); /* rank 2 ends by the verdict */
    T.now += 20000000ull;
    ncg_relay_tick(T.r[1], T.now);
    pump();
    T.cl[3].relay = 1; /* rank 3 registers now */
    report_all();
    for (int t = 0; t < 3; t++)
        tick_all(2);
    CHECK(T.cl[3].verdicts == 1);
    tree_free(2);
}

/* A node relay dies (rank 2's process); its other process (rank 3) comes to the root directly,
 * after every other member has left: the root kept the comm and its verdict for it (it was
 * forgotten once its last kid left, and rank 3 waited for nothing forever). */
void test_late_at_root(void)
{
    tree(0); /* root: ranks 0,1; relay 1: ranks 2,3 (rank 2 in relay 1's process) */
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(2);
    ncg_relay_closed(T.r[0], 2, T.now); /* relay 1's process died */
    T.cl[2].relay = T.cl[3].relay = -1;
    pump();
    CHECK(T.cl[0].verdicts == 1 && T.cl[0].v && !strcmp(T.cl[0].v->subject, "2"));
    goodbye(&T.cl[0], 10, NCG_BYE_VERDICT);
    goodbye(&T.cl[1], 10, NCG_BYE_VERDICT);
    for (int t = 0; t < 5; t++)
        tick_all(1);
    T.cl[3].relay = 0;
    T.cl[3].conn = 5;
    ncg_relay_connected(T.r[0], 5, T.now);
    struct ncg_msg h = {.type = NCG_MSG_HELLO};
    h.u.hello.pid = T.cl[3].pid;
    strcpy(h.u.hello.host, "h");
    push(TO_CHILD, 0, 5, &h);
    report_all();
    tick_all(1);
    CHECK(T.cl[3].verdicts == 1 && T.cl[3].v && !strcmp(T.cl[3].v->subject, "2"));
    tree_free(2);
}

static void client_done(const struct client *c)
{
    struct ncg_msg d = {.type = NCG_MSG_DONE, .u.exit.comm_id = 0xc0};
    push(TO_CHILD, c->relay, c->conn, &d);
    pump();
}

static int releases_total(void)
{
    int n = 0;
    for (int i = 0; i < T.ncl; i++)
        n += T.cl[i].releases;
    return n;
}

/* A three-level tree with the exit release's bound of wait_s; every rank at 100 calls, rank 5
 * differing from slot 57; ticks until the verdict is out (every rank has it). */
static void release_setup(double wait_s)
{
    T.exit_wait_s = wait_s;
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 100;
    T.cl[5].odd_from = 57;
    report_all();
    for (int t = 0; t < 20 && !T.cl[0].verdicts; t++)
        tick_all(3);
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 1);
}

/* The exit release through three levels: rank 5 (beneath two relays) differs; nobody is
 * released while a rank has not said DONE; then every rank exactly once, when the last says it
 * (variant 0), when its connection closes (1), or at the root's bound of 1 s (2), not before. */
void test_release(void)
{
    for (int variant = 0; variant < 3; variant++) {
        release_setup(1);
        uint64_t t0 = T.now; /* the verdict went out during this tick */
        for (int i = 0; i < 5; i++)
            client_done(&T.cl[i]);
        tick_all(3);
        CHECK(releases_total() == 0);
        if (variant == 0) {
            client_done(&T.cl[5]);
            CHECK(releases_total() == 6);
        } else if (variant == 1) {
            ncg_relay_closed(T.r[2], T.cl[5].conn, T.now);
            pump();
            CHECK(releases_total() == 5 && T.cl[5].releases == 0);
        } else {
            while (T.now + 200000000ull < t0 + 1000000000ull) {
                tick_all(3);
                CHECK(releases_total() == 0);
            }
            for (int t = 0; t < 3; t++)
                tick_all(3);
            CHECK(releases_total() == 6 && T.now <= t0 + 1300000000ull);
        }
        for (int t = 0; t < 5; t++)
            tick_all(3);
        CHECK(releases_total() == (variant == 1 ? 5 : 6)); /* once */
        tree_free(3);
    }
    T.exit_wait_s = 0;
}

/* The exit release while relay 2 (ranks 4-5) loses its link to relay 1: its subtree is not
 * taken as done (nobody released while 4-5 print), its DONE, ready while detached, goes up when
 * it reattaches (through another connection) and releases everyone at once, it included. */
void test_release_detached(void)
{
    release_setup(5);
    ncg_relay_parent_down(T.r[2]); /* the link 1-2 is lost */
    T.child_relay[1][2] = -1;
    ncg_relay_closed(T.r[1], 2, T.now);
    for (int i = 0; i < 4; i++)
        client_done(&T.cl[i]);
    tick_all(3);
    CHECK(releases_total() == 0); /* ranks 4-5 are still printing */
    client_done(&T.cl[4]);
    client_done(&T.cl[5]);
    tick_all(3);
    CHECK(releases_total() == 0); /* relay 2 is ready but cannot say it */
    T.child_relay[1][4] = 2;      /* it reattaches, through connection 4 */
    T.parent_conn[2] = 4;
    ncg_relay_connected(T.r[1], 4, T.now);
    ncg_relay_parent_up(T.r[2], T.now);
    pump();
    tick_all(3);
    CHECK(releases_total() == 6); /* long before the root's 5 s */
    tree_free(3);
    T.exit_wait_s = 0;
}

/* A wait on a rank that left, through the tree (relay_dl.c's root_gone_waits): rank 5 (beneath
 * two relays) leaves at the others' count while rank 0 waits in a send to it: RANK EXITED at
 * the root once the wait stood NCG_GW_SIGHTINGS intervals, naming rank 5 and the send; none
 * while rank 5 is there. */
void test_gone_wait(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    static struct ncg_msg m;
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_WAIT;
    m.u.wait.n = 1;
    struct ncg_wait_ent *w = &m.u.wait.w[0];
    w->comm_id = 0xc0;
    w->rank = 0;
    w->tid = T.cl[0].pid;
    w->p2p = 1;
    w->call = (struct ncg_call){0, 8, 5, NCG_F_SEND, 7, NCG_REDOP_NONE};
    strcpy(w->site, "main+0x10 (app+0x1010)");
    for (int t = 0; t < 6; t++) {
        push(TO_CHILD, T.cl[0].relay, T.cl[0].conn, &m);
        pump();
        tick_all(3);
    }
    CHECK(T.cl[0].verdicts == 0);
    goodbye(&T.cl[5], 10, 0);
    for (int t = 0; t < 8; t++) {
        report_all();
        push(TO_CHILD, T.cl[0].relay, T.cl[0].conn, &m);
        pump();
        tick_all(3);
    }
    for (int i = 0; i < 5; i++)
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].v && T.cl[i].v->kind == NCG_V_RANK_EXITED &&
              !strcmp(T.cl[i].v->subject, "5"));
    if (T.cl[0].v)
        CHECK(strstr(T.cl[0].v->detail, "rank 0 waits in its send #0 to it") &&
              T.cl[0].v->ncalls == 1 && !strcmp(T.cl[0].v->calls[0].site, w->site));
    tree_free(3);
}

/* (docs/simulator.md, finding 2: make sim SEED=1246) A process holding ranks 0 and 1 registers
 * after the verdict (rank 3 died) and after the others were released: it gets the verdict once
 * (not once per rank) and is not released with it: its DONE is awaited (variant 0), or the
 * bound of 1 s from its registration (1); the others are not released again. */
void test_release_late(void)
{
    for (int variant = 0; variant < 2; variant++) {
        T.exit_wait_s = 1;
        tree(0); /* root: ranks 0,1 (one process, late); relay 1: ranks 2,3 */
        T.cl[1].conn = 0;
        T.cl[0].relay = T.cl[1].relay = -1;
        for (int i = 0; i < T.ncl; i++)
            T.cl[i].count = 10;
        report_all();
        tick_all(2);
        ncg_relay_closed(T.r[1], 1, T.now); /* rank 3 died */
        T.cl[3].relay = -1;
        pump();
        tick_all(2);
        CHECK(T.cl[2].verdicts == 1);
        client_done(&T.cl[2]);
        tick_all(2);
        CHECK(T.cl[2].releases == 1);
        T.cl[0].relay = T.cl[1].relay = 0; /* the late process registers */
        report_all();
        uint64_t t0 = T.now;
        CHECK(T.cl[0].verdicts == 1 && T.cl[0].v && !strcmp(T.cl[0].v->subject, "3"));
        for (int t = 0; t < 3; t++)
            tick_all(2);
        CHECK(T.cl[0].releases == 0); /* still printing */
        if (variant == 0) {
            client_done(&T.cl[0]);
            CHECK(T.cl[0].releases == 1);
        } else {
            while (T.now + 200000000ull < t0 + 1000000000ull) {
                tick_all(2);
                CHECK(T.cl[0].releases == 0);
            }
            for (int t = 0; t < 3; t++)
                tick_all(2);
            CHECK(T.cl[0].releases == 1 && T.now <= t0 + 1300000000ull);
        }
        for (int t = 0; t < 3; t++)
            tick_all(2);
        CHECK(T.cl[0].releases == 1 && T.cl[0].verdicts == 1 && T.cl[2].releases == 1);
        tree_free(2);
    }
    T.exit_wait_s = 0;
}

/* After the release, relay 2 (ranks 4-5, released) loses its link and reattaches through
 * another connection: relay 1 takes it as a late member (the verdict, the release reopened),
 * and relay 2 says DONE at once (released already), so nobody holds its exit for it until the
 * bound; nobody is released twice. */
void test_release_reattach_released(void)
{
    release_setup(5);
    for (int i = 0; i < 6; i++)
        client_done(&T.cl[i]);
    tick_all(3);
    CHECK(releases_total() == 6);
    ncg_relay_parent_down(T.r[2]);
    T.child_relay[1][2] = -1;
    ncg_relay_closed(T.r[1], 2, T.now);
    tick_all(3);
    T.child_relay[1][4] = 2;
    T.parent_conn[2] = 4;
    ncg_relay_connected(T.r[1], 4, T.now);
    ncg_relay_parent_up(T.r[2], T.now);
    pump();
    tick_all(3);
    CHECK(ncg_relay_releases_waiting(T.r[1]) == 0 && ncg_relay_releases_waiting(T.r[0]) == 0);
    CHECK(T.cl[4].verdicts == 1 && T.cl[5].verdicts == 1);
    tree_free(3);
    T.exit_wait_s = 0;
}
