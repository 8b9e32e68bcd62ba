/* The exit of a guarded process: the driver of its state machine (machine/exit_sm.h says the
 * phases, their order and the overlaps decided; docs/checker.md, "The exit release", why). The
 * other files call in (with a verdict to apply, link.c on VERDICT, RELEASE and SHUTDOWN, lost.c
 * when the link a RELEASE was awaited on is lost, thread.c twice a loop, atexit); this file
 * gathers what the machine observes, feeds it, and does what it says: it owns the messages
 * (this process's SHUTDOWN, GOODBYEs, DONE), the sockets, the clock and the locks. The machine
 * is ncg_agent.exit (the checker thread's); the at-exit waiter, in the exiting thread, reads
 * the atomics published here (registering, staying, holding) and apply.c's aborting. */
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
#include "verdict.h"
#include "wire.h"

static struct ncg_msg exit_sd; /* this process's SHUTDOWN (a tree's root sends it on leaving) */

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
    for (unsigned k = 0; k < ncg_left_own_n && k < NCG_WIRE_MAX_COMMS; k++)
        sd_add(ncg_left_own[k].id, ncg_left_own[k].rank, ncg_left_own[k].final, 0);
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
 * it: the machine says when, NCG_XO_ROOT_LEAVES). */
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

/* The link li is up (a DONE can go, a RELEASE can come on it). */
static int link_up(int li)
{
    return li >= 0 && li < ncg_agent.nlink && ncg_agent.link[li].state == NCG_LINK_UP;
}

/* This process's checker or tree root still waits for other processes' DONEs. */
static int hosted_waiting(void)
{
    return ncg_root_up() && ncg_rhost_releases_waiting(ncg_agent.root);
}

/* What every event reads: the hosts here, and whether an abort verdict is being applied. */
static struct ncg_exit_obs obs_hosts(void)
{
    struct ncg_exit_obs o = {.unreg_link = -1};
    o.root_up = ncg_root_up();
    o.root_flat = ncg_agent.root_flat;
    o.rh_up = ncg_rh_up();
    o.aborting = __atomic_load_n(&ncg_agent.aborting, __ATOMIC_ACQUIRE);
    return o;
}

/* Bytes and connections of our checker and relay not flushed yet (an abort's verdict passes
 * on to their clients first). */
static int host_pending(void)
{
    int pending = 0;
    if (ncg_root_up())
        pending += ncg_rhost_pending_tx(ncg_agent.root) + ncg_rhost_open_conns(ncg_agent.root);
    if (ncg_rh_up())
        pending += ncg_rhost_pending_tx(ncg_agent.rh) + ncg_rhost_open_conns(ncg_agent.rh);
    return pending;
}

/* The machine's flags the at-exit waiter reads (release: they order nothing else). */
static void publish(void)
{
    const struct ncg_exit_sm *m = &ncg_agent.exit;
    __atomic_store_n(&ncg_agent.registering, m->registering, __ATOMIC_RELEASE);
    __atomic_store_n(&ncg_agent.staying, m->staying, __ATOMIC_RELEASE);
    __atomic_store_n(&ncg_agent.holding, m->holding, __ATOMIC_RELEASE);
}

/* Does what the machine said, in its order (exit_sm.h). 1: the clean exit is done. */
static int run(const struct ncg_exit_out *o, uint64_t now)
{
    unsigned w = o->what;
    if (w & NCG_XO_DONE)
        say_done(o->done_link, o->done_comm);
    if (w & NCG_XO_LOG_UNREG)
        ncg_log("this process exits before the checker at %s accepted it (no answer in %.1f s): "
                "the checker does not learn that it left, and the other ranks of its "
                "communicators may wait for it without a verdict",
                ncg_agent.link[o->log_link].name, o->reg_s);
    if (w & NCG_XO_REPORT)
        ncg_exit_report(now);
    if (w & NCG_XO_GOODBYES)
        ncg_exit_messages(o->bye_flags, o->only_bye);
    if (w & NCG_XO_LOG_STAY)
        ncg_log("this process hosts the checker of %d other guarded process%s still running; it "
                "stays until they leave",
                o->log_n, o->log_n == 1 ? "" : "es");
    if (w & NCG_XO_KEEPALIVE) {
        ncg_agent.last_report_ns = now;
        ncg_client_keepalive();
    }
    if (w & NCG_XO_DEBUG_STAYED)
        ncg_debug(1, "the checker's host stayed %.2f s for its clients", o->stayed_s);
    if (w & NCG_XO_SD_REBUILD)
        exit_sd_build(0, NULL);
    if (w & NCG_XO_DEBUG_NO_RELEASE)
        ncg_debug(1, "no exit release from the checker within %g s: exiting", o->bound_s);
    if (w & NCG_XO_ROOT_LEAVES)
        server_shutdown();
    if ((w & NCG_XO_RELAY_LEAVES) && ncg_rh_up())
        ncg_rhost_leave(ncg_agent.rh, &exit_sd);
    if (w & NCG_XO_EXIT_NOW)
        ncg_action_exit();
    if (!(w & NCG_XO_CLEAN_DONE))
        return 0;
    for (int i = 0; i < ncg_agent.nlink; i++) {
        struct ncg_link *l = &ncg_agent.link[i];
        if (l->up_ns)
            ncg_debug(1, "side channel to %s: sent %" PRIu64 " B, received %" PRIu64 " B in %.2f s",
                      l->name, l->ntx + l->io.ntx, l->nrx + l->io.nrx,
                      (double)(now - l->up_ns) / 1e9);
    }
    pthread_mutex_lock(&ncg_agent.lk);
    ncg_agent.exit_done = 1;
    pthread_cond_broadcast(&ncg_agent.cv);
    pthread_mutex_unlock(&ncg_agent.lk);
    return 1;
}

