/* Unit tests of the exit's state machine (interpose/machine/exit_sm.c): every transition of the
 * abort side (WAITING, ARMED, ROOT_LEFT, _exit) and of the clean side (LINKS, SENT, STAYING,
 * DONE), holding others' releases, and the overlaps exit_sm.h decides (a verdict inside an
 * abort's REPORT, a clean exit beside an abort, two error verdicts). Each asserts what the
 * driver is told to do: what a user sees the consequence of. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "exit_sm.h"
#include "wire.h"

NCG_CHECK_PROGRAM("exit_sm_test");

#define MS 1000000ull
#define S 1000000000ull
#define T0 (100 * S) /* the clock's origin in every test */

static struct ncg_agent_params P;

/* The defaults of params.c with NCCLGUARD_EXIT_WAIT_S=5, heartbeat 10 s, interval 100 ms. */
static void params_default(void)
{
    memset(&P, 0, sizeof P);
    P.interval_ns = 100 * MS;
    P.heartbeat_ns = 10 * S;
    P.exit.wait_release = 1;
    P.exit.release_bound = 7 * S;
    P.exit.host_stay = 0;
    P.exit.clean_deadline = 600 * MS;
    P.exit.bye_margin = 200 * MS;
    P.exit.register_wait = 5 * S;
    P.exit.stay_say = 1 * S;
    P.exit.stay_self = 1 * S;
    P.exit.abort_flush = 1 * S;
    P.exit.abort_past = 300 * MS;
    P.exit.sd_read = 200 * MS;
}

static struct ncg_exit_sm fresh(void)
{
    struct ncg_exit_sm m;
    ncg_exit_sm_init(&m, &P);
    return m;
}

/* Nothing here: no checker, no relay, no link connecting, nothing pending. */
static struct ncg_exit_obs ob(void)
{
    struct ncg_exit_obs o = {0};
    o.unreg_link = -1;
    return o;
}

/* An abort verdict that came on link 0 (up), for comm 0xc1. */
static struct ncg_exit_out abort_on_link(struct ncg_exit_sm *m, const struct ncg_exit_obs *o,
                                         uint64_t now)
{
    struct ncg_exit_verdict v = {.error = 1, .must_exit = 1, .link = 0, .link_up = 1, .comm = 0xc1};
    return ncg_exit_sm_verdict(m, &v, o, now);
}

/* A flat checker's host (*o) whose abort verdict came on link 0 (*m, WAITING). */
static void host_abort(struct ncg_exit_sm *m, struct ncg_exit_obs *o)
{
    *m = fresh();
    *o = ob();
    o->root_up = o->root_flat = 1;
    abort_on_link(m, o, T0);
}

/* The abort waits for its RELEASE: DONE, a REPORT, GOODBYEs flagged as the verdict's holding
 * the SHUTDOWN back; no exit before the RELEASE; after it, _exit. */
static void test_abort_waits_release(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = ob();
    CHECK(!ncg_exit_sm_ending(&m));
    struct ncg_exit_out out = abort_on_link(&m, &o, T0);
    CHECK(out.what == (NCG_XO_DONE | NCG_XO_REPORT | NCG_XO_GOODBYES));
    CHECK(out.done_link == 0 && out.done_comm == 0xc1);
    CHECK(out.bye_flags == NCG_BYE_VERDICT && out.only_bye == 1);
    CHECK(m.abort == NCG_XA_WAITING && ncg_exit_sm_ending(&m));
    o.aborting = 1;
    for (uint64_t t = T0; t < T0 + 5 * S; t += 100 * MS) {
        out = ncg_exit_sm_finish(&m, &o, t);
        CHECKF(!(out.what & NCG_XO_EXIT_NOW), "exit at +%.1f s before the RELEASE",
               (double)(t - T0) / 1e9);
    }
    ncg_exit_sm_release(&m, 0xc2, 0, &o, T0 + 5 * S); /* another comm's: not ours */
    ncg_exit_sm_release(&m, 0xc1, 1, &o, T0 + 5 * S); /* another link's: not ours */
    CHECK(m.abort == NCG_XA_WAITING);
    ncg_exit_sm_release(&m, 0xc1, 0, &o, T0 + 5 * S);
    CHECK(m.abort == NCG_XA_ARMED);
    out = ncg_exit_sm_finish(&m, &o, T0 + 5 * S);
    CHECK(out.what == NCG_XO_EXIT_NOW);
}

