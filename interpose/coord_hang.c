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
        if (w->comm_id == c->id && w->rank == r && w->p2p == p2p && (p2p || w->call.seq == k))
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
    char range[96] = "";
    if (khi > k)
        snprintf(range, sizeof range,
                 " (or a later one up to slot %" PRIu64 ": completion is "
                 "sampled by CUDA events)",
                 khi);
    if (nn == c->nranks)
        snprintf(v->detail, sizeof v->detail, "completed on none for %.1f s%s", idle, range);
    else
        snprintf(v->detail, sizeof v->detail, "not completed on %s %.200s for %.1f s%s",
                 nn > 1 ? "ranks" : "rank", v->subject, idle, range);
    notes[0] = 0;
    hang_addf(notes, NCG_WIRE_NOTES,
              "a hang inside NCCL (a dead link, a failed device, a peer stuck elsewhere), not a "
              "desync: slot %" PRIu64 " is the same call on every rank\n",
              k);
    if (khi > k)
        hang_addf(notes, NCG_WIRE_NOTES,
                  "completion is sampled by CUDA events (asynchronous NCCL): the stalled slot is "
                  "one of %" PRIu64 "-%" PRIu64 ", identical on every rank up to there\n",
                  k, khi);
    if (k)
        hang_addf(notes, NCG_WIRE_NOTES, "last slot completed on every rank: %s%" PRIu64 "\n",
                  khi > k ? "at least " : "", k - 1);
    else
        hang_addf(notes, NCG_WIRE_NOTES, "last slot completed on every rank: none%s\n",
                  khi > k ? " known" : "");
    hang_member_lines(co, c, k, notes, NCG_WIRE_NOTES);
    ncg_verdict_set_notes(v, notes);
    free(notes);
    free(not_done);
    c->stuck_warned = k + 1;
    verdict_issue(co, c, v);
}

/* ---- DEADLOCK ---- */

static void deadlock_issue(struct ncg_coord *co, const struct ncg_wf_wait *w, const size_t *wcomm,
                           const struct ncg_wait_ent *const *went, const struct ncg_wf_step *st,
                           long n)
{
    char *notes = malloc(NCG_WIRE_NOTES);
    char call[192], comms[256] = "", who[128] = "";
    if (!notes)
        return;
    notes[0] = 0;
    int32_t gr[64];
    size_t ng = 0;
    for (long i = 0; i < n; i++) {
        const struct ccomm *c = co->comm[wcomm[st[i].wait]];
        char id[24];
        snprintf(id, sizeof id, "%016" PRIx64, c->id);
        if (!strstr(comms, id))
            hang_addf(comms, sizeof comms, "%s%s", comms[0] ? ", " : "", id);
        if (ng < 64)
            gr[ng++] = c->m[w[st[i].wait].rank].grank;
    }
    ncg_ranks_compact(gr, ng, who, sizeof who);
    hang_addf(notes, NCG_WIRE_NOTES,
              "cycle of %ld (each waits for the next, the last for the first):\n", n);
    for (long i = 0; i < n; i++) {
        const struct ncg_wf_wait *x = &w[st[i].wait];
        const struct ncg_wait_ent *e = went[st[i].wait];
        const struct ccomm *c = co->comm[wcomm[st[i].wait]];
        const struct cconn *cc = conn_get(co, (int)x->proc);
        uint32_t t = st[i].target;
        hang_addf(notes, NCG_WIRE_NOTES,
                  "global rank %d (rank %u of comm %016" PRIx64 ", pid %u on %s, thread %u): in ",
                  c->m[x->rank].grank, x->rank, c->id, cc ? cc->pid : 0, cc ? cc->host : "?",
                  x->tid);
        if (x->p2p)
            hang_addf(notes, NCG_WIRE_NOTES, "%s #%" PRIu64 " of the pair",
                      ncg_call_format(&e->call, call, sizeof call), x->seq);
        else
            hang_addf(notes, NCG_WIRE_NOTES, "slot %" PRIu64 " %s", x->seq,
                      ncg_call_format(&e->call, call, sizeof call));
        hang_addf(notes, NCG_WIRE_NOTES, "%s%s; waits for rank %u (global %d), ",
                  e->site[0] ? " from " : "", e->site, t, c->m[t].grank);
        if (x->p2p)
            hang_addf(notes, NCG_WIRE_NOTES, "whose thread is blocked in the next call\n");
        else
            hang_addf(notes, NCG_WIRE_NOTES,
                      "which issued %" PRIu64 " and completed %" PRIu64
                      " slots on this comm; its thread is blocked in the next call\n",
                      c->m[t].count, c->m[t].done);
    }
    /* One verdict per communicator of the cycle: every member of each ends. */
    for (long i = 0; i < n; i++) {
        struct ccomm *c = co->comm[wcomm[st[i].wait]];
        if (c->done)
            continue;
        struct ncg_verdict *v = verdict_for(c, NCG_V_DEADLOCK);
        if (!v)
            continue;
        int32_t mine[64];
        size_t nm = 0;
        for (long j = 0; j < n && nm < 64; j++)
            if (wcomm[st[j].wait] == wcomm[st[i].wait])
                mine[nm++] = (int32_t)w[st[j].wait].rank;
        ncg_ranks_compact(mine, nm, v->subject, sizeof v->subject);
        v->slot = w[st[i].wait].p2p ? -1 : (int64_t)w[st[i].wait].seq;
        snprintf(v->detail, sizeof v->detail, "global ranks %s wait on each other across comms %s",
                 who, comms);
        ncg_verdict_set_notes(v, notes);
        verdict_issue(co, c, v);
    }
    free(notes);
}

