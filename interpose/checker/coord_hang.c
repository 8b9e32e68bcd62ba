/* Part of coord.c (included there: it reads the coordinator's private state): the verdicts
 * for hangs that are not desyncs. STUCK: every member issued slot k identically (verified
 * digests), some member has not completed it, and nothing moved on the comm for
 * stuck_warn_s. DEADLOCK: a cycle in the wait-for graph of blocked threads (waitfor.h) built
 * from the members' WAITs, confirmed by a second sighting. See docs/checker.md. */

/* The call a member reported being blocked in at slot k of c, or NULL. */
static const struct ncg_wait_ent *hang_wait_at(struct ncg_coord *co, const struct ccomm *c,
                                               uint32_t r, int p2p, uint64_t k)
{
    const struct cconn *cc = conn_get(co, c->m[r].conn);
    for (uint32_t j = 0; cc && j < cc->nwaits; j++) {
        const struct ncg_wait_ent *w = &cc->waits[j];
        if (w->comm_id == c->id && w->rank == r && w->p2p == p2p && !w->queued &&
            (p2p || w->call.seq == k))
            return w;
    }
    return NULL;
}

__attribute__((format(printf, 3, 4))) static void hang_addf(char *b, size_t cap, const char *fmt,
                                                            ...)
{
    size_t n = strlen(b);
    if (n + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b + n, cap - n, fmt, ap);
    va_end(ap);
}

/* One line per member: where its thread is, and what its other communicators are doing. */
static void hang_member_lines(struct ncg_coord *co, const struct ccomm *c, uint64_t k, char *b,
                              size_t cap)
{
    char call[192];
    for (uint32_t r = 0; r < c->nranks; r++) {
        if (r == 16) {
            hang_addf(b, cap, "... %u more members\n", c->nranks - 16);
            break;
        }
        const struct cmember *mb = &c->m[r];
        const struct cconn *cc = conn_get(co, mb->conn);
        hang_addf(b, cap, "rank %u (global %d%s%s): issued %" PRIu64 ", completed %" PRIu64, r,
                  mb->grank, cc ? ", " : "", cc ? cc->host : "", mb->count, mb->done);
        if (mb->done_hi > mb->done)
            hang_addf(b, cap, "-%" PRIu64 " (sampled)", mb->done_hi);
        const struct ncg_wait_ent *w = hang_wait_at(co, c, r, 0, k);
        if (w)
            hang_addf(b, cap, ", thread %u in %s%s%s", w->tid,
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
                hang_addf(b, cap, "%s comm %016" PRIx64 " issued %" PRIu64 " completed %" PRIu64,
                          others++ ? ";" : "; other comms:", o->id, o->m[q].count, o->m[q].done);
                break;
            }
        }
        hang_addf(b, cap, "\n");
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

static void ncg_coord_check_stuck(struct ncg_coord *co, struct ccomm *c, uint64_t now_ns)
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
    int act = co->p.stuck_abort_s > 0 && idle >= co->p.stuck_abort_s;
    if (!act && (co->p.stuck_warn_s <= 0 || idle < co->p.stuck_warn_s || c->stuck_warned == k + 1))
        return;
    struct ncg_verdict *v = verdict_for(c, NCG_V_STUCK);
    int32_t *not_done = malloc(sizeof *not_done * c->nranks);
    char *notes = malloc(NCG_WIRE_NOTES);
    if (!v || !not_done || !notes) {
        ncg_verdict_free(v);
        free(not_done);
        free(notes);
        return;
    }
    size_t nn = 0;
    for (uint32_t i = 0; i < c->nranks; i++) {
        if (c->m[i].done <= k)
            not_done[nn++] = (int32_t)i;
        const struct ncg_wait_ent *w = hang_wait_at(co, c, i, 0, k);
        if (w && !v->ncalls) { /* the call at slot k (equal everywhere: digests agree) */
            v->ncalls = 1;
            v->calls[0].call = w->call;
            snprintf(v->calls[0].site, sizeof v->calls[0].site, "%s", w->site);
        }
    }
    v->severity = act ? NCG_SEV_ERROR : NCG_SEV_WARN;
    v->slot = (int64_t)k;
    ncg_ranks_compact(not_done, nn, v->subject, sizeof v->subject);
    ncg_stuck_words(v, k, khi, idle, nn == c->nranks, nn > 1, notes, NCG_WIRE_NOTES);
    hang_member_lines(co, c, k, notes, NCG_WIRE_NOTES);
    ncg_verdict_set_notes(v, notes);
    free(notes);
    free(not_done);
    c->stuck_warned = k + 1;
    verdict_issue(co, c, v);
}

