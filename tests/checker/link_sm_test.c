/* Unit tests of the link's state machine (interpose/machine/link_sm.c): every transition with
 * the default timings. A standalone checker connected, welcomed, silent, retried, back; silent
 * after our HELLO (issue 35: a lost checker, not a refusal) and closing after it (a refusal); a
 * connect refused, failed, timed out; a relay tree's node relay not there yet, elected, left
 * (NCG_BYE_RELAY) and reelected, lost (fallback to the root), the root lost (NCG_BYE_ROOT); a
 * checker that failed (NCG_BYE_FAILED); a standalone checker shutting down and coming back;
 * SHUTDOWN and a loss while waiting for a release; our own shortage; a suspended thread. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "link_sm.h"
#include "wire_base.h"

NCG_CHECK_PROGRAM("link_sm_test");

#define MS 1000000ull
#define S 1000000000ull
#define T0 (1000 * S)

static struct ncg_agent_params P;

static struct ncg_link_do step(struct ncg_link_sm *sm, int type, uint64_t now)
{
    struct ncg_link_ev ev = {.type = type, .now = now};
    return ncg_link_sm_step(sm, &ev, &P);
}

static struct ncg_link_do step_ev(struct ncg_link_sm *sm, struct ncg_link_ev ev)
{
    return ncg_link_sm_step(sm, &ev, &P);
}

static struct ncg_link_do conn(struct ncg_link_sm *sm, int result, uint64_t now)
{
    return step_ev(
        sm, (struct ncg_link_ev){.type = NCG_LEV_CONNECT, .now = now, .conn = (uint8_t)result});
}

/* A link made at T0 and welcomed at T0 + 1 ms. */
static void up(struct ncg_link_sm *sm, int tree, int relay, int root_node, int coord, int embedded)
{
    ncg_link_sm_init(sm, tree, relay, root_node, 0, coord, T0);
    struct ncg_link_do d = step(sm, NCG_LEV_START, T0);
    CHECK(d.act == NCG_LA_CONNECT && sm->state == NCG_LINK_CONNECTING);
    d = conn(sm, NCG_CONN_INPROGRESS, T0);
    CHECK(d.act == 0 && sm->state == NCG_LINK_CONNECTING);
    d = step(sm, NCG_LEV_WRITABLE, T0 + MS);
    CHECK(d.act == NCG_LA_HELLO && sm->state == NCG_LINK_HELLO);
    d = step_ev(sm, (struct ncg_link_ev){
                        .type = NCG_LEV_WELCOME, .now = T0 + MS, .embedded = (uint8_t)embedded});
    CHECK(d.act == (NCG_LA_ACCEPT | NCG_LA_REPORT_NOW) && d.say == NCG_LSAY_NONE);
    CHECK(sm->state == NCG_LINK_UP && !sm->lost_ns);
}

