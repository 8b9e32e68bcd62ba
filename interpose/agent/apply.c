/* A verdict's way through this process (the driver, on the checker thread), one way:
 * (a) the facts: the comm ranks it holds of the verdict's communicator, what each issued and
 *     where (call, site, thread, stack, Python frames), gathered once (the segment under lk,
 *     the stacks outside it); (b) what to do and the texts, pure (machine/verdict_sm.h);
 * (c) the report written (reportdir.h); (d) the action (action.h); what it asks of the exit
 * sequence is returned, and its caller (exit.c's ncg_exit_apply) hands it on: this file calls
 * no file above it. It owns the locks and the clock of that way. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <ck_pr.h>

#include "ncclguard/signal.h"
#include "action.h"
#include "agent_int.h"
#include "config.h"
#include "dump.h"
#include "reportdir.h"
#include "ring.h"
#include "shm.h"
#include "siteof.h"
#include "stack.h"
#include "symbol.h"
#include "verdict.h"
#include "verdict_sm.h"
#include "vshow.h"
#include "wire.h"

/* The thread to show for an error verdict: the issuer of this rank's latest call on the comm
 * (collective or p2p, whichever is newer), and what it issued. 0 when there is none. */
static uint32_t stuck_thread(const struct ncg_lcomm *lc, char *what, size_t cap)
{
    struct ncg_shm_record rc, rp;
    char call[192];
    uint64_t cc = ck_pr_load_64(&lc->shm->coll_seq), pc = ck_pr_load_64(&lc->shm->p2p_seq);
    int hc = cc && ncg_ring_read(lc->shm, NCG_RING_COLL, cc - 1, &rc) == 0;
    int hp = pc && ncg_ring_read(lc->shm, NCG_RING_P2P, pc - 1, &rp) == 0;
    if (hp && (!hc || rp.t_ns > rc.t_ns)) {
        struct ncg_call c = {rp.seq, rp.count, rp.root_or_peer, rp.func, rp.dtype, rp.redop};
        snprintf(what, cap, "%s, #%" PRIu64 " of the pair", ncg_call_format(&c, call, sizeof call),
                 ncg_p2p_nth(rp.seq));
        return rp.tid;
    }
    if (!hc)
        return 0;
    struct ncg_call c = {rc.seq, rc.count, rc.root_or_peer, rc.func, rc.dtype, rc.redop};
    snprintf(what, cap, "slot %" PRIu64 " %s", cc - 1, ncg_call_format(&c, call, sizeof call));
    return rc.tid;
}

/* The record of call c (a collective at slot c->seq, or the c->seq-th send to / recv from peer
 * c->root) in lc's rings: 0, or -1 when it fell out of them. Caller holds ncg_agent.lk. */
static int own_record(const struct ncg_lcomm *lc, const struct ncg_call *c,
                      struct ncg_shm_record *rec)
{
    if (c->func != NCG_F_SEND && c->func != NCG_F_RECV)
        return ncg_ring_read(lc->shm, NCG_RING_COLL, c->seq, rec) == 0 && rec->seq == c->seq &&
                       rec->func == c->func
                   ? 0
                   : -1;
    uint64_t top = ck_pr_load_64(&lc->shm->p2p_seq);
    for (uint64_t k = top; k > 0 && top - k < 4096; k--)
        if (ncg_ring_read(lc->shm, NCG_RING_P2P, k - 1, rec) == 0 && rec->seq == c->seq &&
            rec->root_or_peer == c->root && rec->func == c->func)
            return 0;
    return -1;
}

/* The verdict's calls that comm rank lc->rank issued get their call site from its own ring, with
 * file:line (the coordinator has the sites of other processes only as WAITs carried them,
 * without it, and a P2P record none). The first such call becomes h's own call and site (P2P
 * MISMATCH, a RANK EXITED found through a waiting send/recv): 1 when there was one. Caller holds
 * ncg_agent.lk. */
static int own_sites(const struct ncg_lcomm *lc, struct ncg_verdict *v, struct ncg_vheld *h)
{
    char me[16], call[192];
    int got = 0;
    snprintf(me, sizeof me, "%d", lc->rank);
    for (uint32_t i = 0; i < v->ncalls; i++) {
        struct ncg_shm_record rec;
        if (strcmp(v->calls[i].ranks, me) || own_record(lc, &v->calls[i].call, &rec) != 0)
            continue;
        ncg_site_of(&rec, v->calls[i].site, sizeof v->calls[i].site);
        if (got++ || (v->kind != NCG_V_P2P_MISMATCH && v->kind != NCG_V_RANK_EXITED))
            continue;
        const struct ncg_call *c = &v->calls[i].call;
        if (c->func == NCG_F_SEND || c->func == NCG_F_RECV)
            snprintf(h->mycall, sizeof h->mycall, "%s #%" PRIu64 " of the pair",
                     ncg_call_format(c, call, sizeof call), ncg_p2p_nth(c->seq));
        else
            snprintf(h->mycall, sizeof h->mycall, "slot %" PRIu64 " %s", c->seq,
                     ncg_call_format(c, call, sizeof call));
        ncg_site_of(&rec, h->site, sizeof h->site);
    }
    return got;
}