/* No RELEASE within the bound: exit at the bound, not before, with its debug line. */
static void test_abort_release_bound(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = ob();
    abort_on_link(&m, &o, T0);
    struct ncg_exit_out out = ncg_exit_sm_finish(&m, &o, T0 + P.exit.release_bound - 1);
    CHECK(out.what == 0 && m.abort == NCG_XA_WAITING);
    out = ncg_exit_sm_finish(&m, &o, T0 + P.exit.release_bound);
    CHECK(out.what == (NCG_XO_DEBUG_NO_RELEASE | NCG_XO_EXIT_NOW));
    CHECK(out.bound_s == 7.0);
}

/* The link's checker gone (its SHUTDOWN, the link lost): every verdict of that link released. */
static void test_abort_link_gone(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = ob();
    abort_on_link(&m, &o, T0);
    ncg_exit_sm_release(&m, 0, 0, &o, T0 + 10 * MS);
    CHECK(m.abort == NCG_XA_ARMED);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 10 * MS).what == NCG_XO_EXIT_NOW);
}

/* No wait: decided here (-1), the link not up, or the release off: armed at once, the SHUTDOWN
 * goes with the GOODBYEs. */
static void test_abort_no_wait(void)
{
    for (int k = 0; k < 3; k++) {
        params_default();
        struct ncg_exit_sm m = fresh();
        struct ncg_exit_obs o = ob();
        struct ncg_exit_verdict v = {1, 1, k == 0 ? -1 : 0, k != 1, 0xc1};
        if (k == 2)
            P.exit.wait_release = 0;
        struct ncg_exit_out out = ncg_exit_sm_verdict(&m, &v, &o, T0);
        CHECKF(out.what == (NCG_XO_DONE | NCG_XO_REPORT | NCG_XO_GOODBYES) && out.only_bye == 0,
               "case %d: what %#x only_bye %d", k, out.what, out.only_bye);
        CHECKF(m.abort == NCG_XA_ARMED, "case %d", k);
        CHECKF(ncg_exit_sm_finish(&m, &o, T0).what == NCG_XO_EXIT_NOW, "case %d", k);
    }
    params_default();
}

/* Warnings do nothing; an error the action does not end the process with says DONE only. */
static void test_verdicts_not_ending(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = ob();
    struct ncg_exit_verdict warn = {0, 0, 0, 1, 0xc1}, fail = {1, 0, 0, 1, 0xc1};
    CHECK(ncg_exit_sm_verdict(&m, &warn, &o, T0).what == 0);
    struct ncg_exit_out out = ncg_exit_sm_verdict(&m, &fail, &o, T0);
    CHECK(out.what == NCG_XO_DONE && out.done_link == 0 && out.done_comm == 0xc1);
    CHECK(!ncg_exit_sm_ending(&m) && m.abort == NCG_XA_NONE);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 60 * S).what == 0);
}

/* A host (its checker up, flat): the verdict reaches its clients first; the root leaves at once
 * once nothing but our own link is pending, else at abort_flush; _exit after. */
static void test_abort_host_flush(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = ob();
    o.root_up = o.root_flat = 1;
    struct ncg_exit_verdict v = {1, 1, -1, 0, 0xc1};
    ncg_exit_sm_verdict(&m, &v, &o, T0);
    CHECK(m.abort == NCG_XA_ARMED && m.abort_at_ns == T0 + P.exit.abort_flush);
    o.pending = 5;
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 500 * MS).what == 0);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + P.exit.abort_flush).what == NCG_XO_ROOT_LEAVES);
    CHECK(m.abort == NCG_XA_ROOT_LEFT);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + P.exit.abort_flush + 100 * MS).what == 0);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + P.exit.abort_flush + P.exit.abort_past).what ==
          NCG_XO_EXIT_NOW);
    /* flushed early: leaves, then exits, without waiting for the bound */
    m = fresh();
    o.pending = 5;
    ncg_exit_sm_verdict(&m, &v, &o, T0);
    o.pending = 1;
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 10 * MS).what == NCG_XO_ROOT_LEAVES);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 20 * MS).what == NCG_XO_EXIT_NOW);
}

/* A relay tree's root (not flat): its clients (child relays) get the verdict until abort_flush;
 * then it says it leaves down the tree, and exits abort_past later at the latest. A node relay
 * here flushes the same way. */
