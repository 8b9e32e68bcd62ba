/* Applying a verdict in this process (action.h): one write(2) of the whole diagnostic so ranks'
 * lines do not interleave within a rank, the atomic JSON report, the segment's verdict fields
 * for `ncclguard status/watch`, and the action of NCCLGUARD_ACTION. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ck_pr.h>
#include "action.h"
#include "agent_int.h"
#include "comm.h"
#include "config.h"
#include "lasterror.h"
#include "ncclguard/shm.h"
#include "resolve.h"
#include "shm.h"

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static int have_error; /* the segment shows an error verdict (checker thread only) */
/* The segment shows a LAG or STUCK warning: the calls its comm had completed in this process
 * then (ncg_action_tick); UINT64_MAX: none shown. Checker thread only. */
static uint64_t warn_done = UINT64_MAX;

/* Collective and p2p calls completed in this process on comm id (every comm rank it holds of
 * it), as the segment says. */
static uint64_t comm_done(struct ncg_shm_header *h, uint64_t id)
{
    uint64_t done = 0;
    uint32_t n = ck_pr_load_32(&h->ncomms);
    for (uint32_t i = 0; i < n && i < NCG_SHM_MAX_COMMS; i++) {
        struct ncg_shm_comm *c = ncg_shm_comm_at(h, i);
        if (ck_pr_load_32(&c->state) != NCG_COMM_FREE && c->comm_id == id)
            done += ck_pr_load_64(&c->coll_done) + ck_pr_load_64(&c->p2p_done);
    }
    return done;
}

static void segment_mark(const struct ncg_verdict *v, const char *report)
{
    struct ncg_shm_header *h = ncg_seg_get();
    if (!h)
        return;
    /* The first error stays; a warning never hides an error. */
    if (have_error || (ck_pr_load_32(&h->state) == NCG_PROC_VERDICT && v->severity == NCG_SEV_WARN))
        return;
    have_error = v->severity == NCG_SEV_ERROR;
    char line[256];
    ncg_verdict_summary(v, line, sizeof line);
    h->verdict_kind = v->kind;
    h->verdict_comm = v->comm_id;
    warn_done =
        v->kind == NCG_V_LAG || v->kind == NCG_V_STUCK ? comm_done(h, v->comm_id) : UINT64_MAX;
    memcpy(h->verdict_text, line, sizeof h->verdict_text);
    h->verdict_text[sizeof h->verdict_text - 1] = 0;
    strncpy(h->report_path, report, sizeof h->report_path - 1);
    /* The fields before the state: a reader that sees VERDICT sees them. */
    ck_pr_fence_store();
    ck_pr_store_32(&h->state, NCG_PROC_VERDICT);
}

void ncg_action_slow_over(const struct ncg_verdict *v)
{
    struct ncg_shm_header *h = ncg_seg_get();
    if (h && !have_error && ck_pr_load_32(&h->state) == NCG_PROC_VERDICT &&
        h->verdict_kind == NCG_V_SLOW && h->verdict_comm == v->comm_id)
        ck_pr_store_32(&h->state, NCG_PROC_ALIVE);
}

void ncg_action_tick(void)
{
    struct ncg_shm_header *h = ncg_seg_get();
    if (!h || have_error || warn_done == UINT64_MAX || ck_pr_load_32(&h->state) != NCG_PROC_VERDICT)
        return;
    if (comm_done(h, h->verdict_comm) > warn_done) {
        warn_done = UINT64_MAX;
        ck_pr_store_32(&h->state, NCG_PROC_ALIVE);
    }
}

/* A SLOW warning: its figures into the segment slot of every comm rank of v's communicator held
 * here (`ncclguard status` and `watch` read them, ncclguard/shm.h); its episode's end: side
 * NCG_SLOW_NONE there, nobody named. Caller holds ncg_agent.lk. */
static void slow_mark(const struct ncg_verdict *v)
{
    struct ncg_vslow f;
    if (ncg_diag_slow_figs(v, &f) != 0)
        return;
    uint64_t now = ncg_now_ns(), ago = (uint64_t)(f.since_s * 1e9);
    struct ncg_shm_slow w = {.since_ns = now > ago ? now - ago : 1,
                             .rank = f.rank,
                             .grank = f.global_rank,
                             .pid = f.pid,
                             .share_bp = (uint16_t)(f.share >= 1 ? 10000 : f.share * 10000 + 0.5),
                             .side = f.ended    ? NCG_SLOW_NONE
                                     : f.device ? NCG_SLOW_DEVICE
                                                : NCG_SLOW_HOST};
    for (size_t i = 0; i < ncg_agent.nlc; i++) {
        struct ncg_lcomm *lc = &ncg_agent.lc[i];
        if (lc->id == v->comm_id && !lc->removed && lc->shm)
            ncg_shm_comm_slow_set(lc->shm, &w);
    }
}

