/* The exit sequence of a guarded process, all of it here; the other files only call in
 * (apply.c after a verdict, link.c on VERDICT, RELEASE and SHUTDOWN, lost.c when the link a
 * RELEASE was awaited on is lost, thread.c twice a loop, atexit). docs/checker.md, "The exit
 * release", says why. No state machine object: the phase is the flags of struct ncg_agent
 * (agent_int.h; thread-owned unless said there), and this is their order.
 *
 * An abort verdict (error severity, NCCLGUARD_ACTION=abort), in the checker thread:
 *   1. aborting = 1 (apply.c, before anything is shown): from here the process ends with
 *      NCG_EXIT_VERDICT; a clean exit of the application meanwhile waits (ncg_exit_at_exit).
 *   2. report, then print (ncg_action_apply: the report is written first so the full block can
 *      name it; then the other comm ranks held here print their lines).
 *   3. DONE to the checker it came on (ncg_exit_after_verdict; say_done).
 *   4. GOODBYEs flagged NCG_BYE_VERDICT to every checker, and this process's SHUTDOWN to the
 *      clients of its own checker unless it waits (ncg_exit_messages, only_bye).
 *   5. wait RELEASE: release_until_ns = now + release_bound_ns(); rel[] the (comm, link)
 *      pairs awaited, one more for each error verdict that arrives meanwhile (it is answered
 *      with DONE, not printed: ncg_exit_verdict_while_ending). Over when each came
 *      (ncg_exit_release_got), when its checker is gone (its SHUTDOWN, or the link lost:
 *      released), or at release_until_ns (ncg_exit_finish). Skipped, straight to 6, when the
 *      verdict was decided here (li -1), its link is not up or NCCLGUARD_EXIT_WAIT_S=0.
 *   6. armed (exit_arm): release_until_ns = 0; abort_at_ns = now + 1 s in a process that
 *      hosts a checker or relay (to flush the verdict to its clients), else at once;
 *      hold_until_ns bounds holding others (below); sd_deferred when step 4 held the SHUTDOWN.
 *   7. exit (ncg_exit_finish): once at most one connection is pending (our own link to our
 *      own listener) or 0.3 s past abort_at_ns, and not while holding others: _exit
 *      (ncg_action_exit). A tree's root first leaves down the tree (root_left_ns), waiting at
 *      least two intervals. ncg_ending() (abort_at_ns or release_until_ns) is steps 5 to 7.
 * A clean exit (the application returns or calls exit):
 *   1. exiting = 1 under lk (ncg_exit_at_exit, in the exiting thread), which then waits on cv
 *      for exit_done: 0.8 s, once extended by 5 s + twice the release bound while aborting,
 *      holding or registering, and a second at a time while the host stays (2b), after which
 *      an abort under way exits with its status, never the app's.
 *   2. GOODBYEs (ncg_exit_tick): once no link is still connecting, or 0.2 s before the 0.6 s
 *      deadline (5 s while a link waiting for its checker's answer carries comms no REPORT
 *      carried yet: the checker would never learn that this rank left; registering): a
 *      REPORT, then GOODBYEs and our SHUTDOWN (held back while holding or staying, sd_deferred;
 *      to the root's backlog too: ncg_rhost_leave), x->sent.
 *   2b. the checker's host stays (stay_tick; x->stay, staying): a process whose embedded
 *      checker has other processes connected that have not said their last goodbye, or
 *      members never registered (until nobody new connected for the heartbeat timeout), keeps
 *      its checker running and its SHUTDOWN deferred until they are gone (NCCLGUARD_HOST_STAY_S
 *      bounds it); ncg_exit_at_exit waits as long. An abort verdict meanwhile ends the stay
 *      (its own exit and release follow). Then exit_sd is rebuilt and the SHUTDOWN goes.
 *   3. a relay here leaves (ncg_rhost_leave) 1.5 intervals later (a tree's root: 3, and not
 *      while holding).
 *   4. done (ncg_exit_finish): GOODBYEs sent, flushed and no relay left running here, or
 *      past the deadline; never while aborting, deferring the SHUTDOWN or holding with a
 *      relay: exit_done = 1 under lk, cv signalled, the thread ends.
 * Holding others (either exit): while this process's checker or tree root waits for other
 * processes' DONEs (hosted_waiting) and hold_until_ns has not passed, x->hold: our SHUTDOWN
 * stays deferred (sd_deferred) and our exit waits; holding (atomic) tells ncg_exit_at_exit to
 * extend its wait. When it is over the SHUTDOWN goes and the exit waits a moment for it to be
 * read (abort_at_ns 1 s on, a clean deadline 0.2 s on).
 * Why flags and not one enum of phases: they can overlap. ncg_exit_after_verdict's REPORT
 * (ncg_client_report) may judge a RANK EXITED and apply it inside, before step 5: that one's
 * exit starts first (decided here: armed at once), then the outer one sets release_until_ns
 * too, so both are set; and a clean exit (exiting) may run beside an abort. One enum would
 * change what such a process does. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ck_pr.h>

#include "action.h"
#include "agent_int.h"
#include "config.h"
#include "log.h"
#include "relay.h" /* ncg_relay_left_ent */
#include "relayhost.h"
#include "shm.h"
#include "wire.h"

