/* Unit tests of the CLI's pure parts: the seqlock record reader (complete, in-progress,
 * overwritten and wrapped records), the per-communicator analysis (who is behind, mismatches by
 * fields and by digest, dead members left out), compact rank lists, verdicts grouped into one
 * line per verdict (ranks, comm ranks, report directories), the JSON reader on every truncation
 * of a valid report and on hostile input (must fail cleanly, never crash), and reading a file
 * whole within its size limit. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "json.h"

static int failures;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);                           \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static void test_read_record(void)
{
    static struct ncg_shm_record ring[8];
    struct ncg_shm_record r, out;
    memset(&r, 0, sizeof(r));
    r.func = NCG_F_ALLREDUCE;
    r.count = 5;
    CHECK(ncg_cli_read_record(ring, 8, 0, &out) == -ENOENT); /* never written */
    ring[0] = r;
    ring[0].stamp = 1; /* being written */
    CHECK(ncg_cli_read_record(ring, 8, 0, &out) == -EAGAIN);
    ring[0].stamp = 2;
    CHECK(ncg_cli_read_record(ring, 8, 0, &out) == 0 && out.count == 5);
    ring[3] = r;
    ring[3].stamp = 2 * 11 + 2;                              /* index 11 lives at position 3 */
    CHECK(ncg_cli_read_record(ring, 8, 3, &out) == -ENOENT); /* overwritten by 11 */
    CHECK(ncg_cli_read_record(ring, 8, 11, &out) == 0);
    CHECK(ncg_cli_read_record(ring, 8, 19, &out) == -ENOENT); /* not written yet */
}

/* A snapshot of n members of one comm, each in its own live process. */
static void snap_init(struct ncg_snap *s, int n, const uint64_t *seq)
{
    memset(s, 0, sizeof(*s));
    s->procs = calloc((size_t)n, sizeof(*s->procs));
    s->members = calloc((size_t)n, sizeof(*s->members));
    s->nprocs = s->nmembers = n;
    s->now_ns = 1000000000000ull;
    for (int i = 0; i < n; i++) {
        s->procs[i].live = NCG_LIVE_ALIVE;
        s->procs[i].first_member = i;
        s->procs[i].nmembers = 1;
        struct ncg_cli_member *m = &s->members[n - 1 - i]; /* unsorted on purpose */
        m->proc = i;
        m->state = NCG_COMM_ACTIVE;
        m->comm_id = 42;
        m->rank = i;
        m->nranks = n;
        m->coll_seq = seq[i];
        m->last_ns = s->now_ns - 1000;
        m->tail_first = seq[i] > NCG_CLI_TAIL ? seq[i] - NCG_CLI_TAIL : 0;
        m->ntail = (uint32_t)(seq[i] - m->tail_first);
        for (uint32_t k = 0; k < m->ntail; k++) {
            m->tail_ok[k] = 1;
            m->tail[k].seq = m->tail_first + k;
            m->tail[k].func = NCG_F_ALLREDUCE;
            m->tail[k].count = 8;
            m->tail[k].dtype = 7;
            m->tail[k].root_or_peer = -1;
            m->tail[k].digest = 100 + m->tail_first + k;
        }
    }
}

static struct ncg_cli_member *by_rank(struct ncg_snap *s, int r)
{
    for (int i = 0; i < s->nmembers; i++)
        if (s->members[i].rank == r)
            return &s->members[i];
    return NULL;
}

static void test_view(void)
{
    struct ncg_snap s;
    struct ncg_view v;
    uint64_t seq[4] = {20, 20, 19, 20};
    snap_init(&s, 4, seq);
    CHECK(ncg_view_build(&s, &v) == 0);
    CHECK(v.ncomms == 1 && v.comms[0].nmembers == 4 && v.comms[0].nactive == 4);
    CHECK(v.comms[0].min_seq == 19 && v.comms[0].max_seq == 20 && v.comms[0].nbehind == 1);
    CHECK(s.members[v.comms[0].members[0]].rank == 0 && s.members[v.comms[0].members[3]].rank == 3);
    CHECK(ncg_view_is_behind(&s, &v.comms[0], v.comms[0].members[2]));
    CHECK(!v.comms[0].mismatch);
    ncg_view_free(&v);

    /* a dead member is not active: it is neither behind nor compared */
    s.procs[by_rank(&s, 2)->proc].live = NCG_LIVE_DEAD;
    CHECK(ncg_view_build(&s, &v) == 0);
    CHECK(v.comms[0].nactive == 3 && v.comms[0].nbehind == 0 && v.comms[0].min_seq == 20);
    ncg_view_free(&v);
    s.procs[by_rank(&s, 2)->proc].live = NCG_LIVE_ALIVE;

    /* rank 1 issued a different count at slot 18 (a common slot) */
    struct ncg_cli_member *m1 = by_rank(&s, 1);
    m1->tail[18 - m1->tail_first].count = 9;
    CHECK(ncg_view_build(&s, &v) == 0);
    CHECK(v.comms[0].mismatch == 1 && v.comms[0].mismatch_slot == 18 && v.comms[0].ncalls == 2);
    CHECK(v.comms[0].calls[0].nmembers + v.comms[0].calls[1].nmembers == 4);
    ncg_view_free(&v);
    m1->tail[18 - m1->tail_first].count = 8;

    /* same fields, different chained digest at the last common slot: earlier divergence */
    m1->tail[18 - m1->tail_first].digest = 7;
    CHECK(ncg_view_build(&s, &v) == 0);
    CHECK(v.comms[0].mismatch == 2 && v.comms[0].mismatch_slot == 18);
    ncg_view_free(&v);
    m1->tail[18 - m1->tail_first].digest = 100 + 18;

    /* an unreadable record is never compared */
    m1->tail[18 - m1->tail_first].count = 9;
    m1->tail_ok[18 - m1->tail_first] = 0;
    CHECK(ncg_view_build(&s, &v) == 0);
    CHECK(!v.comms[0].mismatch);
    ncg_view_free(&v);
    ncg_snap_free(&s);
}