static void test_abort_tree_root(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = ob();
    o.root_up = 1;
    o.pending = 4;
    struct ncg_exit_verdict v = {1, 1, -1, 0, 0xc1};
    ncg_exit_sm_verdict(&m, &v, &o, T0);
    for (uint64_t t = T0; t < T0 + P.exit.abort_flush; t += 50 * MS)
        CHECKF(ncg_exit_sm_finish(&m, &o, t).what == 0, "at +%.2f s", (double)(t - T0) / 1e9);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + P.exit.abort_flush).what == NCG_XO_ROOT_LEAVES);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + P.exit.abort_flush + P.exit.abort_past).what ==
          NCG_XO_EXIT_NOW);
    m = fresh();
    o = ob();
    o.rh_up = 1;
    o.pending = 3;
    ncg_exit_sm_verdict(&m, &v, &o, T0);
    CHECK(m.abort_at_ns == T0 + P.exit.abort_flush);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 500 * MS).what == 0);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + P.exit.abort_flush + P.exit.abort_past).what ==
          NCG_XO_EXIT_NOW);
    CHECK(ncg_exit_sm_fast(&m, 0, T0)); /* an abort polls every 10 ms */
}

/* The abort of a checker's host that holds other processes' releases: the SHUTDOWN held back
 * by its GOODBYEs waits while holding (bounded), neither the root leaves nor the process exits
 * meanwhile; then the exit waits abort_flush for the SHUTDOWN to be read. */
static void test_abort_holding(void)
{
    struct ncg_exit_sm m;
    struct ncg_exit_obs o;
    host_abort(&m, &o);
    ncg_exit_sm_release(&m, 0xc1, 0, &o, T0 + 100 * MS);
    CHECK(m.abort == NCG_XA_ARMED && m.sd_deferred);
    o.hosted_waiting = 1;
    o.pending = 1;
    for (uint64_t t = T0 + 100 * MS; t < T0 + 100 * MS + P.exit.release_bound; t += 250 * MS) {
        struct ncg_exit_out a = ncg_exit_sm_tick(&m, &o, t), b = ncg_exit_sm_finish(&m, &o, t);
        CHECKF(!((a.what | b.what) & (NCG_XO_ROOT_LEAVES | NCG_XO_EXIT_NOW)),
               "left or exited at +%.2f s while holding", (double)(t - T0) / 1e9);
    }
    /* the others' releases over: the SHUTDOWN (the root's leave) then the exit */
    o.hosted_waiting = 0;
    uint64_t t = T0 + 2 * S;
    m.hold_until_ns = T0 + 100 * MS + P.exit.release_bound; /* (the loop above did not pass it) */
    CHECK(ncg_exit_sm_tick(&m, &o, t).what == 0 && !m.sd_deferred);
    CHECK(m.abort_at_ns == t + P.exit.abort_flush);
    CHECK(ncg_exit_sm_finish(&m, &o, t).what == NCG_XO_ROOT_LEAVES);
    CHECK(ncg_exit_sm_finish(&m, &o, t + 10 * MS).what == NCG_XO_EXIT_NOW);
    /* the hold's bound: past it, holding no more */
    m = fresh();
    o.hosted_waiting = 1;
    abort_on_link(&m, &o, T0);
    ncg_exit_sm_release(&m, 0xc1, 0, &o, T0);
    t = T0 + P.exit.release_bound;
    CHECK(ncg_exit_sm_tick(&m, &o, t).what == 0 && !m.hold && !m.sd_deferred);
    CHECK(ncg_exit_sm_finish(&m, &o, t).what == NCG_XO_ROOT_LEAVES);
}

/* A clean exit, nothing connecting: a REPORT and the GOODBYEs at once (SHUTDOWN with them),
 * done once they are flushed. */
static void test_clean_plain(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = ob();
    CHECK(ncg_exit_sm_tick(&m, &o, T0).what == 0 && m.clean == NCG_XC_RUNNING);
    CHECK(!ncg_exit_sm_fast(&m, 0, T0));
    o.exiting = 1;
    struct ncg_exit_out out = ncg_exit_sm_tick(&m, &o, T0);
    CHECK(out.what == (NCG_XO_REPORT | NCG_XO_GOODBYES) && out.bye_flags == 0 && !out.only_bye);
    CHECK(m.clean == NCG_XC_SENT && ncg_exit_sm_fast(&m, 1, T0));
    o.tx_pending = 1;
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 10 * MS).what == 0);
    o.tx_pending = 0;
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 20 * MS).what == NCG_XO_CLEAN_DONE);
    CHECK(m.clean == NCG_XC_DONE);
    CHECK(ncg_exit_sm_tick(&m, &o, T0 + 30 * MS).what == 0); /* never twice */
}

