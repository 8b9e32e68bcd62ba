/* Unit tests of the verdicts' words: call grouping and the diagnostic block, who prints it in
 * full (NCCLGUARD_DIAG=auto), each verdict kind built from plain figures as the coordinator and
 * the tree's root build them (judge/verdicts.c), SLOW's figures as data, the exit release. */
#include "config.h"
#include "unit.h"

void test_group_and_render(void)
{
    struct ncg_call calls[16];
    uint8_t valid[16];
    const char *sites[16];
    for (int i = 0; i < 16; i++) {
        calls[i] = (struct ncg_call){48, 64, -1, NCG_F_REDUCESCATTER, 9, 0};
        valid[i] = 1;
        sites[i] = "step+0x20";
    }
    calls[3] = (struct ncg_call){48, 1, -1, NCG_F_ALLREDUCE, 7, 0};
    sites[3] = "barrier+0x8";
    struct ncg_verdict *v = ncg_verdict_new(16);
    v->kind = NCG_V_MISMATCH;
    v->comm_id = 0x1234;
    v->slot = 48;
    v->last_agreed = 47;
    for (int i = 0; i < 16; i++) {
        v->counts[i] = 49;
        v->members[i] = i;
    }
    CHECK(ncg_group_calls(v, calls, valid, sites, 16) == 2);
    CHECK(!strcmp(v->calls[0].ranks, "0-2,4-15"));
    CHECK(!strcmp(v->calls[1].ranks, "3"));
    CHECK(!strcmp(v->subject, "3"));
    CHECK(!strcmp(v->calls[1].site, "barrier+0x8"));
    char s[1024];
    ncg_verdict_summary(v, s, sizeof s);
    CHECK(strstr(s, "AllReduce(count=1, float32, sum) on rank 3 vs ReduceScatter(count=64, "
                    "bfloat16, sum) on ranks 0-2,4-15"));
    struct ncg_diag_ctx x = {3,
                             3,
                             99,
                             "host",
                             "slot 48 AllReduce(...)",
                             "barrier+0x8",
                             "abort",
                             86,
                             "/tmp/r.json",
                             -1,
                             0,
                             "",
                             NULL,
                             0,
                             NULL,
                             0,
                             NULL,
                             NULL,
                             NULL,
                             0,
                             0,
                             0,
                             0,
                             0,
                             0};
    static char d[16384];
    ncg_diag_render(v, &x, d, sizeof d);
    /* every line starts with the prefix */
    int lines = 0;
    for (char *p = d; *p; lines++) {
        CHECK(!strncmp(p, "ncclguard: ", 11));
        char *e = strchr(p, '\n');
        if (!e)
            break;
        p = e + 1;
    }
    CHECK(lines >= 7);
    CHECK(strstr(d, "last slot all ranks agreed on: 47"));
    CHECK(strstr(d, "collective calls issued per rank: 49 on 0-15"));
    CHECK(strstr(d, "action: abort (exit status 86); report: /tmp/r.json"));
    /* the launcher's variable is named when it is not RANK, and in the report */
    CHECK(strstr(d, "this process (comm rank 3, global rank 3, pid 99 on host)"));
    x.rank_var = "SLURM_PROCID";
    ncg_diag_render(v, &x, d, sizeof d);
    CHECK(strstr(d, "this process (comm rank 3, global rank 3 (SLURM_PROCID), pid 99 on host)"));
    size_t need0 = ncg_diag_json(v, &x, NULL, 0);
    char *j0 = malloc(need0 + 1);
    ncg_diag_json(v, &x, j0, need0 + 1);
    CHECK(strstr(j0, "\"rank_var\":\"SLURM_PROCID\""));
    free(j0);
    x.rank_var = NULL;
    ncg_diag_render(v, &x, d, sizeof d);
    size_t need = ncg_diag_json(v, &x, NULL, 0);
    char *j = malloc(need + 1);
    CHECK(ncg_diag_json(v, &x, j, need + 1) == need);
    CHECK(strstr(j, "\"verdict\":\"MISMATCH\""));
    CHECK(strstr(j, "\"global_ranks\":\"0-2,4-15\""));
    CHECK(j[need - 1] == '\n');
    CHECK(strstr(j, "\"stack_tid\":null,\"stack\":[]"));
    free(j);
    CHECK(!strstr(d, "stack of thread"));
    /* with the stuck thread's stack: a header and one line per frame, and the JSON array */
    static const char *const frames[] = {"fn_wait+0x10 (libnccl.so.2+0x1234)",
                                         "ncclAllReduce+0x5c (libncclguard.so+0x88)",
                                         "main+0x2a (\"app\"+0x1)"};
    x.stack_tid = 4242;
    x.stack_what = "slot 48 AllReduce(count=1, float32, sum)";
    x.stack = frames;
    x.nstack = 3;
    ncg_diag_render(v, &x, d, sizeof d);
    CHECK(strstr(d, "ncclguard:   stack of thread 4242 (issued slot 48 AllReduce(count=1, "
                    "float32, sum)), innermost first:\n"
                    "ncclguard:     #0 fn_wait+0x10 (libnccl.so.2+0x1234)\n"
                    "ncclguard:     #1 ncclAllReduce+0x5c (libncclguard.so+0x88)\n"));
    CHECK(strstr(d, "\nncclguard:     #2 main+0x2a"));
    CHECK(strstr(d, "(\"app\"+0x1)\nncclguard:   action: abort"));
    need = ncg_diag_json(v, &x, NULL, 0);
    j = malloc(need + 1);
    CHECK(ncg_diag_json(v, &x, j, need + 1) == need);
    CHECK(strstr(j, "\"stack_tid\":4242,\"stack\":[\"fn_wait+0x10 (libnccl.so.2+0x1234)\","
                    "\"ncclAllReduce+0x5c (libncclguard.so+0x88)\",\"main+0x2a "
                    "(\\\"app\\\"+0x1)\"]"));
    free(j);
    /* a call that differs only by root / op class is another call */
    struct ncg_call a = {1, 8, 0, NCG_F_BROADCAST, 7, NCG_REDOP_NONE}, b2 = a;
    b2.root = 1;
    CHECK(!ncg_call_same(&a, &b2));
    ncg_verdict_free(v);
}

