/* Unit tests of the verdicts a process decides on its own (interpose/judge/local.c): RANK DIED
 * of the checker's or a relay's process in each of its namings, CHECKER LOST flat and in a
 * tree, RANK EXITED of the checker's process, of members before it, and when none is due; the
 * ranks a SHUTDOWN names, with their counts, in the verdict and its headline (issue 36); a
 * SHUTDOWN's entries taken for one comm (ncg_sd_facts_take). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "local.h"

NCG_CHECK_PROGRAM("local_test");

/* A rendered text against the one wanted; both printed when they differ. */
static void expect(const char *what, const char *got, const char *want)
{
    CHECKF(strcmp(got, want) == 0, "%s:\n  got  \"%s\"\n  want \"%s\"", what, got, want);
}

static const struct ncg_local_self self = {0xabcull, 4, 2, 7, 15};

static void died(int rootlost, int relay, uint32_t node, int32_t root_grank, int32_t grank,
                 const char *subject, const char *detail)
{
    struct ncg_local_holder h = {rootlost,   relay, node, 0,    root_grank,
                                 "10.0.0.1", grank, 4242, "n1", "connection lost"};
    struct ncg_verdict *v = ncg_local_rank_died(&self, &h);
    CHECK(v && v->kind == NCG_V_RANK_DIED && v->severity == NCG_SEV_ERROR);
    if (!v)
        return;
    CHECK(v->comm_id == 0xabc && v->nranks == 4 && v->members[2] == 7 && v->counts[2] == 15);
    CHECK(v->members[0] == -1 && v->counts[0] == -1);
    expect("RANK DIED subject", v->subject, subject);
    expect("RANK DIED detail", v->detail, detail);
    ncg_verdict_free(v);
}

static void exited(uint64_t count, uint64_t final, uint64_t left, int verdict, const char *subject,
                   const char *detail)
{
    struct ncg_local_self s = self;
    s.count = count;
    struct ncg_verdict *v = ncg_local_rank_exited(&s, final, left, verdict, 3, NULL);
    if (!subject) {
        CHECK(v == NULL);
        ncg_verdict_free(v);
        return;
    }
    CHECK(v && v->kind == NCG_V_RANK_EXITED && v->severity == NCG_SEV_ERROR);
    if (!v)
        return;
    CHECK(v->members[2] == 7 && v->counts[2] == (int64_t)count); /* and in the detail */
    CHECK(v->slot == (int64_t)(final < left ? final : left));
    expect("RANK EXITED subject", v->subject, subject);
    expect("RANK EXITED detail", v->detail, detail);
    ncg_verdict_free(v);
}

/* RANK EXITED through a slot that stopped completing after the checker's process left. */
static void exited_wait(void)
{
    struct ncg_local_self s = self;                       /* issued 15 */
    CHECK(!ncg_local_exited_wait(&s, 15, 1.0, 15, 0, 3)); /* nothing incomplete */
    CHECK(!ncg_local_exited_wait(&s, 14, 1.0, 14, 0, 3)); /* the leaver never issued slot 14 */
    CHECK(!ncg_local_exited_wait(&s, 14, 1.0, UINT64_MAX, 0, 3)); /* it held no rank there */
    struct ncg_verdict *v = ncg_local_exited_wait(&s, 14, 0.5, 15, 1, 3);
    CHECK(v && v->kind == NCG_V_RANK_EXITED && v->slot == 14);
    if (!v)
        return;
    expect("RANK EXITED (wait) subject", v->subject, "holding the checker (global rank 3)");
    expect("RANK EXITED (wait) detail", v->detail,
           NCG_EXITED_VERDICT " after 15 calls without completing slot 14; this rank waits in it "
                              "(no progress for 0.5 s)");
    ncg_verdict_free(v);
}

/* The headline of v (ncg_verdict_summary) from ": " after the communicator. */
static const char *headline(const struct ncg_verdict *v, char *buf, size_t cap)
{
    ncg_verdict_summary(v, buf, cap);
    const char *p = strstr(buf, "): ");
    return p ? p + 3 : buf;
}