/* A clean exit requested while a link is still connecting (unreg: it must register us, or -1). */
static struct ncg_exit_obs exiting_connecting(int unreg)
{
    struct ncg_exit_obs o = ob();
    o.exiting = o.connecting = 1;
    o.unreg_link = unreg;
    return o;
}

/* Links still connecting: the GOODBYEs wait for them up to bye_margin before the deadline; done
 * at the deadline whatever is still queued. */
static void test_clean_links(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = exiting_connecting(-1);
    o.tx_pending = 1;
    CHECK(ncg_exit_sm_tick(&m, &o, T0).what == 0 && m.clean == NCG_XC_LINKS);
    CHECK(ncg_exit_sm_tick(&m, &o, T0 + 399 * MS).what == 0);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 399 * MS).what == 0);
    struct ncg_exit_out out = ncg_exit_sm_tick(&m, &o, T0 + 400 * MS);
    CHECK(out.what == (NCG_XO_REPORT | NCG_XO_GOODBYES));
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 599 * MS).what == 0);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 600 * MS).what == NCG_XO_CLEAN_DONE);
    /* the link came up: at once */
    m = fresh();
    o.connecting = 1;
    ncg_exit_sm_tick(&m, &o, T0);
    o.connecting = 0;
    CHECK(ncg_exit_sm_tick(&m, &o, T0 + 50 * MS).what == (NCG_XO_REPORT | NCG_XO_GOODBYES));
}

/* A link that must register this process: seconds (register_wait), the at-exit waiter told to
 * wait (registering); given up with one line naming the link and how long. */
static void test_clean_register(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = exiting_connecting(3);
    CHECK(ncg_exit_sm_tick(&m, &o, T0).what == 0 && m.registering == 1);
    CHECK(m.deadline_ns == T0 + P.exit.register_wait);
    CHECK(ncg_exit_sm_tick(&m, &o, T0 + 4 * S).what == 0);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 4 * S).what == 0);
    struct ncg_exit_out out = ncg_exit_sm_tick(&m, &o, T0 + 4800 * MS);
    CHECK(out.what == (NCG_XO_LOG_UNREG | NCG_XO_REPORT | NCG_XO_GOODBYES));
    CHECK(out.log_link == 3 && out.reg_s > 4.79 && out.reg_s < 4.81);
    CHECK(m.registering == 0);
    /* registered in time: no line */
    m = fresh();
    ncg_exit_sm_tick(&m, &o, T0);
    o.connecting = 0;
    o.unreg_link = -1;
    out = ncg_exit_sm_tick(&m, &o, T0 + 1 * S);
    CHECK(out.what == (NCG_XO_REPORT | NCG_XO_GOODBYES) && m.registering == 0);
}

/* The checker's host stays while the processes it checks run: the SHUTDOWN held back (its
 * GOODBYEs only_bye), never done meanwhile (past any deadline), its one line once after
 * stay_say, keepalives to its own checker; then the SHUTDOWN rebuilt and sent, done. */
