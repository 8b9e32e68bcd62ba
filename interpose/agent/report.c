/* The periodic REPORT of this process's communicators to their checkers (counts, heartbeat),
 * with their GOODBYEs, the calls its threads wait in (WAIT) and p2p records; and the RANK
 * EXITED this side judges from a SHUTDOWN's counts once the checker's process left. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <ck_pr.h>

#include "agent_int.h"
#include "comm.h"
#include "local.h"
#include "completion.h"
#include "config.h"
#include "hostwait.h"
#include "ring.h"
#include "shm.h"
#include "slow.h"
#include "straggler.h"
#include "streamtab.h"
#include "symbol.h"
#include "verdict.h"
#include "wire.h"

/* The thread driving a comm here: the issuer of its latest call, else its creator. */
static uint32_t driver_tid(const struct ncg_lcomm *lc, uint64_t cnt)
{
    struct ncg_shm_record rc, rp;
    if (!lc->shm)
        return 0;
    uint64_t pc = ck_pr_load_64(&lc->shm->p2p_seq);
    int hc = cnt && ncg_ring_read(lc->shm, NCG_RING_COLL, cnt - 1, &rc) == 0;
    int hp = pc && ncg_ring_read(lc->shm, NCG_RING_P2P, pc - 1, &rp) == 0;
    if (hp && (!hc || rp.t_ns > rc.t_ns))
        return rp.tid;
    return hc ? rc.tid : lc->shm->creator_tid;
}

/* WAIT entries kept for host threads waiting for their streams (host_waits): the queued calls
 * share the rest. */
#define NCG_HOST_WAITS 8u

/* 1 + the oldest launched, incomplete call of lc of the kind (0: none), and how many are
 * launched. Checker thread, ncg_agent.lk held. */
static uint64_t oldest_pending(const struct ncg_lcomm *lc, int p2p, uint64_t *launched)
{
    const struct ncg_shm_comm *s = lc->shm;
    uint64_t iss = ck_pr_load_64(p2p ? &s->p2p_seq : &s->coll_seq);
    uint64_t held = ck_pr_load_64(p2p ? &s->p2p_held : &s->coll_held);
    uint64_t done = ck_pr_load_64(p2p ? &s->p2p_done : &s->coll_done);
    *launched = held && held - 1 < iss ? held - 1 : iss;
    return done < *launched ? done + 1 : 0;
}

/* How many of lc's kinds (collective, p2p) have had the same oldest incomplete call since the
 * previous report. Checker thread, ncg_agent.lk held. */
static unsigned stalled_kinds(const struct ncg_lcomm *lc)
{
    unsigned n = 0;
    uint64_t launched;
    for (int p2p = 0; lc->shm && p2p < 2; p2p++) {
        uint64_t key = oldest_pending(lc, p2p, &launched);
        n += key && key == lc->blocked_prev[p2p];
    }
    return n;
}

/* Adds the oldest launched, incomplete collective and p2p call of lc to w when it was already
 * the oldest one at the previous report (blocked for at least an interval). Under asynchronous
 * NCCL (queued) nobody blocks inside a call: then up to per_kind of the first launched calls
 * not known complete, with their streams and launch orders (the stream-order DEADLOCK,
 * waitfor.h): completion is sampled, so the calls that really wait may come a few milliseconds
 * of calls after the first ones not known complete; when more are launched than per_kind, half
 * of them are the last launched ones (a burst of tiny calls ends in the stall with its
 * completion known only up to its first event: several ranks in one process share one WAIT,
 * and the first calls alone were all long complete). Checker thread, ncg_agent.lk held. */