/* ---- DEADLOCK ---- */

/* The comm index of WAIT entry e of connection conn, or SIZE_MAX when the comm is unknown or
 * done, or e's rank is not that connection's member there. */
static size_t wait_comm(const struct ncg_coord *co, int conn, const struct ncg_wait_ent *e)
{
    for (size_t ci = 0; ci < co->ncomm; ci++) {
        const struct ccomm *c = co->comm[ci];
        if (c->id == e->comm_id)
            return e->rank < c->nranks && c->m[e->rank].conn == conn && !c->done ? ci : SIZE_MAX;
    }
    return SIZE_MAX;
}

/* 1 when the cycle with signature sig over the processes procs[0..n) is confirmed: seen at an
 * earlier tick, and every one of those processes sent a newer WAIT since (all were in those
 * calls at the same moment). Else remembers a first sighting. */
static int deadlock_confirmed(struct dlseen *d, const struct ncg_coord *co, uint64_t sig,
                              const uint32_t *procs, long n)
{
    int confirmed = sig == d->sig;
    for (long i = 0; i < n && confirmed; i++)
        for (uint32_t q = 0; q < d->n; q++)
            if (d->conn[q] == (int)procs[i] && co->conn[procs[i]].wait_gen <= d->gen[q])
                confirmed = 0; /* that process has not reported again since the first sighting */
    if (confirmed) {
        d->sig = 0;
        return 1;
    }
    if (sig != d->sig) { /* first sighting: remember every process's WAIT count */
        d->sig = sig;
        d->n = 0;
        for (long i = 0; i < n && d->n < sizeof d->conn / sizeof *d->conn; i++) {
            d->conn[d->n] = (int)procs[i];
            d->gen[d->n++] = co->conn[procs[i]].wait_gen;
        }
    }
    return 0;
}

/* One step of a cycle as the diagnostic and the verdicts see it: a rank of a comm in a call. */
struct dlstep {
    size_t ci;     /* comm index */
    uint32_t rank; /* comm rank */
    int64_t slot;  /* collective slot, or -1 (p2p) */
};

/* The cycle's verdicts: one per communicator of the cycle, so that every member of each ends,
 * naming the cycle's global ranks and comms; the notes (the cycle) are the callers'. */
static void deadlock_verdicts(struct ncg_coord *co, const struct dlstep *d, long n,
                              const char *notes)
{
    char comms[256] = "", who[128] = "";
    int32_t gr[64];
    size_t ng = 0;
    for (long i = 0; i < n; i++) {
        const struct ccomm *c = co->comm[d[i].ci];
        char id[24];
        snprintf(id, sizeof id, "%016" PRIx64, c->id);
        if (!strstr(comms, id))
            hang_addf(comms, sizeof comms, "%s%s", comms[0] ? ", " : "", id);
        if (ng < 64)
            gr[ng++] = c->m[d[i].rank].grank;
    }
    ncg_ranks_compact(gr, ng, who, sizeof who);
    for (long i = 0; i < n; i++) {
        struct ccomm *c = co->comm[d[i].ci];
        if (c->done)
            continue;
        struct ncg_verdict *v = verdict_for(c, NCG_V_DEADLOCK);
        if (!v)
            continue;
        int32_t mine[64];
        size_t nm = 0;
        for (long j = 0; j < n && nm < 64; j++)
            if (d[j].ci == d[i].ci)
                mine[nm++] = (int32_t)d[j].rank;
        ncg_ranks_compact(mine, nm, v->subject, sizeof v->subject);
        v->slot = d[i].slot;
        snprintf(v->detail, sizeof v->detail, "global ranks %s wait on each other across comms %s",
                 who, comms);
        ncg_verdict_set_notes(v, notes);
        verdict_issue(co, c, v);
    }
}

