/* The power signature of `ncclguard watch` (NVML, this host): GPUs busy at idle power while
 * their ranks make no NCCL call, the mark of kernels spinning on a peer that never comes. */
#define _GNU_SOURCE
#include <string.h>
#include "watch_int.h"

/* The incident's power signature (NVML, this host): a rank whose GPU is busy (utilization >=
 * --power-util) at near-idle board power (<= --power-idle of its enforced limit) while it made
 * no NCCL call for --stall seconds: kernels spinning on a peer that never comes. One alert for
 * all the ranks showing it; re-armed when none does. */
void ncg_watch_scan_power(struct ncg_watch *w, const struct ncg_snap *s)
{
    int ranks[NCG_ALERT_MAXR], n = 0, first = -1;
    char buses[512] = "";
    double quiet = 0;
    for (int i = 0; i < s->nprocs; i++) {
        const struct ncg_cli_proc *p = &s->procs[i];
        if (!p->gpu_ok || p->gpu_limit_w <= 0 || p->gpu_util < w->pw_util ||
            p->gpu_power_w > w->pw_idle * p->gpu_limit_w ||
            (p->live != NCG_LIVE_ALIVE && p->live != NCG_LIVE_VERDICT))
            continue;
        uint64_t last = 0;
        int active = 0;
        for (int k = 0; k < p->nmembers; k++) {
            const struct ncg_cli_member *m = &s->members[p->first_member + k];
            active |= m->state == NCG_COMM_ACTIVE;
            last = m->last_ns > last ? m->last_ns : last;
        }
        double idle = last && last <= s->now_ns ? (double)(s->now_ns - last) / 1e9 : 0;
        if (!active || idle < w->stall_s)
            continue;
        if (first < 0)
            first = i, quiet = idle;
        if (n < NCG_ALERT_MAXR)
            ranks[n++] = p->global_rank;
        size_t o = strlen(buses);
        snprintf(buses + o, sizeof(buses) - o, "%s%s %u%% %.0f/%.0fW", o ? ", " : "", p->bus_id,
                 p->gpu_util, p->gpu_power_w, p->gpu_limit_w);
    }
    if (first < 0) {
        w->pw_alerted = 0;
        return;
    }
    if (w->pw_alerted)
        return;
    w->pw_alerted = 1;
    const struct ncg_cli_proc *p = &s->procs[first];
    struct ncg_alert a;
    memset(&a, 0, sizeof(a));
    ncg_watch_subject(&a, "power", p, p->nmembers ? s->members[p->first_member].rank : -1, -1);
    ncg_cli_sort_ints(ranks, n); /* sorted for the compact list */
    memcpy(a.ranks, ranks, sizeof(int) * (size_t)n);
    a.nranks = n;
    ncg_cli_fmt_ranks(a.ranks_txt, sizeof(a.ranks_txt), ranks, n);
    snprintf(a.detail, sizeof(a.detail),
             "GPU busy at idle power with no NCCL call for %.0fs on rank%s %s (utilization >= "
             "%.0f%%, power <= %.0f%% of the limit): %s",
             quiet, n > 1 ? "s" : "", a.ranks_txt, w->pw_util, w->pw_idle * 100, buses);
    ncg_watch_emit(w, &a);
}