static struct ncg_msg exit_sd; /* this process's SHUTDOWN (a tree's root sends it on leaving) */

/* The comms this process destroyed and said goodbye for (they leave ncg_agent.lc), for its
 * SHUTDOWN: its own coordinator may not have read that goodbye when the process exits. The latest
 * NCG_WIRE_MAX_COMMS, checker thread only. */
static struct {
    uint64_t id, final;
} left_own[NCG_WIRE_MAX_COMMS];
static unsigned left_own_n;
void ncg_left_own_add(uint64_t id, uint64_t final)
{
    left_own[left_own_n++ % NCG_WIRE_MAX_COMMS] = (typeof(left_own[0])){id, final};
}

/* This process's SHUTDOWN (exit_sd): its checker (a relay tree's root) leaves down its tree
 * with it. */
static void server_shutdown(void)
{
    if (ncg_root_up())
        ncg_rhost_leave(ncg_agent.root, &exit_sd);
}

/* Tells the checker on link li that this process printed and reported comm_id's verdict. */
static void say_done(int li, uint64_t comm_id)
{
    struct ncg_msg m = {.type = NCG_MSG_DONE, .u.exit.comm_id = comm_id};
    if (li >= 0 && li < ncg_agent.nlink && ncg_agent.link[li].state == NCG_LINK_UP)
        ncg_link_send(&ncg_agent.link[li], &m);
}

/* The longest this process waits on an exit release, for its own RELEASE or for the releases
 * its checker holds for others: the checker's bound, and a margin for a RELEASE to arrive. */
static uint64_t release_bound_ns(void)
{
    return (uint64_t)((ncg_cfg.exit_wait_s + 2.0) * 1e9);
}

/* This process's checker or tree root still waits for other processes' DONEs. */
static int hosted_waiting(void)
{
    return ncg_root_up() && ncg_rhost_releases_waiting(ncg_agent.root);
}

/* An abort verdict's exit: now, once our own verdicts reached the others (a process that hosts
 * the checker or a relay waits for its connections to drain, and for the exit releases it
 * holds for others; ncg_exit_finish). */
static void exit_arm(uint64_t now)
{
    if (ncg_agent.release_until_ns && ncg_root_up())
        ncg_agent.sd_deferred = 1; /* held back until the release (ncg_exit_tick) */
    ncg_agent.release_until_ns = 0;
    if (!ncg_agent.abort_at_ns) {
        ncg_agent.abort_at_ns = now + (ncg_root_up() || ncg_rh_up() ? 1000000000ull : 1);
        ncg_agent.hold_until_ns = now + release_bound_ns();
    }
}

/* Waits (abort) for the RELEASE of comm_id on link li too. */
static void exit_wait_add(uint64_t comm_id, int li)
{
    for (int i = 0; i < ncg_agent.nrel; i++)
        if (ncg_agent.rel[i].comm_id == comm_id && ncg_agent.rel[i].link == li)
            return;
    if (ncg_agent.nrel < (int)(sizeof ncg_agent.rel / sizeof *ncg_agent.rel))
        ncg_agent.rel[ncg_agent.nrel++] = (__typeof__(ncg_agent.rel[0])){comm_id, li, 0};
}