static void test_ranks(void)
{
    char b[64];
    int v[] = {0, 1, 2, 4, 5, 6, 7, 9};
    ncg_cli_fmt_ranks(b, sizeof(b), v, 8);
    CHECK(strcmp(b, "0-2,4-7,9") == 0);
    ncg_cli_fmt_ranks(b, sizeof(b), v, 0);
    CHECK(strcmp(b, "") == 0);
    ncg_cli_fmt_ranks(b, 4, v, 8); /* truncated, still terminated */
    CHECK(strlen(b) < 4);
    int u[] = {9, 2, 7, 2, 0, 5};
    ncg_cli_sort_ints(u, 6);
    ncg_cli_fmt_ranks(b, sizeof(b), u, 6);
    CHECK(strcmp(b, "0,2,2,5,7,9") == 0);
    ncg_cli_sort_ints(u, 0); /* nothing to sort */
    CHECK(u[0] == 0);
}

/* A file read whole up to its size limit, refused one byte past it. */
static void test_slurp(void)
{
    const char *tmp = getenv("NCG_TMP");
    char path[512];
    snprintf(path, sizeof(path), "%s/unit-slurp.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    CHECK(write(fd, "{\"a\":1}", 7) == 7);
    close(fd);
    size_t len = 0;
    char *s = ncg_cli_slurp(path, 7, &len);
    CHECK(s && len == 7 && strcmp(s, "{\"a\":1}") == 0);
    free(s);
    CHECK(ncg_cli_slurp(path, 6, &len) == NULL);
    unlink(path);
    CHECK(ncg_cli_slurp(path, 7, &len) == NULL);
}

static void test_json(void)
{
    const char *doc =
        "{\"format\":\"ncclguard-report\",\"version\":1,\"a\":[1,-2.5e3,true,false,null,"
        "{\"s\":\"q\\\"\\u00e9\\n\"}],\"comm\":{\"id\":\"ab\",\"size\":4}}";
    size_t len = strlen(doc), at;
    struct ncg_json *j = ncg_cli_json_parse(doc, len, &at);
    CHECK(j != NULL);
    CHECK(strcmp(ncg_cli_json_s(j, "format", ""), "ncclguard-report") == 0);
    CHECK(ncg_cli_json_n(j, "version", 0) == 1);
    CHECK(ncg_cli_json_n(ncg_cli_json_get(j, "comm"), "size", 0) == 4);
    const struct ncg_json *a = ncg_cli_json_get(j, "a");
    CHECK(a && a->n == 6 && a->kids[1]->num == -2500 && a->kids[2]->type == NCG_JSON_BOOL);
    CHECK(a && strcmp(ncg_cli_json_s(a->kids[5], "s", ""), "q\"\xc3\xa9\n") == 0);
    ncg_cli_json_free(j);
    /* every strict prefix is malformed and must be rejected cleanly */
    for (size_t n = 0; n < len; n++) {
        char *p = malloc(n + 1); /* exact size: ASan catches any over-read */
        memcpy(p, doc, n);
        p[n] = 0;
        j = ncg_cli_json_parse(p, n, &at);
        CHECK(j == NULL);
        ncg_cli_json_free(j);
        free(p);
    }
    const char *bad[] = {"",    "{",     "[1,]",        "{\"a\"}",   "{\"a\":1,}", "\"\\x\"",
                         "01x", "[1 2]", "{\"a\":1} x", "\"\\u12\"", "nul",        "\"a\nb\""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        j = ncg_cli_json_parse(bad[i], strlen(bad[i]), &at);
        CHECK(j == NULL);
        ncg_cli_json_free(j);
    }
    /* deep nesting is bounded, not a stack overflow */
    size_t deep = 100000;
    char *d = malloc(deep);
    memset(d, '[', deep);
    CHECK(ncg_cli_json_parse(d, deep, &at) == NULL);
    free(d);
}