/* Lines of rendered text (each ending '\n'), all starting with the prefix. */
static int nlines_of(const char *d)
{
    int n = 0;
    for (const char *p = d; *p; n++) {
        CHECK(!strncmp(p, "ncclguard: ", 11));
        const char *e = strchr(p, '\n');
        if (!e)
            break;
        p = e + 1;
    }
    return n;
}

/* Quiet at scale (issue 36, item 3): a warning's full block only on the ranks it names (at most
 * NCG_DIAG_WARN_NAMED, else the lowest) and in the checker's process; its headline alone
 * elsewhere (auto), nothing (quiet); short: three lines everywhere, full: the block everywhere.
 * An error keeps a headline on every rank, and its hint says how to get the block everywhere. */
static void test_diag_warn(void)
{
    struct ncg_verdict *v = ncg_verdict_new(8);
    static char d[16384];
    char on[64];
    for (int i = 0; i < 8; i++) {
        v->counts[i] = 40;
        v->members[i] = i;
    }
    v->kind = NCG_V_SLOW;
    v->severity = NCG_SEV_WARN;
    v->comm_id = 0x77;
    v->slow = (struct ncg_vslow){.rank = 5, .global_rank = 5, .pid = 9, .share = 0.2, .since_s = 6};
    snprintf(v->subject, sizeof v->subject, "5");
    snprintf(v->detail, sizeof v->detail, "they lose 20.0%% of the step waiting for it");
    struct ncg_diag_ctx x = {.rank = 2,
                             .global_rank = 2,
                             .pid = 9,
                             .host = "h",
                             .my_call = "slot 39 AllReduce(...)",
                             .my_site = "",
                             .action = "none (warning)",
                             .exit_status = -1,
                             .report_path = "/r.json",
                             .call_time_unix = -1,
                             .diag_mode = NCG_DIAG_AUTO};
    for (int mode = 0; mode < 4; mode++) {
        x.diag_mode = mode;
        for (int r = 0; r < 8; r++) {
            for (int host = 0; host < 2; host++) {
                x.rank = r;
                x.hosts_checker = host;
                int full = ncg_diag_full_for(v, &x, r, on, sizeof on);
                int n = (int)ncg_diag_render(v, &x, d, sizeof d) ? nlines_of(d) : 0;
                int want_full =
                    mode == NCG_DIAG_FULL ||
                    ((mode == NCG_DIAG_AUTO || mode == NCG_DIAG_QUIET) && (r == 5 || host));
                CHECKF(full == want_full, "mode %d rank %d host %d: full %d", mode, r, host, full);
                if (want_full)
                    CHECKF(n >= 5 && strstr(d, "this process (comm rank"),
                           "mode %d rank %d: %d lines", mode, r, n);
                else if (mode == NCG_DIAG_SHORT)
                    CHECKF(n == 3, "short, rank %d: %d lines", r, n);
                else
                    CHECKF(n == (mode == NCG_DIAG_QUIET ? 0 : 1) &&
                               (n == 0 || strstr(d, "ncclguard: WARNING: SLOW on comm ") == d),
                           "mode %d rank %d: %d lines:\n%s", mode, r, n, d);
            }
        }
    }
    /* a warning about many ranks (a STUCK of every rank, a LAG of more than 8): the lowest */
    x.diag_mode = NCG_DIAG_AUTO;
    x.hosts_checker = 0;
    v->kind = NCG_V_STUCK;
    snprintf(v->subject, sizeof v->subject, "0-7");
    CHECK(ncg_diag_full_for(v, &x, 0, on, sizeof on) == 1 && !strcmp(on, "0"));
    CHECK(ncg_diag_full_for(v, &x, 1, on, sizeof on) == 0);
    snprintf(v->subject, sizeof v->subject, "2,4");
    CHECK(ncg_diag_full_for(v, &x, 4, on, sizeof on) == 1 && !strcmp(on, "2,4"));
    CHECK(ncg_diag_full_for(v, &x, 3, on, sizeof on) == 0);
    snprintf(v->subject, sizeof v->subject, "3,5,...");
    CHECK(ncg_diag_full_for(v, &x, 3, on, sizeof on) == 1 && !strcmp(on, "3"));
    CHECK(ncg_diag_full_for(v, &x, 5, on, sizeof on) == 0);
    ncg_verdict_free(v);
    /* an error: three lines elsewhere, with a hint worded as one (it read as if the variable
     * were set: "(NCCLGUARD_DIAG=full: on every rank)") */
    v = ncg_verdict_new(4);
    for (int i = 0; i < 4; i++) {
        v->counts[i] = 3;
        v->members[i] = i;
    }
    v->kind = NCG_V_RANK_DIED;
    v->severity = NCG_SEV_ERROR;
    snprintf(v->subject, sizeof v->subject, "3");
    x.rank = 2;
    x.action = "abort";
    x.exit_status = 86;
    CHECK(ncg_diag_render(v, &x, d, sizeof d) && nlines_of(d) == 3);
    CHECKF(strstr(d, "; full diagnostic on ranks 0,3 (set NCCLGUARD_DIAG=full for every rank)\n"),
           "%s", d);
    x.diag_mode = NCG_DIAG_QUIET; /* quiet spares errors */
    CHECK(ncg_diag_render(v, &x, d, sizeof d) && nlines_of(d) == 3);
    for (int i = 0; i < 4; i++)
        v->members[i] = 3 - i; /* the hint names launcher ranks as the headline does */
    ncg_diag_render(v, &x, d, sizeof d);
    CHECKF(strstr(d,
                  "; full diagnostic on global ranks 0,3 (comm ranks 0,3) (set NCCLGUARD_DIAG=full "
                  "for every rank)\n"),
           "%s", d);
    ncg_verdict_free(v);
}

