/* The DEADLOCK verdict's pure part (deadlock.h): the two graphs' inputs from WAIT entries, the
 * cycle, its second sighting, the notes and the verdict's text. */
#include "deadlock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ncclguard/shm.h"
#include "verdict.h"
#include "waitfor.h"
#include "ncclguard/signal.h"

/* Index of comm id in c[], or SIZE_MAX. */
static size_t dl_comm(const struct ncg_dl_comm *c, size_t nc, uint64_t id)
{
    for (size_t ci = 0; ci < nc; ci++)
        if (c[ci].id == id)
            return ci;
    return SIZE_MAX;
}

/* The comm index of entry e of process i, or SIZE_MAX when the comm is unknown or e's rank is
 * not a known member of that process there. */
static size_t entry_comm(const struct ncg_dl_comm *c, size_t nc, uint32_t i,
                         const struct ncg_wait_ent *e)
{
    size_t ci = dl_comm(c, nc, e->comm_id);
    if (ci == SIZE_MAX || e->rank >= c[ci].nranks)
        return SIZE_MAX;
    const struct ncg_dl_member *m = &c[ci].m[e->rank];
    return m->known && m->proc == i ? ci : SIZE_MAX;
}

/* "in slot k <call>" or "in <call> #k of the pair", then " from <site>". */
static void dl_call(char *notes, const struct ncg_wait_ent *e)
{
    char call[192];
    if (e->p2p)
        ncg_addf(notes, NCG_WIRE_NOTES, "in %s #%" PRIu64 " of the pair",
                 ncg_call_format(&e->call, call, sizeof call), ncg_p2p_nth(e->call.seq));
    else
        ncg_addf(notes, NCG_WIRE_NOTES, "in slot %" PRIu64 " %s", e->call.seq,
                 ncg_call_format(&e->call, call, sizeof call));
    ncg_addf(notes, NCG_WIRE_NOTES, "%s%s", e->site[0] ? " from " : "", e->site);
}

/* "global rank G (rank r of comm C, pid P on H, thread T" (the caller closes it). */
static void dl_who(char *notes, const struct ncg_dl_proc *p, const struct ncg_dl_comm *c,
                   uint32_t rank, uint32_t proc, uint32_t tid)
{
    ncg_addf(notes, NCG_WIRE_NOTES,
             "global rank %d (rank %u of comm %016" PRIx64 ", pid %u on %s, thread %u",
             c->m[rank].grank, rank, c->id, p[proc].pid, p[proc].host ? p[proc].host : "?", tid);
}

/* What a graph's search found, as ncg_dl_find returns it: -1 it failed (out of memory), 0 no
 * cycle (or one longer than NCG_DL_MAX, which a verdict could not name), 1 a cycle. */
static int dl_result(long len)
{
    return len < 0 ? -1 : len > 0 && len <= (long)NCG_DL_MAX;
}

/* One step of a cycle's signature: who waits (process, thread), then in what (comm, call). */
static uint64_t dl_mix(uint64_t sig, uint64_t who, uint64_t what)
{
    sig = (sig ^ who) * 0xff51afd7ed558ccdull;
    return (sig ^ what) * 0xc4ceb9fe1a85ec53ull;
}

/* A cycle of n steps (already in out->step) with signature sig: out takes both; the notes, when
 * wanted, start over with preamble and the cycle's length. 0 when there are no notes to write. */
static int dl_found(struct ncg_dl_cycle *out, long n, uint64_t sig, char *notes,
                    const char *preamble)
{
    out->n = n;
    out->sig = sig;
    if (!notes)
        return 0;
    notes[0] = 0;
    ncg_addf(notes, NCG_WIRE_NOTES,
             "%scycle of %ld (each waits for the next, the last for the first):\n", preamble, n);
    return 1;
}

/* Frees the n rows of a per-comm table (NULL: none) and the table. */
static void free_rows(void **rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++)
        free(rows[i]);
    free(rows);
}

