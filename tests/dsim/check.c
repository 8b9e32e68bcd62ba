/* ncg-dsim's invariants (docs/simulator.md): checked as verdicts arrive, at every relay step,
 * at each non-zero exit, and at the end of a run. A violation prints the trace and the seed
 * (world.c: violation). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsim.h"

void check_fault_armed(void)
{
    if (W.ex.armed)
        return;
    W.ex.armed = 1;
    W.ex.from_t = W.now;
    trace("fault: armed (%s expected)", W.ex.kind ? ncg_verdict_name(W.ex.kind) : "no verdict");
}

/* 1 when "0-3,7" names comm rank r (a truncated list's "..." is taken as naming it). */
static int names(const char *subject, uint32_t r)
{
    const char *s = subject;
    while (*s) {
        if (*s == '.')
            return 1;
        char *e;
        unsigned long lo = strtoul(s, &e, 10), hi = lo;
        if (e == s)
            return 0;
        if (*e == '-')
            hi = strtoul(e + 1, &e, 10);
        if (r >= lo && r <= hi)
            return 1;
        s = *e == ',' ? e + 1 : e;
        if (*e && *e != ',')
            return 0;
    }
    return 0;
}

static int comm_index(uint64_t id)
{
    for (uint32_t i = 0; i < W.ncomm; i++)
        if (W.comm[i].id == id)
            return (int)i;
    return -1;
}

static int holds_member(const struct proc *p, uint32_t ci)
{
    const struct comm *c = &W.comm[ci];
    for (uint32_t i = 0; i < c->nranks; i++)
        if (c->grank[i] >= p->first_rank && c->grank[i] < p->first_rank + p->nranks)
            return 1;
    return 0;
}

void check_verdict(struct proc *p, const struct ncg_verdict *v, int local)
{
    const struct expect *ex = &W.ex;
    int first = p->nverdicts++ == 0;
    if (v->severity == NCG_SEV_ERROR)
        p->errors_seen++;
    if (W.rules_only)
        return;
    if (ex->kind == NCG_V_NONE) {
        violation("process %u: %s%s on a healthy workload (%s)", p->id, ncg_verdict_name(v->kind),
                  v->severity == NCG_SEV_WARN ? " warning" : "", v->subject);
        return;
    }
    if (!ex->armed) {
        violation("process %u: %s before the fault", p->id, ncg_verdict_name(v->kind));
        return;
    }
    if (!first)
        return; /* knock-on verdicts of the first one (its members leaving) */
    int ci = comm_index(v->comm_id);
    if (ci >= 0 && v->counts && v->narr == W.comm[ci].nranks) { /* the figures it names */
        const struct comm *c = &W.comm[ci];
        for (uint32_t i = 0; i < v->narr; i++) {
            const struct proc *q = &W.proc[W.rank[c->grank[i]].proc];
            if (v->counts[i] >= 0 && q->state == P_EXITED && q->exit_status == 0 &&
                (uint64_t)v->counts[i] != c->m[i].issued) {
                violation("process %u: %s says rank %u left after %" PRId64 " calls; it left "
                          "after %" PRIu64,
                          p->id, ncg_verdict_name(v->kind), i, v->counts[i], c->m[i].issued);
                return;
            }
        }
    }
    /* a knock-on first (a member that never learnt of the verdict itself, say one stopped
     * before it was registered, told by its checker's SHUTDOWN that the checker's process was
     * ended by a verdict: docs/checker.md) names a verdict that happened: not a wrong cause */
    int knock = v->kind == NCG_V_RANK_EXITED && ex->severity == NCG_SEV_ERROR &&
                !strncmp(v->detail, NCG_EXITED_VERDICT, strlen(NCG_EXITED_VERDICT));
    if (!knock && (v->kind != ex->kind || v->severity != ex->severity)) {
        violation("process %u: %s%s%s, expected %s", p->id, local ? "(decided here) " : "",
                  ncg_verdict_name(v->kind), v->severity == NCG_SEV_WARN ? " warning" : "",
                  ncg_verdict_name(ex->kind));
        return;
    }
    if (knock)
        goto record;
    if (local && !ex->local_ok) {
        violation("process %u: %s decided here, expected from the checker", p->id,
                  ncg_verdict_name(v->kind));
        return;
    }
    if (!local) {
        if (ci < 0 || (ex->comm != UINT32_MAX && (uint32_t)ci != ex->comm)) {
            violation("process %u: %s on comm %016" PRIx64 ", expected another", p->id,
                      ncg_verdict_name(v->kind), v->comm_id);
            return;
        }
        if (ex->crank != UINT32_MAX) {
            const struct comm *c = &W.comm[ci];
            uint32_t cr = UINT32_MAX;
            for (uint32_t i = 0; i < c->nranks; i++)
                if (c->grank[i] == ex->crank)
                    cr = i;
            if (cr == UINT32_MAX || !names(v->subject, cr)) {
                violation("process %u: %s names '%s', not rank %u", p->id,
                          ncg_verdict_name(v->kind), v->subject, ex->crank);
                return;
            }
        }
    }
record:
    p->v_kind = v->kind;
    p->v_local = (uint8_t)local;
    /* a knock-on: members ended by an earlier verdict's abort (docs/checker.md, "The exit
     * release": not kept under a launcher that kills at the first exit) */
    p->v_knock = v->kind == NCG_V_RANK_EXITED &&
                 !strncmp(v->detail, NCG_EXITED_VERDICT, strlen(NCG_EXITED_VERDICT));
    p->v_sev = v->severity;
    p->v_comm = v->comm_id;
    p->v_at = W.now;
    snprintf(p->v_subject, sizeof p->v_subject, "%s", v->subject);
    if (W.now > ex->from_t + ex->bound)
        violation("process %u: %s %.3f s after the fault (bound %.0f s)", p->id,
                  ncg_verdict_name(v->kind), (double)(W.now - ex->from_t) / 1e9,
                  (double)ex->bound / 1e9);
}