static void test_standalone(void)
{
    struct ncg_link_sm sm;
    up(&sm, 0, 0, 0, 1, 0);
    CHECK(ncg_link_sm_standalone(&sm));
    struct ncg_link_do d = step(&sm, NCG_LEV_MESSAGE, T0 + S);
    CHECK(d.act == NCG_LA_ACCEPT && sm.last_rx_ns == T0 + S);
    /* silent: not yet at the heartbeat timeout, then past it */
    d = step(&sm, NCG_LEV_CLOCK, T0 + S + P.heartbeat_ns);
    CHECK(d.act == 0 && sm.state == NCG_LINK_UP);
    uint64_t t = T0 + S + P.heartbeat_ns + 1;
    d = step(&sm, NCG_LEV_CLOCK, t);
    CHECK(d.say == NCG_LSAY_LOST && d.why == NCG_WHY_SILENT);
    CHECK(d.act == (NCG_LA_CLOSE | NCG_LA_KEEP_WHY | NCG_LA_LOST_CLOCK));
    CHECK(sm.state == NCG_LINK_RETRY && sm.lost_ns == t && sm.retry_ns == t + S);
    CHECK(ncg_link_sm_wake_ns(&sm) == t + S);
    /* before its retry: the CHECKER LOST clock only; acted on once */
    d = step(&sm, NCG_LEV_TICK, t + S / 2);
    CHECK(d.act == NCG_LA_CHECK_LOST && sm.state == NCG_LINK_RETRY);
    step(&sm, NCG_LEV_ACTED, t + S / 2);
    d = step(&sm, NCG_LEV_TICK, t + S / 2);
    CHECK(d.act == 0);
    /* its retry refused: the next in a second */
    d = step(&sm, NCG_LEV_TICK, t + S);
    CHECK(d.act == NCG_LA_CONNECT && sm.state == NCG_LINK_CONNECTING);
    d = conn(&sm, NCG_CONN_REFUSED, t + S);
    CHECK(d.act == 0 && d.say == NCG_LSAY_NONE && sm.state == NCG_LINK_RETRY);
    CHECK(sm.retry_ns == t + 2 * S);
    /* a connect that fails later (SO_ERROR) while retrying: the same */
    step(&sm, NCG_LEV_TICK, t + 2 * S);
    d = step(&sm, NCG_LEV_CONNECT_ERR, t + 2 * S + MS);
    CHECK(d.act == NCG_LA_CLOSE && d.say == NCG_LSAY_NONE && sm.state == NCG_LINK_RETRY);
    CHECK(sm.retry_ns == t + 3 * S + MS);
    /* a retry silent after our HELLO: retried again, no new loss said */
    step(&sm, NCG_LEV_TICK, t + 3 * S + MS);
    conn(&sm, NCG_CONN_OK, t + 3 * S + MS);
    step(&sm, NCG_LEV_WRITABLE, t + 3 * S + MS);
    CHECK(sm.state == NCG_LINK_HELLO);
    d = step(&sm, NCG_LEV_CLOCK, t + 3 * S + 2 * MS + P.heartbeat_ns);
    CHECK(d.act == NCG_LA_CLOSE && d.say == NCG_LSAY_NONE && sm.state == NCG_LINK_RETRY);
    /* back */
    uint64_t b = t + 10 * S;
    step(&sm, NCG_LEV_TICK, b);
    conn(&sm, NCG_CONN_INPROGRESS, b);
    step(&sm, NCG_LEV_WRITABLE, b);
    d = step(&sm, NCG_LEV_WELCOME, b);
    CHECK(d.say == NCG_LSAY_RECONNECTED && (d.act & NCG_LA_REPORT_NOW));
    CHECK(sm.state == NCG_LINK_UP && !sm.lost_ns && !sm.acted);
    /* its connection lost: the same loss, with its cause */
    d = step(&sm, NCG_LEV_CLOSED, b + S);
    CHECK(d.say == NCG_LSAY_LOST && d.why == NCG_WHY_CLOSED && sm.state == NCG_LINK_RETRY);
}