/* After a verdict was printed and its report written (apply.c): DONE for an error verdict;
 * when the action ends the process (must_exit) and no exit is under way, its GOODBYEs and
 * then the wait for RELEASE on link li (-1: decided here, no release: armed at once). */
void ncg_exit_after_verdict(int error, int must_exit, uint64_t comm_id, int li, uint64_t now)
{
    if (error)
        say_done(li, comm_id); /* printed and reported: others may be released */
    if (must_exit && !ncg_agent.abort_at_ns && !ncg_agent.release_until_ns) {
        /* Our end is the verdict's doing, not a death: peers on our other comms say so. */
        ncg_client_report(now);
        int wait = li >= 0 && ncg_agent.link[li].state == NCG_LINK_UP && ncg_cfg.exit_wait_s > 0;
        ncg_exit_messages(NCG_BYE_VERDICT, wait);
        if (wait) {
            ncg_agent.release_until_ns = now + release_bound_ns();
            ncg_agent.nrel = 0;
            exit_wait_add(comm_id, li);
        } else {
            exit_arm(now);
        }
    }
}

/* An error verdict reached a process already ending (not printed: one diagnostic is enough):
 * DONE, so that it holds nobody, and its RELEASE waited for too while waiting (its other
 * members may still be printing). */
void ncg_exit_verdict_while_ending(uint64_t comm_id, int li)
{
    say_done(li, comm_id);
    if (ncg_agent.release_until_ns)
        exit_wait_add(comm_id, li);
}

/* comm_id's RELEASE came on link li (comm_id 0: every verdict of li, its checker being gone);
 * once every one came, the process may exit. */
void ncg_exit_release_got(uint64_t comm_id, int li, uint64_t now)
{
    if (!ncg_agent.release_until_ns)
        return;
    int left = 0;
    for (int i = 0; i < ncg_agent.nrel; i++) {
        if (ncg_agent.rel[i].link == li && (!comm_id || ncg_agent.rel[i].comm_id == comm_id))
            ncg_agent.rel[i].released = 1;
        left += !ncg_agent.rel[i].released;
    }
    if (!left)
        exit_arm(now);
}

/* Adds a comm's entry to exit_sd: this process's own (rank: its comm rank there, the one
 * with the lowest count when it holds several; NCG_BYE_ANYRANK unknown), or (other) another
 * member's that left before it. */
static void sd_add(uint64_t id, uint32_t rank, uint64_t cnt, int other)
{
    struct ncg_msg_goodbye *g = &exit_sd.u.goodbye;
    for (uint32_t j = 0; j < g->n && !other; j++)
        if (g->comm_id[j] == id) {
            if (cnt < g->count[j]) {
                g->count[j] = cnt;
                g->rank[j] = rank;
            }
            return;
        }
    if (g->n < NCG_WIRE_MAX_COMMS) {
        g->comm_id[g->n] = id;
        g->rank[g->n] = rank;
        g->count[g->n++] = cnt;
    }
}

/* This process's SHUTDOWN into exit_sd: its own counts, and (its checker's) those of the
 * members that left before it; with bye (may be NULL), the GOODBYE of each link. */