void check_exit_nonzero(const struct proc *p)
{
    (void)p; /* the launcher acts on it: EV_KILLALL, check_killed */
}

/* The launcher ends q now (at the first non-zero exit, or its next poll after it): a checker's
 * error verdict that reached q must have been printed and reported (a verdict decided in the
 * process exits at once: not covered). */
void check_killed(const struct proc *q)
{
    if (W.first_exit_local)
        return; /* a verdict decided in a process exits at once (docs/checker.md): not covered */
    if (q->nverdicts && q->v_kind && q->v_sev == NCG_SEV_ERROR && !q->v_local && !q->v_knock &&
        !q->reported)
        violation("the launcher ends process %u (a process exited non-zero at %.3f s) before it "
                  "printed and reported %s",
                  q->id, (double)W.first_exit_t / 1e9, ncg_verdict_name(q->v_kind));
}

static void silent_waits(void)
{
    if (W.rules_only)
        return;
    for (uint32_t g = 0; g < W.nranks; g++) {
        const struct rank *r = &W.rank[g];
        const struct proc *p = &W.proc[r->proc];
        if (r->state != R_BLOCKED || p->state == P_DEAD || p->state == P_EXITED)
            continue;
        if (p->nverdicts || p->warned_unguarded || W.now - r->blocked_since <= W.silent_bound)
            continue;
        violation("rank %u (process %u) blocked %.1f s in silence (slot %" PRIu64 " of comm %u)", g,
                  p->id, (double)(W.now - r->blocked_since) / 1e9, r->bslot, r->bcomm);
        return;
    }
    for (uint32_t i = 0; i < W.nproc; i++) {
        const struct proc *p = &W.proc[i];
        if (p->state != P_DEAD && p->state != P_EXITED && p->xs.abort == NCG_XA_WAITING &&
            W.now > p->xs.release_until_ns + W.ap.interval_ns * 2)
            violation("process %u waits for its release past its bound", p->id);
    }
}