static void blocked_calls(struct ncg_lcomm *lc, struct ncg_msg_wait *w, int queued,
                          uint64_t per_kind)
{
    static struct {
        uint64_t pc;
        char site[NCG_WIRE_SITE];
    } cache[64]; /* call sites symbolized once per address (a loop's calls share a few) */
    if (!lc->shm)
        return;
    for (int p2p = 0; p2p < 2; p2p++) {
        const struct ncg_shm_comm *s = lc->shm;
        uint64_t launched, key = oldest_pending(lc, p2p, &launched);
        uint64_t prev = lc->blocked_prev[p2p];
        lc->blocked_prev[p2p] = key;
        if (!key || key != prev)
            continue;
        uint64_t end = queued ? launched : key, gap_from = end + 1, gap_to = end;
        if (end - (key - 1) > per_kind) { /* [key, gap_from) and (gap_to, end] */
            uint64_t head = per_kind - per_kind / 2;
            gap_from = key + head;
            gap_to = end - per_kind / 2;
        }
        for (uint64_t k = key; k <= end && w->n < NCG_WIRE_MAX_WAITS; k++) {
            if (k == gap_from)
                k = gap_to + 1;
            struct ncg_shm_record r;
            if (ncg_ring_read(s, p2p ? NCG_RING_P2P : NCG_RING_COLL, k - 1, &r) != 0)
                break;
            struct ncg_wait_ent *e = &w->w[w->n++];
            memset(e, 0, sizeof *e);
            e->comm_id = lc->id;
            e->rank = (uint32_t)lc->rank;
            e->tid = r.tid;
            e->p2p = (uint8_t)p2p;
            e->queued = (uint8_t)queued;
            e->stream = queued ? NCG_REC_STREAM(r.reserved) : 0;
            e->order = queued ? NCG_REC_ORDER(r.reserved) : 0;
            e->call = (struct ncg_call){r.seq, r.count, r.root_or_peer, r.func, r.dtype, r.redop};
            /* the WAIT site without file:line: WAITs flow whenever a call waits an interval, and
             * reading debug information (libdw) there would cost every waiting job memory and
             * CPU */
            unsigned h = (unsigned)((r.caller_pc * 0x9e3779b97f4a7c15ull) >> 58); /* 64 */
            if (cache[h].pc != r.caller_pc || !cache[h].pc) {
                cache[h].pc = r.caller_pc;
                ncg_symbolize_opt(r.caller_pc, cache[h].site, sizeof cache[h].site, 0);
            }
            memcpy(e->site, cache[h].site, sizeof e->site);
        }
    }
}

/* Entry i's straggler samples since the previous REPORT (slow.h), thinned to the wire's bound the
 * same way on every rank (straggler.h), each with its time per slot. */
static void slow_samples(struct ncg_slow *sl, struct ncg_msg_report *r, uint32_t i, uint64_t cnt)
{
    struct ncg_slow_sample ss[NCG_SLOW_RING];
    uint64_t slot[NCG_SLOW_RING];
    size_t idx[NCG_SLOW_RING], n = 0;
    uint32_t got = ncg_slow_read(sl, ss, NCG_SLOW_RING);
    for (uint32_t k = 0; k < got; k++)
        if (ss[k].slot < cnt && (!n || ss[k].slot > ss[n - 1].slot))
            ss[n] = ss[k], slot[n++] = ss[k].slot;
    n = ncg_sg_thin(slot, n, NCG_WIRE_MAX_SLOW, idx);
    for (size_t k = 0; k < n; k++) {
        const struct ncg_slow_sample *x = &ss[idx[k]];
        r->slow[i][k] = (struct ncg_report_slow){x->slot, x->dur_us,
                                                 x->gap ? x->period_us / x->gap : 0, x->device};
    }
    r->nslow[i] = (uint8_t)n;
}

void ncg_client_keepalive(void)
{
    static const struct ncg_msg empty = {.type = NCG_MSG_REPORT};
    pthread_mutex_lock(&ncg_agent.lk);
    for (int i = 0; i < ncg_agent.nlink; i++)
        if (ncg_agent.link[i].state == NCG_LINK_UP)
            ncg_link_send(&ncg_agent.link[i], &empty);
    pthread_mutex_unlock(&ncg_agent.lk);
}

