/* The verdicts of `ncclguard watch`: one alert per (communicator, kind) for all the processes
 * here that recorded it, raised once no more of them appear (pending), and the local mismatches
 * held back a few scans for the verdict that usually follows (held): the incident then gets one
 * alert, about the mismatch's odd rank. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "verdict.h"
#include "watch_int.h"

#define SETTLE_SCANS 5 /* a verdict alert waits at most this many scans for more ranks */
#define HOLD_SCANS 5   /* a mismatch waits at most this many scans for the checker's verdict */

/* The alert for the processes of g (g->procs[0] has the lowest rank). */
static void verdict_alert(struct ncg_alert *a, const struct ncg_snap *s, const struct ncg_vgroup *g)
{
    const struct ncg_cli_proc *p = &s->procs[g->procs[0]];
    memset(a, 0, sizeof(*a));
    ncg_watch_subject(a, "verdict", p, ncg_cli_proc_comm_rank(s, g->procs[0], g->comm), -1);
    a->group = 1;
    a->have_comm = 1;
    a->comm = g->comm;
    a->nprocs = g->nprocs;
    int *r = calloc((size_t)g->nprocs + 1, sizeof(int));
    if (r) {
        int n = ncg_vgroup_ranks(s, g, 0, r);
        ncg_cli_fmt_ranks(a->ranks_txt, sizeof(a->ranks_txt), r, n);
        a->nranks = n < NCG_ALERT_MAXR ? n : NCG_ALERT_MAXR;
        memcpy(a->ranks, r, sizeof(int) * (size_t)a->nranks);
        n = ncg_vgroup_ranks(s, g, 1, r);
        a->ncomm_ranks = n < NCG_ALERT_MAXR ? n : NCG_ALERT_MAXR;
        memcpy(a->comm_ranks, r, sizeof(int) * (size_t)a->ncomm_ranks);
        free(r);
    }
    for (int i = 0; i < g->nprocs && i < NCG_ALERT_MAXR; i++)
        a->pids[i] = s->procs[g->procs[i]].pid;
    ncg_vgroup_reports(s, g, a->reports, sizeof(a->reports));
    ncg_vgroup_fmt(a->detail, sizeof(a->detail), s, g);
}

static int verdict_seen(const struct ncg_watch *w, uint64_t comm)
{
    char key[64];
    for (unsigned kind = 1; kind < 16; kind++) {
        snprintf(key, sizeof(key), "verdict %016llx %u", (unsigned long long)comm, kind);
        if (ncg_watch_was_seen(w, key))
            return 1;
    }
    return 0;
}

static struct ncg_pending *pending_for(struct ncg_watch *w, uint64_t comm)
{
    char pre[32];
    snprintf(pre, sizeof(pre), "verdict %016llx ", (unsigned long long)comm);
    for (int i = 0; i < w->npending; i++)
        if (strncmp(w->pending[i].key, pre, strlen(pre)) == 0)
            return &w->pending[i];
    return NULL;
}

static void take_culprit(struct ncg_pending *pd, const struct ncg_alert *m)
{
    pd->have_culprit = 1;
    pd->cpid = m->pid;
    pd->crank = m->rank;
    pd->ccomm_rank = m->comm_rank;
    snprintf(pd->csegment, sizeof(pd->csegment), "%s", m->segment);
}

static void drop_held(struct ncg_watch *w, int i)
{
    w->nheld--;
    memmove(&w->held[i], &w->held[i + 1], sizeof(w->held[0]) * (size_t)(w->nheld - i));
}

/* A verdict on comm is about to be raised, or was: a held mismatch on it becomes its culprit. */
static void absorb_held(struct ncg_watch *w, struct ncg_pending *pd, uint64_t comm)
{
    for (int i = 0; i < w->nheld;)
        if (w->held[i].comm == comm) {
            if (pd && !pd->have_culprit)
                take_culprit(pd, &w->held[i].a);
            drop_held(w, i);
        } else {
            i++;
        }
}