/* Issue 35: a checker silent after our HELLO is lost, not a refusal; closing is a refusal. */
static void test_hello(void)
{
    for (int coord = 0; coord < 2; coord++) {
        struct ncg_link_sm sm;
        ncg_link_sm_init(&sm, 0, 0, 0, 0, coord, T0);
        step(&sm, NCG_LEV_START, T0);
        conn(&sm, NCG_CONN_OK, T0);
        step(&sm, NCG_LEV_WRITABLE, T0);
        CHECK(sm.state == NCG_LINK_HELLO);
        struct ncg_link_do d = step(&sm, NCG_LEV_CLOCK, T0 + P.heartbeat_ns);
        CHECK(d.act == 0);
        uint64_t t = T0 + P.heartbeat_ns + 1;
        d = step(&sm, NCG_LEV_CLOCK, t);
        CHECKF(d.say == NCG_LSAY_LOST, "coord %d: said %d", coord, d.say);
        CHECK(d.act == (NCG_LA_CLOSE | NCG_LA_KEEP_WHY | NCG_LA_LOST_CLOCK));
        CHECK(sm.state == NCG_LINK_RETRY && sm.lost_ns == t && !sm.acted);
        CHECK(ncg_link_sm_standalone(&sm) == coord); /* zero-config: not known */
        d = step(&sm, NCG_LEV_TICK, t + S);
        CHECK(d.act == (NCG_LA_CHECK_LOST | NCG_LA_CONNECT));
        /* closed after our HELLO: a refusal (its words depend on who set the token) */
        ncg_link_sm_init(&sm, 0, 0, 0, 0, coord, T0);
        step(&sm, NCG_LEV_START, T0);
        conn(&sm, NCG_CONN_OK, T0);
        step(&sm, NCG_LEV_WRITABLE, T0);
        d = step(&sm, NCG_LEV_CLOSED, T0 + MS);
        CHECK(d.say == (coord ? NCG_LSAY_REFUSED : NCG_LSAY_CLOSED_EARLY));
        CHECK(d.act == NCG_LA_CLOSE && sm.state == NCG_LINK_DOWN && !sm.lost_ns);
    }
    /* the process exits meanwhile: said at -v only */
    struct ncg_link_sm sm;
    ncg_link_sm_init(&sm, 0, 0, 0, 0, 1, T0);
    step(&sm, NCG_LEV_START, T0);
    conn(&sm, NCG_CONN_OK, T0);
    step(&sm, NCG_LEV_WRITABLE, T0);
    struct ncg_link_do d =
        step_ev(&sm, (struct ncg_link_ev){.type = NCG_LEV_CLOSED, .now = T0 + MS, .exiting = 1});
    CHECK(d.say == NCG_LSAY_LEFT_EXITING && sm.state == NCG_LINK_DOWN);
    /* and no silence is timed while exiting */
    ncg_link_sm_init(&sm, 0, 0, 0, 0, 1, T0);
    step(&sm, NCG_LEV_START, T0);
    conn(&sm, NCG_CONN_OK, T0);
    step(&sm, NCG_LEV_WRITABLE, T0);
    d = step_ev(&sm, (struct ncg_link_ev){.type = NCG_LEV_CLOCK, .now = T0 + 60 * S, .exiting = 1});
    CHECK(d.act == 0 && sm.state == NCG_LINK_HELLO);
}

static void test_unreachable(void)
{
    struct ncg_link_sm sm;
    ncg_link_sm_init(&sm, 0, 0, 0, 0, 1, T0);
    step(&sm, NCG_LEV_START, T0);
    struct ncg_link_do d = conn(&sm, NCG_CONN_REFUSED, T0);
    CHECK(d.say == NCG_LSAY_UNREACHABLE && d.act == 0 && sm.state == NCG_LINK_DOWN);
    CHECK(ncg_link_sm_wake_ns(&sm) == UINT64_MAX);
    d = step(&sm, NCG_LEV_TICK, T0 + 10 * S); /* down for good: never retried */
    CHECK(d.act == 0);
    ncg_link_sm_init(&sm, 0, 0, 0, 0, 1, T0);
    step(&sm, NCG_LEV_START, T0);
    conn(&sm, NCG_CONN_INPROGRESS, T0);
    d = step(&sm, NCG_LEV_CONNECT_ERR, T0 + MS);
    CHECK(d.say == NCG_LSAY_UNREACHABLE && d.act == NCG_LA_CLOSE && sm.state == NCG_LINK_DOWN);
    /* a connect that never completes */
    ncg_link_sm_init(&sm, 0, 0, 0, 0, 1, T0);
    step(&sm, NCG_LEV_START, T0);
    conn(&sm, NCG_CONN_INPROGRESS, T0);
    d = step(&sm, NCG_LEV_CLOCK, T0 + P.link.connect_timeout);
    CHECK(d.act == 0);
    d = step(&sm, NCG_LEV_CLOCK, T0 + P.link.connect_timeout + 1);
    CHECK(d.say == NCG_LSAY_UNREACHABLE_WHY && d.why == NCG_WHY_CONNECT_TIMEOUT);
    CHECK(sm.state == NCG_LINK_DOWN);
    /* a message before the WELCOME is not handled */
    ncg_link_sm_init(&sm, 0, 0, 0, 0, 1, T0);
    step(&sm, NCG_LEV_START, T0);
    conn(&sm, NCG_CONN_OK, T0);
    step(&sm, NCG_LEV_WRITABLE, T0);
    d = step(&sm, NCG_LEV_MESSAGE, T0 + MS);
    CHECK(d.act == 0 && sm.last_rx_ns == T0 + MS);
    d = step(&sm, NCG_LEV_WRITABLE, T0 + MS); /* no second HELLO */
    CHECK(d.act == 0);
}

