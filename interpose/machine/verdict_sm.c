/* A verdict's way through one process, its pure steps (verdict_sm.h): what to do, the order of
 * the held ranks, and the texts rendered from the facts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "verdict_sm.h"

struct ncg_vdecision ncg_verdict_decide(const struct ncg_verdict *v, int action, int finished)
{
    struct ncg_vdecision d = {.shown = ncg_v_counted(v), .exit_status = -1};
    if (v->severity == NCG_SEV_WARN) {
        d.action = "none (warning)";
        d.report_action = "none";
    } else if (finished) { /* nothing left to end or fail here */
        d.action = "none here (this process had already finished: its exit status is kept)";
        d.report_action = "none";
    } else if (action == NCG_ACTION_WARN) {
        d.action = "warn (NCCLGUARD_ACTION=warn: the job continues)";
        d.report_action = "warn";
    } else if (action == NCG_ACTION_FAIL) {
        d.action = "fail (communicator failed: its calls return ncclRemoteError)";
        d.report_action = "fail";
        d.fail = 1;
    } else {
        d.action = "abort";
        d.report_action = "abort";
        d.exit_status = NCG_EXIT_VERDICT;
        d.must_exit = 1;
    }
    return d;
}

/* The context every block shares: who this process is, what it does, how it prints. */
static void ctx_base(const struct ncg_vfacts *f, const struct ncg_vdecision *d,
                     struct ncg_diag_ctx *x)
{
    *x = (struct ncg_diag_ctx){.rank = -1,
                               .global_rank = f->global_rank,
                               .rank_var = f->rank_var,
                               .diag_mode = f->diag_mode,
                               .pid = f->pid,
                               .host = f->host,
                               .my_call = "",
                               .my_site = "",
                               .action = d ? d->action : "",
                               .exit_status = d ? d->exit_status : -1,
                               .report_path = "",
                               .call_time_unix = -1,
                               .held = f->ranks,
                               .nheld = f->nr,
                               .finished = f->finished,
                               .alone = f->alone,
                               .hosts_checker = f->hosts_checker,
                               .time_sec = f->time_sec,
                               .time_usec = f->time_usec};
}

void ncg_verdict_ctx(const struct ncg_vfacts *f, const struct ncg_vdecision *d, int k,
                     const char *fp[NCG_VERDICT_STACK_SHOW], struct ncg_diag_ctx *x)
{
    ctx_base(f, d, x);
    if (k < 0 || k >= f->nh)
        return;
    const struct ncg_vheld *h = &f->held[k];
    x->rank = h->rank;
    x->my_call = h->mycall;
    x->my_site = h->site;
    x->call_time_unix = h->call_time_unix;
    if (!h->tid)
        return;
    x->stack_tid = h->tid;
    x->stack_what = h->what;
    x->stack_why = h->nstack > 0 ? NULL : h->stack_why ? h->stack_why : "no frames";
    for (int i = 0; i < h->nstack && i < NCG_VERDICT_STACK_SHOW; i++)
        fp[i] = h->frame[i];
    x->stack = fp;
    x->nstack = h->nstack;
    x->py = h->has_py ? &h->py : NULL;
}

int ncg_verdict_first(const struct ncg_verdict *v, const struct ncg_vfacts *f)
{
    int best = 0, best_score = -1;
    for (int k = 0; k < f->nh; k++) {
        char on[8];
        int r = f->held[k].rank;
        int score =
            ncg_diag_in_subject(v, r)
                ? 2
                : f->diag_mode != NCG_DIAG_FULL &&
                      ncg_full_block(v, f->diag_mode, f->hosts_checker, f->alone, r, on, sizeof on);
        if (score > best_score) {
            best = k;
            best_score = score;
        }
    }
    return best;
}

int ncg_verdict_render(const struct ncg_verdict *v, const struct ncg_vfacts *f,
                       const struct ncg_vdecision *d, struct ncg_vtexts *t)
{
    const char *fp[NCG_VERDICT_HELD_MAX][NCG_VERDICT_STACK_SHOW];
    struct ncg_diag_ctx x[NCG_VERDICT_HELD_MAX];
    int order[NCG_VERDICT_HELD_MAX];
    int n = f->nh < NCG_VERDICT_HELD_MAX ? f->nh : NCG_VERDICT_HELD_MAX;
    memset(t, 0, sizeof *t);
    t->nblock = n ? n : 1;
    for (int k = 0; k < t->nblock; k++) {
        order[k] = k;
        ncg_verdict_ctx(f, d, n ? k : -1, fp[k], &x[k]);
    }
    if (n) { /* the first shown leads; the others keep their places */
        int first = ncg_verdict_first(v, f);
        order[first] = 0;
        order[0] = first;
    }
    /* The report (the first shown rank's, with the short action word) and the blocks, whole
     * (the printer cuts them), in one allocation. */
    struct ncg_diag_ctx jx = x[order[0]];
    jx.action = d->report_action;
    size_t jneed = ncg_diag_json(v, &jx, NULL, 0) + 1, total = jneed;
    size_t bneed[NCG_VERDICT_HELD_MAX];
    for (int i = 0; i < t->nblock; i++) {
        bneed[i] = ncg_diag_render_split(v, &x[order[i]], NULL, 0, &t->block[i].split) + 1;
        total += bneed[i];
    }
    char *m = t->mem = malloc(total);
    if (!m)
        return -ENOMEM;
    t->json = m;
    t->json_len = ncg_diag_json(v, &jx, m, jneed);
    m += jneed;
    for (int i = 0; i < t->nblock; i++) {
        struct ncg_vblock *b = &t->block[i];
        b->text = m;
        b->len = ncg_diag_render_split(v, &x[order[i]], m, bneed[i], &b->split);
        m += bneed[i];
    }
    return 0;
}