/* The notes of a verdict (DEADLOCK's cycle, STUCK's members) carry the call sites the WAITs
 * carried, without file:line (a WAIT is sent whenever a call waits an interval: reading debug
 * information there would cost every waiting job). This process's own sites among them get it
 * here, from its rings' latest records: each bare site found whole in the notes is replaced by
 * the full one. Caller holds ncg_agent.lk; allocates; symbolizes (checker thread). */
static void own_notes_sites(struct ncg_verdict *v)
{
    static char out[NCG_WIRE_NOTES];
    static uint64_t seen[64];
    size_t nseen = 0;
    if (!v->notes || !v->notes[0])
        return;
    for (size_t i = 0; i < ncg_agent.nlc && nseen < 64; i++) {
        const struct ncg_lcomm *lc = &ncg_agent.lc[i];
        if (!lc->shm || !strstr(v->notes, "pid "))
            continue;
        for (int ring = 0; ring < 2 && nseen < 64; ring++) {
            uint64_t top = ck_pr_load_64(ring ? &lc->shm->p2p_seq : &lc->shm->coll_seq);
            for (uint64_t k = top; k > 0 && top - k < 64 && nseen < 64; k--) {
                struct ncg_shm_record rec;
                if (ncg_ring_read(lc->shm, ring ? NCG_RING_P2P : NCG_RING_COLL, k - 1, &rec) != 0)
                    continue;
                int dup = 0;
                for (size_t q = 0; q < nseen && !dup; q++)
                    dup = seen[q] == rec.caller_pc;
                if (dup || !rec.caller_pc)
                    continue;
                seen[nseen++] = rec.caller_pc;
                char bare[NCG_WIRE_SITE], full[NCG_WIRE_SITE];
                ncg_symbolize_opt(rec.caller_pc, bare, sizeof bare, 0);
                size_t bl = strlen(bare);
                if (!bl || !strstr(v->notes, bare))
                    continue;
                ncg_site_of(&rec, full, sizeof full);
                if (!strcmp(full, bare))
                    continue; /* no file:line to add */
                size_t n = 0;
                for (const char *p = v->notes; *p && n + 1 < sizeof out;) {
                    const char *m = strstr(p, bare);
                    char after = m ? m[bl] : 0;
                    if (!m || (after && after != '\n' && after != ';')) {
                        size_t take = m ? (size_t)(m - p) + bl : strlen(p);
                        take = take < sizeof out - 1 - n ? take : sizeof out - 1 - n;
                        memcpy(out + n, p, take);
                        n += take;
                        p += take;
                        continue;
                    }
                    size_t pre = (size_t)(m - p), fl = strlen(full);
                    if (n + pre + fl + 1 > sizeof out)
                        break;
                    memcpy(out + n, p, pre);
                    memcpy(out + n + pre, full, fl);
                    n += pre + fl;
                    p = m + bl;
                }
                out[n] = 0;
                ncg_verdict_set_notes(v, out);
            }
        }
    }
}

/* Fills h with comm rank lc->rank's own call at the verdict's slot (or its latest) and the
 * thread whose stack to show (when stack), and sets its count in v. Caller holds ncg_agent.lk. */