static int find_threads(const struct ncg_dl_proc *p, size_t np, const struct ncg_dl_comm *c,
                        size_t nc, size_t cap, struct ncg_dl_cycle *out, char *notes)
{
    struct ncg_wf_wait *w = malloc(sizeof *w * cap);
    const struct ncg_wait_ent **ref = malloc(sizeof *ref * cap);
    struct ncg_wf_comm *wc = malloc(sizeof *wc * (nc ? nc : 1));
    struct ncg_wf_member **mm = calloc(nc ? nc : 1, sizeof *mm);
    struct ncg_wf_step st[NCG_DL_MAX];
    int ret = -1;
    size_t nw = 0;
    if (!w || !ref || !wc || !mm)
        goto out;
    for (size_t ci = 0; ci < nc; ci++) {
        if (!(mm[ci] = calloc(c[ci].nranks ? c[ci].nranks : 1, sizeof **mm)))
            goto out;
        for (uint32_t r = 0; r < c[ci].nranks; r++) {
            const struct ncg_dl_member *m = &c[ci].m[r];
            mm[ci][r] = (struct ncg_wf_member){m->known, m->proc, m->tid, m->done};
        }
        wc[ci] = (struct ncg_wf_comm){c[ci].nranks, mm[ci]};
    }
    for (size_t i = 0; i < np; i++)
        for (uint32_t j = 0; j < p[i].nw; j++) {
            const struct ncg_wait_ent *e = &p[i].w[j];
            size_t ci = e->queued ? SIZE_MAX : entry_comm(c, nc, (uint32_t)i, e);
            /* queued entries: the streams' graph; a collective completed by the latest REPORT
             * (a WAIT lags a REPORT by nothing, but a REPORT may have moved on since): no */
            if (ci == SIZE_MAX || (!e->p2p && c[ci].m[e->rank].done > e->call.seq))
                continue;
            uint8_t dir = !e->p2p ? 0 : e->call.func == NCG_F_SEND ? NCG_WF_SEND : NCG_WF_RECV;
            w[nw] = (struct ncg_wf_wait){(uint32_t)i, e->tid,      (uint32_t)ci, e->rank,
                                         e->p2p,      e->call.seq, e->call.root, dir};
            ref[nw++] = e;
        }
    long n = ncg_wf_find_cycle(w, nw, wc, nc, st, NCG_DL_MAX);
    if ((ret = dl_result(n)) != 1)
        goto out;
    uint64_t sig = 0x9e3779b97f4a7c15ull;
    for (long i = 0; i < n; i++) {
        const struct ncg_wf_wait *x = &w[st[i].wait];
        sig =
            dl_mix(sig, x->proc * 0x100000001b3ull + x->tid, c[x->comm].id + x->seq * 31 + x->p2p);
        out->step[i] =
            (struct ncg_dl_step){x->proc, x->comm, x->rank, x->p2p ? -1 : (int64_t)x->seq};
    }
    if (!dl_found(out, n, sig, notes, ""))
        goto out;
    for (long i = 0; i < n; i++) {
        const struct ncg_wf_wait *x = &w[st[i].wait];
        const struct ncg_dl_comm *cm = &c[x->comm];
        uint32_t t = st[i].target;
        dl_who(notes, p, cm, x->rank, x->proc, x->tid);
        ncg_addf(notes, NCG_WIRE_NOTES, "): ");
        dl_call(notes, ref[st[i].wait]);
        ncg_addf(notes, NCG_WIRE_NOTES, "; waits for rank %u (global %d), ", t, cm->m[t].grank);
        if (x->p2p)
            ncg_addf(notes, NCG_WIRE_NOTES, "whose thread is blocked in the next call\n");
        else
            ncg_addf(notes, NCG_WIRE_NOTES,
                     "which issued %" PRIu64 " and completed %" PRIu64
                     " slots on this comm; its thread is blocked in the next call\n",
                     cm->m[t].count, cm->m[t].done);
    }
out:
    free_rows((void **)mm, nc);
    free(wc);
    free(ref);
    free(w);
    return ret;
}

/* ncg_sd_comm's p2p_open over a comm's table: the side `missing` issues is open when the other
 * side's record is held unmatched. */
static int p2p_open(const void *arg, uint32_t src, uint32_t dst, uint64_t seq, uint32_t missing)
{
    return ncg_p2pm_held(arg, (int32_t)src, (int32_t)dst, seq,
                         missing == dst ? NCG_F_SEND : NCG_F_RECV);
}

