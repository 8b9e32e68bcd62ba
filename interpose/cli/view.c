/* The per-communicator view of a snapshot: members grouped by communicator id, who is behind,
 * and divergence visible from this host alone (two local members issued different calls at
 * one slot, or their chained digests differ), and the processes grouped by the verdict they
 * recorded. Pure: plain data in, plain data out. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

int ncg_view_member_active(const struct ncg_snap *s, int m)
{
    const struct ncg_cli_member *mm = &s->members[m];
    enum ncg_live l = s->procs[mm->proc].live;
    return mm->state == NCG_COMM_ACTIVE && (l == NCG_LIVE_ALIVE || l == NCG_LIVE_VERDICT);
}

int ncg_view_is_behind(const struct ncg_snap *s, const struct ncg_view_comm *c, int m)
{
    return c->max_seq > c->min_seq && ncg_view_member_active(s, m) &&
           s->members[m].coll_seq == c->min_seq;
}

int ncg_view_is_odd(const struct ncg_view_comm *c, int m)
{
    if (!c->mismatch || c->ncalls < 2)
        return 0;
    int big = 0, tie = 0;
    for (int j = 1; j < c->ncalls; j++)
        if (c->calls[j].nmembers > c->calls[big].nmembers)
            big = j, tie = 0;
        else if (c->calls[j].nmembers == c->calls[big].nmembers)
            tie = 1;
    for (int j = 0; j < c->ncalls; j++) {
        if (j == big && !tie)
            continue;
        int n = c->calls[j].nmembers < 64 ? c->calls[j].nmembers : 64;
        for (int k = 0; k < n; k++)
            if (c->calls[j].members[k] == m)
                return 1;
    }
    return 0;
}

static const struct ncg_snap *sort_snap; /* qsort has no context argument */

static int by_rank(const void *a, const void *b)
{
    const struct ncg_cli_member *x = &sort_snap->members[*(const int *)a];
    const struct ncg_cli_member *y = &sort_snap->members[*(const int *)b];
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->proc - y->proc;
}

static int same_call(const struct ncg_shm_record *a, const struct ncg_shm_record *b)
{
    return a->func == b->func && a->count == b->count && a->dtype == b->dtype &&
           a->redop == b->redop && a->root_or_peer == b->root_or_peer;
}

/* Record of member m at slot `slot`, or NULL when not in its tail or unreadable. */
static const struct ncg_shm_record *rec_at(const struct ncg_cli_member *m, uint64_t slot)
{
    if (slot < m->tail_first || slot >= m->tail_first + m->ntail)
        return NULL;
    uint64_t i = slot - m->tail_first;
    return m->tail_ok[i] ? &m->tail[i] : NULL;
}

/* Groups the calls members issued at `slot` (every member whose segment still holds its
 * records, also of a process that ended: a divergence stays a fact after the hung ranks were
 * killed); returns the number of distinct calls. */
static int group_calls(const struct ncg_snap *s, struct ncg_view_comm *c, uint64_t slot)
{
    c->ncalls = 0;
    int distinct = 0;
    for (int i = 0; i < c->nmembers; i++) {
        int m = c->members[i];
        const struct ncg_shm_record *r = rec_at(&s->members[m], slot);
        if (!r)
            continue;
        int k;
        for (k = 0; k < c->ncalls; k++)
            if (same_call(&c->calls[k].rec, r))
                break;
        if (k == c->ncalls) {
            distinct++;
            if (c->ncalls == NCG_VIEW_MAX_CALLS)
                continue;
            c->ncalls++;
            memset(&c->calls[k], 0, sizeof(c->calls[k]));
            c->calls[k].rec = *r;
        }
        struct ncg_view_call *vc = &c->calls[k];
        if (vc->nmembers < (int)(sizeof(vc->members) / sizeof(vc->members[0])))
            vc->members[vc->nmembers] = m;
        vc->nmembers++;
    }
    return distinct;
}

