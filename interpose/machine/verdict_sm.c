/* A verdict's way through one process, its pure steps (verdict_sm.h): what to do, the order of
 * the held ranks, and the texts rendered from the facts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "verdict_sm.h"

struct ncg_vdecision ncg_verdict_decide(int severity, int action, int finished)
{
    struct ncg_vdecision d = {.exit_status = -1};
    if (severity == NCG_SEV_WARN) {
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

int ncg_verdict_shows_stack(const struct ncg_verdict *v, int action)
{
    if (v->severity != NCG_SEV_ERROR)
        return 0;
    if (v->kind == NCG_V_LAG) /* a job that lives on is not interrupted for a LAG */
        return action == NCG_ACTION_ABORT;
    return v->kind == NCG_V_MISMATCH || v->kind == NCG_V_P2P_MISMATCH ||
           v->kind == NCG_V_RANK_DIED || v->kind == NCG_V_RANK_EXITED || v->kind == NCG_V_STUCK ||
           v->kind == NCG_V_DEADLOCK || v->kind == NCG_V_CHECKER_LOST;
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
    struct ncg_diag_ctx x;
    int best = 0, best_score = -1;
    ctx_base(f, NULL, &x);
    for (int k = 0; k < f->nh; k++) {
        char on[8];
        int r = f->held[k].rank;
        int score = ncg_diag_in_subject(v, r) ? 2
                                              : f->diag_mode != NCG_DIAG_FULL &&
                                                    ncg_diag_full_for(v, &x, r, on, sizeof on);
        if (score > best_score) {
            best = k;
            best_score = score;
        }
    }
    return best;
}

/* The block of held rank k (-1: none held) into b, whole (the printer cuts it). */
static int render_block(const struct ncg_verdict *v, const struct ncg_vfacts *f,
                        const struct ncg_vdecision *d, int k, struct ncg_vblock *b)
{
    const char *fp[NCG_VERDICT_STACK_SHOW];
    struct ncg_diag_ctx x;
    ncg_verdict_ctx(f, d, k, fp, &x);
    size_t need = ncg_diag_render_split(v, &x, NULL, 0, &b->split) + 1;
    b->text = malloc(need);
    if (!b->text)
        return -ENOMEM;
    b->len = ncg_diag_render_split(v, &x, b->text, need, &b->split);
    return 0;
}

int ncg_verdict_render(const struct ncg_verdict *v, const struct ncg_vfacts *f,
                       const struct ncg_vdecision *d, struct ncg_vtexts *t)
{
    int order[NCG_VERDICT_HELD_MAX], rc = 0;
    int n = f->nh < NCG_VERDICT_HELD_MAX ? f->nh : NCG_VERDICT_HELD_MAX;
    for (int k = 0; k < n; k++)
        order[k] = k;
    if (n) { /* the first shown leads; the others keep their places */
        int first = ncg_verdict_first(v, f);
        order[first] = 0;
        order[0] = first;
    }
    memset(t, 0, sizeof *t);
    /* The report: the first shown rank's, with the short action word. */
    const char *fp[NCG_VERDICT_STACK_SHOW];
    struct ncg_diag_ctx x;
    ncg_verdict_ctx(f, d, n ? order[0] : -1, fp, &x);
    x.action = d->report_action;
    size_t need = ncg_diag_json(v, &x, NULL, 0) + 1;
    t->json = malloc(need);
    if (t->json)
        t->json_len = ncg_diag_json(v, &x, t->json, need);
    else
        rc = -ENOMEM;
    t->nblock = n ? n : 1;
    for (int i = 0; i < t->nblock; i++)
        if (render_block(v, f, d, n ? order[i] : -1, &t->block[i]) != 0)
            rc = -ENOMEM;
    return rc;
}

void ncg_verdict_texts_free(struct ncg_vtexts *t)
{
    free(t->json);
    for (int i = 0; i < t->nblock; i++)
        free(t->block[i].text);
    memset(t, 0, sizeof *t);
}
