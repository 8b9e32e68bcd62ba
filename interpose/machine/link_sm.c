/* The link's state machine (link_sm.h): every decision about one link to a checker, from the
 * events the driver feeds it. A refusal is the checker closing after our HELLO; silence after
 * our HELLO is a lost checker, retried and acted on (CHECKER LOST) as after its WELCOME. */
#include <stdint.h>
#include <string.h>

#include "link_sm.h"
#include "wire_base.h"

void ncg_link_sm_init(struct ncg_link_sm *sm, int tree, int relay, int root_node, int local0,
                      int coord, uint64_t now)
{
    memset(sm, 0, sizeof *sm);
    sm->route = !tree ? NCG_ROUTE_FLAT : relay ? NCG_ROUTE_RELAY : NCG_ROUTE_ROOT;
    sm->root_node = (uint8_t) !!root_node;
    sm->local0 = (uint8_t) !!local0;
    sm->coord = (uint8_t) !!coord;
    sm->born_ns = now;
    sm->state = NCG_LINK_FREE;
}

int ncg_link_sm_standalone(const struct ncg_link_sm *sm)
{
    return sm->welcomed ? !sm->embedded : sm->coord;
}

uint64_t ncg_link_sm_wake_ns(const struct ncg_link_sm *sm)
{
    return sm->state == NCG_LINK_RETRY ? sm->retry_ns : UINT64_MAX;
}

/* Closed: retried if lost (lost_ns), else down for good. */
static void down(struct ncg_link_sm *sm)
{
    sm->state = sm->lost_ns ? NCG_LINK_RETRY : NCG_LINK_DOWN;
}

/* The pause before the next connect: a node relay's name soon (very soon in the link's first
 * relay_elect: LOCAL_RANK 0's relay comes within milliseconds), a checker every retry. */
static uint64_t retry_in(const struct ncg_link_sm *sm, const struct ncg_agent_params *p,
                         uint64_t now)
{
    if (sm->route != NCG_ROUTE_RELAY)
        return p->link.retry;
    return now - sm->born_ns < p->link.relay_elect ? p->link.relay_retry_new : p->link.relay_retry;
}

static void connect_now(struct ncg_link_sm *sm, struct ncg_link_do *d, uint64_t now)
{
    sm->start_ns = sm->last_rx_ns = now;
    sm->state = NCG_LINK_CONNECTING;
    d->act |= NCG_LA_CONNECT;
}

/* The connect was refused and no other is tried now. */
static void refused(struct ncg_link_sm *sm, struct ncg_link_do *d, const struct ncg_agent_params *p,
                    uint64_t now)
{
    if (sm->lost_ns) { /* a retry */
        sm->state = NCG_LINK_RETRY;
        sm->retry_ns = now + retry_in(sm, p, now);
        if (sm->route != NCG_ROUTE_RELAY)
            return;
        if (!sm->tree_fail_ns)
            sm->tree_fail_ns = now;
        if (!sm->tree_said && now - sm->tree_fail_ns > p->link.tree_say) {
            d->say = NCG_LSAY_TREE_UNREACHABLE;
            sm->tree_said = 1;
        }
    } else if (sm->route == NCG_ROUTE_RELAY) { /* no node relay yet: soon (not a loss) */
        sm->lost_ns = now;
        sm->acted = 1;
        sm->state = NCG_LINK_RETRY;
        sm->retry_ns = now + retry_in(sm, p, now);
    } else {
        sm->state = NCG_LINK_DOWN;
        d->say = NCG_LSAY_UNREACHABLE;
    }
}

static void on_connect(struct ncg_link_sm *sm, const struct ncg_link_ev *ev, struct ncg_link_do *d,
                       const struct ncg_agent_params *p)
{
    if (ev->conn != NCG_CONN_REFUSED) {
        sm->state = NCG_LINK_CONNECTING;
        return;
    }
    /* The node's relay is LOCAL_RANK 0's checker thread; another process takes the role only
     * when that one is not there after relay_elect (not guarded, or gone), or left. The first
     * to bind the node's name wins. */
    if (sm->route == NCG_ROUTE_RELAY && !sm->attempt &&
        (sm->local0 || sm->reelect || ev->now - sm->born_ns >= p->link.relay_elect)) {
        sm->attempt = 1;
        d->act |= NCG_LA_BECOME_RELAY;
        return;
    }
    refused(sm, d, p, ev->now);
}

/* The checker can no longer be reached (closed, silent, connect timed out, or its tree's root
 * lost): fall back, retry, act, or give up. */