static void held_facts(const struct ncg_lcomm *lc, struct ncg_verdict *v, struct ncg_vheld *h,
                       int stack)
{
    char call[192];
    struct ncg_shm_record rec;
    memset(h, 0, sizeof *h);
    h->rank = lc->rank;
    h->call_time_unix = -1;
    uint64_t cnt = lc->removed ? lc->final : lc->shm ? ck_pr_load_64(&lc->shm->coll_seq) : 0;
    /* This rank's own count as it is now, not as last reported to the coordinator. */
    if (lc->rank >= 0 && (uint32_t)lc->rank < v->nranks)
        v->counts[lc->rank] = (int64_t)cnt;
    /* A collective slot completed here ran on every member (NCCL completes a collective only
     * once each member took part): all ranks agreed on it, even when the checker could not
     * compare it (the members that left no longer answer). Never past a MISMATCH's slot. */
    if (lc->shm && v->kind != NCG_V_P2P_MISMATCH) {
        uint64_t done = ck_pr_load_64(&lc->shm->coll_done);
        done = done < cnt ? done : cnt;
        if (v->kind == NCG_V_MISMATCH && v->slot >= 0 && done > (uint64_t)v->slot)
            done = (uint64_t)v->slot;
        if ((int64_t)done - 1 > v->last_agreed)
            v->last_agreed = (int64_t)done - 1;
    }
    if (!lc->shm) { /* destroyed here before the verdict: its count is all that is left */
        if (lc->removed)
            snprintf(h->mycall, sizeof h->mycall,
                     "none (it destroyed the communicator after %" PRIu64 " calls)", cnt);
        return;
    }
    int slotted = v->kind == NCG_V_MISMATCH || v->kind == NCG_V_STUCK || v->kind == NCG_V_DEADLOCK;
    int64_t slot = slotted && v->slot >= 0 && (uint64_t)v->slot < cnt ? v->slot : (int64_t)cnt - 1;
    if (slot >= 0 && ncg_ring_read(lc->shm, NCG_RING_COLL, (uint64_t)slot, &rec) == 0) {
        struct ncg_call c = {.seq = rec.seq,
                             .count = rec.count,
                             .root = rec.root_or_peer,
                             .func = rec.func,
                             .dtype = rec.dtype,
                             .redop = rec.redop};
        snprintf(h->mycall, sizeof h->mycall, "slot %" PRId64 " %s%s", slot,
                 ncg_call_format(&c, call, sizeof call),
                 (uint64_t)slot + 1 == cnt ? " (its latest call)" : "");
        ncg_site_of(&rec, h->site, sizeof h->site);
        if (v->kind == NCG_V_STUCK && !v->ncalls && rec.seq == (uint64_t)v->slot &&
            slot == v->slot) {
            /* the headline's call (the same on every rank: digests agree), where no WAIT named
             * it (asynchronous NCCL: nobody blocks inside the call) */
            v->ncalls = 1;
            v->calls[0].call = c;
            ncg_site_fit(v->calls[0].site, sizeof v->calls[0].site, h->site, NCG_SITE_WIDTH);
        }
        struct timespec wt;
        clock_gettime(CLOCK_REALTIME, &wt);
        double mono = (double)ncg_now_ns() * 1e-9;
        h->call_time_unix =
            (double)wt.tv_sec + (double)wt.tv_nsec * 1e-9 - (mono - (double)rec.t_ns * 1e-9);
    }
    own_sites(lc, v, h);
    if (stack)
        h->tid = stuck_thread(lc, h->what, sizeof h->what);
}

/* Held rank k's stack and Python frames into f (without ncg_agent.lk: the capture may take
 * ~300 ms while application threads take ncg_agent.lk at init); file:line only where that rank
 * prints the full block (reading debug information costs CPU time on every rank at once, between
 * the verdict and the exit). Checker thread (static storage). */
static void held_stack(const struct ncg_verdict *v, struct ncg_vfacts *f, int k)
{
    struct ncg_vheld *h = &f->held[k];
    uint64_t pcs[NCG_STACK_MAX];
    char on[8];
    int srcline =
        ncg_full_block(v, f->diag_mode, f->hosts_checker, f->alone, h->rank, on, sizeof on);
    int n = ncg_stack_capture(h->tid, pcs, NCG_VERDICT_STACK_SHOW);
    h->nstack = n > 0 ? n : 0;
    h->stack_why = n < 0 ? ncg_stack_strerror(n) : "no frames"; /* said in the block */
    for (int i = 0; i < h->nstack; i++)
        ncg_symbolize_opt(pcs[i], h->frame[i], sizeof h->frame[i], srcline);
    h->has_py = ncg_py_capture(h->tid, &h->py) == 0;
}

/* The comm ranks of v's communicator held here into f (live comms first: a rank that destroyed
 * the comm here is shown only when none is left), their facts, and the notes' sites. Caller
 * holds ncg_agent.lk. */
static void held_ranks(struct ncg_verdict *v, struct ncg_vfacts *f)
{
    int stack = ncg_cfg.stacks && ncg_verdict_shows_stack(v, f->action);
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < ncg_agent.nlc; i++) {
            struct ncg_lcomm *lc = &ncg_agent.lc[i];
            if (lc->id != v->comm_id || lc->removed != pass || lc->rank < 0)
                continue;
            int dup = 0;
            for (int k = 0; k < f->nr; k++)
                dup |= f->ranks[k] == lc->rank;
            if (dup || f->nr == (int)NCG_SHM_MAX_COMMS)
                continue;
            f->ranks[f->nr++] = lc->rank;
            if (f->nh < NCG_VERDICT_HELD_MAX && (pass == 0 || f->nh == 0))
                held_facts(lc, v, &f->held[f->nh++], stack);
        }
    if (f->nr)
        own_notes_sites(v);
}