/* The notes of a stream cycle found (steps st[0..len) over the calls k and host waits h, their
 * entries ref and href), one line per step in wait-for order. */
static void stream_notes(const struct ncg_dl_proc *p, const struct ncg_dl_comm *c,
                         const struct ncg_sd_call *k, const struct ncg_wait_ent **ref,
                         const struct ncg_sd_host *h, const struct ncg_wait_ent **href,
                         const struct ncg_sd_step *st, long len, char *notes)
{
    for (long q = 0; q < len; q++) {
        long i = len - 1 - q, prev = (i + len - 1) % len;
        const struct ncg_sd_call *x = &k[st[i].before];
        const struct ncg_wait_ent *e = ref[st[i].before], *t = ref[st[prev].after];
        const struct ncg_dl_comm *cm = &c[x->comm];
        dl_who(notes, p, cm, e->rank, x->proc, x->tid);
        ncg_addf(notes, NCG_WIRE_NOTES, ", stream %u): ", x->stream);
        dl_call(notes, e);
        if (st[prev].host == SIZE_MAX) {
            ncg_addf(notes, NCG_WIRE_NOTES,
                     "; waits for rank %u (global %d), whose stream has it queued behind the "
                     "next call\n",
                     t->rank, cm->m[t->rank].grank);
            continue;
        }
        /* the previous step went through a host: the member that has not issued this call */
        const struct ncg_sd_host *hw = &h[st[prev].host];
        const struct ncg_wait_ent *he = href[st[prev].host];
        uint32_t r = st[prev].rank;
        char on[32] = "every stream";
        if (hw->stream != NCG_SD_ALL_STREAMS)
            snprintf(on, sizeof on, "stream %u", hw->stream);
        ncg_addf(notes, NCG_WIRE_NOTES,
                 "; waits for rank %u (global %d, pid %u), which has not issued it: its thread %u "
                 "waits in %s for %s, where the next call has not completed\n",
                 r, r < cm->nranks ? cm->m[r].grank : -1, p[hw->proc].pid, hw->tid,
                 he->site[0] ? he->site : "a synchronization", on);
    }
}

