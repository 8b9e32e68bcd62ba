/* The exit's state machine (exit_sm.h: its phases and the overlaps decided). Pure: the time
 * comes in, what to do goes out; its timings are the parameters' exit section. */
#include "exit_sm.h"

#include <string.h>
#include "wire.h" /* NCG_BYE_VERDICT */

#define EVAL_EVERY_NS 10000000ull /* past its first moments, a stay reads its view this often */

void ncg_exit_sm_init(struct ncg_exit_sm *m, const struct ncg_agent_params *p)
{
    memset(m, 0, sizeof *m);
    m->p = p;
}

/* WAITING also for comm's RELEASE on link. */
static void wait_add(struct ncg_exit_sm *m, uint64_t comm, int link)
{
    for (int i = 0; i < m->nrel; i++)
        if (m->rel[i].comm_id == comm && m->rel[i].link == link)
            return;
    if (m->nrel < NCG_EXIT_MAX_REL)
        m->rel[m->nrel++] = (__typeof__(m->rel[0])){comm, link, 0};
}

/* NONE or WAITING -> ARMED: _exit at once, or once a host's verdict reached its clients; a
 * checker's SHUTDOWN that the GOODBYEs held back for the release waits for its hold to end. */
static void arm(struct ncg_exit_sm *m, const struct ncg_exit_obs *o, uint64_t now)
{
    if (m->abort == NCG_XA_WAITING && o->root_up)
        m->sd_deferred = 1;
    m->release_until_ns = 0;
    m->abort = NCG_XA_ARMED;
    m->abort_at_ns = now + (o->root_up || o->rh_up ? m->p->exit.abort_flush : 1);
    m->hold_until_ns = now + m->p->exit.release_bound;
}

struct ncg_exit_out ncg_exit_sm_verdict_ending(struct ncg_exit_sm *m, uint64_t comm, int link,
                                               int link_up)
{
    struct ncg_exit_out out = {.what = NCG_XO_DONE, .done_link = link, .done_comm = comm};
    if (m->abort == NCG_XA_WAITING && link >= 0 && link_up)
        wait_add(m, comm, link); /* its other members may still be printing */
    return out;
}

struct ncg_exit_out ncg_exit_sm_verdict(struct ncg_exit_sm *m, const struct ncg_exit_verdict *v,
                                        const struct ncg_exit_obs *o, uint64_t now)
{
    struct ncg_exit_out out = {0};
    if (!v->must_exit || m->abort != NCG_XA_NONE) {
        /* a warning, an action that does not end the process, or a second verdict (the first
         * one's phase governs) */
        if (v->error)
            out = ncg_exit_sm_verdict_ending(m, v->comm, v->link, v->link_up);
        return out;
    }
    /* printed and reported: DONE (others may be released); a REPORT then the GOODBYEs, so that
     * peers on this process's other comms learn that its end is the verdict's doing */
    out.what = (v->error ? NCG_XO_DONE : 0) | NCG_XO_REPORT | NCG_XO_GOODBYES;
    out.done_link = v->link;
    out.done_comm = v->comm;
    out.bye_flags = NCG_BYE_VERDICT;
    int wait = v->link >= 0 && v->link_up && m->p->exit.wait_release;
    out.only_bye = (uint8_t)wait; /* the checker's clients still need it until the release */
    if (wait) {
        m->abort = NCG_XA_WAITING;
        m->release_until_ns = now + m->p->exit.release_bound;
        m->nrel = 0;
        wait_add(m, v->comm, v->link);
    } else {
        arm(m, o, now);
    }
    return out;
}

void ncg_exit_sm_release(struct ncg_exit_sm *m, uint64_t comm, int link,
                         const struct ncg_exit_obs *o, uint64_t now)
{
    if (m->abort != NCG_XA_WAITING)
        return;
    int left = 0;
    for (int i = 0; i < m->nrel; i++) {
        if (m->rel[i].link == link && (!comm || m->rel[i].comm_id == comm))
            m->rel[i].released = 1;
        left += !m->rel[i].released;
    }
    if (!left)
        arm(m, o, now);
}

/* The stay is possible at all this tick (the view is read within it). */
static int stay_open(const struct ncg_exit_sm *m, const struct ncg_exit_obs *o)
{
    return !m->stay_over && o->root_up && !o->aborting && m->abort == NCG_XA_NONE;
}

