/* Unit tests of the verdicts a process decides on its own (interpose/judge/local.c): RANK DIED
 * of the checker's or a relay's process in each of its namings, CHECKER LOST flat and in a
 * tree, RANK EXITED of the checker's process, of members before it, and when none is due. */
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
    struct ncg_verdict *v = ncg_local_rank_exited(&s, final, left, verdict, 3);
    if (!subject) {
        CHECK(v == NULL);
        ncg_verdict_free(v);
        return;
    }
    CHECK(v && v->kind == NCG_V_RANK_EXITED && v->severity == NCG_SEV_ERROR);
    if (!v)
        return;
    CHECK(v->members[2] == 7 && v->counts[2] == -1); /* its count is in the detail */
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
    exited(15, 12, 8, 1, "holding the checker (global rank 3), and others that left before it",
           "left after 8 calls; this rank issued 15");
    exited(15, 20, 8, 0, "that left before the checker's process (global rank 3)",
           "left after 8 calls; this rank issued 15");
    return ncg_check_done();
}
