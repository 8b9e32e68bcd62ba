/* Unit tests of a verdict's way through one process, its pure steps (interpose/machine/
 * verdict_sm.c): what to do (severity x action x finished, and alone: exit or not, who prints
 * the full block), the texts rendered from a facts struct (two held ranks, one in the subject:
 * its block first with the report; a finished process keeps its exit status), and the report's
 * words put where the split says, as the full render has them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "verdict_sm.h"
#include "vshow.h"

NCG_CHECK_PROGRAM("verdict_test");

/* A block with the report's words where they go (as agent/action.c prints it, uncut). */
static char *joined(const struct ncg_vblock *b, const char *path)
{
    static char out[1 << 16];
    if (b->split == NCG_DIAG_NO_SPLIT)
        snprintf(out, sizeof out, "%s", b->text);
    else
        snprintf(out, sizeof out, "%.*s%s%s%s", (int)b->split, b->text,
                 path[0] ? "; report: " : "; no report written", path, b->text + b->split);
    return out;
}

static int nlines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void facts_base(struct ncg_vfacts *f)
{
    memset(f, 0, sizeof *f);
    f->action = NCG_ACTION_ABORT;
    f->diag_mode = NCG_DIAG_AUTO;
    f->global_rank = -1;
    f->rank_var = "";
    f->pid = 4242;
    f->host = "hostA";
    f->time_sec = 1700000000;
    f->time_usec = 250;
}

/* A MISMATCH on 8 ranks: rank 3 issued another call at slot 7 (the subject); f: facts of a
 * process that holds no rank of it yet. */
static struct ncg_verdict *mismatch(struct ncg_vfacts *f)
{
    facts_base(f);
    struct ncg_verdict *v = ncg_verdict_new(8);
    if (!v)
        return NULL;
    v->kind = NCG_V_MISMATCH;
    v->severity = NCG_SEV_ERROR;
    v->comm_id = 0xab;
    v->slot = 7;
    v->last_agreed = 6;
    for (int i = 0; i < 8; i++) {
        v->counts[i] = 8;
        v->members[i] = i;
    }
    v->ncalls = 2;
    v->calls[0].call = (struct ncg_call){7, 64, -1, NCG_F_REDUCESCATTER, 9, 0};
    snprintf(v->calls[0].ranks, sizeof v->calls[0].ranks, "0-2,4-7");
    v->calls[1].call = (struct ncg_call){7, 1, -1, NCG_F_ALLREDUCE, 7, 0};
    snprintf(v->calls[1].ranks, sizeof v->calls[1].ranks, "3");
    snprintf(v->subject, sizeof v->subject, "3");
    return v;
}

static void held(struct ncg_vfacts *f, int32_t rank, const char *call, const char *site)
{
    struct ncg_vheld *h = &f->held[f->nh++];
    memset(h, 0, sizeof *h);
    h->rank = rank;
    h->call_time_unix = -1;
    snprintf(h->mycall, sizeof h->mycall, "%s", call);
    snprintf(h->site, sizeof h->site, "%s", site);
    f->ranks[f->nr++] = rank;
}

/* severity x action x finished x alone: exit or not, failed or not, the words; who prints the
 * full block of an error (the subject, the lowest other, everyone when alone) and of a
 * warning (the ranks it names, the checker's process). */