/* Host threads waiting for their streams (hostwait.h) as WAIT entries (wire v14), appended to a
 * WAIT that carries queued calls (asynchronous NCCL): the checker's stream graph closes the
 * cycles that run through a host with them (waitfor.h, ncg_sd_find_cycle_hosts). A blocking
 * wait counts once it lasted an interval; a polling loop while its latest cudaErrorNotReady is
 * under an interval old. The last queued entries make room for up to NCG_HOST_WAITS. */
static int host_waiting(const struct ncg_hostwait *x, uint64_t now, uint64_t iv)
{
    return x->since_ns <= now && now - x->since_ns >= iv && x->stream != NCG_HW_STREAM_UNKNOWN &&
           !((x->kind & NCG_HW_POLL) && now - x->last_ns > iv);
}

static void host_waits(struct ncg_msg_wait *w, const struct ncg_hostwait *hw, size_t n,
                       uint64_t now, uint64_t iv)
{
    size_t want = 0;
    for (size_t i = 0; i < n; i++)
        want += host_waiting(&hw[i], now, iv);
    want = want < NCG_HOST_WAITS ? want : NCG_HOST_WAITS;
    if (w->n + want > NCG_WIRE_MAX_WAITS)
        w->n = NCG_WIRE_MAX_WAITS - (uint32_t)want;
    for (size_t i = 0; i < n && want; i++) {
        const struct ncg_hostwait *x = &hw[i];
        if (!host_waiting(x, now, iv))
            continue;
        want--;
        struct ncg_wait_ent *e = &w->w[w->n++];
        memset(e, 0, sizeof *e);
        e->tid = x->tid;
        e->queued = NCG_WAIT_HOST;
        e->stream = (x->kind & ~NCG_HW_POLL) == NCG_HW_DEVICE ? NCG_WAIT_ALL_STREAMS : x->stream;
        if (x->order != NCG_HW_ORDER_NONE && x->rec_tid) {
            e->rec_tid = x->rec_tid;
            e->order = x->order & NCG_WIRE_ORDER_MAX;
        }
        snprintf(e->site, sizeof e->site, "%s",
                 x->kind == NCG_HW_STREAM        ? "cudaStreamSynchronize"
                 : x->kind == NCG_HW_EVENT       ? "cudaEventSynchronize"
                 : x->kind == NCG_HW_DEVICE      ? "cudaDeviceSynchronize"
                 : x->kind == NCG_HW_POLL_STREAM ? "a cudaStreamQuery loop"
                                                 : "a cudaEventQuery loop");
    }
}

struct ncg_left_own ncg_left_own[NCG_WIRE_MAX_COMMS];
unsigned ncg_left_own_n;
static void left_own_add(uint64_t id, uint32_t rank, uint64_t final)
{
    ncg_left_own[ncg_left_own_n++ % NCG_WIRE_MAX_COMMS] = (struct ncg_left_own){id, final, rank};
}

/* A removed comm's GOODBYE into bye (after a REPORT with its final count in rep when no REPORT
 * carried it yet). 1: told, drop it from the list; 0: keep it for a later round. */