static int find_streams(const struct ncg_dl_proc *p, size_t np, const struct ncg_dl_comm *c,
                        size_t nc, size_t cap, struct ncg_dl_cycle *out, char *notes)
{
    struct ncg_sd_call *k = malloc(sizeof *k * cap);
    const struct ncg_wait_ent **ref = malloc(sizeof *ref * cap), **href = NULL;
    uint64_t *maxd = malloc(sizeof *maxd * (nc ? nc : 1));
    struct ncg_sd_host *h = malloc(sizeof *h * cap);
    struct ncg_sd_comm *sc = calloc(nc ? nc : 1, sizeof *sc);
    struct ncg_sd_member **sm = calloc(nc ? nc : 1, sizeof *sm);
    struct ncg_sd_step st[NCG_DL_MAX];
    int ret = -1;
    size_t n = 0, nh = 0;
    if (!k || !ref || !maxd || !h || !sc || !sm || !(href = malloc(sizeof *href * cap)))
        goto out;
    for (size_t ci = 0; ci < nc; ci++) { /* once per check, not per entry and member */
        maxd[ci] = c[ci].done_floor;
        for (uint32_t r = 0; r < c[ci].nranks; r++)
            if (c[ci].m[r].known && c[ci].m[r].done > maxd[ci])
                maxd[ci] = c[ci].m[r].done;
    }
    for (size_t i = 0; i < np; i++) /* host threads waiting for their streams (v14) */
        for (uint32_t j = 0; j < p[i].nw; j++) {
            const struct ncg_wait_ent *e = &p[i].w[j];
            if (e->queued != NCG_WAIT_HOST)
                continue;
            h[nh] = (struct ncg_sd_host){(uint32_t)i, e->tid, e->stream, e->rec_tid, e->order};
            href[nh++] = e;
        }
    for (size_t ci = 0; nh && ci < nc; ci++) {
        if (!(sm[ci] = calloc(c[ci].nranks ? c[ci].nranks : 1, sizeof **sm)))
            goto out;
        for (uint32_t r = 0; r < c[ci].nranks; r++) {
            const struct ncg_dl_member *m = &c[ci].m[r];
            sm[ci][r] = (struct ncg_sd_member){m->known, m->proc, m->tid, m->count};
        }
        sc[ci] = (struct ncg_sd_comm){c[ci].nranks, sm[ci], c[ci].p2p ? p2p_open : NULL, c[ci].p2p};
    }
    for (size_t i = 0; i < np; i++)
        for (uint32_t j = 0; j < p[i].nw; j++) {
            const struct ncg_wait_ent *e = &p[i].w[j];
            size_t ci = e->queued == NCG_WAIT_QUEUED ? entry_comm(c, nc, (uint32_t)i, e) : SIZE_MAX;
            if (ci == SIZE_MAX)
                continue;
            uint32_t src = 0, dst = 0;
            if (e->p2p) {
                if (e->call.root < 0 || (uint32_t)e->call.root >= c[ci].nranks)
                    continue;
                int send = e->call.func == NCG_F_SEND;
                src = send ? e->rank : (uint32_t)e->call.root;
                dst = send ? (uint32_t)e->call.root : e->rank;
            } else if (maxd[ci] > e->call.seq) {
                /* a call some member is known to have completed can never be in a cycle: the
                 * entry is older than that member's REPORT */
                continue;
            }
            k[n] = (struct ncg_sd_call){(uint32_t)i, e->tid,      e->stream, e->order, (uint32_t)ci,
                                        e->p2p,      e->call.seq, src,       dst,      e->rank};
            ref[n++] = e;
        }
    long len = ncg_sd_find_cycle_hosts(k, n, h, nh, sc, nh ? nc : 0, st, NCG_DL_MAX);
    if ((ret = dl_result(len)) != 1)
        goto out;
    uint64_t sig = 0x2545f4914f6cdd1dull;
    for (long i = 0; i < len; i++) {
        const struct ncg_sd_call *x = &k[st[i].before];
        sig = dl_mix(sig, x->proc * 0x100000001b3ull + x->tid + x->stream,
                     c[x->comm].id + x->seq * 31 + x->p2p + x->src * 7 + x->dst);
        if (st[i].host != SIZE_MAX)
            sig = dl_mix(sig, h[st[i].host].proc, h[st[i].host].tid * 0x9e3779b1ull + st[i].rank);
    }
    /* Step i's process has k[before] then k[after] on one stream; the next step's process is in
     * k[after] (its k[before]) and waits for step i's. In wait-for order: steps reversed. */
    for (long q = 0; q < len; q++) {
        long i = len - 1 - q;
        const struct ncg_sd_call *x = &k[st[i].before];
        const struct ncg_wait_ent *e = ref[st[i].before];
        out->step[q] =
            (struct ncg_dl_step){x->proc, x->comm, e->rank, e->p2p ? -1 : (int64_t)e->call.seq};
    }
    if (!dl_found(out, len, sig, notes,
                  "asynchronous NCCL: each rank below enqueued its call before the next line's "
                  "call on one stream, or waits for its stream before it issues the next line's "
                  "call; a stream runs its calls in order and an NCCL call finishes only once "
                  "every member runs it, so none of these calls can ever complete\n"))
        goto out;
    stream_notes(p, c, k, ref, h, href, st, len, notes);
out:
    free_rows((void **)sm, nc);
    free(sc);
    free(h);
    free(href);
    free(k);
    free(ref);
    free(maxd);
    return ret;
}

int ncg_dl_find(const struct ncg_dl_proc *p, size_t np, const struct ncg_dl_comm *c, size_t nc,
                int streams, struct ncg_dl_cycle *out, char *notes)
{
    size_t cap = 0;
    out->n = 0;
    out->sig = 0;
    for (size_t i = 0; i < np; i++)
        for (uint32_t j = 0; j < p[i].nw; j++)
            cap += streams ? p[i].w[j].queued != 0 : p[i].w[j].queued == 0;
    if (cap < 2)
        return 0;
    return streams ? find_streams(p, np, c, nc, cap, out, notes)
                   : find_threads(p, np, c, nc, cap, out, notes);
}