static void test_decide(void)
{
    static const int acts[] = {NCG_ACTION_ABORT, NCG_ACTION_WARN, NCG_ACTION_FAIL};
    static struct ncg_vfacts f;
    struct ncg_verdict *v = mismatch(&f);
    if (!CHECK(v))
        return;
    for (int sev = 0; sev < 2; sev++)
        for (int a = 0; a < 3; a++)
            for (int fin = 0; fin < 2; fin++) {
                int err = sev == 1, act = acts[a];
                v->severity = err ? NCG_SEV_ERROR : NCG_SEV_WARN;
                struct ncg_vdecision d = ncg_verdict_decide(v, act, fin);
                int ends = err && act == NCG_ACTION_ABORT && !fin;
                int fails = err && act == NCG_ACTION_FAIL && !fin;
                const char *word = !err || fin               ? "none"
                                   : act == NCG_ACTION_ABORT ? "abort"
                                   : act == NCG_ACTION_WARN  ? "warn"
                                                             : "fail";
                CHECKF(d.shown && d.must_exit == ends && d.fail == fails &&
                           d.exit_status == (ends ? NCG_EXIT_VERDICT : -1) &&
                           !strcmp(d.report_action, word) && d.action[0],
                       "severity %d action %d finished %d: exit %d fail %d status %d '%s'", sev,
                       act, fin, d.must_exit, d.fail, d.exit_status, d.report_action);
                CHECKF(!fin || !err || strstr(d.action, "exit status is kept"), "finished: '%s'",
                       d.action);
                for (int alone = 0; alone < 2; alone++)
                    for (int host = 0; host < 2; host++)
                        for (int32_t r = 0; r < 8; r++) {
                            const char *fp[NCG_VERDICT_STACK_SHOW];
                            struct ncg_diag_ctx x;
                            char on[64];
                            facts_base(&f);
                            f.alone = alone;
                            f.hosts_checker = host;
                            held(&f, r, "", "");
                            ncg_verdict_ctx(&f, &d, 0, fp, &x);
                            int full = ncg_diag_full_for(v, &x, r, on, sizeof on);
                            int want = err ? r == 3 || r == 0 || alone : r == 3 || host;
                            CHECKF(full == want,
                                   "severity %d alone %d host %d rank %d: full %d (on %s)", sev,
                                   alone, host, r, full, on);
                        }
            }
    /* a SLOW episode's end: nothing shown, nothing done (the segment's status alone) */
    v->kind = NCG_V_SLOW;
    v->severity = NCG_SEV_WARN;
    v->slow.ended = 1;
    struct ncg_vdecision d = ncg_verdict_decide(v, NCG_ACTION_ABORT, 0);
    CHECK(!d.shown && !d.must_exit && !d.fail);
    v->slow.ended = 0;
    CHECK(ncg_verdict_decide(v, NCG_ACTION_ABORT, 0).shown);
    v->kind = NCG_V_MISMATCH;
    v->severity = NCG_SEV_ERROR;
    /* the stuck thread's stack: certain verdicts; a LAG only when the process ends anyway */
    CHECK(ncg_verdict_shows_stack(v, NCG_ACTION_WARN));
    v->kind = NCG_V_LAG;
    CHECK(ncg_verdict_shows_stack(v, NCG_ACTION_ABORT));
    CHECK(!ncg_verdict_shows_stack(v, NCG_ACTION_WARN));
    v->severity = NCG_SEV_WARN;
    CHECK(!ncg_verdict_shows_stack(v, NCG_ACTION_ABORT));
    ncg_verdict_free(v);
}

/* Two held ranks, 5 then 3 (live order), 3 in the subject: 3's block first, whole, with its
 * stack and the report; 5's short; the report is 3's and lists both. */