/* Who prints the full block under NCCLGUARD_DIAG=auto: the subject and the lowest other. */
void test_diag_full(void)
{
    struct ncg_verdict *v = ncg_verdict_new(16);
    char on[64];
    snprintf(v->subject, sizeof v->subject, "3");
    CHECK(ncg_diag_full_here(v, 3, on, sizeof on) == 1 && !strcmp(on, "0,3"));
    CHECK(ncg_diag_full_here(v, 0, on, sizeof on) == 1);
    CHECK(ncg_diag_full_here(v, 5, on, sizeof on) == 0 && !strcmp(on, "0,3"));
    snprintf(v->subject, sizeof v->subject, "0");
    CHECK(ncg_diag_full_here(v, 1, on, sizeof on) == 1 && !strcmp(on, "0-1"));
    CHECK(ncg_diag_full_here(v, 2, on, sizeof on) == 0);
    snprintf(v->subject, sizeof v->subject, "0-2,4-15"); /* a minority of one, inverted */
    CHECK(ncg_diag_full_here(v, 3, on, sizeof on) == 1 && !strcmp(on, "0-15"));
    snprintf(v->subject, sizeof v->subject, "1,2"); /* a p2p pair */
    CHECK(ncg_diag_full_here(v, 0, on, sizeof on) == 1 && !strcmp(on, "0-2"));
    CHECK(ncg_diag_full_here(v, 3, on, sizeof on) == 0);
    /* not a rank list (a local verdict's text, a truncated list): every rank */
    snprintf(v->subject, sizeof v->subject, "holding the checker (global rank 0)");
    CHECK(ncg_diag_full_here(v, 7, on, sizeof on) == 1 && !strcmp(on, "every rank"));
    snprintf(v->subject, sizeof v->subject, "1,3,...");
    CHECK(ncg_diag_full_here(v, 7, on, sizeof on) == 1);
    snprintf(v->subject, sizeof v->subject, "3-99");
    CHECK(ncg_diag_full_here(v, 7, on, sizeof on) == 1);
    ncg_verdict_free(v);
    test_diag_warn();
}

/* judge/verdicts.c: each verdict kind from plain figures, as the coordinator and the tree's
 * root build them (the same words from both), and when LAG / STUCK are due. */
static void vc_ranks(const void *arg, struct ncg_verdict *v)
{
    (void)arg;
    for (uint32_t i = 0; i < v->nranks; i++) {
        v->counts[i] = 10 + i;
        v->members[i] = 100 + (int32_t)i;
    }
}

static void vc_calls(void *arg, struct ncg_verdict *v)
{
    *(int *)arg += 1;
    v->ncalls = 1; /* one distinct call: the "look alike" detail */
}

/* The report's "slow" object of v, as a rank of it would write it (NULL when it has none);
 * malloc'ed. */
static char *slow_json(const struct ncg_verdict *v)
{
    struct ncg_diag_ctx x = {.rank = 0,
                             .global_rank = 100,
                             .pid = 9,
                             .host = "h",
                             .my_call = "",
                             .my_site = "",
                             .action = "none",
                             .exit_status = -1,
                             .report_path = "",
                             .call_time_unix = -1};
    size_t need = ncg_diag_json(v, &x, NULL, 0);
    char *j = malloc(need + 1), *o = NULL, *e = NULL;
    if (j) {
        ncg_diag_json(v, &x, j, need + 1);
        o = strstr(j, ",\"slow\":{");
        e = o ? strchr(o, '}') : NULL;
    }
    char *r = e ? strndup(o, (size_t)(e - o + 1)) : NULL;
    free(j);
    return r;
}

static int vslow_same(const struct ncg_vslow *a, const struct ncg_vslow *b)
{
    return a->rank == b->rank && a->global_rank == b->global_rank && a->pid == b->pid &&
           a->device == b->device && a->ended == b->ended && a->share == b->share &&
           a->since_s == b->since_s && !strcmp(a->host, b->host);
}

static void be64_at(uint8_t *p, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(u >> (56 - 8 * i));
}

/* SLOW's figures as data (struct ncg_vslow): ncg_v_slow fills them and words the text from them
 * (both sides, who known in part or not at all, the tree's unknown host); the report's "slow"
 * object and the segment slot read them (ncg_diag_slow_figs), the same off the wire (VERDICT,
 * the tree's RVERDICT) whatever the words say; decoding refuses figures out of bounds. */