static void lost(struct ncg_link_sm *sm, const struct ncg_link_ev *ev, int why,
                 struct ncg_link_do *d, const struct ncg_agent_params *p)
{
    uint64_t now = ev->now;
    int was_up = sm->state == NCG_LINK_UP, was_hello = sm->state == NCG_LINK_HELLO;
    d->act |= NCG_LA_CLOSE;
    d->why = (uint8_t)why;
    if (ev->releasing) { /* no RELEASE can come on it any more: that wait is over */
        down(sm);
        d->act |= NCG_LA_RELEASE_ALL;
        return;
    }
    if (why != NCG_WHY_ROOT_LOST && sm->route == NCG_ROUTE_RELAY && !sm->root_node) {
        /* This node's relay died or froze (also before it welcomed us): its process's ranks are
         * the root's to name, so this process reports to the root directly from now on; the
         * root unreachable too is CHECKER LOST, as for a standalone checker. */
        sm->route = NCG_ROUTE_ROOT;
        sm->lost_ns = now;
        sm->acted = 0;
        sm->retry_ns = now;
        sm->state = NCG_LINK_RETRY;
        d->say = NCG_LSAY_FALLBACK;
        d->act |= NCG_LA_TO_ROOT | NCG_LA_NAME_ROOT | NCG_LA_KEEP_WHY | NCG_LA_LOST_CLOCK;
        return;
    }
    if (sm->lost_ns) { /* a retry that failed */
        sm->state = NCG_LINK_RETRY;
        sm->retry_ns = now + (sm->route == NCG_ROUTE_RELAY ? p->link.relay_retry : p->link.retry);
        return;
    }
    /* Silent: frozen or slow, before its WELCOME as after it (issue 35): not a refusal. */
    int standalone_lost = was_up ? !sm->embedded : was_hello && why == NCG_WHY_SILENT;
    if (!standalone_lost && !was_up) {
        sm->state = NCG_LINK_DOWN;
        if (ev->exiting) /* this process leaves too: nothing runs unguarded any more */
            d->say = NCG_LSAY_LEFT_EXITING;
        else if (was_hello) /* closed after our HELLO: a refusal */
            d->say = sm->coord ? NCG_LSAY_REFUSED : NCG_LSAY_CLOSED_EARLY;
        else
            d->say = NCG_LSAY_UNREACHABLE_WHY;
        return;
    }
    if (standalone_lost) {
        sm->lost_ns = now;
        sm->acted = 0;
        sm->retry_ns = now + p->link.retry;
        sm->state = NCG_LINK_RETRY;
        d->say = NCG_LSAY_LOST;
        d->act |= NCG_LA_KEEP_WHY | NCG_LA_LOST_CLOCK;
        return;
    }
    sm->state = NCG_LINK_DOWN; /* its process is gone: a local verdict per comm */
    d->act |= NCG_LA_RANK_DIED;
}

static void on_shutdown(struct ncg_link_sm *sm, const struct ncg_link_ev *ev, struct ncg_link_do *d,
                        const struct ncg_agent_params *p)
{
    uint64_t now = ev->now;
    if (ev->releasing) { /* the checker left: no RELEASE will come on it */
        d->act |= NCG_LA_CLOSE | NCG_LA_RELEASE_ALL;
        down(sm);
    } else if ((ev->flags & NCG_BYE_RELAY) && sm->route == NCG_ROUTE_RELAY) {
        /* The node's relay leaves (its process exits cleanly): reattach to the node's next
         * relay, which may be this process. Exiting: no need. */
        d->act |= NCG_LA_CLOSE;
        sm->lost_ns = now;
        sm->acted = 1;
        sm->reelect = 1;
        sm->retry_ns = ev->exiting ? UINT64_MAX : now;
        sm->state = NCG_LINK_RETRY;
    } else if (ev->flags & NCG_BYE_ROOT) {
        lost(sm, ev, NCG_WHY_ROOT_LOST, d, p);
    } else if (ev->flags & NCG_BYE_FAILED) {
        /* Not a death and not an exit: its ranks live on, only the checking stopped. The
         * process whose own checker failed has said so already. */
        if (!ev->own_stopped)
            d->say = NCG_LSAY_FAILED;
        d->act |= NCG_LA_CLOSE;
        down(sm);
    } else if (!sm->embedded && sm->state == NCG_LINK_UP) {
        /* A standalone checker stopped on purpose: it may come back (a restarted daemon), so
         * retry; no CHECKER LOST, it said it left. */
        d->say = NCG_LSAY_SHUT_DOWN;
        d->why = NCG_WHY_SHUT_DOWN;
        d->act |= NCG_LA_CLOSE | NCG_LA_KEEP_WHY;
        sm->lost_ns = now;
        sm->retry_ns = now + p->link.retry;
        sm->acted = 1;
        sm->state = NCG_LINK_RETRY;
    } else { /* its process exited (or a verdict ended it): what it said of its comms */
        d->act |= NCG_LA_TAKE_BYE | NCG_LA_CLOSE;
        d->say = NCG_LSAY_BYE;
        down(sm);
    }
}