/* The job: 4 ranks, 100 AllReduces, every rank but one destroys the comm and exits, the
 * checker's process among them; the odd one issues a 101st. A SHUTDOWN that names who left gives
 * their comm ranks and counts; one that does not, the checker's process and the others. */
static void gone_named(void)
{
    char buf[512];
    struct ncg_local_self s = {0xabcull, 4, 1, 1, 101};
    int32_t r[] = {2, 3, 1};
    uint64_t c[] = {100, 100, 100};
    struct ncg_local_gone g = {0, r, c, 2};
    struct ncg_verdict *v = ncg_local_rank_exited(&s, 100, 100, 0, 0, &g);
    CHECK(v && v->slot == 100);
    if (v) {
        expect("named subject", v->subject, "0,2-3");
        CHECK(v->counts[0] == 100 && v->counts[1] == 101 && v->counts[2] == 100 &&
              v->counts[3] == 100);
        CHECK(v->members[0] == 0 && v->members[1] == 1);
        expect("named detail", v->detail, "left after 100 calls; this rank issued 101");
        expect("named headline", headline(v, buf, sizeof buf),
               "ranks 0,2-3 exited while rank 1 issued calls they will never match");
        ncg_verdict_free(v);
    }
    /* the odd rank is 0 and the checker's process stays (its own rank absent from the list) */
    s.rank = 0;
    s.global_rank = 0;
    int32_t r0[] = {1, 2, 3};
    struct ncg_local_gone g0 = {-1, r0, c, 3};
    v = ncg_local_rank_exited(&s, UINT64_MAX, 100, 0, 0, &g0);
    CHECK(v != NULL);
    if (v) {
        expect("named subject (odd rank 0)", v->subject, "1-3");
        expect("named headline (odd rank 0)", headline(v, buf, sizeof buf),
               "ranks 1-3 exited while rank 0 issued calls they will never match");
        ncg_verdict_free(v);
    }
    /* one rank left, ended by a verdict: singular */
    s.rank = 1;
    s.global_rank = 1;
    struct ncg_local_gone g1 = {2, NULL, NULL, 0};
    v = ncg_local_rank_exited(&s, 100, UINT64_MAX, 1, 5, &g1);
    CHECK(v && v->members[2] == 5);
    if (v) {
        expect("named headline (one)", headline(v, buf, sizeof buf),
               "global rank 5 (comm rank 2) was ended by ncclguard's abort while global rank 1 "
               "(comm rank 1) issued calls it will never match");
        ncg_verdict_free(v);
    }
    /* a rank still at or past this one's count is not among those that left */
    int32_t r2[] = {2, 3};
    uint64_t c2[] = {100, 101};
    struct ncg_local_gone g2 = {0, r2, c2, 2};
    v = ncg_local_rank_exited(&s, 100, 100, 0, 0, &g2);
    CHECK(v != NULL);
    if (v) {
        expect("named subject (partial)", v->subject, "0,2");
        ncg_verdict_free(v);
    }
    /* the fallback's headline: plural agreement */
    s.rank = s.global_rank = 2;
    v = ncg_local_rank_exited(&s, 10, 10, 0, 0, NULL);
    CHECK(v != NULL);
    if (v) {
        expect("fallback headline", headline(v, buf, sizeof buf),
               "rank holding the checker (global rank 0) and the ranks that left before it exited "
               "while rank 2 issued calls they will never match");
        ncg_verdict_free(v);
    }
}

/* A SHUTDOWN's entries taken for one comm: the first is the leaver's own, the later ones the
 * members that left before it (the lowest count kept, their ranks in order); another comm's
 * entries and an unknown rank are not taken. */