/* (a) Everything this process knows of v into f, the segment read once under ncg_agent.lk, then
 * the stacks (a SLOW episode's end: nothing, only its status changes). */
static void verdict_facts(struct ncg_verdict *v, int li, struct ncg_vfacts *f)
{
    f->action = (int)ncg_cfg.action;
    f->diag_mode = ncg_cfg.diag;
    f->global_rank = ncg_global_rank();
    f->rank_var = ncg_launch()->global_var;
    f->pid = (uint32_t)getpid();
    f->host = ncg_host_name();
    /* An application that had already finished (its clean exit under way, its GOODBYEs sent:
     * the checker's host staying for the others) keeps its exit status, as a process that left
     * before the verdict does: the verdict is shown and reported there, not acted on. */
    f->finished = ncg_exiting();
    /* The checker's process prints a warning's full block (NCCLGUARD_DIAG=auto): the log read
     * first, and the one place that shows it whole when the ranks it names are far away. */
    f->hosts_checker = ncg_root_up();
    f->alone = li < 0 && v->kind == NCG_V_RANK_EXITED;
    /* From here the process ends with NCG_EXIT_VERDICT (ncg_verdict_decide's abort): an
     * application that finishes meanwhile (the stack capture's signal may end its sleep) must
     * not exit 0 first (ncg_exit_at_exit waits). */
    if (v->severity == NCG_SEV_ERROR && f->action == NCG_ACTION_ABORT && !f->finished)
        __atomic_store_n(&ncg_agent.aborting, 1, __ATOMIC_RELEASE);
    f->nh = f->nr = 0;
    if (!ncg_v_counted(v))
        return;
    pthread_mutex_lock(&ncg_agent.lk);
    held_ranks(v, f);
    pthread_mutex_unlock(&ncg_agent.lk);
    for (int k = 0; k < f->nh; k++)
        if (f->held[k].tid)
            held_stack(v, f, k);
}

/* Applies a verdict: every comm rank of v's communicator held here prints its diagnostic (the
 * one shown first with the report and the action). li: the link it came on (-1: decided here,
 * the checker being lost). Returns what the process must do next, which the exit's driver does
 * (exit.c's ncg_exit_apply): say DONE and, to abort, wait for the checker's RELEASE (release.h)
 * so that no rank exits, and no launcher kills the others, before every rank has printed and
 * written its part. */
struct ncg_applied ncg_apply_verdict(struct ncg_verdict *v, int li)
{
    static struct ncg_vfacts f; /* checker thread only */
    static char path[4096], note[2048];
    struct ncg_vtexts t = {0};
    struct timeval tv;
    verdict_facts(v, li, &f);                                             /* (a) */
    struct ncg_vdecision d = ncg_verdict_decide(v, f.action, f.finished); /* (b) */
    gettimeofday(&tv, NULL); /* the report's time: it is written now */
    f.time_sec = (long)tv.tv_sec;
    f.time_usec = (long)tv.tv_usec;
    path[0] = note[0] = 0;
    if (d.shown) {
        ncg_verdict_render(v, &f, &d, &t);
        /* (c) */
        if (ncg_reportdir_write(t.json, t.json_len, f.host, f.pid, path, sizeof path, note,
                                sizeof note) != 0)
            path[0] = 0;
    }
    /* (d) Under the lock the comms are used under: the capture let application threads run (one
     * may have destroyed or aborted a comm meanwhile). */
    pthread_mutex_lock(&ncg_agent.lk);
    int must_exit = ncg_action_apply(v, &d, &t, path, note);
    pthread_mutex_unlock(&ncg_agent.lk);
    for (int k = 1; k < t.nblock; k++) /* the other comm ranks held here: their own lines */
        ncg_action_show(&t.block[k], path);
    free(t.mem);
    if (!d.shown)
        return (struct ncg_applied){0};
    if (v->kind == NCG_V_LAG && v->severity == NCG_SEV_WARN && f.nh)
        ncg_dump_on_warning(v->comm_id); /* NCCLGUARD_DUMP_ON_WARN=1 */
    return (struct ncg_applied){1, v->severity == NCG_SEV_ERROR, must_exit, v->comm_id};
}