/* "in slot k <call>" or "in <call> #k of the pair", then " from <site>". */
static void deadlock_call(char *notes, const struct ncg_wait_ent *e)
{
    char call[192];
    if (e->p2p)
        hang_addf(notes, NCG_WIRE_NOTES, "in %s #%" PRIu64 " of the pair",
                  ncg_call_format(&e->call, call, sizeof call), e->call.seq);
    else
        hang_addf(notes, NCG_WIRE_NOTES, "in slot %" PRIu64 " %s", e->call.seq,
                  ncg_call_format(&e->call, call, sizeof call));
    hang_addf(notes, NCG_WIRE_NOTES, "%s%s", e->site[0] ? " from " : "", e->site);
}

/* "global rank G (rank r of comm C, pid P on H, thread T" (the caller closes it). */
static void deadlock_who(struct ncg_coord *co, char *notes, const struct ccomm *c, uint32_t rank,
                         int conn, uint32_t tid)
{
    const struct cconn *cc = conn_get(co, conn);
    hang_addf(notes, NCG_WIRE_NOTES,
              "global rank %d (rank %u of comm %016" PRIx64 ", pid %u on %s, thread %u",
              c->m[rank].grank, rank, c->id, cc ? cc->pid : 0, cc ? cc->host : "?", tid);
}

static void deadlock_issue(struct ncg_coord *co, const struct ncg_wf_wait *w, const size_t *wcomm,
                           const struct ncg_wait_ent *const *went, const struct ncg_wf_step *st,
                           long n)
{
    char *notes = malloc(NCG_WIRE_NOTES);
    struct dlstep d[NCG_WIRE_MAX_CALLS * 8];
    if (!notes)
        return;
    notes[0] = 0;
    hang_addf(notes, NCG_WIRE_NOTES,
              "cycle of %ld (each waits for the next, the last for the first):\n", n);
    for (long i = 0; i < n; i++) {
        const struct ncg_wf_wait *x = &w[st[i].wait];
        const struct ccomm *c = co->comm[wcomm[st[i].wait]];
        uint32_t t = st[i].target;
        d[i] = (struct dlstep){wcomm[st[i].wait], x->rank, x->p2p ? -1 : (int64_t)x->seq};
        deadlock_who(co, notes, c, x->rank, (int)x->proc, x->tid);
        hang_addf(notes, NCG_WIRE_NOTES, "): ");
        deadlock_call(notes, went[st[i].wait]);
        hang_addf(notes, NCG_WIRE_NOTES, "; waits for rank %u (global %d), ", t, c->m[t].grank);
        if (x->p2p)
            hang_addf(notes, NCG_WIRE_NOTES, "whose thread is blocked in the next call\n");
        else
            hang_addf(notes, NCG_WIRE_NOTES,
                      "which issued %" PRIu64 " and completed %" PRIu64
                      " slots on this comm; its thread is blocked in the next call\n",
                      c->m[t].count, c->m[t].done);
    }
    deadlock_verdicts(co, d, n, notes);
    free(notes);
}

/* The stream-order cycle (asynchronous NCCL): step i's process has c[before] then c[after] on
 * one stream; the next step's process is in c[after] (its c[before]) and waits for step i's,
 * which has it queued behind c[before]. Printed in wait-for order (steps reversed). */