int ncg_exit_sm_stay_view_due(const struct ncg_exit_sm *m, const struct ncg_exit_obs *o,
                              uint64_t now)
{
    if (!o->exiting || m->clean == NCG_XC_DONE || !stay_open(m, o))
        return 0;
    return !(m->clean == NCG_XC_STAYING && now - m->stay_ns > m->p->exit.stay_say &&
             now - m->eval_ns < EVAL_EVERY_NS);
}

/* The checker's host stays (a clean exit, GOODBYEs sent) while other processes it checks may
 * still run, so that their checking never depends on this process staying: until every other
 * connected process left and, while members of its comms were registered by nobody yet, until
 * nobody new connected for the heartbeat timeout; at most host_stay when set. Never beside an
 * abort. 1 while staying; once over, never again. One line once it lasts past stay_say. */
static int stay_tick(struct ncg_exit_sm *m, const struct ncg_exit_obs *o, uint64_t now,
                     struct ncg_exit_out *out)
{
    const struct ncg_agent_params *p = m->p;
    if (!stay_open(m, o))
        goto over;
    if (!m->stay_ns)
        m->stay_ns = m->join_ns = now;
    if (p->exit.host_stay && now - m->stay_ns >= p->exit.host_stay)
        goto over;
    if (m->clean == NCG_XC_STAYING && now - m->stay_ns > p->exit.stay_say &&
        now - m->eval_ns < EVAL_EVERY_NS)
        return 1; /* past the first second (a healthy job's others leave within it), a view per
                     message is not needed */
    m->eval_ns = now;
    if (!o->stay_ok)
        goto over;
    const struct ncg_exit_stay_view *v = &o->stay;
    if (v->newest_ns > m->join_ns)
        m->join_ns = v->newest_ns;
    int unknown = now - m->join_ns < p->heartbeat_ns ? v->unknown : 0; /* not connected yet */
    int n = v->procs + (v->unreg > unknown ? v->unreg : unknown);
    if (!n && !(v->self_pending && now - m->stay_ns < p->exit.stay_self))
        goto over;
    if (n && !m->stay_said && now - m->stay_ns >= p->exit.stay_say) {
        m->stay_said = 1;
        out->what |= NCG_XO_LOG_STAY;
        out->log_n = n;
    }
    if (now - o->last_report_ns >= p->interval_ns) /* liveness for our own checker */
        out->what |= NCG_XO_KEEPALIVE;
    return 1;
over:
    if (m->stay_ns && !m->stay_over) {
        out->what |= NCG_XO_DEBUG_STAYED;
        out->stayed_s = (double)(now - m->stay_ns) / 1e9;
    }
    m->stay_over = 1;
    return 0;
}

/* LINKS: the GOODBYEs, once no link is still connecting (a goodbye needs a registration), or
 * bye_margin before the deadline; a link that must register this process's comms gets
 * register_wait. */
static void clean_byes(struct ncg_exit_sm *m, const struct ncg_exit_obs *o, uint64_t now,
                       struct ncg_exit_out *out)
{
    const struct ncg_agent_params *p = m->p;
    int unreg = o->connecting ? o->unreg_link : -1;
    if (unreg >= 0 && !m->reg_ns) {
        m->reg_ns = now;
        if (m->deadline_ns < now + p->exit.register_wait)
            m->deadline_ns = now + p->exit.register_wait;
        m->registering = 1;
    }
    if (o->connecting && now + p->exit.bye_margin < m->deadline_ns)
        return;
    if (unreg >= 0) {
        out->what |= NCG_XO_LOG_UNREG;
        out->log_link = unreg;
        out->reg_s = (double)(now - m->reg_ns) / 1e9;
    }
    m->registering = 0;
    /* Other processes' exit releases held here: the SHUTDOWN and the exit wait for them
     * (hold_until_ns bounds it); the same while the checker's host stays for its clients. */
    int hold = o->hosted_waiting, stay = o->root_up;
    out->what |= NCG_XO_REPORT | NCG_XO_GOODBYES; /* the REPORT registers comms not reported */
    out->bye_flags = 0;
    out->only_bye = (uint8_t)(hold || stay);
    if (hold || stay)
        m->sd_deferred = 1;
    if (stay)
        m->staying = 1;
    if (hold) {
        m->hold_until_ns = now + p->exit.release_bound;
        m->holding = 1;
    }
    m->clean = NCG_XC_SENT;
    m->sent_ns = now;
}