void ncg_watch_hold_mismatch(struct ncg_watch *w, const char *key, const struct ncg_alert *a)
{
    struct ncg_pending *pd = pending_for(w, a->comm);
    if (pd || verdict_seen(w, a->comm)) { /* the verdict is (or was) the incident's alert */
        if (pd && !pd->have_culprit)
            take_culprit(pd, a);
        return;
    }
    if (w->nheld == w->capheld) {
        int nc = w->capheld ? w->capheld * 2 : 4;
        struct ncg_held *nh = realloc(w->held, sizeof(*nh) * (size_t)nc);
        if (!nh) {
            ncg_watch_emit(w, (struct ncg_alert *)a);
            return;
        }
        w->held = nh;
        w->capheld = nc;
    }
    struct ncg_held *h = &w->held[w->nheld++];
    memset(h, 0, sizeof(*h));
    snprintf(h->key, sizeof(h->key), "%s", key);
    h->comm = a->comm;
    h->a = *a;
}

/* Held mismatches whose verdict did not come: raised alone. all: every one (watch ends). */
void ncg_watch_flush_held(struct ncg_watch *w, int all)
{
    for (int i = 0; i < w->nheld;)
        if (all || ++w->held[i].scans >= HOLD_SCANS) {
            struct ncg_alert a = w->held[i].a;
            drop_held(w, i);
            ncg_watch_emit(w, &a);
        } else {
            i++;
        }
}

void ncg_watch_raise_pending(struct ncg_watch *w, int i)
{
    struct ncg_pending *pd = &w->pending[i];
    absorb_held(w, pd, pd->a.comm);
    if (pd->have_culprit) { /* the alert is about the odd rank; `ranks` still lists all */
        pd->a.pid = pd->cpid;
        pd->a.rank = pd->crank;
        pd->a.comm_rank = pd->ccomm_rank;
        snprintf(pd->a.segment, sizeof(pd->a.segment), "%s", pd->csegment);
    }
    ncg_watch_first_time(w, w->pending[i].key);
    ncg_watch_emit(w, &w->pending[i].a);
    w->npending--;
    memmove(&w->pending[i], &w->pending[i + 1], sizeof(w->pending[0]) * (size_t)(w->npending - i));
}

/* One verdict alert per (communicator, kind) for all the processes here that recorded it.
 * Raised once a scan finds no more of them than the scan before (the ranks of a job record a
 * verdict within milliseconds of each other), or after SETTLE_SCANS scans. */
void ncg_watch_scan_verdicts(struct ncg_watch *w, const struct ncg_snap *s)
{
    struct ncg_vgroup *g;
    int ng = ncg_vgroups_build(s, 0, &g);
    if (ng < 0)
        return;
    for (int i = 0; i < w->npending; i++)
        w->pending[i].present = 0;
    for (int k = 0; k < ng; k++) {
        if (g[k].kind == NCG_V_SLOW)
            continue; /* a warning the slow alert raises (watch_slow.c), per episode */
        char key[64];
        snprintf(key, sizeof(key), "verdict %016llx %u", (unsigned long long)g[k].comm, g[k].kind);
        if (ncg_watch_was_seen(w, key))
            continue;
        int i;
        for (i = 0; i < w->npending; i++)
            if (strcmp(w->pending[i].key, key) == 0)
                break;
        if (i == w->npending) {
            if (w->npending == w->cappending) {
                int nc = w->cappending ? w->cappending * 2 : 4;
                struct ncg_pending *np = realloc(w->pending, sizeof(*np) * (size_t)nc);
                if (!np)
                    continue;
                w->pending = np;
                w->cappending = nc;
            }
            memset(&w->pending[i], 0, sizeof(w->pending[i]));
            snprintf(w->pending[i].key, sizeof(w->pending[i].key), "%s", key);
            w->pending[i].nprocs = -1;
            w->npending++;
        }
        struct ncg_pending *pd = &w->pending[i];
        int settled = g[k].nprocs == pd->nprocs;
        pd->present = 1;
        pd->nprocs = g[k].nprocs;
        pd->scans++;
        verdict_alert(&pd->a, s, &g[k]);
        if (settled || pd->scans >= SETTLE_SCANS)
            pd->present = -1; /* raise below */
    }
    ncg_vgroups_free(g, ng);
    /* Raise the settled ones, and those whose processes are no longer seen (as last seen). */
    for (int i = 0; i < w->npending;)
        if (w->pending[i].present != 1)
            ncg_watch_raise_pending(w, i);
        else
            i++;
}