static void deadlock_issue_streams(struct ncg_coord *co, const struct ncg_sd_call *c,
                                   const struct ncg_wait_ent *const *went,
                                   const struct ncg_sd_step *st, long n)
{
    char *notes = malloc(NCG_WIRE_NOTES);
    struct dlstep d[NCG_WIRE_MAX_CALLS * 8];
    if (!notes)
        return;
    notes[0] = 0;
    hang_addf(notes, NCG_WIRE_NOTES,
              "asynchronous NCCL: each rank below enqueued its call before the next line's call on "
              "one stream; a stream runs its calls in order and an NCCL call finishes only once "
              "every member runs it, so none of these calls can ever complete\n"
              "cycle of %ld (each waits for the next, the last for the first):\n",
              n);
    for (long q = 0; q < n; q++) {
        long i = n - 1 - q, prev = (i + n - 1) % n;
        const struct ncg_sd_call *x = &c[st[i].before];
        const struct ncg_wait_ent *e = went[st[i].before], *t = went[st[prev].after];
        const struct ccomm *cm = co->comm[x->comm];
        d[q] = (struct dlstep){x->comm, e->rank, e->p2p ? -1 : (int64_t)e->call.seq};
        deadlock_who(co, notes, cm, e->rank, (int)x->proc, x->tid);
        hang_addf(notes, NCG_WIRE_NOTES, ", stream %u): ", x->stream);
        deadlock_call(notes, e);
        hang_addf(notes, NCG_WIRE_NOTES,
                  "; waits for rank %u (global %d), whose stream has it queued behind the next "
                  "call\n",
                  t->rank, cm->m[t->rank].grank);
    }
    deadlock_verdicts(co, d, n, notes);
    free(notes);
}

/* DEADLOCK under asynchronous NCCL: a cycle in the stream-order graph (waitfor.h) of the
 * members' queued WAIT entries, confirmed by a second sighting like the threads' one. */
static void ncg_coord_check_deadlock_streams(struct ncg_coord *co)
{
    size_t cap = 0, n = 0;
    for (int i = 0; i < co->nconn; i++)
        if (co->conn[i].used && co->conn[i].authed)
            for (uint32_t j = 0; j < co->conn[i].nwaits; j++)
                cap += co->conn[i].waits[j].queued;
    if (cap < 2) {
        co->dl[1].sig = 0;
        return;
    }
    struct ncg_sd_call *c = malloc(sizeof *c * cap);
    const struct ncg_wait_ent **went = malloc(sizeof *went * cap);
    uint64_t *maxd = malloc(sizeof *maxd * (co->ncomm ? co->ncomm : 1));
    struct ncg_sd_step st[NCG_WIRE_MAX_CALLS * 8];
    if (!c || !went || !maxd)
        goto out;
    for (size_t ci = 0; ci < co->ncomm; ci++) { /* once per tick, not per entry and member */
        maxd[ci] = 0;
        for (uint32_t r = 0; r < co->comm[ci]->nranks; r++)
            if (co->comm[ci]->m[r].done > maxd[ci])
                maxd[ci] = co->comm[ci]->m[r].done;
    }
    for (int i = 0; i < co->nconn; i++) {
        const struct cconn *cc = &co->conn[i];
        if (!cc->used || !cc->authed)
            continue;
        for (uint32_t j = 0; j < cc->nwaits; j++) {
            const struct ncg_wait_ent *e = &cc->waits[j];
            size_t ci = wait_comm(co, i, e);
            if (!e->queued || ci == SIZE_MAX)
                continue;
            const struct ccomm *cm = co->comm[ci];
            uint32_t src = 0, dst = 0;
            if (e->p2p) {
                if (e->call.root < 0 || (uint32_t)e->call.root >= cm->nranks)
                    continue;
                int send = e->call.func == NCG_F_SEND;
                src = send ? e->rank : (uint32_t)e->call.root;
                dst = send ? (uint32_t)e->call.root : e->rank;
            } else {
                /* A call some member is known to have completed can never be in a cycle: the
                 * entry is older than that member's REPORT. */
                if (maxd[ci] > e->call.seq)
                    continue;
            }
            c[n] = (struct ncg_sd_call){(uint32_t)i, e->tid,      e->stream, e->order, (uint32_t)ci,
                                        e->p2p,      e->call.seq, src,       dst};
            went[n++] = e;
        }
    }
    long len = ncg_sd_find_cycle(c, n, st, sizeof st / sizeof *st);
    if (len <= 0 || (size_t)len > sizeof st / sizeof *st) {
        co->dl[1].sig = 0;
        goto out;
    }
    uint64_t sig = 0x2545f4914f6cdd1dull;
    uint32_t procs[NCG_WIRE_MAX_CALLS * 8];
    for (long i = 0; i < len; i++) {
        const struct ncg_sd_call *x = &c[st[i].before];
        sig = (sig ^ (x->proc * 0x100000001b3ull + x->tid + x->stream)) * 0xff51afd7ed558ccdull;
        sig = (sig ^ (co->comm[x->comm]->id + x->seq * 31 + x->p2p + x->src * 7 + x->dst)) *
              0xc4ceb9fe1a85ec53ull;
        procs[i] = x->proc;
    }
    if (deadlock_confirmed(&co->dl[1], co, sig, procs, len))
        deadlock_issue_streams(co, c, went, st, len);
out:
    free(c);
    free(went);
    free(maxd);
}