static void exit_sd_build(uint8_t flags, struct ncg_msg *bye)
{
    memset(&exit_sd, 0, sizeof exit_sd);
    exit_sd.type = NCG_MSG_SHUTDOWN;
    exit_sd.u.goodbye.flags = flags;
    for (int i = 0; bye && i < ncg_agent.nlink; i++) {
        memset(&bye[i], 0, sizeof bye[i]);
        bye[i].type = NCG_MSG_GOODBYE;
        bye[i].u.goodbye.flags = (uint8_t)(NCG_BYE_PROCESS | flags);
    }
    pthread_mutex_lock(&ncg_agent.lk);
    for (size_t i = 0; i < ncg_agent.nlc; i++) {
        struct ncg_lcomm *lc = &ncg_agent.lc[i];
        uint64_t cnt = lc->removed ? lc->final : lc->shm ? ck_pr_load_64(&lc->shm->coll_seq) : 0;
        if (lc->link >= 0 && bye) {
            struct ncg_msg_goodbye *g = &bye[lc->link].u.goodbye;
            if (g->n < NCG_WIRE_MAX_COMMS) {
                g->comm_id[g->n] = lc->id;
                g->rank[g->n] = (uint32_t)lc->rank;
                g->count[g->n++] = cnt;
            }
        }
        sd_add(lc->id, (uint32_t)lc->rank, cnt, 0);
    }
    pthread_mutex_unlock(&ncg_agent.lk);
    for (unsigned k = 0; k < left_own_n && k < NCG_WIRE_MAX_COMMS; k++)
        sd_add(left_own[k].id, NCG_BYE_ANYRANK, left_own[k].final, 0);
    /* Members that left before this process: its checker knew who and their counts, the
     * others would not learn them once it is gone (each names them in a RANK EXITED it judges
     * alone). After this process's own entries: a comm's first entry is its own (UINT64_MAX
     * when it held no rank there), a later one a member's that left, lowest counts first. */
    static struct ncg_relay_left_ent left[NCG_WIRE_MAX_COMMS];
    size_t nl = ncg_root_up() ? ncg_rhost_left(ncg_agent.root, left, NCG_WIRE_MAX_COMMS) : 0;
    for (size_t k = 0; k < nl; k++) {
        int own = -1;
        for (uint32_t j = 0; j < exit_sd.u.goodbye.n && own < 0; j++)
            if (exit_sd.u.goodbye.comm_id[j] == left[k].comm_id)
                own = (int)j;
        if (own < 0 && exit_sd.u.goodbye.n + 2 <= NCG_WIRE_MAX_COMMS)
            sd_add(left[k].comm_id, NCG_BYE_ANYRANK, UINT64_MAX, 0);
        else if (own < 0)
            continue;
        sd_add(left[k].comm_id, left[k].rank, left[k].count, 1);
    }
}

/* At clean process exit: GOODBYE with final counts to every coordinator; SHUTDOWN (with this
 * process's final counts) to every client of ours, unless only_bye (an abort verdict waiting
 * for its exit release, or a clean exit that may stay: the clients of our checker still need
 * it; exit_arm and ncg_exit_tick say it then). */
void ncg_exit_messages(uint8_t flags, int only_bye)
{
    static struct ncg_msg bye[NCG_MAX_LINKS];
    exit_sd_build(flags, bye);
    for (int i = 0; i < ncg_agent.nlink; i++)
        if (ncg_agent.link[i].state == NCG_LINK_UP)
            ncg_link_send(&ncg_agent.link[i], &bye[i]);
    if (!only_bye && ncg_agent.root_flat) /* a tree's root leaves after its grace (finish) */
        server_shutdown();
}

/* Bytes still queued on any live connection of ours. */
static int tx_pending(void)
{
    int n = ncg_root_up() ? ncg_rhost_pending_tx(ncg_agent.root) : 0;
    if (ncg_rh_up())
        n += ncg_rhost_pending_tx(ncg_agent.rh);
    for (int i = 0; i < ncg_agent.nlink; i++)
        n += ncg_agent.link[i].state == NCG_LINK_UP && ncg_agent.link[i].io.txlen > 0;
    return n;
}

/* A link that carries a comm no REPORT has told its checker of, connected and waiting for the
 * checker's answer (the process leaves before its checker accepted it: a slow checker on a
 * loaded host, a short job), or -1. Without that registration the checker never learns that
 * this rank left, and its peers would wait for it in silence. (Not a link still connecting: an
 * address nobody answers at would hold every exit.) */
static int link_unregistered(void)
{
    int li = -1;
    pthread_mutex_lock(&ncg_agent.lk);
    for (size_t i = 0; i < ncg_agent.nlc && li < 0; i++) {
        const struct ncg_lcomm *lc = &ncg_agent.lc[i];
        if (lc->link >= 0 && !lc->reported && ncg_agent.link[lc->link].state == NCG_LINK_HELLO)
            li = lc->link;
    }
    pthread_mutex_unlock(&ncg_agent.lk);
    return li;
}