int ncg_dl_tables_new(struct ncg_dl_tables *t, size_t np, size_t nc)
{
    t->p = calloc(np ? np : 1, sizeof *t->p);
    t->gen = calloc(np ? np : 1, sizeof *t->gen);
    t->dc = calloc(nc ? nc : 1, sizeof *t->dc);
    t->mm = calloc(nc ? nc : 1, sizeof *t->mm);
    t->nc = nc;
    t->f = calloc(1, sizeof *t->f);
    t->notes = calloc(1, NCG_WIRE_NOTES);
    if (t->p && t->gen && t->dc && t->mm && t->f && t->notes)
        return 0;
    ncg_dl_tables_free(t);
    return -ENOMEM;
}

void ncg_dl_tables_free(struct ncg_dl_tables *t)
{
    for (size_t i = 0; t->mm && i < t->nc; i++)
        free(t->mm[i]);
    free(t->mm);
    free(t->dc);
    free(t->gen);
    free(t->p);
    free(t->f);
    free(t->notes);
    *t = (struct ncg_dl_tables){0};
}

int ncg_dl_confirmed(struct ncg_dl_seen *d, const struct ncg_dl_cycle *f, const uint64_t *gen)
{
    int confirmed = f->sig == d->sig;
    for (long i = 0; i < f->n && confirmed; i++)
        for (uint32_t q = 0; q < d->n; q++)
            if (d->proc[q] == f->step[i].proc && gen[f->step[i].proc] <= d->gen[q])
                confirmed = 0; /* that process has not reported again since the first sighting */
    if (confirmed) {
        d->sig = 0;
        return 1;
    }
    if (f->sig != d->sig) { /* first sighting: remember every process's WAIT count */
        d->sig = f->sig;
        d->n = 0;
        for (long i = 0; i < f->n && d->n < NCG_DL_MAX; i++) {
            d->proc[d->n] = f->step[i].proc;
            d->gen[d->n++] = gen[f->step[i].proc];
        }
    }
    return 0;
}

int64_t ncg_dl_verdict(const struct ncg_dl_cycle *f, const struct ncg_dl_comm *c, size_t ci,
                       char *subject, size_t scap, char *detail, size_t dcap)
{
    char comms[256] = "", who[128] = "";
    int32_t gr[NCG_DL_MAX], mine[NCG_DL_MAX];
    size_t ng = 0, nm = 0;
    int unknown = 0; /* a member without a global rank (several ranks in one process) */
    int64_t slot = -2;
    for (long i = 0; i < f->n; i++) {
        const struct ncg_dl_step *s = &f->step[i];
        char id[24];
        snprintf(id, sizeof id, "%016" PRIx64, c[s->comm].id);
        if (!strstr(comms, id))
            ncg_addf(comms, sizeof comms, "%s%s", comms[0] ? ", " : "", id);
        gr[ng++] = c[s->comm].m[s->rank].grank;
        unknown |= gr[ng - 1] < 0;
        if (s->comm == ci) {
            if (slot == -2)
                slot = s->slot;
            mine[nm++] = (int32_t)s->rank;
        }
    }
    ncg_ranks_compact(mine, nm, subject, scap);
    if (unknown) { /* no global ranks to name (several ranks in one process): each comm's */
        snprintf(detail, dcap, "wait on each other:");
        for (long i = 0; i < f->n; i++) {
            size_t cj = f->step[i].comm;
            int first = 1;
            for (long k = 0; k < i; k++)
                first &= f->step[k].comm != cj;
            if (!first)
                continue;
            int32_t r[NCG_DL_MAX];
            size_t nr = 0;
            char list[128];
            for (long k = i; k < f->n; k++)
                if (f->step[k].comm == cj)
                    r[nr++] = (int32_t)f->step[k].rank;
            ncg_ranks_compact(r, nr, list, sizeof list);
            ncg_addf(detail, dcap, "%s %s %s of comm %016" PRIx64, i ? "," : "",
                     nr > 1 ? "ranks" : "rank", list, c[cj].id);
        }
    } else
        snprintf(detail, dcap, "global ranks %s wait on each other across comms %s",
                 ncg_ranks_compact(gr, ng, who, sizeof who), comms);
    return slot;
}
