/* What one scan of `ncclguard watch` finds in the snapshot by itself: processes that died
 * without a clean exit, local members of a communicator that issued different calls at one
 * slot (held for the checker's verdict, watch_verdict.c), a stall with disagreeing slot counts,
 * and a slot issued everywhere here and completed nowhere (stuck). */
#define _GNU_SOURCE
#include <string.h>
#include "watch_int.h"

/* Appends "; stopped: rank R (pid P), ..." for the members of c whose process is stopped
 * (SIGSTOP, a debugger): the reason a stall or a stuck slot does not move. */
static void add_stopped(const struct ncg_snap *s, const struct ncg_view_comm *c, char *d,
                        size_t cap)
{
    size_t o = strlen(d);
    int n = 0;
    for (int i = 0; i < c->nmembers && o + 1 < cap; i++) {
        const struct ncg_cli_member *m = &s->members[c->members[i]];
        const struct ncg_cli_proc *p = &s->procs[m->proc];
        if (p->live != NCG_LIVE_ALIVE || !p->live_why || strcmp(p->live_why, NCG_LIVE_STOPPED))
            continue;
        o += (size_t)snprintf(d + o, cap - o, "%s rank %d (pid %d)",
                              n++ ? "," : "; stopped:", (int)m->rank, (int)p->pid);
    }
    if (n && o + 1 < cap)
        snprintf(d + o, cap - o, ": SIGSTOP or a debugger, it runs nothing until continued");
}

/* The comm of process p with the most slots issued, for context in a died alert. */
static const struct ncg_cli_member *busiest(const struct ncg_snap *s, const struct ncg_cli_proc *p)
{
    const struct ncg_cli_member *b = NULL;
    for (int k = 0; k < p->nmembers; k++) {
        const struct ncg_cli_member *m = &s->members[p->first_member + k];
        if (m->state == NCG_COMM_ACTIVE && (!b || m->coll_seq > b->coll_seq))
            b = m;
    }
    return b;
}

void ncg_watch_scan_procs(struct ncg_watch *w, const struct ncg_snap *s)
{
    char key[PATH_MAX + 128];
    for (int i = 0; i < s->nprocs; i++) {
        const struct ncg_cli_proc *p = &s->procs[i];
        /* A process that recorded a verdict and ended was (with the default action) ended by
         * ncclguard: the verdict alert covers it. */
        if (p->live != NCG_LIVE_DEAD || p->state == NCG_PROC_VERDICT)
            continue;
        snprintf(key, sizeof(key), "died %s %llu", p->path, (unsigned long long)p->start_ticks);
        if (!ncg_watch_first_time(w, key))
            continue;
        struct ncg_alert a;
        memset(&a, 0, sizeof(a));
        ncg_watch_subject(&a, "died", p, -1, -1);
        const struct ncg_cli_member *m = busiest(s, p);
        if (m) {
            a.have_comm = 1;
            a.comm = m->comm_id;
            a.comm_rank = m->rank;
            a.slot = (long long)m->coll_seq;
        }
        snprintf(a.detail, sizeof(a.detail),
                 "process ended without a clean exit (%s); %d communicator%s, cmdline: %s",
                 p->live_why, p->nmembers, p->nmembers == 1 ? "" : "s", p->cmdline);
        ncg_watch_emit(w, &a);
    }
}

static int min_member(const struct ncg_snap *s, const struct ncg_view_call *c)
{
    int best = c->members[0];
    for (int i = 1; i < c->nmembers && i < 64; i++)
        if (s->members[c->members[i]].rank < s->members[best].rank)
            best = c->members[i];
    return best;
}