static void on_welcome(struct ncg_link_sm *sm, const struct ncg_link_ev *ev, struct ncg_link_do *d)
{
    if (sm->state != NCG_LINK_HELLO)
        return;
    sm->state = NCG_LINK_UP;
    sm->welcomed = 1;
    sm->embedded = (uint8_t) !!ev->embedded;
    d->act |= NCG_LA_ACCEPT | NCG_LA_REPORT_NOW;
    if (sm->lost_ns && sm->route != NCG_ROUTE_FLAT) {
        d->say = NCG_LSAY_ATTACHED;
        sm->tree_fail_ns = 0;
        sm->tree_said = 0;
    } else if (sm->lost_ns) {
        d->say = NCG_LSAY_RECONNECTED;
    }
    sm->lost_ns = 0;
    sm->acted = 0;
}

/* Each loop: a connect that takes too long, a checker silent for the heartbeat timeout. */
static void on_clock(struct ncg_link_sm *sm, const struct ncg_link_ev *ev, struct ncg_link_do *d,
                     const struct ncg_agent_params *p)
{
    uint64_t now = ev->now;
    if (sm->state == NCG_LINK_CONNECTING && now - sm->start_ns > p->link.connect_timeout)
        lost(sm, ev, NCG_WHY_CONNECT_TIMEOUT, d, p);
    else if ((sm->state == NCG_LINK_UP || sm->state == NCG_LINK_HELLO) && p->heartbeat_ns &&
             now - sm->last_rx_ns > p->heartbeat_ns && !ev->exiting)
        lost(sm, ev, NCG_WHY_SILENT, d, p);
}

/* Each loop while not exiting, for a lost link: its retry, and its CHECKER LOST clock. */
static void on_tick(struct ncg_link_sm *sm, const struct ncg_link_ev *ev, struct ncg_link_do *d)
{
    if (!sm->lost_ns || sm->state == NCG_LINK_UP)
        return;
    if (!sm->acted)
        d->act |= NCG_LA_CHECK_LOST;
    if (sm->state == NCG_LINK_RETRY && ev->now >= sm->retry_ns) {
        sm->attempt = 0;
        connect_now(sm, d, ev->now);
    }
}

struct ncg_link_do ncg_link_sm_step(struct ncg_link_sm *sm, const struct ncg_link_ev *ev,
                                    const struct ncg_agent_params *p)
{
    struct ncg_link_do d = {0};
    switch (ev->type) {
    case NCG_LEV_START:
        sm->attempt = 0;
        connect_now(sm, &d, ev->now);
        break;
    case NCG_LEV_CONNECT:
        on_connect(sm, ev, &d, p);
        break;
    case NCG_LEV_RELAY: /* this process could not be the relay: the tree's root directly */
        if (!ev->relay_ok) {
            sm->route = NCG_ROUTE_ROOT;
            d.act |= NCG_LA_TO_ROOT;
        }
        connect_now(sm, &d, ev->now);
        break;
    case NCG_LEV_CONNECT_ERR:
        d.act |= NCG_LA_CLOSE;
        if (sm->lost_ns) {
            sm->state = NCG_LINK_RETRY;
            sm->retry_ns = ev->now + p->link.retry;
        } else {
            sm->state = NCG_LINK_DOWN;
            d.say = NCG_LSAY_UNREACHABLE;
        }
        break;
    case NCG_LEV_WRITABLE:
        if (sm->state == NCG_LINK_CONNECTING) {
            sm->state = NCG_LINK_HELLO;
            d.act |= NCG_LA_HELLO;
        }
        break;
    case NCG_LEV_WELCOME:
        sm->last_rx_ns = ev->now;
        on_welcome(sm, ev, &d);
        break;
    case NCG_LEV_MESSAGE:
        sm->last_rx_ns = ev->now;
        if (sm->state == NCG_LINK_UP)
            d.act |= NCG_LA_ACCEPT;
        break;
    case NCG_LEV_SHUTDOWN:
        sm->last_rx_ns = ev->now;
        on_shutdown(sm, ev, &d, p);
        break;
    case NCG_LEV_CLOSED:
        lost(sm, ev, ev->why ? ev->why : NCG_WHY_CLOSED, &d, p);
        break;
    case NCG_LEV_NOMEM: /* no verdict from a partial view */
        d.say = NCG_LSAY_NOMEM;
        d.act |= NCG_LA_CLOSE;
        down(sm);
        break;
    case NCG_LEV_CLOCK:
        on_clock(sm, ev, &d, p);
        break;
    case NCG_LEV_TICK:
        on_tick(sm, ev, &d);
        break;
    case NCG_LEV_ACTED:
        sm->acted = 1;
        break;
    case NCG_LEV_RESUMED:
        sm->last_rx_ns = ev->now;
        break;
    default:
        break;
    }
    return d;
}
