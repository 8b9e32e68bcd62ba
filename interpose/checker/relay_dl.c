/* Part of relay.c (included there: it reads the relay's private state): DEADLOCK through the
 * tree. A node relay turns each WAIT of its client processes into an RWAIT (the entries, the
 * process's memberships with their driver threads and counts) and sends it up; relays above
 * pass it on unchanged; the root keeps the latest one per process (host, pid) and runs
 * deadlock.h's search over them, as the flat coordinator does over its connections: only the
 * processes with blocked calls take part (a member with none draws no edge in either graph),
 * and a cycle is confirmed by a second sighting after each of its processes sent a newer
 * WAIT. Traffic only while calls wait: a client sends WAITs only then (one empty one after). */

#define NCG_RELAY_MAX_WAITERS 4096u /* root: processes with blocked calls held */

struct rwaiter {
    struct ncg_msg_rwait *w; /* the latest RWAIT (owned) */
    uint64_t seen_ns;        /* when it came */
};

/* What the root holds (lazily allocated in struct ncg_relay: r->dl). */
struct rdl {
    struct rwaiter *p;
    uint32_t n, cap;
    uint8_t full; /* past NCG_RELAY_MAX_WAITERS: said once */
    uint64_t last_check_ns;
    struct ncg_dl_seen seen[2]; /* [0] blocked threads, [1] stream order */
};

static void dl_free(struct ncg_relay *r)
{
    if (!r->dl)
        return;
    for (uint32_t i = 0; i < r->dl->n; i++)
        free(r->dl->p[i].w);
    free(r->dl->p);
    free(r->dl);
    r->dl = NULL;
}

/* Root: the latest RWAIT of a process replaces its previous one (taken: w is the root's now);
 * an empty one removes it. */
static void dl_keep(struct ncg_relay *r, struct ncg_msg_rwait *w, uint64_t now_ns)
{
    if (!r->dl && !(r->dl = calloc(1, sizeof *r->dl))) {
        free(w);
        r_nomem(r);
        return;
    }
    struct rdl *d = r->dl;
    uint32_t i;
    for (i = 0; i < d->n; i++)
        if (d->p[i].w->pid == w->pid && !strcmp(d->p[i].w->host, w->host))
            break;
    if (w->w.n == 0) {
        if (i < d->n) {
            free(d->p[i].w);
            d->p[i] = d->p[--d->n];
        }
        free(w);
        return;
    }
    if (i == d->n) {
        if (d->n == NCG_RELAY_MAX_WAITERS) {
            r->st.refused++;
            if (!d->full)
                r_event(r,
                        "DEADLOCK: more than %u processes with blocked calls; the others are "
                        "left out of the wait-for graph",
                        NCG_RELAY_MAX_WAITERS);
            d->full = 1;
            free(w);
            return;
        }
        if (d->n == d->cap) {
            uint32_t cap = d->cap ? d->cap * 2 : 16;
            struct rwaiter *p = realloc(d->p, sizeof *p * cap);
            if (!p) {
                free(w);
                r_nomem(r);
                return;
            }
            d->p = p;
            d->cap = cap;
        }
        d->p[d->n++] = (struct rwaiter){NULL, 0};
    }
    free(d->p[i].w);
    d->p[i] = (struct rwaiter){w, now_ns};
}

/* A client's WAIT: as an RWAIT, to the root's table (at the root) or up. */
static void on_wait(struct ncg_relay *r, int conn, const struct ncg_msg_wait *wt, uint64_t now_ns)
{
    struct rconn *cc = conn_get(r, conn);
    if (!cc || (!r->p.root && !r->attached))
        return; /* the next WAIT (an interval on) goes up once the parent is back */
    struct ncg_msg_rwait *w = calloc(1, sizeof *w);
    if (!w) {
        r_nomem(r);
        return;
    }
    w->pid = cc->pid;
    w->grank = cc->grank;
    snprintf(w->host, sizeof w->host, "%s", cc->host);
    w->gen = ++cc->wait_gen;
    for (size_t ci = 0; ci < r->ncomm && w->nm < NCG_WIRE_MAX_COMMS; ci++) {
        const struct rcomm *c = r->comm[ci];
        for (uint32_t i = 0; i < c->nk; i++) {
            const struct rkid *k = &c->k[i];
            if (k->conn == conn && !k->relay && k->state == K_ACTIVE) {
                w->m[w->nm++] =
                    (struct ncg_rwait_mem){c->id, c->nranks, k->rank, k->tid, k->max, k->dmin};
                break;
            }
        }
    }
    w->w = *wt;
    if (r->p.root) {
        dl_keep(r, w, now_ns);
        return;
    }
    struct ncg_msg m = {.type = NCG_MSG_RWAIT};
    m.u.rwait = w;
    r->ops.up(r->ops.arg, &m);
    free(w);
}