/* The relay tree: the node relay's election, its leaving, its loss, the root's loss. */
static void test_tree(void)
{
    struct ncg_link_sm sm;
    /* not LOCAL_RANK 0: no relay yet, retried very soon in the first second, then sooner than
     * a checker; it becomes the relay itself after relay_elect */
    ncg_link_sm_init(&sm, 1, 1, 0, 0, 0, T0);
    step(&sm, NCG_LEV_START, T0);
    struct ncg_link_do d = conn(&sm, NCG_CONN_REFUSED, T0);
    CHECK(d.act == 0 && d.say == NCG_LSAY_NONE && sm.state == NCG_LINK_RETRY);
    CHECK(sm.lost_ns == T0 && sm.acted && sm.retry_ns == T0 + P.link.relay_retry_new);
    d = step(&sm, NCG_LEV_TICK, T0 + P.link.relay_retry_new);
    CHECK(d.act == NCG_LA_CONNECT); /* no CHECKER LOST clock: not a loss */
    conn(&sm, NCG_CONN_REFUSED, T0 + P.link.relay_retry_new);
    CHECK(sm.retry_ns == T0 + 2 * P.link.relay_retry_new && sm.tree_fail_ns);
    uint64_t t = T0 + P.link.relay_elect;
    step(&sm, NCG_LEV_TICK, t);
    d = conn(&sm, NCG_CONN_REFUSED, t);
    CHECK(d.act == NCG_LA_BECOME_RELAY);
    d = step_ev(&sm, (struct ncg_link_ev){.type = NCG_LEV_RELAY, .now = t, .relay_ok = 1});
    CHECK(d.act == NCG_LA_CONNECT && sm.route == NCG_ROUTE_RELAY);
    d = conn(&sm, NCG_CONN_REFUSED, t); /* a second connect only */
    CHECK(d.act == 0 && sm.state == NCG_LINK_RETRY && sm.retry_ns == t + P.link.relay_retry);
    /* unreachable for tree_say: said once */
    uint64_t u = T0 + P.link.relay_retry_new + P.link.tree_say + 1;
    for (int k = 0; k < 2; k++) { /* each retry tries to become the relay, then connects */
        step(&sm, NCG_LEV_TICK, u + k * S);
        d = conn(&sm, NCG_CONN_REFUSED, u + k * S);
        CHECK(d.act == NCG_LA_BECOME_RELAY);
        step_ev(&sm, (struct ncg_link_ev){.type = NCG_LEV_RELAY, .now = u + k * S, .relay_ok = 1});
        d = conn(&sm, NCG_CONN_REFUSED, u + k * S);
        CHECKF(d.say == (k ? NCG_LSAY_NONE : NCG_LSAY_TREE_UNREACHABLE), "retry %d", k);
    }
    step(&sm, NCG_LEV_TICK, u + 2 * S);
    conn(&sm, NCG_CONN_OK, u + 2 * S);
    step(&sm, NCG_LEV_WRITABLE, u + 2 * S);
    d = step_ev(&sm,
                (struct ncg_link_ev){.type = NCG_LEV_WELCOME, .now = u + 2 * S, .embedded = 1});
    CHECK(d.say == NCG_LSAY_ATTACHED && sm.state == NCG_LINK_UP && !sm.lost_ns);
    CHECK(!sm.tree_fail_ns && !sm.tree_said);

    /* LOCAL_RANK 0 becomes the relay at once; one that cannot reports to the root */
    ncg_link_sm_init(&sm, 1, 1, 0, 1, 0, T0);
    step(&sm, NCG_LEV_START, T0);
    d = conn(&sm, NCG_CONN_REFUSED, T0);
    CHECK(d.act == NCG_LA_BECOME_RELAY);
    d = step_ev(&sm, (struct ncg_link_ev){.type = NCG_LEV_RELAY, .now = T0, .relay_ok = 0});
    CHECK(d.act == (NCG_LA_TO_ROOT | NCG_LA_CONNECT) && sm.route == NCG_ROUTE_ROOT);
    d = conn(&sm, NCG_CONN_REFUSED, T0);
    CHECK(d.say == NCG_LSAY_UNREACHABLE && sm.state == NCG_LINK_DOWN);

    /* the node's relay leaves (NCG_BYE_RELAY): reelected at once, by any process */
    up(&sm, 1, 1, 0, 0, 1);
    t = T0 + 2 * MS;
    d = step_ev(&sm,
                (struct ncg_link_ev){.type = NCG_LEV_SHUTDOWN, .now = t, .flags = NCG_BYE_RELAY});
    CHECK(d.act == NCG_LA_CLOSE && d.say == NCG_LSAY_NONE && sm.state == NCG_LINK_RETRY);
    CHECK(sm.reelect && sm.retry_ns == t && sm.acted);
    d = step(&sm, NCG_LEV_TICK, t);
    CHECK(d.act == NCG_LA_CONNECT);
    d = conn(&sm, NCG_CONN_REFUSED, t);
    CHECK(d.act == NCG_LA_BECOME_RELAY); /* within relay_elect, not LOCAL_RANK 0: reelect */
    /* ... while exiting: never retried */
    up(&sm, 1, 1, 0, 0, 1);
    step_ev(&sm, (struct ncg_link_ev){
                     .type = NCG_LEV_SHUTDOWN, .now = t, .flags = NCG_BYE_RELAY, .exiting = 1});
    CHECK(sm.state == NCG_LINK_RETRY && ncg_link_sm_wake_ns(&sm) == UINT64_MAX);

    /* the node's relay lost (another node's): fall back to the root, CHECKER LOST clock */
    up(&sm, 1, 1, 0, 0, 1);
    d = step(&sm, NCG_LEV_CLOSED, t);
    CHECK(d.say == NCG_LSAY_FALLBACK && sm.route == NCG_ROUTE_ROOT && sm.state == NCG_LINK_RETRY);
    CHECK(d.act ==
          (NCG_LA_CLOSE | NCG_LA_TO_ROOT | NCG_LA_NAME_ROOT | NCG_LA_KEEP_WHY | NCG_LA_LOST_CLOCK));
    CHECK(sm.retry_ns == t && !sm.acted);
    d = step(&sm, NCG_LEV_TICK, t);
    CHECK(d.act == (NCG_LA_CHECK_LOST | NCG_LA_CONNECT));
    /* also silent after our HELLO */
    ncg_link_sm_init(&sm, 1, 1, 0, 0, 0, T0);
    step(&sm, NCG_LEV_START, T0);
    conn(&sm, NCG_CONN_OK, T0);
    step(&sm, NCG_LEV_WRITABLE, T0);
    d = step(&sm, NCG_LEV_CLOCK, T0 + P.heartbeat_ns + 1);
    CHECK(d.say == NCG_LSAY_FALLBACK && sm.route == NCG_ROUTE_ROOT);
    /* the root node's relay is the root: its loss is its process's death */
    up(&sm, 1, 1, 1, 0, 1);
    d = step(&sm, NCG_LEV_CLOSED, t);
    CHECK(d.act == (NCG_LA_CLOSE | NCG_LA_RANK_DIED) && sm.state == NCG_LINK_DOWN);
    /* the root lost, said by the node's relay (NCG_BYE_ROOT): RANK DIED of the root */
    up(&sm, 1, 1, 0, 0, 1);
    d = step_ev(&sm,
                (struct ncg_link_ev){.type = NCG_LEV_SHUTDOWN, .now = t, .flags = NCG_BYE_ROOT});
    CHECK(d.act == (NCG_LA_CLOSE | NCG_LA_RANK_DIED) && d.why == NCG_WHY_ROOT_LOST);
    CHECK(sm.state == NCG_LINK_DOWN && sm.route == NCG_ROUTE_RELAY);
}