static void test_clean_host_stays(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = ob();
    o.exiting = 1;
    o.root_up = o.root_flat = 1;
    CHECK(ncg_exit_sm_stay_view_due(&m, &o, T0));
    o.stay_ok = 1;
    o.stay.procs = 2;
    struct ncg_exit_out out = ncg_exit_sm_tick(&m, &o, T0);
    CHECK(out.what == (NCG_XO_REPORT | NCG_XO_GOODBYES | NCG_XO_KEEPALIVE) && out.only_bye == 1);
    CHECK(m.clean == NCG_XC_STAYING && m.staying == 1 && m.sd_deferred);
    int lines = 0, keepalives = 0;
    for (uint64_t t = T0 + 10 * MS; t < T0 + 30 * S; t += 10 * MS) {
        o.last_report_ns = t - 50 * MS; /* every other interval */
        if (t % (100 * MS) == 0)
            o.last_report_ns = t - 100 * MS;
        o.stay_ok = ncg_exit_sm_stay_view_due(&m, &o, t);
        out = ncg_exit_sm_tick(&m, &o, t);
        lines += !!(out.what & NCG_XO_LOG_STAY);
        keepalives += !!(out.what & NCG_XO_KEEPALIVE);
        if (out.what & NCG_XO_LOG_STAY)
            CHECKF(out.log_n == 2 && t - T0 >= P.exit.stay_say, "line at +%.2f s for %d",
                   (double)(t - T0) / 1e9, out.log_n);
        CHECK(!(out.what & (NCG_XO_ROOT_LEAVES | NCG_XO_SD_REBUILD)));
        CHECKF(!(ncg_exit_sm_finish(&m, &o, t).what & NCG_XO_CLEAN_DONE), "done at +%.2f s",
               (double)(t - T0) / 1e9);
    }
    CHECKF(lines == 1, "%d lines", lines);
    CHECKF(keepalives >= 250, "%d keepalives", keepalives);
    CHECK(!ncg_exit_sm_fast(&m, 1, T0 + 30 * S)); /* a long stay: the checker's pace */
    /* they left */
    uint64_t t = T0 + 30 * S;
    o.stay.procs = 0;
    CHECK(ncg_exit_sm_stay_view_due(&m, &o, t));
    out = ncg_exit_sm_tick(&m, &o, t);
    CHECK(out.what == (NCG_XO_DEBUG_STAYED | NCG_XO_SD_REBUILD | NCG_XO_ROOT_LEAVES));
    CHECK(out.stayed_s == 30.0 && m.staying == 0 && m.clean == NCG_XC_SENT);
    CHECK(ncg_exit_sm_finish(&m, &o, t).what == NCG_XO_CLEAN_DONE);
    /* healthy job (they leave at once): no line, no stay */
    m = fresh();
    o.stay.procs = 0;
    out = ncg_exit_sm_tick(&m, &o, T0);
    CHECK(out.what == (NCG_XO_REPORT | NCG_XO_GOODBYES | NCG_XO_DEBUG_STAYED | NCG_XO_SD_REBUILD |
                       NCG_XO_ROOT_LEAVES));
    CHECK(ncg_exit_sm_finish(&m, &o, T0).what == NCG_XO_CLEAN_DONE);
}

/* The stay's other ends: members never registered (until nobody new connected for the
 * heartbeat timeout), its own goodbye (stay_self), NCCLGUARD_HOST_STAY_S, no view. */
static void test_clean_stay_ends(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = ob();
    o.exiting = o.root_up = o.stay_ok = 1;
    o.stay.unknown = 3;
    ncg_exit_sm_tick(&m, &o, T0);
    CHECK(m.clean == NCG_XC_STAYING);
    CHECK(ncg_exit_sm_tick(&m, &o, T0 + P.heartbeat_ns - 10 * MS).what & NCG_XO_LOG_STAY);
    o.stay.newest_ns = T0 + 5 * S; /* someone connected: the clock restarts */
    ncg_exit_sm_tick(&m, &o, T0 + P.heartbeat_ns);
    CHECK(m.clean == NCG_XC_STAYING);
    ncg_exit_sm_tick(&m, &o, T0 + 5 * S + P.heartbeat_ns);
    CHECK(m.clean == NCG_XC_SENT && m.stay_over);
    /* its own goodbye not read yet: up to stay_self */
    m = fresh();
    o.stay.unknown = 0;
    o.stay.self_pending = 1;
    ncg_exit_sm_tick(&m, &o, T0);
    ncg_exit_sm_tick(&m, &o, T0 + P.exit.stay_self - 1);
    CHECK(m.clean == NCG_XC_STAYING);
    ncg_exit_sm_tick(&m, &o, T0 + P.exit.stay_self);
    CHECK(m.clean == NCG_XC_SENT);
    /* the bound */
    P.exit.host_stay = 2 * S;
    m = fresh();
    o.stay.procs = 4;
    ncg_exit_sm_tick(&m, &o, T0);
    ncg_exit_sm_tick(&m, &o, T0 + 2 * S - 1);
    CHECK(m.clean == NCG_XC_STAYING);
    struct ncg_exit_out out = ncg_exit_sm_tick(&m, &o, T0 + 2 * S);
    CHECK(m.clean == NCG_XC_SENT && (out.what & NCG_XO_ROOT_LEAVES));
    params_default();
    /* no view could be had: over */
    m = fresh();
    o.stay_ok = 0;
    ncg_exit_sm_tick(&m, &o, T0);
    CHECK(m.clean == NCG_XC_SENT && m.stay_over);
    o.stay_ok = 1; /* once over, never again */
    ncg_exit_sm_tick(&m, &o, T0 + 10 * MS);
    CHECK(m.clean == NCG_XC_SENT && !ncg_exit_sm_stay_view_due(&m, &o, T0 + 10 * MS));
}