struct ncg_exit_out ncg_exit_sm_tick(struct ncg_exit_sm *m, const struct ncg_exit_obs *o,
                                     uint64_t now)
{
    const struct ncg_agent_params *p = m->p;
    struct ncg_exit_out out = {.done_link = -1, .log_link = -1};
    if (o->exiting && m->clean == NCG_XC_RUNNING) {
        m->clean = NCG_XC_LINKS;
        m->deadline_ns = now + p->exit.clean_deadline;
    }
    /* beside an abort the clean side waits: the abort's GOODBYEs went, its _exit follows */
    if (m->clean == NCG_XC_LINKS && m->abort == NCG_XA_NONE)
        clean_byes(m, o, now, &out);
    m->hold = m->hold_until_ns && now < m->hold_until_ns && o->hosted_waiting;
    int sent = m->clean == NCG_XC_SENT || m->clean == NCG_XC_STAYING;
    int stay = o->exiting && sent && stay_tick(m, o, now, &out);
    if (sent)
        m->clean = stay ? NCG_XC_STAYING : NCG_XC_SENT;
    if (!stay && m->staying) {
        m->staying = 0;
        if (m->abort == NCG_XA_NONE)
            out.what |= NCG_XO_SD_REBUILD; /* with the counts of those that left meanwhile */
    }
    /* The releases this process held for others are over (or their bound passed), and so is
     * its stay: the SHUTDOWN goes (an abort's root leaves in finish, after its grace), and the
     * exit waits a moment for it to be read. */
    if (m->sd_deferred && m->abort != NCG_XA_WAITING && !m->hold && !stay) {
        if (m->abort == NCG_XA_NONE)
            out.what |= NCG_XO_ROOT_LEAVES;
        m->sd_deferred = 0;
        m->holding = 0;
        if (m->abort != NCG_XA_NONE)
            m->abort_at_ns = now + p->exit.abort_flush;
        if (o->exiting && m->deadline_ns < now + p->exit.sd_read)
            m->deadline_ns = now + p->exit.sd_read;
    }
    /* A node relay here leaves once its parent heard of the GOODBYEs (an RSTAT a little over
     * an interval later): below it, the node's processes reattach. */
    if (sent && o->rh_up && now >= m->sent_ns + p->interval_ns + p->interval_ns / 2)
        out.what |= NCG_XO_RELAY_LEAVES;
    return out;
}

struct ncg_exit_out ncg_exit_sm_finish(struct ncg_exit_sm *m, const struct ncg_exit_obs *o,
                                       uint64_t now)
{
    const struct ncg_agent_params *p = m->p;
    struct ncg_exit_out out = {.done_link = -1, .log_link = -1};
    if (m->abort == NCG_XA_WAITING && now >= m->release_until_ns) {
        out.what |= NCG_XO_DEBUG_NO_RELEASE;
        out.bound_s = (double)p->exit.release_bound / 1e9;
        arm(m, o, now);
    }
    if (m->abort >= NCG_XA_ARMED) {
        /* A tree's root first says it leaves, with its counts, down the tree (late members got
         * the verdict until then), at least two intervals after arming (the processes of a
         * node whose relay died meanwhile come to it directly); neither it nor the exit while
         * this process holds others' releases. Our own link to our own listener stays open:
         * one pending connection is ours. */
        int grace = o->root_up && !o->root_flat &&
                    now + p->exit.abort_flush < m->abort_at_ns + 2 * p->interval_ns;
        int held = m->hold || m->sd_deferred;
        if (!held && (now >= m->abort_at_ns || (o->pending <= 1 && !grace)) && o->root_up &&
            m->abort == NCG_XA_ARMED) {
            out.what |= NCG_XO_ROOT_LEAVES;
            m->abort = NCG_XA_ROOT_LEFT;
        } else if (!held && (now >= m->abort_at_ns + p->exit.abort_past || o->pending <= 1)) {
            out.what |= NCG_XO_EXIT_NOW;
        }
    }
    if (o->exiting && m->clean != NCG_XC_RUNNING && m->clean != NCG_XC_DONE &&
        m->abort == NCG_XA_NONE && !o->aborting && !m->sd_deferred && !m->hold &&
        (now >= m->deadline_ns || (m->clean >= NCG_XC_SENT && !o->tx_pending && !o->rh_up))) {
        out.what |= NCG_XO_CLEAN_DONE;
        m->clean = NCG_XC_DONE;
    }
    return out;
}

int ncg_exit_sm_fast(const struct ncg_exit_sm *m, int exiting, uint64_t now)
{
    if (m->abort != NCG_XA_NONE)
        return 1;
    /* the host staying for its clients: 10 ms in its first second, when a healthy job's others
     * leave, then the checker's pace */
    return exiting && !(m->clean == NCG_XC_STAYING && now - m->stay_ns > m->p->exit.stay_say);
}