static int removed_goodbye(struct ncg_lcomm *lc, struct ncg_link *l, struct ncg_msg_report *rr,
                           struct ncg_msg_goodbye *g, int32_t gr)
{
    if (l->state == NCG_LINK_CONNECTING || l->state == NCG_LINK_HELLO)
        return 0; /* removed while its link was coming up: its GOODBYE once it is up */
    uint8_t fl = lc->aborted ? NCG_BYE_ABORT : 0;
    /* Destroyed or aborted before any REPORT carried it (within the first interval): the
     * checker does not know this member yet, and would drop its GOODBYE; a REPORT with its
     * final count goes first (the REPORT is sent before the GOODBYE). */
    if (!lc->reported && l->state == NCG_LINK_UP && rr->n < NCG_WIRE_MAX_COMMS &&
        (g->n == 0 || g->flags == fl) && g->n < NCG_WIRE_MAX_COMMS) {
        rr->e[rr->n++] = (struct ncg_report_entry){.comm_id = lc->id,
                                                   .nranks = (uint32_t)lc->nranks,
                                                   .rank = (uint32_t)lc->rank,
                                                   .count = lc->final,
                                                   .global_rank = gr,
                                                   .done = lc->final,
                                                   .done_hi = lc->final};
        lc->reported = 1;
    }
    if (g->n == 0)
        g->flags = fl;
    if (l->state == NCG_LINK_UP && g->n < NCG_WIRE_MAX_COMMS && g->flags == fl) {
        g->comm_id[g->n] = lc->id;
        g->rank[g->n] = (uint32_t)lc->rank; /* the one that left, of several here */
        g->count[g->n++] = lc->final;
        left_own_add(lc->id, (uint32_t)lc->rank, lc->final);
    } else if (l->state == NCG_LINK_UP) {
        return 0; /* next round (full, or the other kind of goodbye) */
    }
    return 1;
}

/* A comm whose link is not up (its checker's process left): RANK EXITED, decided locally, from
 * what the checker said before it went; NULL while nothing is certain. */
static struct ncg_verdict *exited_locally(struct ncg_lcomm *lc, struct ncg_link *l, uint64_t cnt,
                                          uint64_t now)
{
    struct ncg_local_self self = {lc->id, (uint32_t)lc->nranks, lc->rank, ncg_global_rank(), cnt};
    /* a tree's SHUTDOWN with counts is the root's, passed down */
    int32_t hg = ncg_link_in_tree(l) ? l->tr.root_grank : l->w.global_rank;
    const struct ncg_sd_facts *sd = &lc->sd;
    struct ncg_local_gone gone = {sd->rank, sd->gone_rank, sd->gone_count, sd->ngone};
    struct ncg_verdict *exited = ncg_local_rank_exited(&self, sd->final, sd->left, sd->verdict, hg,
                                                       sd->rank >= 0 || sd->ngone ? &gone : NULL);
    /* counts that agree: a slot the leaver issued and never ran stops completing here
     * (asynchronous NCCL: its process ended with the call enqueued) */
    uint64_t done = lc->shm ? ck_pr_load_64(&lc->shm->coll_done) : 0;
    if (sd->final == UINT64_MAX || done != lc->sd_done || !lc->sd_done_ns) {
        lc->sd_done = done;
        lc->sd_done_ns = now;
    }
    double idle = (double)(now - lc->sd_done_ns) / 1e9;
    if (!exited && sd->final != UINT64_MAX && idle * 1000 >= 3.0 * ncg_cfg.interval_ms &&
        idle >= 0.3)
        exited = ncg_local_exited_wait(&self, done, idle, sd->final, sd->verdict, hg);
    if (exited)
        ncg_sd_facts_reset(&lc->sd);
    return exited;
}

/* A live comm's REPORT entry (count, completion bounds, straggler samples) into r. */
static void report_entry(struct ncg_lcomm *lc, struct ncg_msg_report *r, uint64_t cnt, int32_t gr)
{
    if (r->n >= NCG_WIRE_MAX_COMMS)
        return;
    uint64_t done = lc->shm ? ck_pr_load_64(&lc->shm->coll_done) : 0, hi;
    done = done < cnt ? done : cnt;
    int sampled = ncg_cev_bounds(lc->c ? &lc->c->cev[0] : NULL, done, cnt, &hi);
    r->e[r->n++] = (struct ncg_report_entry){.comm_id = lc->id,
                                             .nranks = (uint32_t)lc->nranks,
                                             .rank = (uint32_t)lc->rank,
                                             .count = cnt,
                                             .global_rank = gr,
                                             .done = done,
                                             .tid = driver_tid(lc, cnt),
                                             .done_hi = hi,
                                             .flags = sampled ? NCG_REP_SAMPLED : 0};
    lc->reported = 1;
    if (lc->c)
        slow_samples(&lc->c->slow, r, r->n - 1, cnt);
}