static void test_shutdown(void)
{
    struct ncg_link_sm sm;
    /* a checker that failed (out of memory): unguarded, said unless it was our own */
    for (int own = 0; own < 2; own++) {
        up(&sm, 0, 0, 0, 0, 1);
        struct ncg_link_do d = step_ev(&sm, (struct ncg_link_ev){.type = NCG_LEV_SHUTDOWN,
                                                                 .now = T0 + S,
                                                                 .flags = NCG_BYE_FAILED,
                                                                 .own_stopped = (uint8_t)own});
        CHECK(d.say == (own ? NCG_LSAY_NONE : NCG_LSAY_FAILED) && d.act == NCG_LA_CLOSE);
        CHECK(sm.state == NCG_LINK_DOWN);
    }
    /* a standalone checker shuts down: retried, no CHECKER LOST; it comes back */
    up(&sm, 0, 0, 0, 1, 0);
    uint64_t t = T0 + S;
    struct ncg_link_do d = step(&sm, NCG_LEV_SHUTDOWN, t);
    CHECK(d.say == NCG_LSAY_SHUT_DOWN && d.why == NCG_WHY_SHUT_DOWN);
    CHECK(d.act == (NCG_LA_CLOSE | NCG_LA_KEEP_WHY) && sm.state == NCG_LINK_RETRY);
    CHECK(sm.retry_ns == t + P.link.retry && sm.acted);
    d = step(&sm, NCG_LEV_TICK, t + S / 2);
    CHECK(d.act == 0);
    d = step(&sm, NCG_LEV_TICK, t + S);
    CHECK(d.act == NCG_LA_CONNECT);
    conn(&sm, NCG_CONN_REFUSED, t + S);
    CHECK(sm.state == NCG_LINK_RETRY && sm.retry_ns == t + 2 * S);
    step(&sm, NCG_LEV_TICK, t + 2 * S);
    conn(&sm, NCG_CONN_INPROGRESS, t + 2 * S);
    step(&sm, NCG_LEV_WRITABLE, t + 2 * S);
    d = step(&sm, NCG_LEV_WELCOME, t + 2 * S);
    CHECK(d.say == NCG_LSAY_RECONNECTED && sm.state == NCG_LINK_UP);
    /* an embedded checker's process exits: its counts taken, down */
    up(&sm, 0, 0, 0, 0, 1);
    d = step_ev(&sm,
                (struct ncg_link_ev){.type = NCG_LEV_SHUTDOWN, .now = t, .flags = NCG_BYE_PROCESS});
    CHECK(d.act == (NCG_LA_TAKE_BYE | NCG_LA_CLOSE) && d.say == NCG_LSAY_BYE);
    CHECK(sm.state == NCG_LINK_DOWN);
    /* its process died: RANK DIED */
    up(&sm, 0, 0, 0, 0, 1);
    d = step(&sm, NCG_LEV_CLOSED, t);
    CHECK(d.act == (NCG_LA_CLOSE | NCG_LA_RANK_DIED) && d.why == NCG_WHY_CLOSED);
    /* waiting for a release: a SHUTDOWN or a loss ends that wait, nothing else */
    up(&sm, 0, 0, 0, 0, 1);
    d = step_ev(&sm, (struct ncg_link_ev){.type = NCG_LEV_SHUTDOWN, .now = t, .releasing = 1});
    CHECK(d.act == (NCG_LA_CLOSE | NCG_LA_RELEASE_ALL) && sm.state == NCG_LINK_DOWN);
    up(&sm, 0, 0, 0, 1, 0);
    d = step_ev(&sm, (struct ncg_link_ev){.type = NCG_LEV_CLOSED, .now = t, .releasing = 1});
    CHECK(d.act == (NCG_LA_CLOSE | NCG_LA_RELEASE_ALL) && d.say == NCG_LSAY_NONE);
    CHECK(sm.state == NCG_LINK_DOWN);
    /* our own shortage */
    up(&sm, 0, 0, 0, 1, 0);
    d = step(&sm, NCG_LEV_NOMEM, t);
    CHECK(d.say == NCG_LSAY_NOMEM && d.act == NCG_LA_CLOSE && sm.state == NCG_LINK_DOWN);
    /* this thread suspended: the checker's silence clock restarts */
    up(&sm, 0, 0, 0, 1, 0);
    step(&sm, NCG_LEV_RESUMED, T0 + 60 * S);
    d = step(&sm, NCG_LEV_CLOCK, T0 + 60 * S + 1);
    CHECK(d.act == 0 && sm.state == NCG_LINK_UP);
}

int main(void)
{
    struct ncg_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.heartbeat_timeout_s = 2;
    P = ncg_agent_params_of(&cfg);
    CHECK(P.link.retry == S && P.link.relay_retry_new == 10 * MS && P.heartbeat_ns == 2 * S);
    test_standalone();
    test_hello();
    test_unreachable();
    test_tree();
    test_shutdown();
    return ncg_check_done();
}