static uint64_t last_step_check;

void check_step(void)
{
    if (!W.relay)
        return;
    struct ncg_relay_stats st;
    ncg_relay_get_stats(W.relay, &st);
    if (st.comms > W.max_comms_seen)
        W.max_comms_seen = st.comms;
    if (st.p2p_held > W.max_p2p_held)
        W.max_p2p_held = st.p2p_held;
    if (st.comms > W.ncomm)
        violation("the checker tracks %" PRIu64 " comms, the job has %u", st.comms, W.ncomm);
    if (st.p2p_held > (uint64_t)W.nranks * 2 * NCG_WIRE_MAX_P2P)
        violation("the checker holds %" PRIu64 " p2p records", st.p2p_held);
    if (ncg_relay_out_of_memory(W.relay))
        violation("the checker ran out of memory");
    if (W.now - last_step_check >= W.ap.interval_ns) {
        last_step_check = W.now;
        silent_waits();
        /* a warning expected: once every live member has it, the run has shown what it can */
        if (W.ex.kind && W.ex.severity == NCG_SEV_WARN && W.ex.armed) {
            int all = 1;
            for (uint32_t i = 0; i < W.nproc && all; i++)
                all = W.proc[i].state != P_ALIVE || W.proc[i].v_kind;
            if (all && W.end_t > W.now + SEC)
                W.end_t = W.now + SEC;
        }
    }
}

void check_end(void)
{
    last_step_check = 0;
    if (W.rules_only)
        return;
    silent_waits();
    const struct expect *ex = &W.ex;
    if (ex->kind == NCG_V_NONE) {
        for (uint32_t i = 0; i < W.nproc; i++) {
            const struct proc *p = &W.proc[i];
            if (p->state != P_EXITED || p->exit_status != 0)
                violation("healthy workload: process %u %s at the end", p->id,
                          p->state == P_EXITED ? "exited non-zero" : "still runs");
            else if (p->warned_unguarded)
                violation("healthy workload: process %u ran unguarded", p->id);
        }
        return;
    }
    if (!ex->armed) {
        /* a crash waiting for its victim's registration (accepted late) while the whole job
         * ended: no fault to find, a healthy run (every process exited 0, no verdict) */
        int clean = 1;
        for (uint32_t i = 0; i < W.nproc; i++)
            clean &=
                W.proc[i].state == P_EXITED && W.proc[i].exit_status == 0 && !W.proc[i].nverdicts;
        if (!clean)
            violation("the fault never happened");
        return;
    }
    for (uint32_t i = 0; i < W.nproc; i++) {
        const struct proc *p = &W.proc[i];
        if (p->v_kind || p->warned_unguarded)
            continue;
        if (ex->comm != UINT32_MAX && !holds_member(p, ex->comm))
            continue;
        if (p->state == P_DEAD && !p->nverdicts)
            continue; /* crashed, or killed by the launcher (checked at the first exit) */
        if (p->state == P_EXITED && p->exit_t <= ex->from_t + 1)
            continue; /* left before the fault (or is the fault) */
        if (p->app_done_t && p->app_done_t <= ex->from_t && p->id != 0)
            continue; /* its application had returned: it was leaving */
        if ((ex->kind == NCG_V_RANK_DIED) && p->state == P_DEAD)
            continue;
        if (W.early_proc == (int)p->id && p->id != 0)
            continue;
        if (W.now < ex->from_t + ex->bound && p->state != P_EXITED)
            continue; /* the run ended before the bound */
        violation("process %u (%s) never got %s%s", p->id,
                  p->state == P_EXITED ? "exited"
                  : p->state == P_DEAD ? "dead"
                                       : "live",
                  ncg_verdict_name(ex->kind), p->nverdicts ? " (it got another)" : "");
        return;
    }
}