static void ncg_coord_check_deadlock(struct ncg_coord *co)
{
    size_t nw = 0, cap = 0;
    for (int i = 0; i < co->nconn; i++)
        if (co->conn[i].used && co->conn[i].authed)
            cap += co->conn[i].nwaits;
    if (cap < 2) {
        co->dl_sig = 0;
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
            size_t ci;
            for (ci = 0; ci < co->ncomm && co->comm[ci]->id != e->comm_id; ci++)
                ;
            if (ci == co->ncomm || e->rank >= co->comm[ci]->nranks ||
                co->comm[ci]->m[e->rank].conn != i || co->comm[ci]->done)
                continue;
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
        co->dl_sig = 0;
        goto out;
    }
    uint64_t sig = 0x9e3779b97f4a7c15ull;
    for (long i = 0; i < n; i++) {
        const struct ncg_wf_wait *x = &w[st[i].wait];
        sig = (sig ^ (x->proc * 0x100000001b3ull + x->tid)) * 0xff51afd7ed558ccdull;
        sig = (sig ^ (co->comm[x->comm]->id + x->seq * 31 + x->p2p)) * 0xc4ceb9fe1a85ec53ull;
    }
    int confirmed = sig == co->dl_sig;
    for (long i = 0; i < n && confirmed; i++)
        for (uint32_t q = 0; q < co->dl_n; q++)
            if (co->dl_conn[q] == (int)w[st[i].wait].proc &&
                co->conn[w[st[i].wait].proc].wait_gen <= co->dl_gen[q])
                confirmed = 0; /* that process has not reported again since the first sighting */
    if (!confirmed) {
        if (sig != co->dl_sig) { /* first sighting: remember every process's WAIT count */
            co->dl_sig = sig;
            co->dl_n = 0;
            for (long i = 0; i < n; i++) {
                co->dl_conn[co->dl_n] = (int)w[st[i].wait].proc;
                co->dl_gen[co->dl_n++] = co->conn[w[st[i].wait].proc].wait_gen;
            }
        }
        goto out;
    }
    co->dl_sig = 0;
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