static void ncg_coord_check_deadlock(struct ncg_coord *co)
{
    size_t nw = 0, cap = 0;
    for (int i = 0; i < co->nconn; i++)
        if (co->conn[i].used && co->conn[i].authed)
            cap += co->conn[i].nwaits;
    if (cap < 2) {
        co->dl[0].sig = 0;
        return;
    }
    struct ncg_wf_wait *w = malloc(sizeof *w * cap);
    size_t *wcomm = malloc(sizeof *wcomm * cap);
    const struct ncg_wait_ent **went = malloc(sizeof *went * cap);
    struct ncg_wf_comm *wc = malloc(sizeof *wc * (co->ncomm ? co->ncomm : 1));
    struct ncg_wf_member **mm = calloc(co->ncomm ? co->ncomm : 1, sizeof *mm);
    struct ncg_wf_step st[NCG_WIRE_MAX_CALLS * 8];
    if (!w || !wcomm || !went || !wc || !mm)
        goto out;
    for (size_t ci = 0; ci < co->ncomm; ci++) {
        const struct ccomm *c = co->comm[ci];
        if (!(mm[ci] = calloc(c->nranks, sizeof **mm)))
            goto out;
        for (uint32_t r = 0; r < c->nranks; r++)
            mm[ci][r] = (struct ncg_wf_member){c->m[r].state == M_ACTIVE && !c->done,
                                               (uint32_t)c->m[r].conn, c->m[r].tid, c->m[r].done};
        wc[ci] = (struct ncg_wf_comm){c->nranks, mm[ci]};
    }
    for (int i = 0; i < co->nconn; i++) {
        const struct cconn *cc = &co->conn[i];
        if (!cc->used || !cc->authed)
            continue;
        for (uint32_t j = 0; j < cc->nwaits; j++) {
            const struct ncg_wait_ent *e = &cc->waits[j];
            size_t ci = wait_comm(co, i, e);
            if (e->queued || ci == SIZE_MAX)
                continue; /* queued (asynchronous) entries: ncg_coord_check_deadlock_streams */
            /* still incomplete by the latest REPORT (a WAIT lags a REPORT by nothing, but a
             * REPORT may have moved on since) */
            if (!e->p2p && co->comm[ci]->m[e->rank].done > e->call.seq)
                continue;
            w[nw] = (struct ncg_wf_wait){(uint32_t)i, e->tid,      (uint32_t)ci, e->rank,
                                         e->p2p,      e->call.seq, e->call.root};
            wcomm[nw] = ci;
            went[nw++] = e;
        }
    }
    long n = ncg_wf_find_cycle(w, nw, wc, co->ncomm, st, sizeof st / sizeof *st);
    if (n <= 0 || (size_t)n > sizeof st / sizeof *st) {
        co->dl[0].sig = 0;
        goto out;
    }
    uint64_t sig = 0x9e3779b97f4a7c15ull;
    uint32_t procs[NCG_WIRE_MAX_CALLS * 8];
    for (long i = 0; i < n; i++) {
        const struct ncg_wf_wait *x = &w[st[i].wait];
        sig = (sig ^ (x->proc * 0x100000001b3ull + x->tid)) * 0xff51afd7ed558ccdull;
        sig = (sig ^ (co->comm[x->comm]->id + x->seq * 31 + x->p2p)) * 0xc4ceb9fe1a85ec53ull;
        procs[i] = x->proc;
    }
    if (deadlock_confirmed(&co->dl[0], co, sig, procs, n))
        deadlock_issue(co, w, wcomm, went, st, n);
out:
    if (mm)
        for (size_t ci = 0; ci < co->ncomm; ci++)
            free(mm[ci]);
    free(mm);
    free(wc);
    free(went);
    free(wcomm);
    free(w);
}