void test_diag_slow(void)
{
    struct ncg_vcomm flat = {0xabc, 4, 6, vc_ranks, NULL}, tree = {0xabc, 4, 6, NULL, NULL};
    static const char want[] = ",\"slow\":{\"rank\":2,\"global_rank\":7,\"host\":\"node-b\","
                               "\"pid\":4321,\"share\":0.146,\"since_s\":12,\"side\":\"gpu\"}";
    struct ncg_vslow f;
    struct ncg_verdict *v = ncg_v_slow(&flat, 2, 7, 4321, "node-b", 0.1456, 12.4, 1);
    CHECK(v && !strcmp(v->subject, "2") &&
          !strcmp(v->detail, "they lose 14.6% of the step waiting for it, for 12 s; late on its "
                             "GPU (its stream starts the collective late) (global rank 7, pid "
                             "4321 on node-b)"));
    CHECK(v && ncg_diag_slow_figs(v, &f) == 0);
    CHECK(f.rank == 2 && f.global_rank == 7 && f.pid == 4321 && !strcmp(f.host, "node-b"));
    CHECK(f.share == 0.1456 && f.since_s == 12.4 && f.device == 1);
    char *j = slow_json(v);
    CHECK(j && !strcmp(j, want));
    free(j);
    /* off the wire: the same figures, the same object, though the words are gone */
    long n = ncg_verdict_encode(v, buf, sizeof buf);
    CHECK(n > 0 && (size_t)n <= ncg_verdict_wire_size(v));
    struct ncg_verdict *d = n > 0 ? ncg_verdict_decode(buf, (size_t)n) : NULL;
    CHECK(d && d->kind == NCG_V_SLOW && vslow_same(&d->slow, &v->slow));
    if (d) {
        snprintf(d->detail, sizeof d->detail, "they lose a lot");
        snprintf(d->subject, sizeof d->subject, "?");
        j = slow_json(d);
        CHECK(j && !strcmp(j, want));
        free(j);
    }
    ncg_verdict_free(d);
    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_VERDICT;
    m1.u.verdict = v;
    roundtrip(&m1);
    /* malformed figures: refused by the decoder (the host last: "node-b", 6 bytes) */
    static uint8_t b[4096];
    n = ncg_verdict_encode(v, buf, sizeof buf);
    size_t at = (size_t)n - 7 - 8 - 8 - 1 - 4 - 4 - 4; /* rank, grank, pid, side, share, since */
    CHECK(n > 40 && buf[at + 3] == 2 && buf[n - 7] == 6);
    for (int c = 0; c < 9 && n > 40; c++) {
        memcpy(b, buf, (size_t)n);
        size_t len = (size_t)n;
        if (c == 0) /* rank 4 of 4 */
            b[at + 3] = 4;
        else if (c == 1) /* share over 1 */
            be64_at(b + at + 13, 1.5);
        else if (c == 2) /* share NaN */
            be64_at(b + at + 13, NAN);
        else if (c == 3) /* since_s below 0 */
            be64_at(b + at + 21, -1);
        else if (c == 4) /* a flag beyond the GPU's and the episode end's (v12) */
            b[at + 12] = 4;
        else if (c == 5) /* a NUL inside the host */
            b[n - 3] = 0;
        else if (c == 6) /* a host over its bound */
            b[n - 7] = NCG_VSLOW_HOST;
        else if (c == 7) /* truncated */
            len--;
        else /* figures after a verdict of another kind */
            b[0] = NCG_V_LAG;
        d = ncg_verdict_decode(b, len);
        CHECK(d == NULL);
        ncg_verdict_free(d);
    }
    v->slow.share = 2; /* and never encoded */
    CHECK(ncg_verdict_encode(v, buf, sizeof buf) == -EINVAL);
    v->slow.share = 0.1456;
    CHECK(ncg_v_counted(v));
    ncg_verdict_free(v);
    /* the episode's end (v12): flagged, worded, not counted, and off the wire the same */
    v = ncg_v_slow_end(&flat, 2, 7, 4321, "node-b", 95.4);
    CHECK(v && v->kind == NCG_V_SLOW && v->slow.ended == 1 && !ncg_v_counted(v) &&
          v->severity == NCG_SEV_WARN && v->slow.rank == 2 && v->slow.since_s == 95.4);
    CHECK(v && !strcmp(v->detail, "no longer holds the others up (it did for 95 s) (global rank 7, "
                                  "pid 4321 on node-b)"));
    n = v ? ncg_verdict_encode(v, buf, sizeof buf) : -1;
    d = n > 0 ? ncg_verdict_decode(buf, (size_t)n) : NULL;
    CHECK(d && d->slow.ended == 1 && d->slow.device == 0 && !ncg_v_counted(d) &&
          vslow_same(&d->slow, &v->slow));
    ncg_verdict_free(d);
    v->kind = NCG_V_LAG;
    CHECK(ncg_diag_slow_figs(v, &f) == -EINVAL && !slow_json(v));
    ncg_verdict_free(v);
    v = ncg_v_slow(&flat, 3, -1, 0, "", 0.05, 0, 0); /* who unknown: the members' global rank */
    CHECK(v && !strcmp(v->detail, "they lose 5.0% of the step waiting for it, for 0 s; late on "
                                  "its host (it issues the collective late)"));
    CHECK(v && ncg_diag_slow_figs(v, &f) == 0);
    CHECK(f.rank == 3 && f.global_rank == 103 && f.pid == 0 && !f.host[0] && f.device == 0);
    ncg_verdict_free(v);
    v = ncg_v_slow(&tree, 1, -1, 77, "n", 0.2, 30, 0); /* pid and host only, no arrays */
    CHECK(v && ncg_diag_slow_figs(v, &f) == 0);
    CHECK(f.rank == 1 && f.global_rank == -1 && f.pid == 77 && !strcmp(f.host, "n"));
    CHECK(v && strstr(v->detail, "collective late) (pid 77 on n)"));
    ncg_verdict_free(v);
    v = ncg_v_slow(&tree, 1, 9, 0, NULL, 0.2, 30, 0); /* the tree's root: the host not known */
    CHECK(v && strstr(v->detail, "collective late) (global rank 9 on an unknown host)"));
    CHECK(v && ncg_diag_slow_figs(v, &f) == 0);
    CHECK(f.rank == 1 && f.global_rank == 9 && f.pid == 0 && !f.host[0]);
    /* the tree's RVERDICT: the named rank within the comm's size, then the client's copy */
    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_RVERDICT;
    m1.u.rverdict = (struct ncg_msg_rverdict){4, v};
    roundtrip(&m1);
    struct ncg_verdict *c = ncg_verdict_copy(v, 4);
    CHECK(c && c->nranks == 4 && vslow_same(&c->slow, &v->slow));
    ncg_verdict_free(c);
    m1.u.rverdict.comm_nranks = 1; /* rank 1 of 1 */
    CHECK(ncg_wire_encode(&m1, buf, sizeof buf) < 0);
    ncg_verdict_free(v);
    v = ncg_v_slow(&tree, 0, -1, 0, NULL, 0.07, 3, 1); /* nothing known of who */
    CHECK(v && strstr(v->detail, "collective late) (on an unknown host)"));
    ncg_verdict_free(v);
}

