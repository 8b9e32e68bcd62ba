/* The coordinator's verdicts for hangs that are not desyncs (on coord_int.h's state). STUCK: every
 * member issued slot k identically (verified digests), some member has not completed it, and
 * nothing moved on the comm for stuck_warn_s. DEADLOCK: a cycle in the wait-for graph of blocked
 * threads (waitfor.h) built from the members' WAITs, confirmed by a second sighting. See
 * docs/checker.md. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "coord_int.h"

/* The call a member reported being blocked in at slot k of c, or NULL. */
static const struct ncg_wait_ent *hang_wait_at(struct ncg_coord *co, const struct ccomm *c,
                                               uint32_t r, int p2p, uint64_t k)
{
    const struct cconn *cc = ncg_co_conn_get(co, c->m[r].conn);
    for (uint32_t j = 0; cc && j < cc->nwaits; j++) {
        const struct ncg_wait_ent *w = &cc->waits[j];
        if (w->comm_id == c->id && w->rank == r && w->p2p == p2p && !w->queued &&
            (p2p || w->call.seq == k))
            return w;
    }
    return NULL;
}

/* One line per member: where its thread is, and what its other communicators are doing. */
static void hang_member_lines(struct ncg_coord *co, const struct ccomm *c, uint64_t k, char *b,
                              size_t cap)
{
    char call[192];
    for (uint32_t r = 0; r < c->nranks; r++) {
        if (r == 16) {
            ncg_addf(b, cap, "... %u more members\n", c->nranks - 16);
            break;
        }
        const struct cmember *mb = &c->m[r];
        const struct cconn *cc = ncg_co_conn_get(co, mb->conn);
        ncg_addf(b, cap, "rank %u (global %d%s%s): issued %" PRIu64 ", completed %" PRIu64, r,
                 mb->grank, cc ? ", " : "", cc ? cc->host : "", mb->count, mb->done);
        if (mb->done_hi > mb->done)
            ncg_addf(b, cap, "-%" PRIu64 " (sampled)", mb->done_hi);
        const struct ncg_wait_ent *w = hang_wait_at(co, c, r, 0, k);
        if (w)
            ncg_addf(b, cap, ", thread %u in %s%s%s", w->tid,
                     ncg_call_format(&w->call, call, sizeof call), w->site[0] ? " from " : "",
                     w->site);
        int others = 0;
        for (size_t ci = 0; ci < co->ncomm; ci++) { /* its other comms (same process) */
            const struct ccomm *o = co->comm[ci];
            if (o == c)
                continue;
            for (uint32_t q = 0; q < o->nranks; q++) {
                if (o->m[q].conn != mb->conn || o->m[q].state != M_ACTIVE || mb->conn < 0)
                    continue;
                ncg_addf(b, cap, "%s comm %016" PRIx64 " issued %" PRIu64 " completed %" PRIu64,
                         others++ ? ";" : "; other comms:", o->id, o->m[q].count, o->m[q].done);
                break;
            }
        }
        ncg_addf(b, cap, "\n");
    }
}

/* Under asynchronous NCCL a member's calls on c may sit on its stream behind a call of another
 * communicator that waits for a rank that has not issued it (a LAG there, a rank pausing before
 * a barrier): c then looks stalled although nothing inside NCCL is. 1 when some member of c has
 * incomplete work on another comm whose first incomplete slot some member has not issued. */
static int hang_behind_lag(struct ncg_coord *co, const struct ccomm *c)
{
    for (uint32_t r = 0; r < c->nranks; r++) {
        int conn = c->m[r].conn;
        for (size_t ci = 0; conn >= 0 && ci < co->ncomm; ci++) {
            const struct ccomm *o = co->comm[ci];
            if (o == c)
                continue;
            uint64_t omin = UINT64_MAX; /* o's first incomplete slot is at most this */
            int here = 0;
            for (uint32_t q = 0; q < o->nranks; q++) {
                uint64_t hi = o->m[q].done_hi > o->m[q].done ? o->m[q].done_hi : o->m[q].done;
                if (hi < omin)
                    omin = hi;
                here |= o->m[q].conn == conn && o->m[q].state == M_ACTIVE &&
                        o->m[q].done < o->m[q].count;
            }
            for (uint32_t q = 0; here && q < o->nranks; q++)
                if (o->m[q].count <= omin)
                    return 1; /* o's member q may not have issued what the others wait in */
        }
    }
    return 0;
}