/* How long a clean exit waits for a link that must register the process (above). */
#define EXIT_REGISTER_NS 5000000000ull

/* How long the stay keeps its one line back: a healthy job's ranks leave within this of each
 * other, and then nothing is said. */
#define STAY_SAY_NS 1000000000ull
/* How long the stay waits for this process's own goodbye to reach its own checker. */
#define STAY_SELF_NS 1000000000ull

/* The checker's host stays (a clean exit, GOODBYEs sent): its checker keeps running while
 * other processes it checks may still run, so that their checking never depends on this
 * process staying. It waits for every other connected process to leave (GOODBYE,
 * connection closed, or dead) and, while members of its communicators were registered by
 * nobody yet, for them to connect, until nobody new connected for the heartbeat timeout; at
 * most NCCLGUARD_HOST_STAY_S when set. Never once an abort is under way (its release bounds
 * that). 1 while staying; once over, never again. One line when it lasts past STAY_SAY_NS. */
static int stay_tick(struct ncg_exit_run *x, uint64_t now)
{
    if (x->stay_over || !ncg_root_up() || __atomic_load_n(&ncg_agent.aborting, __ATOMIC_ACQUIRE) ||
        ncg_ending())
        goto over;
    if (!x->stay_ns)
        x->stay_ns = x->join_ns = now;
    if (ncg_cfg.host_stay_s > 0 && now - x->stay_ns >= (uint64_t)(ncg_cfg.host_stay_s * 1e9))
        goto over;
    if (x->stay && now - x->stay_ns > STAY_SAY_NS && now - x->eval_ns < 10000000ull)
        return 1; /* past the first second (a healthy job's others leave within it), a view per
                     message is not needed: every 10 ms */
    x->eval_ns = now;
    struct ncg_host_stay st;
    if (ncg_rhost_stay(ncg_agent.root, (uint32_t)getpid(), now, &st) != 0)
        goto over;
    if (st.newest_ns > x->join_ns)
        x->join_ns = st.newest_ns;
    uint64_t hb = (uint64_t)(ncg_cfg.heartbeat_timeout_s * 1e9);
    int unknown = now - x->join_ns < hb ? st.unknown : 0; /* members not connected yet */
    int n = st.procs + (st.unreg > unknown ? st.unreg : unknown);
    if (!n && !(st.self_pending && now - x->stay_ns < STAY_SELF_NS))
        goto over;
    if (n && !x->stay_said && now - x->stay_ns >= STAY_SAY_NS) {
        x->stay_said = 1;
        ncg_log("this process hosts the checker of %d other guarded process%s still running; it "
                "stays until they leave",
                n, n == 1 ? "" : "es");
    }
    /* liveness for our own checker (after a goodbye it reads no counts) */
    if (now - ncg_agent.last_report_ns >= x->interval) {
        ncg_agent.last_report_ns = now;
        ncg_client_keepalive();
    }
    return 1;
over:
    if (x->stay_ns && !x->stay_over)
        ncg_debug(1, "the checker's host stayed %.2f s for its clients",
                  (double)(now - x->stay_ns) / 1e9);
    x->stay_over = 1;
    return 0;
}

/* Each loop, before the links' work: a clean exit's GOODBYEs (once its links came up), the
 * SHUTDOWN held back for others' releases and for the host's stay once they are over, a relay
 * here leaving. */