/* A node relay here leaves 1.5 intervals after the GOODBYEs; the exit is done when it is gone
 * (or at the deadline). */
static void test_clean_relay_leaves(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = ob();
    o.exiting = o.rh_up = 1;
    ncg_exit_sm_tick(&m, &o, T0);
    CHECK(!(ncg_exit_sm_tick(&m, &o, T0 + 149 * MS).what & NCG_XO_RELAY_LEAVES));
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 149 * MS).what == 0);
    CHECK(ncg_exit_sm_tick(&m, &o, T0 + 150 * MS).what == NCG_XO_RELAY_LEAVES);
    o.rh_up = 0;
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 160 * MS).what == NCG_XO_CLEAN_DONE);
}

/* A clean exit of a checker that holds others' releases: its SHUTDOWN and its exit wait (the
 * at-exit waiter told: holding) until they are over, then the SHUTDOWN and sd_read for it. */
static void test_clean_holding(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = ob();
    o.exiting = o.hosted_waiting = 1;
    struct ncg_exit_out out = ncg_exit_sm_tick(&m, &o, T0);
    CHECK(out.what == (NCG_XO_REPORT | NCG_XO_GOODBYES) && out.only_bye == 1);
    CHECK(m.holding == 1 && m.hold && m.sd_deferred);
    for (uint64_t t = T0; t < T0 + 5 * S; t += 100 * MS) {
        out = ncg_exit_sm_tick(&m, &o, t);
        CHECK(!(out.what & NCG_XO_ROOT_LEAVES));
        CHECKF(ncg_exit_sm_finish(&m, &o, t).what == 0, "done at +%.1f s while holding",
               (double)(t - T0) / 1e9);
    }
    o.hosted_waiting = 0;
    out = ncg_exit_sm_tick(&m, &o, T0 + 5 * S);
    CHECK(out.what == NCG_XO_ROOT_LEAVES && m.holding == 0 && !m.sd_deferred);
    CHECK(m.deadline_ns == T0 + 5 * S + P.exit.sd_read);
    o.tx_pending = 1;
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 5 * S + 100 * MS).what == 0);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 5 * S + P.exit.sd_read).what == NCG_XO_CLEAN_DONE);
}

/* Overlap: a RANK EXITED judged inside the abort's REPORT. ending is already true when the
 * REPORT goes (report.c does not show it then); applied anyway, it is a second verdict: DONE,
 * no second REPORT or GOODBYEs, and the first one's RELEASE still governs the exit. */
static void test_overlap_verdict_in_report(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = ob();
    struct ncg_exit_out out = abort_on_link(&m, &o, T0);
    CHECK(out.what & NCG_XO_REPORT);
    CHECK(ncg_exit_sm_ending(&m)); /* before the driver sends that REPORT */
    struct ncg_exit_verdict exited = {1, 1, -1, 0, 0xe1};
    out = ncg_exit_sm_verdict(&m, &exited, &o, T0);
    CHECK(out.what == NCG_XO_DONE && out.done_link == -1 && out.done_comm == 0xe1);
    CHECK(m.abort == NCG_XA_WAITING && m.nrel == 1);
    CHECK(!(ncg_exit_sm_finish(&m, &o, T0 + 10 * MS).what & NCG_XO_EXIT_NOW));
    ncg_exit_sm_release(&m, 0xc1, 0, &o, T0 + 20 * MS);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 20 * MS).what == NCG_XO_EXIT_NOW);
}

/* Overlap: a clean exit beside an abort. The clean side sends nothing of its own (the abort's
 * GOODBYEs went, flagged as the verdict's), never stays and is never done; the abort's _exit
 * ends the process when its RELEASE comes. */