void ncg_co_check_stuck(struct ncg_coord *co, struct ccomm *c, uint64_t now_ns)
{
    if (co->p.stuck_warn_s <= 0 && co->p.stuck_abort_s <= 0)
        return;
    /* The first slot some member has not completed lies in [k, khi]: exact (k == khi) where a
     * call's return is its completion; with completion sampled by CUDA events each member
     * reports bounds, and the job's first incomplete slot is bounded by their minima. */
    uint64_t k = UINT64_MAX, khi = UINT64_MAX;
    int sampled = 0;
    for (uint32_t i = 0; i < c->nranks; i++) {
        if (c->m[i].state != M_ACTIVE)
            return; /* unknown, gone or dead members: other verdicts' business */
        if (c->m[i].done < k)
            k = c->m[i].done;
        uint64_t hi = c->m[i].done_hi > c->m[i].done ? c->m[i].done_hi : c->m[i].done;
        if (hi < khi)
            khi = hi;
        sampled |= c->m[i].sampled;
    }
    for (uint32_t i = 0; i < c->nranks; i++)
        if (c->m[i].count <= khi)
            return; /* someone may not have issued the stalled slot: LAG territory, or idle */
    if (c->vc <= khi)
        return; /* not verified identical (yet) up to there: MISMATCH territory */
    if (sampled && hang_behind_lag(co, c))
        return; /* queued behind another comm's wait for a late rank: that comm's LAG */
    /* Under asynchronous NCCL the hosts keep issuing after a stall (the work only queues):
     * only completion measures progress there. */
    uint64_t last = sampled                            ? c->dprogress_ns
                    : c->progress_ns > c->dprogress_ns ? c->progress_ns
                                                       : c->dprogress_ns;
    double idle = (double)(now_ns - last) / 1e9;
    int due = ncg_v_due(idle, co->p.stuck_warn_s, co->p.stuck_abort_s, c->stuck_warned == k + 1);
    if (!due)
        return;
    int32_t *not_done = malloc(sizeof *not_done * c->nranks);
    char *lines = malloc(NCG_WIRE_NOTES);
    if (!not_done || !lines) {
        free(not_done);
        free(lines);
        return;
    }
    size_t nn = 0;
    const struct ncg_wait_ent *at = NULL; /* the call at slot k (equal everywhere: digests agree) */
    for (uint32_t i = 0; i < c->nranks; i++) {
        if (c->m[i].done <= k)
            not_done[nn++] = (int32_t)i;
        if (!at)
            at = hang_wait_at(co, c, i, 0, k);
    }
    lines[0] = 0;
    hang_member_lines(co, c, k, lines, NCG_WIRE_NOTES);
    struct ncg_stuck_fig s = {
        k,    khi, idle, due == 2, not_done, nn, nn, 0, at ? &at->call : NULL, at ? at->site : NULL,
        lines};
    struct ncg_vcomm vc = ncg_co_vcomm(c);
    struct ncg_verdict *v = ncg_v_stuck(&vc, &s);
    free(lines);
    free(not_done);
    if (!v)
        return;
    c->stuck_warned = k + 1;
    ncg_co_verdict_issue(co, c, v);
}

/* ---- DEADLOCK (deadlock.h) ---- */

/* The coordinator's state as deadlock.h's tables: processes = connections (by index), members
 * of every comm; then one check of the graph (streams 0: threads, 1: streams), confirmed by a
 * second sighting, and one verdict per comm of the cycle. */
static void coord_deadlock(struct ncg_coord *co, int streams)
{
    size_t nw = 0; /* entries of this graph's kind: none or one, no cycle (and no tables) */
    for (int i = 0; i < co->conns.n; i++) {
        const struct cconn *cc = ncg_conntab_at(&co->conns, i);
        for (uint32_t j = 0; cc->h.authed && j < cc->nwaits; j++)
            nw += streams ? cc->waits[j].queued != 0 : cc->waits[j].queued == 0;
    }
    if (nw < 2) {
        co->dl[streams].sig = 0;
        return;
    }
    struct ncg_dl_tables t;
    if (ncg_dl_tables_new(&t, (size_t)co->conns.n, co->ncomm) < 0)
        return;
    for (int i = 0; i < co->conns.n; i++) {
        const struct cconn *cc = ncg_conntab_at(&co->conns, i);
        if (cc->h.used && cc->h.authed)
            t.p[i] = (struct ncg_dl_proc){cc->pid, cc->host, cc->waits, cc->nwaits};
        t.gen[i] = cc->wait_gen;
    }
    for (size_t ci = 0; ci < co->ncomm; ci++) {
        const struct ccomm *c = co->comm[ci];
        if (!(t.mm[ci] = calloc(c->nranks ? c->nranks : 1, sizeof **t.mm)))
            goto out;
        for (uint32_t r = 0; r < c->nranks; r++) {
            const struct cmember *m = &c->m[r];
            t.mm[ci][r] = (struct ncg_dl_member){m->state == M_ACTIVE && !c->done && m->conn >= 0,
                                                 (uint32_t)m->conn,
                                                 m->tid,
                                                 m->grank,
                                                 m->count,
                                                 m->done};
        }
        t.dc[ci] = (struct ncg_dl_comm){c->id, c->nranks, t.mm[ci], 0, &c->p2p};
    }
    if (ncg_dl_find(t.p, (size_t)co->conns.n, t.dc, co->ncomm, streams, t.f, t.notes) != 1) {
        co->dl[streams].sig = 0;
        goto out;
    }
    if (!ncg_dl_confirmed(&co->dl[streams], t.f, t.gen))
        goto out;
    for (long i = 0; i < t.f->n; i++) { /* in the cycle's order; a comm's first step only */
        size_t ci = t.f->step[i].comm;
        struct ccomm *c = co->comm[ci];
        if (c->done)
            continue;
        struct ncg_vcomm vc = ncg_co_vcomm(c);
        struct ncg_verdict *v = ncg_v_deadlock(&vc, t.f, t.dc, ci, t.notes);
        if (!v)
            continue;
        ncg_co_verdict_issue(co, c, v);
    }
out:
    ncg_dl_tables_free(&t);
}

void ncg_co_check_deadlock(struct ncg_coord *co)
{
    coord_deadlock(co, 0);
}

/* DEADLOCK under asynchronous NCCL: the stream-order graph (waitfor.h) of the queued entries. */
void ncg_co_check_deadlock_streams(struct ncg_coord *co)
{
    coord_deadlock(co, 1);
}