void ncg_exit_tick(struct ncg_exit_run *x, int exiting, uint64_t now)
{
    if (exiting && !x->deadline_ns)
        x->deadline_ns = now + 600000000ull;
    if (exiting && !x->sent) {
        /* A link still connecting gets a moment to come up: a goodbye needs a registration;
         * one that must register this process's comms gets seconds (EXIT_REGISTER_NS). */
        int connecting = 0;
        for (int i = 0; i < ncg_agent.nlink; i++)
            connecting += ncg_agent.link[i].state == NCG_LINK_CONNECTING ||
                          ncg_agent.link[i].state == NCG_LINK_HELLO;
        int unreg = connecting ? link_unregistered() : -1;
        if (unreg >= 0 && !x->reg_ns) {
            x->reg_ns = now;
            if (x->deadline_ns < now + EXIT_REGISTER_NS)
                x->deadline_ns = now + EXIT_REGISTER_NS;
            __atomic_store_n(&ncg_agent.registering, 1, __ATOMIC_RELEASE);
        }
        if (!connecting || now + 200000000ull >= x->deadline_ns) {
            if (unreg >= 0)
                ncg_log("this process exits before the checker at %s accepted it (no answer in "
                        "%.1f s): the checker does not learn that it left, and the other ranks of "
                        "its communicators may wait for it without a verdict",
                        ncg_agent.link[unreg].name, (double)(now - x->reg_ns) / 1e9);
            __atomic_store_n(&ncg_agent.registering, 0, __ATOMIC_RELEASE);
            ncg_client_report(now); /* registers comms not reported yet, so the goodbye counts */
            /* Other processes' exit releases held here: this process's SHUTDOWN and its
             * exit wait for them (their own deadlines bound it; so does hold_until_ns). The
             * same while the host of a checker stays for its clients (stay_tick). */
            int hold = hosted_waiting(), stay = ncg_root_up();
            ncg_exit_messages(0, hold || stay);
            if (hold || stay)
                ncg_agent.sd_deferred = 1;
            if (stay)
                __atomic_store_n(&ncg_agent.staying, 1, __ATOMIC_RELEASE);
            if (hold) {
                ncg_agent.hold_until_ns = now + release_bound_ns();
                __atomic_store_n(&ncg_agent.holding, 1, __ATOMIC_RELEASE);
            }
            x->sent = 1;
            x->sent_ns = now;
        }
    }
    /* An exit release this process holds for others is over (or its bound passed): its
     * SHUTDOWN goes now, and its own exit waits a moment for it to be read. */
    x->hold = ncg_agent.hold_until_ns && now < ncg_agent.hold_until_ns && hosted_waiting();
    x->stay = exiting && x->sent && stay_tick(x, now);
    if (!x->stay && __atomic_load_n(&ncg_agent.staying, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&ncg_agent.staying, 0, __ATOMIC_RELEASE);
        if (!ncg_ending()) /* with the counts of the processes that left meanwhile */
            exit_sd_build(0, NULL);
    }
    if (ncg_agent.sd_deferred && !ncg_agent.release_until_ns && !x->hold && !x->stay) {
        if (!ncg_agent.abort_at_ns) /* an abort's root leaves in ncg_exit_finish, after its grace */
            server_shutdown();
        ncg_agent.sd_deferred = 0;
        __atomic_store_n(&ncg_agent.holding, 0, __ATOMIC_RELEASE);
        if (ncg_agent.abort_at_ns)
            ncg_agent.abort_at_ns = now + 1000000000ull;
        if (exiting && x->deadline_ns < now + 200000000ull)
            x->deadline_ns = now + 200000000ull;
    }
    /* A node relay here leaves once its parent heard of this process's goodbyes (an RSTAT a
     * little over an interval later): below it, the node's processes reattach. (The root
     * leaves with the SHUTDOWN above, after its stay: while ranks beneath it are active, a
     * RANK EXITED of its own ranks is judged there; after it, each client judges from the
     * counts the root leaves with.) */
    if (x->sent && ncg_rh_up() && now >= x->sent_ns + x->interval + x->interval / 2)
        ncg_rhost_leave(ncg_agent.rh, &exit_sd);
}

/* Each loop, after the links' work: a release that never came, an abort's _exit once its
 * verdicts are out (never returns then), a clean exit done (1: the thread ends). */