/* One write(2) of a rendered block with the report's words where they go, cut as the
 * diagnostic always was (16 KiB, still ending with a newline), and the line on why the report
 * is not where NCCLGUARD_REPORT_DIR says. */
static void show(const struct ncg_vblock *b, const char *path, const char *note)
{
    size_t cap = 16384;
    if (!b->text || !b->len) /* (nothing shown: NCCLGUARD_DIAG=quiet) */
        return;
    char *buf = malloc(cap);
    if (!buf)
        return;
    int n = b->split == NCG_DIAG_NO_SPLIT ? snprintf(buf, cap, "%s", b->text)
                                          : snprintf(buf, cap, "%.*s%s%s%s", (int)b->split, b->text,
                                                     path[0] ? "; report: " : "; no report written",
                                                     path, b->text + b->split);
    size_t len = n > 0 ? (size_t)n : 0;
    if (len >= cap) { /* cut: still a newline at the end */
        buf[cap - 2] = '\n';
        len = cap - 1;
    }
    if (note[0] && len > 0 && len + 1 < cap)
        len += (size_t)snprintf(buf + len, cap - len, "ncclguard:   report: %s\n", note);
    if (len >= cap)
        len = cap - 1;
    write_all(2, buf, len);
    free(buf);
}

void ncg_action_show(const struct ncg_vblock *b, const char *path)
{
    show(b, path, "");
}

/* NCCLGUARD_ACTION=fail: each comm failed (its calls return ncclRemoteError, with the line
 * ncclGetLastError gives) and revoked where the library can. */
static void fail_comms(const struct ncg_verdict *v, const char *path)
{
    struct ncg_comm *comms[NCG_SHM_MAX_COMMS + 8];
    int n = 0;
    for (size_t i = 0; i < ncg_agent.nlc; i++) {
        struct ncg_lcomm *lc = &ncg_agent.lc[i];
        if (lc->id == v->comm_id && !lc->removed && lc->c &&
            n < (int)(sizeof comms / sizeof *comms))
            comms[n++] = lc->c;
    }
    char sum[512], line[640];
    ncg_verdict_summary(v, sum, sizeof sum);
    snprintf(line, sizeof line,
             "ncclguard: %s; %s%s (NCCLGUARD_ACTION=fail failed the communicator)", sum,
             path[0] ? "report " : "no report written", path);
    for (int i = 0; i < n; i++) {
        struct ncg_comm *c = comms[i];
        if (!c)
            continue;
        if (c->handle)
            ncg_lasterror_set(c->handle, line); /* before the flag the app's calls see */
        __atomic_store_n(&c->failed, 1, __ATOMIC_RELEASE);
        if (c->shm)
            ck_pr_store_32(&c->shm->state, NCG_COMM_FAILED);
        /* Revoke releases calls blocked on the comm (where the library has it); never
         * ncclCommAbort here: it would free the comm under the application's feet. */
        ncg_fn_ncclCommRevoke revoke = NCG_REAL(ncclCommRevoke);
        if (revoke && c->handle)
            revoke(c->handle, 0);
    }
}

int ncg_action_apply(const struct ncg_verdict *v, const struct ncg_vdecision *d,
                     const struct ncg_vtexts *t, const char *path, const char *note)
{
    if (v->kind == NCG_V_SLOW)
        slow_mark(v);
    if (!d->shown) { /* a SLOW episode's end: the status only, nothing printed */
        ncg_action_slow_over(v);
        return 0;
    }
    segment_mark(v, path);
    show(&t->block[0], path, note);
    if (d->fail)
        fail_comms(v, path);
    return d->must_exit;
}

void ncg_action_exit(void)
{
    /* The segment stays, in VERDICT state: `ncclguard status` / `watch` show what each rank was
     * doing after the job is gone (it costs the header and the slots in use; `ncclguard clean`
     * reclaims it). */
    _exit(NCG_EXIT_VERDICT);
}
