/* The slow alert of `ncclguard watch`: a communicator's rank the others wait for (SLOW), from
 * the segments here (the latest SLOW warning the members received) or from /status (--job: while
 * the checker holds the episode). Raised once per episode, again when the named rank changes. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "watch_int.h"

/* Another episode of the same rank began after the alert on the previous one (which was going
 * on then); the start is known to about a second (the warning's since_s is whole seconds, and
 * /status' may lag by a poll), hence the slack. */
#define EPISODE_SLACK_S 1.0

static struct ncg_slow_seen *seen_for(struct ncg_watch *w, uint64_t comm)
{
    for (int i = 0; i < w->nslow; i++)
        if (w->slow[i].comm == comm)
            return &w->slow[i];
    if (w->nslow == w->capslow) {
        int nc = w->capslow ? w->capslow * 2 : 4;
        struct ncg_slow_seen *p = realloc(w->slow, sizeof *p * (size_t)nc);
        if (!p)
            return NULL;
        w->slow = p;
        w->capslow = nc;
    }
    struct ncg_slow_seen *e = &w->slow[w->nslow++];
    memset(e, 0, sizeof *e);
    e->comm = comm;
    e->rank = -1;
    return e;
}

/* The alert for w's rank: about the named rank's process when it is here, else the one holding
 * the warning (--job: the endpoint). */
static void slow_alert(struct ncg_watch *wa, const struct ncg_snap *s,
                       const struct ncg_snap_slow *w)
{
    struct ncg_alert a;
    memset(&a, 0, sizeof a);
    a.kind = "slow";
    a.pid = w->pid ? (int32_t)w->pid : -1;
    a.rank = w->global_rank;
    a.comm_rank = w->rank;
    a.have_comm = 1;
    a.comm = w->comm_id;
    a.slot = -1;
    const char *seg = wa->url ? wa->url : "";
    for (int i = 0; i < s->nmembers && !s->remote; i++) {
        const struct ncg_cli_member *m = &s->members[i];
        if (m->comm_id == w->comm_id && m->rank == w->rank) {
            seg = s->procs[m->proc].path;
            break;
        }
        if (i == w->member)
            seg = s->procs[m->proc].path;
    }
    snprintf(a.segment, sizeof a.segment, "%s", seg);
    ncg_cli_fmt_slow(a.detail, sizeof a.detail, w);
    ncg_watch_emit(wa, &a);
}

void ncg_watch_scan_slow(struct ncg_watch *w, const struct ncg_snap *s)
{
    double now = (double)s->now_ns / 1e9;
    for (int i = 0; i < w->nslow; i++)
        w->slow[i].present = 0;
    for (int k = 0; k < s->nslows; k++) {
        const struct ncg_snap_slow *x = &s->slows[k];
        struct ncg_slow_seen *e = seen_for(w, x->comm_id);
        if (!e)
            continue;
        double start = now - x->since_s;
        e->present = 1;
        if (e->rank == x->rank && start <= e->alerted_s + EPISODE_SLACK_S)
            continue; /* the episode alerted already */
        e->rank = x->rank;
        e->alerted_s = now;
        slow_alert(w, s, x);
    }
    /* A comm no longer named (--job: the episode ended): its next one is alerted. */
    for (int i = 0; i < w->nslow;)
        if (!w->slow[i].present)
            w->slow[i] = w->slow[--w->nslow];
        else
            i++;
}