int ncg_exit_finish(struct ncg_exit_run *x, int exiting, uint64_t now)
{
    if (ncg_agent.release_until_ns && now >= ncg_agent.release_until_ns) {
        ncg_debug(1, "no exit release from the checker within %g s: exiting",
                  (double)release_bound_ns() / 1e9);
        exit_arm(now);
    }
    if (ncg_agent.abort_at_ns) {
        int pending = 0; /* the verdict passed on to our checker's and relay's clients first */
        if (ncg_root_up())
            pending += ncg_rhost_pending_tx(ncg_agent.root) + ncg_rhost_open_conns(ncg_agent.root);
        if (ncg_rh_up())
            pending += ncg_rhost_pending_tx(ncg_agent.rh) + ncg_rhost_open_conns(ncg_agent.rh);
        /* Our own link to our own listener stays open: exit once only it is left. A tree's
         * root first says it leaves, with its counts, down the tree (late members got the
         * verdict until then), and waits a moment for that to be read. */
        /* (the root waits two intervals at least: the processes of a node whose relay died
         * meanwhile come to it directly, and get the verdict there) */
        int grace = ncg_root_up() && !ncg_agent.root_flat &&
                    now + 1000000000ull < ncg_agent.abort_at_ns + 2 * x->interval;
        /* (and neither leaves nor exits while it holds others' exit releases) */
        int held = x->hold || ncg_agent.sd_deferred;
        if (!held && (now >= ncg_agent.abort_at_ns || (pending <= 1 && !grace)) && ncg_root_up() &&
            !x->root_left_ns) {
            ncg_rhost_leave(ncg_agent.root, &exit_sd);
            x->root_left_ns = now;
        } else if (!held && (now >= ncg_agent.abort_at_ns + 300000000ull || pending <= 1)) {
            ncg_action_exit();
        }
    }
    if (exiting && !__atomic_load_n(&ncg_agent.aborting, __ATOMIC_ACQUIRE) &&
        !ncg_agent.sd_deferred && !x->hold &&
        (now >= x->deadline_ns || (x->sent && !tx_pending() && !ncg_rh_up()))) {
        for (int i = 0; i < ncg_agent.nlink; i++) {
            struct ncg_link *l = &ncg_agent.link[i];
            if (l->up_ns)
                ncg_debug(
                    1, "side channel to %s: sent %" PRIu64 " B, received %" PRIu64 " B in %.2f s",
                    l->name, l->ntx + l->io.ntx, l->nrx + l->io.nrx,
                    (double)(now - l->up_ns) / 1e9);
        }
        pthread_mutex_lock(&ncg_agent.lk);
        ncg_agent.exit_done = 1;
        pthread_cond_broadcast(&ncg_agent.cv);
        pthread_mutex_unlock(&ncg_agent.lk);
        return 1;
    }
    return 0;
}

void ncg_exit_at_exit(void)
{
    pthread_mutex_lock(&ncg_agent.lk);
    if (ncg_agent.started && ncg_agent.pid == getpid() && !ncg_agent.exit_done) {
        ncg_agent.exiting = 1;
        ncg_wake_thread();
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 800000000; /* the thread gives up at 600 ms */
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        int extended = 0;
        while (!ncg_agent.exit_done)
            if (pthread_cond_timedwait(&ncg_agent.cv, &ncg_agent.lk, &ts) == ETIMEDOUT) {
                if (__atomic_load_n(&ncg_agent.staying, __ATOMIC_ACQUIRE)) {
                    /* the checker's host stays for its clients (the thread bounds it); once
                     * over, a second more for its SHUTDOWN */
                    clock_gettime(CLOCK_REALTIME, &ts);
                    ts.tv_sec += 1;
                    continue;
                }
                if (extended || !(__atomic_load_n(&ncg_agent.aborting, __ATOMIC_ACQUIRE) ||
                                  __atomic_load_n(&ncg_agent.holding, __ATOMIC_ACQUIRE) ||
                                  __atomic_load_n(&ncg_agent.registering, __ATOMIC_ACQUIRE)))
                    break;
                /* an abort verdict is under way: its _exit comes within ~1 s of its release,
                 * itself bounded by exit_wait + 2 s, then by the releases this process holds
                 * for others (the same again); a link that must register this process has
                 * EXIT_REGISTER_NS (the thread's own deadline) */
                ts.tv_sec += 5 + 2 * (time_t)(release_bound_ns() / 1000000000ull);
                extended = 1;
            }
    }
    /* Past every bound with an abort verdict under way: its exit status, never the app's. */
    int abort_now = !ncg_agent.exit_done &&
                    __atomic_load_n(&ncg_agent.aborting, __ATOMIC_ACQUIRE) && ncg_agent.started &&
                    ncg_agent.pid == getpid();
    pthread_mutex_unlock(&ncg_agent.lk);
    if (abort_now)
        ncg_action_exit();
}