void ncg_exit_after_verdict(int error, int must_exit, uint64_t comm_id, int li, uint64_t now)
{
    struct ncg_exit_verdict v = {error, must_exit, li, link_up(li), comm_id};
    struct ncg_exit_obs o = obs_hosts();
    struct ncg_exit_out out = ncg_exit_sm_verdict(&ncg_agent.exit, &v, &o, now);
    run(&out, now);
}

void ncg_exit_apply(struct ncg_verdict *v, int li, uint64_t now)
{
    struct ncg_applied a = ncg_apply_verdict(v, li);
    if (a.shown)
        ncg_exit_after_verdict(a.error, a.must_exit, a.comm_id, li, now);
}

void ncg_exit_report(uint64_t now)
{
    struct ncg_verdict *exited = ncg_client_report(now);
    if (exited) {
        if (!ncg_ending())
            ncg_exit_apply(exited, -1, now);
        ncg_verdict_free(exited);
    }
}

void ncg_exit_verdict_while_ending(uint64_t comm_id, int li)
{
    struct ncg_exit_out out = ncg_exit_sm_verdict_ending(&ncg_agent.exit, comm_id, li, link_up(li));
    run(&out, 0);
}

void ncg_exit_release_got(uint64_t comm_id, int li, uint64_t now)
{
    struct ncg_exit_obs o = obs_hosts();
    ncg_exit_sm_release(&ncg_agent.exit, comm_id, li, &o, now);
}

int ncg_exit_awaiting_release(void)
{
    return ncg_agent.exit.abort == NCG_XA_WAITING;
}

void ncg_exit_tick(int exiting, uint64_t now)
{
    struct ncg_exit_sm *m = &ncg_agent.exit;
    struct ncg_exit_obs o = obs_hosts();
    o.exiting = exiting;
    o.hosted_waiting = hosted_waiting();
    o.last_report_ns = ncg_agent.last_report_ns;
    if (exiting && m->clean <= NCG_XC_LINKS) {
        for (int i = 0; i < ncg_agent.nlink; i++)
            o.connecting += ncg_agent.link[i].state == NCG_LINK_CONNECTING ||
                            ncg_agent.link[i].state == NCG_LINK_HELLO;
        o.unreg_link = o.connecting ? link_unregistered() : -1;
    }
    if (ncg_exit_sm_stay_view_due(m, &o, now)) {
        struct ncg_host_stay st;
        o.stay_ok = ncg_rhost_stay(ncg_agent.root, (uint32_t)getpid(), now, &st) == 0;
        o.stay = (struct ncg_exit_stay_view){st.procs, st.unreg, st.unknown, st.self_pending,
                                             st.newest_ns};
    }
    struct ncg_exit_out out = ncg_exit_sm_tick(m, &o, now);
    publish();
    run(&out, now);
}

int ncg_exit_finish(int exiting, uint64_t now)
{
    struct ncg_exit_sm *m = &ncg_agent.exit;
    struct ncg_exit_obs o = obs_hosts();
    o.exiting = exiting;
    if (ncg_exit_sm_ending(m))
        o.pending = host_pending();
    if (exiting)
        o.tx_pending = tx_pending();
    struct ncg_exit_out out = ncg_exit_sm_finish(m, &o, now);
    return run(&out, now);
}

/* The application exits (atexit, its thread): the checker thread's clean exit runs meanwhile;
 * this waits for it, for as long as the published flags say. */
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
                 * register_wait (the machine's own deadline) */
                ts.tv_sec += 5 + 2 * (time_t)(ncg_params.exit.release_bound / 1000000000ull);
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