static void sd_facts(void)
{
    struct ncg_msg_goodbye g;
    memset(&g, 0, sizeof g);
    g.flags = NCG_BYE_VERDICT;
    uint64_t id[] = {7, 9, 7, 7, 7};
    uint32_t rk[] = {2, 0, 5, NCG_BYE_ANYRANK, 6};
    uint64_t cnt[] = {30, 1, 12, 9, 20};
    for (g.n = 0; g.n < 5; g.n++) {
        g.comm_id[g.n] = id[g.n];
        g.rank[g.n] = rk[g.n];
        g.count[g.n] = cnt[g.n];
    }
    struct ncg_sd_facts f;
    ncg_sd_facts_reset(&f);
    CHECK(f.final == UINT64_MAX && f.left == UINT64_MAX && f.rank == -1 && f.ngone == 0);
    CHECK(ncg_sd_facts_take(&f, &g, 7) == 1);
    CHECK(f.final == 30 && f.rank == 2 && f.verdict == 1 && f.left == 9);
    CHECK(f.ngone == 2 && f.gone_rank[0] == 5 && f.gone_count[0] == 12 && f.gone_rank[1] == 6 &&
          f.gone_count[1] == 20);
    CHECK(ncg_sd_facts_take(&f, &g, 8) == 0 && f.final == 30); /* not named: unchanged */
}

int main(void)
{
    const char *plain = "pid 4242 on n1, connection lost";
    exited_wait();
    died(0, 0, 0, 0, 5, "holding the checker (global rank 5)", plain);
    died(0, 0, 0, 0, -1, "holding the checker", plain);
    died(0, 1, 0, 9, 5, "holding the checker (global rank 9)", plain); /* the root node's relay */
    died(0, 1, 0, -1, 5, "holding the checker (the relay tree's root at 10.0.0.1)", plain);
    died(0, 1, 3, 9, 5, "holding the relay of node 3 (global rank 5)", plain);
    died(0, 1, 3, 9, -1, "holding the relay of node 3", plain);
    died(1, 1, 3, 9, 5, "holding the checker (global rank 9)",
         "this node's relay (pid 4242 on n1) lost it: its process died or is unreachable");

    struct ncg_verdict *v = ncg_local_checker_lost(&self, 0, "h:1", 12.34, "connection lost", 10.0);
    CHECK(v && v->kind == NCG_V_CHECKER_LOST && v->counts[2] == 15 && v->members[2] == 7);
    if (v) {
        expect("CHECKER LOST subject", v->subject, "the standalone checker at h:1");
        expect("CHECKER LOST detail", v->detail,
               "unreachable for 12.3 s (connection lost), and this process issued no call on "
               "this communicator for 10 s (15 so far)");
        ncg_verdict_free(v);
    }
    v = ncg_local_checker_lost(&self, 1, "the relay tree's root at h:1", 2, "x", 0.5);
    CHECK(v != NULL);
    if (v) {
        expect("CHECKER LOST subject (tree)", v->subject, "the relay tree's root at h:1");
        ncg_verdict_free(v);
    }

    exited(15, 15, UINT64_MAX, 0, NULL, NULL); /* nobody left before this rank's count */
    exited(15, UINT64_MAX, UINT64_MAX, 0, NULL, NULL);
    exited(15, 10, UINT64_MAX, 0, "holding the checker (global rank 3)",
           "left after 10 calls; this rank issued 15");
    exited(15, 10, UINT64_MAX, 1, "holding the checker (global rank 3)",
           NCG_EXITED_VERDICT " after 10 calls; this rank issued 15");
    exited(15, 12, 8, 1, "holding the checker (global rank 3) and the ranks that left before it",
           "left after 8 calls; this rank issued 15");
    /* the others left at the host's own count (they leave together): named too (before: only the
     * checker's process) */
    exited(15, 10, 10, 0, "holding the checker (global rank 3) and the ranks that left before it",
           "left after 10 calls; this rank issued 15");
    gone_named();
    sd_facts();
    exited(15, 20, 8, 0, "that left before the checker's process (global rank 3)",
           "left after 8 calls; this rank issued 15");
    return ncg_check_done();
}