/* A child relay's RWAIT: kept (root) or passed up. */
static void on_rwait(struct ncg_relay *r, struct ncg_msg_rwait *w, uint64_t now_ns)
{
    if (r->p.root) {
        struct ncg_msg_rwait *own = malloc(sizeof *own);
        if (!own) {
            r_nomem(r);
            return;
        }
        *own = *w;
        dl_keep(r, own, now_ns);
    } else if (r->attached) {
        struct ncg_msg m = {.type = NCG_MSG_RWAIT};
        m.u.rwait = w;
        r->ops.up(r->ops.arg, &m);
    }
}

/* Root, each tick (at most twice an interval): forget processes whose WAITs stopped without
 * the empty one (three intervals), then one check per graph. */
static void root_check_deadlock(struct ncg_relay *r, uint64_t now_ns)
{
    struct rdl *d = r->dl;
    uint64_t iv = (uint64_t)r->p.interval_ms * 1000000ull;
    if (!d || now_ns - d->last_check_ns < iv / 2)
        return;
    d->last_check_ns = now_ns;
    for (uint32_t i = 0; i < d->n;)
        if (now_ns - d->p[i].seen_ns > 3 * iv) {
            free(d->p[i].w);
            d->p[i] = d->p[--d->n];
        } else {
            i++;
        }
    if (d->n < 1)
        return;
    struct ncg_dl_proc *p = calloc(d->n, sizeof *p);
    uint64_t *gen = calloc(d->n, sizeof *gen);
    struct ncg_dl_comm *dc = calloc(r->ncomm ? r->ncomm : 1, sizeof *dc);
    struct ncg_dl_member **mm = calloc(r->ncomm ? r->ncomm : 1, sizeof *mm);
    size_t *idx = calloc(r->ncomm ? r->ncomm : 1, sizeof *idx); /* dc index -> r->comm index */
    struct ncg_dl_cycle *f = malloc(sizeof *f);
    char *notes = malloc(NCG_WIRE_NOTES);
    size_t nc = 0;
    if (!p || !gen || !dc || !mm || !idx || !f || !notes) {
        r_nomem(r);
        goto out;
    }
    for (uint32_t i = 0; i < d->n; i++) {
        const struct ncg_msg_rwait *w = d->p[i].w;
        p[i] = (struct ncg_dl_proc){w->pid, w->host, w->w.w, w->w.n};
        gen[i] = w->gen;
    }
    /* The comms some waiting process is in, with those processes as their known members. */
    for (size_t ci = 0; ci < r->ncomm; ci++) {
        const struct rcomm *c = r->comm[ci];
        if (c->done)
            continue;
        struct ncg_dl_member *m = NULL;
        for (uint32_t i = 0; i < d->n; i++) {
            const struct ncg_msg_rwait *w = d->p[i].w;
            for (uint32_t j = 0; j < w->nm; j++) {
                const struct ncg_rwait_mem *x = &w->m[j];
                if (x->comm_id != c->id || x->nranks != c->nranks || x->rank >= c->nranks)
                    continue;
                if (!m && !(m = calloc(c->nranks, sizeof *m))) {
                    r_nomem(r);
                    goto out;
                }
                m[x->rank] = (struct ncg_dl_member){1, i, x->tid, w->grank, x->count, x->done};
            }
        }
        if (m) {
            mm[nc] = m;
            idx[nc] = ci;
            dc[nc++] = (struct ncg_dl_comm){c->id, c->nranks, m, 0};
        }
    }
    for (int streams = 0; streams < 2; streams++) {
        int found = ncg_dl_find(p, d->n, dc, nc, streams, f, notes);
        if (found < 0)
            r_nomem(r);
        if (found != 1) {
            d->seen[streams].sig = 0;
            continue;
        }
        if (!ncg_dl_confirmed(&d->seen[streams], f, gen))
            continue;
        for (long i = 0; i < f->n; i++) { /* one verdict per comm of the cycle */
            size_t k = f->step[i].comm;
            struct rcomm *c = r->comm[idx[k]];
            if (c->done)
                continue;
            struct ncg_verdict *v = tree_verdict(r, c, NCG_V_DEADLOCK);
            if (!v)
                goto out;
            v->slot = ncg_dl_verdict(f, dc, k, v->subject, sizeof v->subject, v->detail,
                                     sizeof v->detail);
            ncg_verdict_set_notes(v, notes);
            verdict_issue(r, c, v);
        }
    }
out:
    if (mm)
        for (size_t k = 0; k < nc; k++)
            free(mm[k]);
    free(mm);
    free(dc);
    free(idx);
    free(gen);
    free(p);
    free(f);
    free(notes);
}