static void test_overlap_clean_beside_abort(void)
{
    struct ncg_exit_sm m;
    struct ncg_exit_obs o;
    host_abort(&m, &o);
    o.exiting = o.aborting = 1;
    CHECK(!ncg_exit_sm_stay_view_due(&m, &o, T0));
    for (uint64_t t = T0; t < T0 + 3 * S; t += 50 * MS) {
        struct ncg_exit_out a = ncg_exit_sm_tick(&m, &o, t), b = ncg_exit_sm_finish(&m, &o, t);
        CHECKF(a.what == 0 && b.what == 0, "at +%.2f s: tick %#x finish %#x",
               (double)(t - T0) / 1e9, a.what, b.what);
    }
    CHECK(m.staying == 0 && m.clean == NCG_XC_LINKS);
    ncg_exit_sm_release(&m, 0xc1, 0, &o, T0 + 3 * S);
    o.pending = 1;
    CHECK(ncg_exit_sm_tick(&m, &o, T0 + 3 * S).what ==
          0); /* the deferred SHUTDOWN is the abort's */
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 3 * S).what == NCG_XO_ROOT_LEAVES);
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 3 * S + 10 * MS).what == NCG_XO_EXIT_NOW);
}

/* Overlap: two error verdicts. The second (not shown, or applied) says DONE and, while the
 * first waits, its RELEASE is awaited too; in ARMED it changes nothing. */
static void test_overlap_two_verdicts(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = ob();
    abort_on_link(&m, &o, T0);
    struct ncg_exit_out out = ncg_exit_sm_verdict_ending(&m, 0xc2, 1, 1);
    CHECK(out.what == NCG_XO_DONE && out.done_link == 1 && out.done_comm == 0xc2);
    struct ncg_exit_verdict again = {1, 1, 2, 1, 0xc3};
    out = ncg_exit_sm_verdict(&m, &again, &o, T0);
    CHECK(out.what == NCG_XO_DONE && out.done_link == 2);
    CHECK(ncg_exit_sm_verdict_ending(&m, 0xc2, 1, 1).what == NCG_XO_DONE && m.nrel == 3);
    ncg_exit_sm_release(&m, 0xc1, 0, &o, T0);
    ncg_exit_sm_release(&m, 0xc2, 1, &o, T0);
    CHECK(m.abort == NCG_XA_WAITING);
    CHECK(!(ncg_exit_sm_finish(&m, &o, T0).what & NCG_XO_EXIT_NOW));
    ncg_exit_sm_release(&m, 0xc3, 2, &o, T0);
    CHECK(ncg_exit_sm_finish(&m, &o, T0).what == NCG_XO_EXIT_NOW);
    /* armed already: DONE, nothing awaited */
    m = fresh();
    struct ncg_exit_verdict here = {1, 1, -1, 0, 0xc1};
    ncg_exit_sm_verdict(&m, &here, &o, T0);
    CHECK(ncg_exit_sm_verdict_ending(&m, 0xc2, 1, 1).what == NCG_XO_DONE && m.nrel == 0);
    CHECK(ncg_exit_sm_finish(&m, &o, T0).what == NCG_XO_EXIT_NOW);
}

/* A verdict after the clean exit began (apply.c: "finished", must_exit 0): DONE, and the clean
 * exit goes on to done. */
static void test_overlap_verdict_after_clean(void)
{
    struct ncg_exit_sm m = fresh();
    struct ncg_exit_obs o = ob();
    o.exiting = 1;
    ncg_exit_sm_tick(&m, &o, T0);
    struct ncg_exit_verdict v = {1, 0, 0, 1, 0xc1};
    CHECK(ncg_exit_sm_verdict(&m, &v, &o, T0).what == NCG_XO_DONE && !ncg_exit_sm_ending(&m));
    CHECK(ncg_exit_sm_finish(&m, &o, T0 + 10 * MS).what == NCG_XO_CLEAN_DONE);
}

int main(void)
{
    params_default();
    test_abort_waits_release();
    test_abort_release_bound();
    test_abort_link_gone();
    test_abort_no_wait();
    test_verdicts_not_ending();
    test_abort_host_flush();
    test_abort_tree_root();
    test_abort_holding();
    test_clean_plain();
    test_clean_links();
    test_clean_register();
    test_clean_host_stays();
    test_clean_stay_ends();
    test_clean_relay_leaves();
    test_clean_holding();
    test_overlap_verdict_in_report();
    test_overlap_clean_beside_abort();
    test_overlap_two_verdicts();
    test_overlap_verdict_after_clean();
    return ncg_check_done();
}