/* Processes in VERDICT state grouped by verdict, and their one-line summary. */
static void test_vgroups(void)
{
    enum { N = 6 };
    struct ncg_snap s;
    memset(&s, 0, sizeof(s));
    s.procs = calloc(N, sizeof(*s.procs));
    s.members = calloc(N, sizeof(*s.members));
    s.nprocs = s.nmembers = N;
    /* procs in scrambled rank order; comm 7: comm rank r is global rank 8 + r */
    static const int comm_rank[N] = {2, 0, 3, 1, 4, 5};
    for (int i = 0; i < N; i++) {
        struct ncg_cli_proc *p = &s.procs[i];
        p->pid = 100 + i;
        p->global_rank = 8 + comm_rank[i];
        p->first_member = i;
        p->nmembers = 1;
        p->state = NCG_PROC_VERDICT;
        p->live = NCG_LIVE_DEAD;
        p->verdict_kind = 1;
        p->verdict_comm = 7;
        snprintf(p->verdict_text, sizeof(p->verdict_text), "MISMATCH on comm 7: x");
        snprintf(p->report_path, sizeof(p->report_path), "/r/ncclguard-report.h.%d.json", 100 + i);
        s.members[i].proc = i;
        s.members[i].comm_id = 7;
        s.members[i].rank = comm_rank[i];
    }
    s.procs[3].live = NCG_LIVE_VERDICT; /* still running (warn): same group, not ended */
    s.procs[4].verdict_kind = 5;        /* another verdict on the same comm */
    s.procs[5].state = NCG_PROC_ALIVE;  /* no verdict */
    s.procs[5].live = NCG_LIVE_ALIVE;
    CHECK(ncg_cli_ended_by_verdict(&s.procs[0]) && !ncg_cli_ended_by_verdict(&s.procs[3]) &&
          !ncg_cli_ended_by_verdict(&s.procs[5]));
    struct ncg_vgroup *g;
    int ng = ncg_vgroups_build(&s, 1, &g);
    CHECK(ng == 2);
    if (ng == 2) {
        CHECK(g[0].nprocs == 4 && g[0].nended == 3 && g[0].comm == 7 && g[0].kind == 1);
        CHECK(g[0].procs[0] == 1 && g[0].procs[1] == 3 && g[0].procs[2] == 0 && g[0].procs[3] == 2);
        int r[4];
        CHECK(ncg_vgroup_ranks(&s, &g[0], 0, r) == 4 && r[0] == 8 && r[3] == 11);
        CHECK(ncg_vgroup_ranks(&s, &g[0], 1, r) == 4 && r[0] == 0 && r[3] == 3);
        char line[1024];
        ncg_vgroup_fmt(line, sizeof(line), &s, &g[0]);
        CHECK(strcmp(line, "verdict on ranks 8-11 (comm ranks 0-3; 4 processes on this host): "
                           "MISMATCH on comm 7: x; reports in /r") == 0);
        ncg_vgroup_fmt(line, sizeof(line), &s, &g[1]);
        CHECK(strcmp(line, "verdict on rank 12 (comm rank 4; 1 process on this host): MISMATCH "
                           "on comm 7: x; report /r/ncclguard-report.h.104.json") == 0);
        /* reports in two directories, one process without a report; same global and comm ranks */
        snprintf(s.procs[2].report_path, sizeof(s.procs[2].report_path), "/q/a.json");
        s.procs[3].report_path[0] = 0;
        for (int i = 0; i < N; i++)
            s.procs[i].global_rank = comm_rank[i];
        ncg_vgroup_fmt(line, sizeof(line), &s, &g[0]);
        CHECK(strcmp(line, "verdict on ranks 0-3 (4 processes on this host): MISMATCH on comm 7: "
                           "x; reports in /r, /q") == 0);
    }
    ncg_vgroups_free(g, ng > 0 ? ng : 0);
    /* a different summary is another line, but the same alert (grouped without the text) */
    snprintf(s.procs[0].verdict_text, sizeof(s.procs[0].verdict_text), "other");
    ng = ncg_vgroups_build(&s, 1, &g);
    CHECK(ng == 3);
    ncg_vgroups_free(g, ng > 0 ? ng : 0);
    ng = ncg_vgroups_build(&s, 0, &g);
    CHECK(ng == 2);
    ncg_vgroups_free(g, ng > 0 ? ng : 0);
    free(s.procs);
    free(s.members);
}

int main(void)
{
    test_read_record();
    test_view();
    test_ranks();
    test_vgroups();
    test_json();
    test_slurp();
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("cli unit: all checks passed\n");
    return 0;
}