/* A comm's p2p records since the last report, at most NCG_WIRE_MAX_P2P per comm and interval,
 * as one P2P message on its link. */
static void send_p2p(struct ncg_lcomm *lc, struct ncg_link *l)
{
    static struct ncg_msg p2p; /* checker thread only */
    uint64_t top = lc->shm ? ck_pr_load_64(&lc->shm->p2p_seq) : 0;
    if (top <= lc->p2p_next)
        return;
    uint64_t from = lc->p2p_next;
    if (top - from > NCG_WIRE_MAX_P2P)
        from = top - NCG_WIRE_MAX_P2P;
    memset(&p2p, 0, sizeof p2p);
    p2p.type = NCG_MSG_P2P;
    p2p.u.p2p.comm_id = lc->id;
    p2p.u.p2p.rank = (uint32_t)lc->rank; /* one of several here, maybe */
    uint64_t k;
    for (k = from; k < top; k++) {
        struct ncg_shm_record rec;
        int rc = ncg_ring_read(lc->shm, NCG_RING_P2P, k, &rec);
        if (rc == -EAGAIN)
            break; /* still being written: next round */
        if (rc != 0)
            continue;
        p2p.u.p2p.r[p2p.u.p2p.n++] =
            (struct ncg_p2p_rec){rec.seq, rec.count, rec.root_or_peer, rec.func, rec.dtype};
    }
    lc->p2p_next = k;
    if (p2p.u.p2p.n)
        ncg_link_send(l, &p2p);
}

/* Periodic: REPORT (heartbeat + counts), P2P records, GOODBYEs of removed comms; local RANK
 * EXITED against a checker process that left: returned (NULL: none), for the caller to apply
 * (exit.c's ncg_exit_report). */