static void analyse(const struct ncg_snap *s, struct ncg_view_comm *c)
{
    int first = 1;
    for (int i = 0; i < c->nmembers; i++) {
        int m = c->members[i];
        const struct ncg_cli_member *mm = &s->members[m];
        if (!ncg_view_member_active(s, m))
            continue;
        c->nactive++;
        if (first || mm->coll_seq < c->min_seq)
            c->min_seq = mm->coll_seq;
        if (first || mm->coll_seq > c->max_seq)
            c->max_seq = mm->coll_seq;
        if (mm->last_ns > c->last_ns)
            c->last_ns = mm->last_ns;
        first = 0;
    }
    for (int i = 0; i < c->nmembers; i++)
        if (ncg_view_is_behind(s, c, c->members[i]))
            c->nbehind++;
    /* The records are compared over every member that has any, alive or not. */
    int nrec = 0;
    uint64_t rmin = 0, lo = 0; /* lo: lowest slot present in every such member's tail */
    for (int i = 0; i < c->nmembers; i++) {
        const struct ncg_cli_member *mm = &s->members[c->members[i]];
        if (!mm->ntail)
            continue;
        if (!nrec || mm->coll_seq < rmin)
            rmin = mm->coll_seq;
        if (!nrec || mm->tail_first > lo)
            lo = mm->tail_first;
        nrec++;
    }
    if (nrec < 2 || rmin == 0)
        return;
    /* Slots every member issued and still has in its tail: fingerprints must agree. */
    for (uint64_t slot = lo; slot < rmin; slot++) {
        if (group_calls(s, c, slot) > 1) {
            c->mismatch = 1;
            c->mismatch_slot = slot;
            return;
        }
    }
    /* Equal fields but different chained digests at the last common slot: the histories
     * diverged earlier than the records we can see. */
    uint64_t last = rmin - 1;
    uint64_t digest = 0;
    int have = 0;
    for (int i = 0; i < c->nmembers; i++) {
        int m = c->members[i];
        const struct ncg_shm_record *r = rec_at(&s->members[m], last);
        if (!r || !r->digest)
            continue;
        if (have && r->digest != digest) {
            c->mismatch = 2;
            c->mismatch_slot = last;
            group_calls(s, c, last);
            return;
        }
        digest = r->digest;
        have = 1;
    }
    c->ncalls = 0;
}

int ncg_view_build(const struct ncg_snap *s, struct ncg_view *v)
{
    memset(v, 0, sizeof(*v));
    if (s->nmembers == 0)
        return 0;
    v->comms = calloc((size_t)s->nmembers, sizeof(*v->comms));
    if (!v->comms)
        return -ENOMEM;
    for (int m = 0; m < s->nmembers; m++) {
        const struct ncg_cli_member *mm = &s->members[m];
        int k;
        for (k = 0; k < v->ncomms; k++)
            if (v->comms[k].comm_id == mm->comm_id)
                break;
        struct ncg_view_comm *c = &v->comms[k];
        if (k == v->ncomms) {
            v->ncomms++;
            c->comm_id = mm->comm_id;
            c->nranks = mm->nranks;
            c->members = calloc((size_t)s->nmembers, sizeof(int));
            if (!c->members) {
                ncg_view_free(v);
                return -ENOMEM;
            }
        }
        c->members[c->nmembers++] = m;
    }
    sort_snap = s;
    for (int k = 0; k < v->ncomms; k++) {
        struct ncg_view_comm *c = &v->comms[k];
        qsort(c->members, (size_t)c->nmembers, sizeof(int), by_rank);
        analyse(s, c);
    }
    sort_snap = NULL;
    return 0;
}

void ncg_view_free(struct ncg_view *v)
{
    for (int k = 0; k < v->ncomms; k++)
        free(v->comms[k].members);
    free(v->comms);
    memset(v, 0, sizeof(*v));
}

/* ---- verdicts recorded by several processes: one group per verdict ---- */

int ncg_cli_proc_comm_rank(const struct ncg_snap *s, int pi, uint64_t comm)
{
    const struct ncg_cli_proc *p = &s->procs[pi];
    for (int k = 0; k < p->nmembers; k++)
        if (s->members[p->first_member + k].comm_id == comm)
            return s->members[p->first_member + k].rank;
    return -1;
}

/* Order within a group: global rank (unknown last), then comm rank, then pid. */
static int proc_before(const struct ncg_snap *s, int a, int b, uint64_t comm)
{
    const struct ncg_cli_proc *x = &s->procs[a], *y = &s->procs[b];
    int gx = x->global_rank < 0 ? INT32_MAX : x->global_rank;
    int gy = y->global_rank < 0 ? INT32_MAX : y->global_rank;
    if (gx != gy)
        return gx < gy;
    int cx = ncg_cli_proc_comm_rank(s, a, comm), cy = ncg_cli_proc_comm_rank(s, b, comm);
    cx = cx < 0 ? INT32_MAX : cx;
    cy = cy < 0 ? INT32_MAX : cy;
    if (cx != cy)
        return cx < cy;
    return x->pid < y->pid;
}