void ncg_watch_scan_comms(struct ncg_watch *w, const struct ncg_snap *s, const struct ncg_view *v)
{
    char key[128];
    for (int k = 0; k < v->ncomms; k++) {
        const struct ncg_view_comm *c = &v->comms[k];
        struct ncg_alert a;
        memset(&a, 0, sizeof(a));
        a.have_comm = 1;
        a.comm = c->comm_id;
        if (c->mismatch) {
            snprintf(key, sizeof(key), "mismatch %llx %llu", (unsigned long long)c->comm_id,
                     (unsigned long long)c->mismatch_slot);
            if (ncg_watch_first_time(w, key)) {
                /* Name the minority call's lowest rank: usually the odd one out. */
                int minority = 0;
                for (int j = 1; j < c->ncalls; j++)
                    if (c->calls[j].nmembers < c->calls[minority].nmembers)
                        minority = j;
                int m = c->ncalls ? min_member(s, &c->calls[minority]) : c->members[0];
                const struct ncg_cli_proc *p = &s->procs[s->members[m].proc];
                ncg_watch_subject(&a, "mismatch", p, s->members[m].rank,
                                  (long long)c->mismatch_slot);
                size_t o = (size_t)snprintf(
                    a.detail, sizeof(a.detail),
                    "different calls at one slot%s:", c->mismatch == 2 ? " (digests differ)" : "");
                for (int j = 0; j < c->ncalls && o < sizeof(a.detail); j++) {
                    char call[128], rk[128];
                    int r[64], n = 0;
                    for (int q = 0; q < c->calls[j].nmembers && q < 64; q++)
                        r[n++] = s->members[c->calls[j].members[q]].rank;
                    ncg_cli_sort_ints(r, n);
                    ncg_cli_fmt_ranks(rk, sizeof(rk), r, n);
                    ncg_cli_fmt_call(call, sizeof(call), &c->calls[j].rec);
                    o += (size_t)snprintf(a.detail + o, sizeof(a.detail) - o, "%s %s on rank%s %s",
                                          j ? ";" : "", call, n > 1 ? "s" : "", rk);
                }
                ncg_watch_hold_mismatch(w, key, &a);
            }
        }
        if (c->nactive >= 2 && c->max_seq > c->min_seq && c->last_ns && c->last_ns <= s->now_ns &&
            (double)(s->now_ns - c->last_ns) / 1e9 >= w->stall_s) {
            snprintf(key, sizeof(key), "stall %llx %llu %llu", (unsigned long long)c->comm_id,
                     (unsigned long long)c->min_seq, (unsigned long long)c->max_seq);
            if (ncg_watch_first_time(w, key)) {
                int idx[64], n = 0, ranks[64];
                for (int i = 0; i < c->nmembers && n < 64; i++)
                    if (ncg_view_is_behind(s, c, c->members[i])) {
                        idx[n] = c->members[i];
                        ranks[n] = s->members[idx[n]].rank;
                        n++;
                    }
                char rk[128];
                ncg_cli_fmt_ranks(rk, sizeof(rk), ranks, n);
                const struct ncg_cli_proc *p = &s->procs[s->members[idx[0]].proc];
                ncg_watch_subject(&a, "stall", p, s->members[idx[0]].rank, (long long)c->min_seq);
                snprintf(
                    a.detail, sizeof(a.detail),
                    "no call for %.0fs while slot counts disagree (%llu..%llu); behind: rank%s %s",
                    (double)(s->now_ns - c->last_ns) / 1e9, (unsigned long long)c->min_seq,
                    (unsigned long long)c->max_seq, n > 1 ? "s" : "", rk);
                add_stopped(s, c, a.detail, sizeof a.detail);
                ncg_watch_emit(w, &a);
            }
        }
        /* Equal counts, the last slot issued everywhere here and completed nowhere: a hang
         * inside NCCL, not a desync (the checker's STUCK; this is the node's own view). */
        uint64_t min_done = UINT64_MAX;
        int first = -1;
        for (int i = 0; i < c->nmembers; i++) {
            const struct ncg_cli_member *m = &s->members[c->members[i]];
            if (m->state != NCG_COMM_ACTIVE)
                continue;
            if (m->coll_done < min_done) {
                min_done = m->coll_done;
                first = c->members[i];
            }
        }
        if (c->nactive >= 2 && c->max_seq == c->min_seq && first >= 0 && min_done < c->min_seq &&
            c->last_ns && c->last_ns <= s->now_ns &&
            (double)(s->now_ns - c->last_ns) / 1e9 >= w->stall_s) {
            snprintf(key, sizeof(key), "stuck %llx %llu", (unsigned long long)c->comm_id,
                     (unsigned long long)min_done);
            if (ncg_watch_first_time(w, key)) {
                const struct ncg_cli_proc *p = &s->procs[s->members[first].proc];
                ncg_watch_subject(&a, "stuck", p, s->members[first].rank, (long long)min_done);
                snprintf(a.detail, sizeof(a.detail),
                         "slot %llu issued by all %d ranks here, not completed on rank %d (issued "
                         "%llu, completed %llu) for %.0fs",
                         (unsigned long long)min_done, c->nactive, (int)s->members[first].rank,
                         (unsigned long long)c->min_seq, (unsigned long long)min_done,
                         (double)(s->now_ns - c->last_ns) / 1e9);
                add_stopped(s, c, a.detail, sizeof a.detail);
                ncg_watch_emit(w, &a);
            }
        }
    }
}