struct ncg_verdict *ncg_client_report(uint64_t now)
{
    static struct ncg_msg rep[NCG_MAX_LINKS], bye[NCG_MAX_LINKS], wt[NCG_MAX_LINKS];
    unsigned stalled[NCG_MAX_LINKS] = {0};
    int32_t gr = ncg_global_rank();
    ncg_completion_poll(); /* asynchronous NCCL: advance the done counters first */
    ncg_slow_calibrate();  /* the straggler samples' ticks-to-ns ratio (slow.h) */
    int cm = __atomic_load_n(&ncg_cmode, __ATOMIC_ACQUIRE);
    for (int i = 0; i < ncg_agent.nlink; i++) {
        memset(&rep[i], 0, sizeof rep[i]);
        rep[i].type = NCG_MSG_REPORT;
        wt[i].type = NCG_MSG_WAIT;
        wt[i].u.wait.n = 0;
        memset(&bye[i], 0, sizeof bye[i]);
        bye[i].type = NCG_MSG_GOODBYE;
    }
    struct ncg_verdict *exited = NULL;
    pthread_mutex_lock(&ncg_agent.lk);
    /* Queued WAIT entries share a message: each stalled comm and kind gets its part. */
    for (size_t i = 0; cm == NCG_CMODE_EVENTS && i < ncg_agent.nlc; i++)
        if (ncg_agent.lc[i].link >= 0 && !ncg_agent.lc[i].removed)
            stalled[ncg_agent.lc[i].link] += stalled_kinds(&ncg_agent.lc[i]);
    for (size_t i = 0; i < ncg_agent.nlc;) {
        struct ncg_lcomm *lc = &ncg_agent.lc[i];
        if (lc->link < 0) {
            if (lc->removed && lc->link == -2) { /* unguarded: nobody to tell */
                ncg_agent.lc[i] = ncg_agent.lc[--ncg_agent.nlc];
                continue;
            }
            i++; /* removed before its link was resolved: told once it is */
            continue;
        }
        struct ncg_link *l = &ncg_agent.link[lc->link];
        if (lc->removed) {
            if (removed_goodbye(lc, l, &rep[lc->link].u.report, &bye[lc->link].u.goodbye, gr))
                ncg_agent.lc[i] = ncg_agent.lc[--ncg_agent.nlc];
            else
                i++;
            continue;
        }
        uint64_t cnt = lc->shm ? ck_pr_load_64(&lc->shm->coll_seq) : 0;
        if (l->state != NCG_LINK_UP) {
            if (!exited)
                exited = exited_locally(lc, l, cnt, now);
            i++;
            continue;
        }
        report_entry(lc, &rep[lc->link].u.report, cnt, gr);
        /* WAITs: where a call's return is its completion, the calls threads are blocked in (the
         * DEADLOCK wait-for graph of threads); under asynchronous NCCL (completion from CUDA
         * events) a thread is not blocked in the calls it enqueued and a completed call looks
         * incomplete for a while, so instead the first calls queued on each stalled comm with
         * their streams and launch orders (the stream-order graph; docs/checker.md). While
         * the mode is still being probed, a call's return (found idle) is its completion, and
         * the first one that leaves work behind ends the probing (EVENTS): a call incomplete
         * at two reports in a row under PROBE has not returned, its thread is blocked in it. */
        if (wt[lc->link].u.wait.n < NCG_WIRE_MAX_WAITS - 1) {
            unsigned k = stalled[lc->link] ? stalled[lc->link] : 1;
            uint64_t room =
                cm == NCG_CMODE_EVENTS ? NCG_WIRE_MAX_WAITS - NCG_HOST_WAITS : NCG_WIRE_MAX_WAITS;
            uint64_t per = room / k < 4 ? 4 : room / k;
            blocked_calls(lc, &wt[lc->link].u.wait, cm == NCG_CMODE_EVENTS, per);
        }
        i++;
    }
    pthread_mutex_unlock(&ncg_agent.lk);
    if (cm == NCG_CMODE_EVENTS) {
        static struct ncg_hostwait hw[NCG_HW_SLOTS]; /* checker thread only */
        size_t nhw = 0;
        for (int i = 0; i < ncg_agent.nlink; i++)
            if (wt[i].u.wait.n) {
                if (!nhw)
                    nhw = ncg_hostwait_snapshot(hw, NCG_HW_SLOTS, now);
                host_waits(&wt[i].u.wait, hw, nhw, now, ncg_cfg.interval_ms * 1000000ull);
            }
    }
    for (int i = 0; i < ncg_agent.nlink; i++) {
        if (ncg_agent.link[i].state != NCG_LINK_UP)
            continue;
        ncg_link_send(&ncg_agent.link[i], &rep[i]);
        if (bye[i].u.goodbye.n) /* after the REPORT that may introduce its comms */
            ncg_link_send(&ncg_agent.link[i], &bye[i]);
        if (wt[i].u.wait.n || ncg_agent.link[i].waited) /* after the REPORT: counts first */
            ncg_link_send(&ncg_agent.link[i], &wt[i]);
        ncg_agent.link[i].waited = wt[i].u.wait.n != 0;
    }
    /* p2p after the reports: the checker matches records only from registered members */
    pthread_mutex_lock(&ncg_agent.lk);
    for (size_t i = 0; i < ncg_agent.nlc; i++) {
        struct ncg_lcomm *lc = &ncg_agent.lc[i];
        if (lc->link >= 0 && !lc->removed && ncg_agent.link[lc->link].state == NCG_LINK_UP)
            send_p2p(lc, &ncg_agent.link[lc->link]);
    }
    pthread_mutex_unlock(&ncg_agent.lk);
    return exited;
}