int ncg_vgroups_build(const struct ncg_snap *s, int by_text, struct ncg_vgroup **out)
{
    struct ncg_vgroup *g = NULL;
    int n = 0;
    *out = NULL;
    for (int i = 0; i < s->nprocs; i++) {
        const struct ncg_cli_proc *p = &s->procs[i];
        if (p->state != NCG_PROC_VERDICT)
            continue;
        int k;
        for (k = 0; k < n; k++)
            if (g[k].comm == p->verdict_comm && g[k].kind == p->verdict_kind &&
                (!by_text || strcmp(s->procs[g[k].procs[0]].verdict_text, p->verdict_text) == 0))
                break;
        if (k == n) {
            if (!g && !(g = calloc((size_t)s->nprocs, sizeof(*g))))
                return -ENOMEM;
            g[n].comm = p->verdict_comm;
            g[n].kind = p->verdict_kind;
            g[n].procs = calloc((size_t)s->nprocs, sizeof(int));
            if (!g[n].procs) {
                ncg_vgroups_free(g, n);
                return -ENOMEM;
            }
            n++;
        }
        struct ncg_vgroup *v = &g[k];
        int j = v->nprocs++; /* insertion: groups are small */
        while (j > 0 && proc_before(s, i, v->procs[j - 1], v->comm)) {
            v->procs[j] = v->procs[j - 1];
            j--;
        }
        v->procs[j] = i;
        if (ncg_cli_ended_by_verdict(p))
            v->nended++;
    }
    *out = g;
    return n;
}

void ncg_vgroups_free(struct ncg_vgroup *g, int n)
{
    for (int k = 0; k < n; k++)
        free(g[k].procs);
    free(g);
}

int ncg_vgroup_ranks(const struct ncg_snap *s, const struct ncg_vgroup *g, int comm, int *out)
{
    int n = 0;
    for (int i = 0; i < g->nprocs; i++) {
        int r = comm ? ncg_cli_proc_comm_rank(s, g->procs[i], g->comm)
                     : s->procs[g->procs[i]].global_rank;
        if (r < 0)
            continue;
        int j = n++;
        while (j > 0 && out[j - 1] > r) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = r;
    }
    return n;
}

/* Length of the directory part of a path ("." when it has none: returned as 0). */
static size_t dir_len(const char *path)
{
    const char *sl = strrchr(path, '/');
    if (!sl)
        return 0;
    return sl == path ? 1 : (size_t)(sl - path);
}

void ncg_vgroup_reports(const struct ncg_snap *s, const struct ncg_vgroup *g, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < g->nprocs && o < len; i++) {
        const char *path = s->procs[g->procs[i]].report_path;
        if (!path[0])
            continue;
        if (g->nprocs == 1) {
            snprintf(buf, len, "%s", path);
            return;
        }
        size_t dl = dir_len(path);
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) {
            const char *q = s->procs[g->procs[j]].report_path;
            seen = q[0] && dir_len(q) == dl && strncmp(q, path, dl) == 0;
        }
        if (seen)
            continue;
        int w = dl ? snprintf(buf + o, len - o, "%s%.*s", o ? ", " : "", (int)dl, path)
                   : snprintf(buf + o, len - o, "%s.", o ? ", " : "");
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

void ncg_vgroup_fmt(char *buf, size_t len, const struct ncg_snap *s, const struct ncg_vgroup *g)
{
    int *gr = calloc((size_t)g->nprocs + 1, sizeof(int));
    int *cr = calloc((size_t)g->nprocs + 1, sizeof(int));
    int ng = gr ? ncg_vgroup_ranks(s, g, 0, gr) : 0;
    int nc = cr ? ncg_vgroup_ranks(s, g, 1, cr) : 0;
    char grk[256] = "", crk[256] = "", who[600], where[512];
    ncg_cli_fmt_ranks(grk, sizeof(grk), gr, ng);
    ncg_cli_fmt_ranks(crk, sizeof(crk), cr, nc);
    free(gr);
    free(cr);
    int np = g->nprocs;
    const char *es = np == 1 ? "" : "es", *here = s->remote ? "in the job" : "on this host";
    if (ng && ng == np && nc == np && strcmp(grk, crk) != 0)
        snprintf(who, sizeof(who), "rank%s %s (comm rank%s %s; %d process%s %s)", ng > 1 ? "s" : "",
                 grk, nc > 1 ? "s" : "", crk, np, es, here);
    else if (ng)
        snprintf(who, sizeof(who), "rank%s %s (%d process%s %s)", ng > 1 ? "s" : "", grk, np, es,
                 here);
    else if (nc)
        snprintf(who, sizeof(who), "comm rank%s %s (%d process%s %s)", nc > 1 ? "s" : "", crk, np,
                 es, here);
    else
        snprintf(who, sizeof(who), "%d process%s %s", np, es, here);
    ncg_vgroup_reports(s, g, where, sizeof(where));
    snprintf(buf, len, "verdict on %s: %s%s%s", who, s->procs[g->procs[0]].verdict_text,
             where[0] ? (np == 1 ? "; report " : "; reports in ") : "", where);
}