void test_verdicts(void)
{
    struct ncg_vcomm flat = {0xabc, 4, 6, vc_ranks, NULL}, tree = {0xabc, 4, 6, NULL, NULL};
    /* when due: an error past abort_s, a warning past warn_s once, else nothing */
    CHECK(ncg_v_due(5, 2, 10, 0) == 1);
    CHECK(ncg_v_due(5, 2, 10, 1) == 0); /* warned already */
    CHECK(ncg_v_due(1, 2, 10, 0) == 0);
    CHECK(ncg_v_due(10, 2, 10, 1) == 2);
    CHECK(ncg_v_due(10, 0, 0, 0) == 0); /* neither set */
    uint8_t warned = 1;
    CHECK(ncg_v_lag_due(7, 7, 100, 1, 2, &warned) == 0 && warned == 0); /* counts agree */
    warned = 1;
    CHECK(ncg_v_lag_due(UINT64_MAX, 0, 100, 1, 2, &warned) == 0 && warned == 0);
    CHECK(ncg_v_lag_due(5, 7, 1.5, 1, 2, &warned) == 1);
    warned = 1;
    CHECK(ncg_v_lag_due(5, 7, 1.5, 1, 2, &warned) == 0 && warned == 1);
    /* LAG: the flat coordinator's per-rank arrays, the tree's "more than listed" */
    int32_t who[] = {3, 1};
    struct ncg_verdict *v = ncg_v_lag(&flat, who, 2, 0, 0, 5, 9, 2.5);
    CHECK(v && v->kind == NCG_V_LAG && v->severity == NCG_SEV_WARN && v->slot == 5);
    CHECK(v && v->nranks == 4 && v->counts[3] == 13 && v->members[2] == 102);
    CHECK(v && v->comm_id == 0xabc && v->last_agreed == 6 && !strcmp(v->subject, "1,3"));
    CHECK(v && !strcmp(v->detail, "for 2.5 s (slot counts 5..9)"));
    ncg_verdict_free(v);
    v = ncg_v_lag(&tree, who, 2, 1, 1, 5, 9, 2.5);
    CHECK(v && v->nranks == 0 && v->severity == NCG_SEV_ERROR && !strcmp(v->subject, "1,3,..."));
    ncg_verdict_free(v);
    /* RANK EXITED: the detail's first words say how */
    int32_t ex[] = {2};
    v = ncg_v_exited(&tree, ex, 1, 4, 8, NCG_BYE_ABORT);
    CHECK(v && v->kind == NCG_V_RANK_EXITED && v->slot == 4);
    CHECK(v && !strcmp(v->detail, NCG_EXITED_ABORT " after 4 calls; others issued up to 8"));
    ncg_verdict_free(v);
    v = ncg_v_exited(&tree, ex, 1, 4, 8, 0);
    CHECK(v && !strcmp(v->detail, "left after 4 calls; others issued up to 8"));
    ncg_verdict_free(v);
    /* RANK DIED, with and without a detail */
    char why[96];
    CHECK(!strcmp(ncg_v_silent(why, sizeof why, 2500000000ull),
                  "silent for 2.5 s (frozen or unreachable)"));
    int32_t dead[] = {0, 1, 2};
    v = ncg_v_rank_died(&flat, dead, 3, "pid 7 on h, gone");
    CHECK(v && v->kind == NCG_V_RANK_DIED && !strcmp(v->subject, "0-2") &&
          !strcmp(v->detail, "pid 7 on h, gone"));
    ncg_verdict_free(v);
    v = ncg_v_rank_died(&flat, dead, 3, NULL);
    CHECK(v && v->detail[0] == 0);
    ncg_verdict_free(v);
    /* MISMATCH: the caller's calls, then the words on what could not be shown */
    int called = 0;
    v = ncg_v_mismatch(&tree, 42, vc_calls, &called, 0);
    CHECK(called == 1 && v && v->kind == NCG_V_MISMATCH && v->slot == 42);
    CHECK(v && strstr(v->detail, "the calls at slot 42 look alike") == v->detail);
    ncg_verdict_free(v);
    v = ncg_v_mismatch(&tree, 42, vc_calls, &called, 1);
    CHECK(v && strstr(v->detail, "distinct calls at this slot") != NULL);
    ncg_verdict_free(v);
    /* STUCK: a list (more than listed), or every rank named whole; the caller's lines last */
    struct ncg_call call = {.seq = 3, .func = 1, .count = 8};
    int32_t stalled[] = {1};
    struct ncg_stuck_fig s = {3, 3, 12.0, 0, stalled, 1, 2, 0, &call, "site.c:1", "tail line\n"};
    v = ncg_v_stuck(&tree, &s);
    CHECK(v && v->kind == NCG_V_STUCK && v->severity == NCG_SEV_WARN && v->slot == 3);
    CHECK(v && !strcmp(v->subject, "1,...") && v->ncalls == 1 && v->calls[0].call.seq == 3);
    CHECK(v && !strcmp(v->calls[0].site, "site.c:1"));
    CHECK(v && v->notes && strstr(v->notes, "a hang inside NCCL") == v->notes);
    CHECK(v && v->notes && strlen(v->notes) > 10 &&
          !strcmp(v->notes + strlen(v->notes) - 10, "tail line\n"));
    ncg_verdict_free(v);
    s.whole = 1;
    s.nstalled = 4;
    s.act = 1;
    s.call = NULL;
    s.tail = NULL;
    v = ncg_v_stuck(&tree, &s);
    CHECK(v && !strcmp(v->subject, "0-3") && v->ncalls == 0 && v->severity == NCG_SEV_ERROR);
    CHECK(v && strstr(v->detail, "completed on none") == v->detail);
    ncg_verdict_free(v);
    /* the exit release: a DONE for another comm changes nothing; a closed one, every comm */
    struct ncg_release rel = {0};
    CHECK(ncg_release_note(&rel, 9, 1, 9, 0, 0) == 0); /* no verdict yet */
    ncg_release_begin(&rel, UINT64_MAX);
    CHECK(ncg_release_add(&rel, 1) == 0 && ncg_release_add(&rel, 2) == 0);
    CHECK(ncg_release_note(&rel, 9, 1, 8, 0, 0) == 0);
    CHECK(ncg_release_note(&rel, 9, 1, 9, 0, 0) == 1 && !ncg_release_due(&rel, 0));
    CHECK(ncg_release_note(&rel, 9, 2, 0, 1, 0) == 1 && ncg_release_due(&rel, 0));
    ncg_release_free(&rel);
}