static void test_render_two(void)
{
    static struct ncg_vfacts f;
    struct ncg_vtexts t;
    struct ncg_verdict *v = mismatch(&f);
    if (!CHECK(v))
        return;
    held(&f, 5, "slot 7 ReduceScatter(count=64, bfloat16, sum)", "step+0x20");
    held(&f, 3, "slot 7 AllReduce(count=1, float32, sum)", "barrier+0x8");
    f.held[1].tid = 42;
    snprintf(f.held[1].what, sizeof f.held[1].what, "slot 7 AllReduce(...)");
    snprintf(f.held[1].frame[0], sizeof f.held[1].frame[0], "wait_here+0x10");
    snprintf(f.held[1].frame[1], sizeof f.held[1].frame[1], "main+0x99");
    f.held[1].nstack = 2;
    f.held[1].has_py = 1;
    f.held[1].py = (struct ncg_pystack){.tid = 42, .thread = 0x1, .n = 1};
    snprintf(f.held[1].py.f[0].file, sizeof f.held[1].py.f[0].file, "train.py");
    snprintf(f.held[1].py.f[0].func, sizeof f.held[1].py.f[0].func, "step");
    f.held[1].py.f[0].line = 12;
    CHECK(ncg_verdict_first(v, &f) == 1);
    struct ncg_vdecision d = ncg_verdict_decide(v, NCG_ACTION_ABORT, 0);
    if (!CHECK(ncg_verdict_render(v, &f, &d, &t) == 0 && t.nblock == 2))
        return;
    const char *b0 = joined(&t.block[0], "/r/rep.json");
    CHECKF(strstr(b0, "ncclguard: VERDICT: MISMATCH") == b0 &&
               strstr(b0, "this process (comm rank 3, pid 4242 on hostA): slot 7 AllReduce") &&
               strstr(b0, "stack of thread 42 (issued slot 7 AllReduce(...)), innermost first") &&
               strstr(b0, "#1 main+0x99") && strstr(b0, "train.py:12 in step") &&
               strstr(b0, "action: abort (exit status 86); report: /r/rep.json\n"),
           "rank 3's block:\n%s", b0);
    /* the split is where the full render puts the report's words */
    const char *fp[NCG_VERDICT_STACK_SHOW];
    struct ncg_diag_ctx x;
    static char whole[1 << 16];
    ncg_verdict_ctx(&f, &d, 1, fp, &x);
    x.report_path = "/r/rep.json";
    ncg_diag_render(v, &x, whole, sizeof whole);
    CHECKF(!strcmp(b0, whole), "split and whole differ:\n%s\n--\n%s", b0, whole);
    const char *b1 = joined(&t.block[1], "");
    CHECKF(nlines(b1) == 3 && strstr(b1, "this process (comm rank 5, pid 4242") &&
               strstr(b1, "; no report written; full diagnostic on ranks 0,3") &&
               !strstr(b1, "stack"),
           "rank 5's block:\n%s", b1);
    CHECKF(t.json && strstr(t.json, "\"action\":\"abort\",\"exit_status\":86,") &&
               strstr(t.json, "\"time_unix\":1700000000.000250,") &&
               strstr(t.json, "\"rank\":3,\"ranks\":[5,3]") &&
               strstr(t.json, "\"call_site\":\"barrier+0x8\"") &&
               strstr(t.json, "\"stack_tid\":42,\"stack\":[\"wait_here+0x10\",\"main+0x99\"]"),
           "report: %s", t.json ? t.json : "(none)");
    free(t.mem);

    /* an application that had already finished: shown and reported, its exit status kept */
    d = ncg_verdict_decide(v, NCG_ACTION_ABORT, 1);
    f.finished = 1;
    CHECK(!d.must_exit);
    if (!CHECK(ncg_verdict_render(v, &f, &d, &t) == 0))
        return;
    b0 = joined(&t.block[0], "/r/rep.json");
    CHECKF(strstr(b0, "action: none here (this process had already finished: its exit status is "
                      "kept); report: /r/rep.json\n") &&
               !strstr(b0, "exit status 86"),
           "finished:\n%s", b0);
    CHECKF(strstr(t.json, "\"action\":\"none\",\"exit_status\":null,"), "report: %s", t.json);
    free(t.mem);
    ncg_verdict_free(v);
}

/* Nothing held here (the comm gone): one block, rank -1; a warning quiet where it names nobody
 * here: no text, no place for the report's words. */
static void test_render_edges(void)
{
    static struct ncg_vfacts f;
    struct ncg_vtexts t;
    struct ncg_verdict *v = mismatch(&f);
    if (!CHECK(v))
        return;
    struct ncg_vdecision d = ncg_verdict_decide(v, NCG_ACTION_WARN, 0);
    if (CHECK(ncg_verdict_render(v, &f, &d, &t) == 0 && t.nblock == 1)) {
        CHECK(strstr(t.json, "\"rank\":-1,\"ranks\":[]") != NULL);
        CHECKF(strstr(joined(&t.block[0], "/x.json"),
                      "action: warn (NCCLGUARD_ACTION=warn: the job continues); report: /x.json"),
               "%s", t.block[0].text);
    }
    free(t.mem);
    v->severity = NCG_SEV_WARN;
    v->kind = NCG_V_LAG;
    f.diag_mode = NCG_DIAG_QUIET;
    held(&f, 5, "slot 7 AllReduce(...)", "");
    d = ncg_verdict_decide(v, NCG_ACTION_ABORT, 0);
    if (CHECK(ncg_verdict_render(v, &f, &d, &t) == 0 && t.nblock == 1))
        CHECK(t.block[0].len == 0 && t.block[0].split == NCG_DIAG_NO_SPLIT);
    free(t.mem);
    ncg_verdict_free(v);
}

int main(void)
{
    test_decide();
    test_render_two();
    test_render_edges();
    return ncg_check_done();
}