/* ncg_ranks_named of the compact list of comm ranks `set` (a bit mask) on v. */
static const char *named_set(const struct ncg_verdict *v, unsigned set, char *out, size_t cap)
{
    int32_t r[8];
    size_t n = 0;
    char list[64];
    for (int i = 0; i < 8; i++)
        if (set & 1u << i)
            r[n++] = i;
    ncg_ranks_compact(r, n, list, sizeof list);
    return ncg_ranks_named(v, list, out, cap);
}

/* A communicator's arrays whose comm rank i is launcher rank 3 - i. */
static void rev_ranks(const void *arg, struct ncg_verdict *v)
{
    (void)arg;
    for (uint32_t i = 0; i < v->nranks; i++)
        v->members[i] = 3 - (int32_t)i;
}

/* Headlines name launcher ranks (issue 36, item 2): one helper names a set of comm ranks by
 * their global ranks, the comm ranks beside them, unless each named rank's global rank is its
 * comm rank (or none is known). Exhaustive over every mapping of 4 ranks (each global rank a
 * permutation's, or unknown) and every non-empty set; then ranges, cut lists, text, the tree's
 * runs, and each verdict kind's headline on a reversed communicator. */
void test_ranks_named(void)
{
    char txt[512], want[512], g[64], c[64];
    struct ncg_verdict *v = ncg_verdict_new(4);
    /* every map: member i -> perm[i] or -1 (unknown), 24 permutations x 16 unknown masks */
    int perm[4], count = 0;
    for (int p = 0; p < 256; p++) {
        for (int i = 0; i < 4; i++)
            perm[i] = p >> (2 * i) & 3;
        if (perm[0] == perm[1] || perm[0] == perm[2] || perm[0] == perm[3] || perm[1] == perm[2] ||
            perm[1] == perm[3] || perm[2] == perm[3])
            continue; /* not a permutation */
        for (unsigned unk = 0; unk < 16; unk++) {
            for (int i = 0; i < 4; i++)
                v->members[i] = unk & 1u << i ? -1 : perm[i];
            for (unsigned set = 1; set < 16; set++) {
                int same = 1, n = 0, nk = 0, nu = 0;
                int32_t gl[4], cl[4];
                for (int i = 0; i < 4; i++)
                    if (set & 1u << i) {
                        cl[n++] = i;
                        if (v->members[i] >= 0) {
                            same &= v->members[i] == i;
                            gl[nk++] = v->members[i];
                        } else {
                            nu++;
                        }
                    }
                ncg_ranks_compact(cl, (size_t)n, c, sizeof c);
                if (same) {
                    snprintf(want, sizeof want, "%s %s", n > 1 ? "ranks" : "rank", c);
                } else {
                    ncg_ranks_compact(gl, (size_t)nk, g, sizeof g);
                    snprintf(want, sizeof want, "global %s %s%s (comm %s %s)",
                             n > 1 ? "ranks" : "rank", g, nu ? ",?" : "", n > 1 ? "ranks" : "rank",
                             c);
                }
                named_set(v, set, txt, sizeof txt);
                CHECKF(!strcmp(txt, want),
                       "perm %d%d%d%d unknown %x set %x: got \"%s\" want \"%s\"", perm[0], perm[1],
                       perm[2], perm[3], unk, set, txt, want);
                count++;
            }
        }
    }
    CHECK(count == 24 * 16 * 15);
    /* the named cases users meet */
    for (int i = 0; i < 4; i++)
        v->members[i] = i; /* the same: unchanged */
    CHECK(!strcmp(ncg_ranks_named(v, "3", txt, sizeof txt), "rank 3"));
    CHECK(!strcmp(ncg_ranks_named(v, "0-2", txt, sizeof txt), "ranks 0-2"));
    for (int i = 0; i < 4; i++)
        v->members[i] = 3 - i; /* reversed */
    CHECK(!strcmp(ncg_ranks_named(v, "1", txt, sizeof txt), "global rank 2 (comm rank 1)"));
    CHECK(!strcmp(ncg_ranks_named(v, "0,2-3", txt, sizeof txt),
                  "global ranks 0-1,3 (comm ranks 0,2-3)"));
    CHECK(!strcmp(ncg_ranks_named(v, "0,3", txt, sizeof txt), /* the same set, not the same ranks */
                  "global ranks 0,3 (comm ranks 0,3)"));
    /* two sets of one headline are named alike: the global ranks for both when either needs
     * them (a split's subgroup whose rank 0 is launcher rank 0) */
    v->members[0] = 0;
    v->members[1] = 2;
    v->members[2] = 4;
    v->members[3] = 6;
    v->kind = NCG_V_MISMATCH;
    v->slot = 5;
    v->ncalls = 2;
    v->calls[0].call = (struct ncg_call){5, 8, -1, NCG_F_ALLREDUCE, 7, 0};
    snprintf(v->calls[0].ranks, sizeof v->calls[0].ranks, "0");
    v->calls[1].call = (struct ncg_call){5, 8, 0, NCG_F_BROADCAST, 7, NCG_REDOP_NONE};
    snprintf(v->calls[1].ranks, sizeof v->calls[1].ranks, "1");
    ncg_verdict_summary(v, txt, sizeof txt);
    CHECKF(strstr(txt, "on global rank 2 (comm rank 1) vs AllReduce(count=8, float32, sum) on "
                       "global rank 0 (comm rank 0)") != NULL,
           "%s", txt);
    for (int i = 0; i < 4; i++)
        v->members[i] = 3 - i;
    v->members[1] = -1; /* partial: one unknown */
    CHECK(!strcmp(ncg_ranks_named(v, "1", txt, sizeof txt), "rank 1"));
    CHECK(!strcmp(ncg_ranks_named(v, "0-1", txt, sizeof txt), "global ranks 3,? (comm ranks 0-1)"));
    /* two sets, one of them with no global rank known (a rank that left, as a SHUTDOWN names
     * it): that one by its comm rank, never "global rank ?" */
    v->members[0] = -1;
    v->members[2] = 7;
    v->kind = NCG_V_MISMATCH;
    v->ncalls = 2;
    snprintf(v->calls[0].ranks, sizeof v->calls[0].ranks, "0");
    snprintf(v->calls[1].ranks, sizeof v->calls[1].ranks, "2");
    ncg_verdict_summary(v, txt, sizeof txt);
    CHECKF(strstr(txt, "on global rank 7 (comm rank 2)") != NULL && strstr(txt, "on comm rank 0") &&
               !strstr(txt, "global rank ?"),
           "%s", txt);
    /* text is no list: as it was */
    CHECK(!strcmp(ncg_ranks_named(v, "holding the checker (global rank 0)", txt, sizeof txt),
                  "rank holding the checker (global rank 0)"));
    CHECK(ncg_ranks_walk("1,", NULL, 0, NULL) == -1 && ncg_ranks_walk("", NULL, 0, NULL) == -1);
    CHECK(ncg_ranks_walk("a-b", NULL, 0, NULL) == -1 && ncg_ranks_walk("3-1", NULL, 0, NULL) == -1);
    ncg_verdict_free(v);
    /* ranges and a list cut short (",...") on 16 ranks shifted by 100 */
    v = ncg_verdict_new(16);
    for (int i = 0; i < 16; i++)
        v->members[i] = 100 + i;
    CHECK(!strcmp(ncg_ranks_named(v, "0-2,4-15", txt, sizeof txt),
                  "global ranks 100-102,104-115 (comm ranks 0-2,4-15)"));
    CHECK(!strcmp(ncg_ranks_named(v, "1,3,...", txt, sizeof txt),
                  "global ranks 101,103,... (comm ranks 1,3,...)"));
    int cut = 0;
    int32_t out[4];
    CHECK(ncg_ranks_walk("1,3,...", out, 4, &cut) == 2 && cut && out[1] == 3);
    CHECK(ncg_ranks_has("0-2,4-15", 4) && !ncg_ranks_has("0-2,4-15", 3) && !ncg_ranks_has("x", 0));
    ncg_verdict_free(v);
    /* the tree's verdicts: no arrays, the runs; a copy whose nranks grew reads no further than
     * its arrays */
    v = ncg_verdict_new(0);
    struct ncg_figrun run = {
        .lo = 0, .n = 4, .count = 5, .count_hi = 5, .done = 5, .glo = 13, .gstride = -1};
    CHECK(ncg_verdict_set_figs(v, &run, 1) == 0);
    struct ncg_verdict tmp = *v;
    tmp.nranks = 4;
    CHECK(!strcmp(ncg_ranks_named(&tmp, "2", txt, sizeof txt), "global rank 11 (comm rank 2)"));
    tmp.nfigs = 0;
    CHECK(!strcmp(ncg_ranks_named(&tmp, "2", txt, sizeof txt), "rank 2"));
    ncg_verdict_free(v);

    /* each kind's headline on a communicator whose comm rank i is launcher rank 3-i */
    struct ncg_vcomm rev = {0xabc, 4, 6, rev_ranks, NULL};
    struct ncg_verdict *k[8];
    int nk = 0;
    k[nk++] = ncg_verdict_new(4); /* MISMATCH */
    k[0]->kind = NCG_V_MISMATCH;
    k[0]->slot = 5;
    k[0]->ncalls = 2;
    k[0]->calls[0].call = (struct ncg_call){5, 8, -1, NCG_F_ALLREDUCE, 7, 0};
    snprintf(k[0]->calls[0].ranks, sizeof k[0]->calls[0].ranks, "0,2-3");
    k[0]->calls[1].call = (struct ncg_call){5, 9, -1, NCG_F_ALLREDUCE, 7, 0};
    snprintf(k[0]->calls[1].ranks, sizeof k[0]->calls[1].ranks, "1");
    k[nk++] = ncg_verdict_new(4); /* P2P MISMATCH */
    k[1]->kind = NCG_V_P2P_MISMATCH;
    k[1]->ncalls = 2;
    k[1]->calls[0].call = (struct ncg_call){0, 8, 2, NCG_F_SEND, 7, NCG_REDOP_NONE};
    snprintf(k[1]->calls[0].ranks, sizeof k[1]->calls[0].ranks, "1");
    k[1]->calls[1].call = (struct ncg_call){0, 9, 1, NCG_F_RECV, 7, NCG_REDOP_NONE};
    snprintf(k[1]->calls[1].ranks, sizeof k[1]->calls[1].ranks, "2");
    int32_t one[] = {1}, two[] = {1, 2};
    k[nk++] = ncg_v_rank_died(&rev, one, 1, "pid 7 on h, gone");
    k[nk++] = ncg_v_exited(&rev, one, 1, 4, 8, 0);
    k[nk++] = ncg_v_lag(&rev, two, 2, 0, 0, 4, 8, 2.5);
    struct ncg_stuck_fig sf = {3, 3, 12.0, 0, one, 1, 1, 0, NULL, NULL, NULL};
    k[nk++] = ncg_v_stuck(&rev, &sf);
    k[nk++] = ncg_v_slow(&rev, 1, 2, 77, "h", 0.25, 6, 0);
    const char *want_k[] = {
        ": slot 5: AllReduce(count=9, float32, sum) on global rank 2 (comm rank 1) vs "
        "AllReduce(count=8, float32, sum) on global ranks 0-1,3 (comm ranks 0,2-3)",
        ": Send(count=8, float32, peer=2) on global rank 2 (comm rank 1) vs Recv(count=9, "
        "float32, peer=1) on global rank 1 (comm rank 2)",
        ": global rank 2 (comm rank 1) died: pid 7 on h, gone",
        ": global rank 2 (comm rank 1) exited while global ranks 0-1,3 (comm ranks 0,2-3) issued "
        "calls it will never match",
        ": global ranks 1-2 (comm ranks 1-2) behind, nobody progressed: for 2.5 s (slot counts "
        "4..8)",
        ": slot 3 issued identically by all 4 ranks, not completed on global rank 2 (comm rank 1) "
        "for 12.0 s",
        ": global rank 2 (comm rank 1) is the one the others wait for: they lose 25.0% of the "
        "step waiting for it, for 6 s; late on its host (it issues the collective late) (global "
        "rank 2, pid 77 on h)"};
    for (int i = 0; i < nk; i++) {
        CHECK(k[i] != NULL);
        if (!k[i])
            continue;
        for (int r = 0; r < 4; r++) {
            k[i]->members[r] = 3 - r;
            if (k[i]->kind == NCG_V_RANK_EXITED)
                k[i]->counts[r] = r == 1 ? 4 : 8;
        }
        ncg_verdict_summary(k[i], txt, sizeof txt);
        const char *h = strstr(txt, "): ");
        CHECKF(h && !strcmp(h + 1, want_k[i]), "%s headline:\n  got  \"%s\"\n  want \"%s\"",
               ncg_verdict_name(k[i]->kind), h ? h + 1 : txt, want_k[i]);
        for (int r = 0; r < 4; r++)
            k[i]->members[r] = r; /* the same: comm ranks alone, as before */
        ncg_verdict_summary(k[i], txt, sizeof txt);
        CHECKF(!strstr(txt, "global rank") || k[i]->kind == NCG_V_SLOW, "%s: %s",
               ncg_verdict_name(k[i]->kind), txt);
        ncg_verdict_free(k[i]);
    }
}
