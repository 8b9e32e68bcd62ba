/* Relay unit tests, progress verdicts through the tree: LAG (a rank behind), STUCK (nothing
 * completes; sampled completion) and SLOW (the straggler: RSLOW's codec, the pending table,
 * merged slots per relay, jitter, partial and late slots). */
#include "relay_unit.h"

/* LAG: rank 5 (beneath two relays) stays 2 calls behind and nobody progresses: one warning
 * (the checking goes on), or with lag_abort_s an error verdict. */
void test_lag(void)
{
    T.lag_warn_s = 1;
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = i == 5 ? 8 : 10;
    report_all();
    for (int t = 0; t < 5; t++)
        tick_all(3);
    CHECK(T.cl[0].verdicts == 0); /* 0.5 s: not yet */
    for (int t = 0; t < 25; t++) {
        report_all();
        tick_all(3);
    }
    for (int i = 0; i < T.ncl; i++) /* once, to every rank */
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].v && T.cl[i].v->kind == NCG_V_LAG &&
              T.cl[i].v->severity == NCG_SEV_WARN && !strcmp(T.cl[i].v->subject, "5"));
    if (T.cl[0].v)
        CHECK(strstr(T.cl[0].v->detail, "(slot counts 8..10)") != NULL);
    /* a warning does not end the checking: a mismatch is still found */
    T.cl[3].odd_from = 12;
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 20;
    report_all();
    for (int t = 0; t < 5; t++)
        tick_all(3);
    CHECK(T.cl[0].verdicts == 2);
    tree_free(3);
    T.lag_abort_s = 2;
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = i == 5 ? 8 : 10;
    for (int t = 0; t < 30; t++) {
        report_all();
        tick_all(3);
    }
    CHECK(T.cl[0].verdicts == 2 && T.cl[4].verdicts == 2); /* the warning, then the error */
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.verdicts == 2);
    tree_free(3);
    T.lag_warn_s = T.lag_abort_s = 0;
}

/* STUCK through the tree: every rank (under the root, relay 1, relay 2) issued 31 slots and
 * completed 30 (slot 30 stalled): one warning per rank once nothing completed for 1 s, naming
 * the ranks at the minimum and the slot; with rank 0 past it, the others only. */
static void stuck_run(int ticks)
{
    for (int t = 0; t < ticks; t++) {
        report_all();
        tick_all(3);
    }
}

static void stuck_tree(uint64_t count, uint64_t done)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++) {
        T.cl[i].count = count;
        T.cl[i].done = T.cl[i].done_hi = done;
    }
}

void test_stuck(void)
{
    T.stuck_warn_s = 1;
    stuck_tree(31, 30);
    stuck_run(5);
    CHECK(T.cl[0].verdicts == 0); /* 0.5 s: not yet */
    stuck_run(25);
    for (int i = 0; i < T.ncl; i++) /* once, to every rank */
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].v && T.cl[i].v->kind == NCG_V_STUCK &&
              T.cl[i].v->severity == NCG_SEV_WARN && T.cl[i].v->slot == 30 &&
              !strcmp(T.cl[i].v->subject, "0-5"));
    const struct ncg_verdict *v = T.cl[4].v;
    if (v) {
        CHECK(!strncmp(v->detail, "completed on none for ", 22) && !strstr(v->detail, "sampled"));
        CHECK(v->notes && strstr(v->notes, "a hang inside NCCL") == v->notes &&
              strstr(v->notes, "slot 30 is the same call on every rank\n") &&
              strstr(v->notes, "\nlast slot completed on every rank: 29\n") &&
              strstr(v->notes, "not gathered through the relay tree") &&
              !strstr(v->notes, "sampled"));
        CHECK(v->ncalls == 0 && v->last_agreed >= 30); /* the client names its own call */
        char sum[512];
        struct ncg_verdict tmp = *v;
        tmp.nranks = 6;
        ncg_verdict_summary(&tmp, sum, sizeof sum);
        CHECK(strstr(sum, ": slot 30 issued identically by all 6 ranks, completed on none") !=
              NULL);
    }
    tree_free(3);

    /* rank 0 completed slot 30; ranks 1-5 (under all three relays) did not */
    stuck_tree(31, 30);
    T.cl[0].done = T.cl[0].done_hi = 31;
    stuck_run(30);
    CHECK(T.cl[3].verdicts == 1 && T.cl[3].v && T.cl[3].v->kind == NCG_V_STUCK);
    if (T.cl[3].v) {
        CHECK(!strcmp(T.cl[3].v->subject, "1-5") && T.cl[3].v->slot == 30);
        CHECK(!strncmp(T.cl[3].v->detail, "not completed on ranks 1-5 for ", 31));
    }
    tree_free(3);
    /* only rank 4 (two levels down) did not */
    stuck_tree(31, 31);
    T.cl[4].done = T.cl[4].done_hi = 30;
    stuck_run(30);
    CHECK(T.cl[0].verdicts == 1 && T.cl[0].v && T.cl[0].v->kind == NCG_V_STUCK);
    if (T.cl[0].v)
        CHECK(!strcmp(T.cl[0].v->subject, "4") &&
              !strncmp(T.cl[0].v->detail, "not completed on rank 4 for ", 28));
    tree_free(3);

    /* the warning, then the error (a verdict: the checking ends) */
    T.stuck_abort_s = 2;
    stuck_tree(31, 30);
    stuck_run(40);
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 2);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.verdicts == 2);
    tree_free(3);
    T.stuck_abort_s = 0;

    /* rank 5 has not issued slot 30 (LAG territory): no STUCK */
    stuck_tree(31, 30);
    T.cl[5].count = 30;
    stuck_run(30);
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 0);
    tree_free(3);
    /* completion progresses (sync: counts too), each report: no STUCK */
    stuck_tree(31, 30);
    for (int t = 0; t < 30; t++) {
        for (int i = 0; i < T.ncl; i++) {
            T.cl[i].count++;
            T.cl[i].done = T.cl[i].done_hi = T.cl[i].done + 1;
        }
        stuck_run(1);
    }
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 0);
    tree_free(3);
    /* sampled (asynchronous NCCL): the hosts keep issuing (counts grow), completion does not;
     * completed between 28 and 31 on every rank: the range */
    stuck_tree(33, 28);
    for (int i = 0; i < T.ncl; i++) {
        T.cl[i].done_hi = 31;
        T.cl[i].sampled = i == 4;
    }
    for (int t = 0; t < 30; t++) {
        for (int i = 0; i < T.ncl; i++)
            T.cl[i].count++;
        stuck_run(1);
    }
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].v && T.cl[i].v->kind == NCG_V_STUCK &&
              T.cl[i].v->slot == 28 && !strcmp(T.cl[i].v->subject, "0-5"));
    v = T.cl[1].v;
    if (v) {
        CHECK(strstr(v->detail, "completed on none for ") == v->detail &&
              strstr(v->detail, " s (or a later one up to slot 31: completion is sampled by CUDA "
                                "events)") != NULL);
        CHECK(v->notes &&
              strstr(v->notes, "the stalled slot is one of 28-31, identical on every rank") &&
              strstr(v->notes, "last slot completed on every rank: at least 27\n"));
    }
    tree_free(3);
    /* sampled, another comm lagging (a member has not issued its first incomplete slot while
     * others wait): possibly queued behind it, no STUCK */
    stuck_tree(33, 28);
    for (int i = 0; i < T.ncl; i++) {
        T.cl[i].done_hi = 31;
        T.cl[i].sampled = 1;
    }
    for (int t = 0; t < 30; t++) {
        report_all();
        for (int i = 0; i < T.ncl; i++) { /* comm 0xc1: rank 3 issued 5, the others 7, done 5 */
            struct client *c = &T.cl[i];
            struct ncg_msg m = {.type = NCG_MSG_REPORT};
            m.u.report.n = 1;
            m.u.report.e[0] = (struct ncg_report_entry){.comm_id = 0xc1,
                                                        .nranks = (uint32_t)T.ncl,
                                                        .rank = (uint32_t)c->rank,
                                                        .count = i == 3 ? 5 : 7,
                                                        .global_rank = c->rank,
                                                        .done = 5,
                                                        .done_hi = 5,
                                                        .flags = NCG_REP_SAMPLED};
            push(TO_CHILD, c->relay, c->conn, &m);
        }
        pump();
        tick_all(3);
    }
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 0);
    tree_free(3);
    T.stuck_warn_s = 0;
}

/* ---- SLOW through the tree (relay_slow.c) ---- */

/* RSLOW: slots with and without who round-trip; bad figures are refused. */
void test_codec_rslow(void)
{
    static struct ncg_msg m, o;
    static struct ncg_msg_rslow x;
    memset(&x, 0, sizeof x);
    x.n = 2;
    x.e[0] = (struct ncg_rslow_ent){.comm_id = 0xc0, .nranks = 16384, .ns = 2};
    x.e[0].s[0] = (struct ncg_rslow_slot){.slot = 48,
                                          .n = 8,
                                          .argmin = 7001,
                                          .side = 1,
                                          .has_who = 1,
                                          .min_ns = 2000000,
                                          .sum_ns = 56000000,
                                          .step_ns = 288000000,
                                          .grank = 7001,
                                          .pid = 4242};
    strcpy(x.e[0].s[0].host, "node7");
    x.e[0].s[1] = (struct ncg_rslow_slot){.slot = 64,
                                          .n = 8,
                                          .argmin = -1,
                                          .min_ns = 3000,
                                          .sum_ns = 24000,
                                          .step_ns = 8000,
                                          .grank = -1};
    x.e[1] = (struct ncg_rslow_ent){.comm_id = 0xc1, .nranks = 2, .ns = 1};
    x.e[1].s[0] = (struct ncg_rslow_slot){.slot = 1,
                                          .n = 2,
                                          .argmin = 1,
                                          .min_ns = 1000,
                                          .sum_ns = 3000,
                                          .step_ns = 9000,
                                          .grank = -1};
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RSLOW;
    m.u.rslow = &x;
    roundtrip(&m, &o);
    CHECK(o.type == NCG_MSG_RSLOW && o.u.rslow && o.u.rslow->n == 2);
    if (o.type == NCG_MSG_RSLOW && o.u.rslow) {
        const struct ncg_rslow_slot *a = &o.u.rslow->e[0].s[0], *b = &o.u.rslow->e[0].s[1];
        CHECK(o.u.rslow->e[0].ns == 2 && o.u.rslow->e[0].nranks == 16384);
        CHECK(a->slot == 48 && a->n == 8 && a->argmin == 7001 && a->side == 1 && a->has_who &&
              a->min_ns == 2000000 && a->sum_ns == 56000000 && a->step_ns == 288000000 &&
              a->grank == 7001 && a->pid == 4242 && !strcmp(a->host, "node7"));
        CHECK(b->argmin == -1 && !b->has_who && b->grank == -1 && b->min_ns == 3000);
        CHECK(o.u.rslow->e[1].s[0].argmin == 1 && o.u.rslow->e[1].comm_id == 0xc1);
    }
    ncg_msg_release(&o);
    /* 16 bytes a slot without who: aggregates, not per-rank figures */
    CHECK(encode_decode(&m) > 0 && encode_decode(&m) < NCG_WIRE_HDR + 90);
    x.e[1].s[0].argmin = 2; /* not a rank of the comm */
    CHECK(encode_decode(&m) < 0);
    x.e[1].s[0].argmin = 1;
    x.e[1].s[0].n = 0;
    CHECK(encode_decode(&m) < 0);
    x.e[1].s[0].n = 3; /* more ranks than the comm has */
    CHECK(encode_decode(&m) < 0);
    x.e[1].s[0].n = 2;
    x.e[0].s[1].slot = 48; /* not increasing */
    CHECK(encode_decode(&m) < 0);
    x.e[0].s[1].slot = 64;
    x.e[1].s[0].min_ns = 4000; /* a minimum above the sum */
    CHECK(encode_decode(&m) < 0);
}

/* straggler.h's pending table and rule, which the flat coordinator and every relay share. */
void test_slow_pend(void)
{
    struct ncg_sg_pend p;
    memset(&p, 0, sizeof p);
    uint64_t last0 = 0, last1 = 0;
    struct ncg_sg_who w3 = {.grank = 3, .pid = 33, .host = "a"}, w5 = {.grank = 5, .host = "b"};
    struct ncg_sg_slot b, a;
    struct ncg_sg_who w;
    ncg_sg_slot_init(&b, 16);
    ncg_sg_slot_add(&b, 3, 5000, 30000, 0);
    CHECK(ncg_sg_pend_take(&p, &last0, &b, &w3, 1) == 1 && last0 == 17 && p.n == 1);
    CHECK(ncg_sg_pend_take(&p, &last0, &b, &w3, 1) == 0); /* not after its previous one */
    ncg_sg_slot_init(&b, 16); /* a subtree's merged figures: 2 ranks, min 2000 at rank 5 */
    ncg_sg_slot_add(&b, 5, 2000, 30000, 1);
    ncg_sg_slot_add(&b, 4, 9000, 30000, 0);
    CHECK(ncg_sg_pend_take(&p, &last1, &b, &w5, 2) == 1 && p.n == 1);
    CHECK(p.s[0].n == 3 && p.s[0].argmin == 5 && p.s[0].min_ns == 2000 && p.s[0].side == 1 &&
          p.s[0].sum_ns == 16000 && p.who[0].grank == 5 && !strcmp(p.who[0].host, "b"));
    CHECK(ncg_sg_fate(&p.s[0], 4, 0) == NCG_SG_HOLD);
    CHECK(ncg_sg_fate(&p.s[0], 4, 1) == NCG_SG_DROP); /* passed, one rank missing */
    CHECK(ncg_sg_fate(&p.s[0], 3, 0) == NCG_SG_FEED);
    CHECK(ncg_sg_fate(&p.s[0], 1, 1) == NCG_SG_DROP); /* one rank decides nothing */
    ncg_sg_slot_init(&b, 8);                          /* an older slot, added later */
    CHECK(ncg_sg_pend_take(&p, &last0, &b, &w3, 3) == 0 && p.n == 1); /* empty: not held */
    uint64_t l2 = 0;
    ncg_sg_slot_add(&b, 2, 2000, 30000, 0);
    CHECK(ncg_sg_pend_take(&p, &l2, &b, NULL, 3) == 1 && p.n == 2);
    CHECK(ncg_sg_pend_lowest(&p) >= 0 && p.s[ncg_sg_pend_lowest(&p)].slot == 8);
    ncg_sg_pend_pop(&p, ncg_sg_pend_lowest(&p), &a, &w);
    CHECK(a.slot == 8 && w.grank == -1 && p.n == 1 && p.s[0].slot == 16);
    for (uint64_t s = 100; s < 100 + NCG_SG_PEND; s++) { /* full: the oldest goes */
        uint64_t l = 0;
        ncg_sg_slot_init(&b, s);
        ncg_sg_slot_add(&b, 1, 1000, 1000, 0);
        ncg_sg_pend_take(&p, &l, &b, NULL, 4);
    }
    CHECK(p.n == NCG_SG_PEND && p.s[ncg_sg_pend_lowest(&p)].slot == 100);
}

/* Every client samples slot 16 j; rank `slow` (-1: none) is late by 6 ms of a 36 ms step (its
 * duration is the shortest), every rank jitters by 0..jit us; rank `mute` (-1: none) sends no
 * sample. Then two ticks carry the slots up. */
static void slow_steps(int from, int to, int slow, uint32_t jit, int mute)
{
    for (int j = from; j < to; j++) {
        for (int i = 0; i < T.ncl; i++) {
            struct client *c = &T.cl[i];
            c->count = 16 * (uint64_t)j + 1;
            if (c->rank == mute)
                continue;
            uint32_t d = (c->rank == slow ? 2000 : 8000) + (jit ? (uint32_t)rand() % jit : 0);
            c->slow[0] = (struct ncg_report_slow){16 * (uint64_t)j, d, j ? 36000 : 0, 0};
            c->nslow = 1;
        }
        report_all();
        tick_all(3);
        tick_all(3);
    }
}

static int slow_verdicts(int *named5)
{
    int n = 0;
    *named5 = 0;
    for (int i = 0; i < T.ncl; i++) {
        n += T.cl[i].verdicts;
        const struct ncg_verdict *v = T.cl[i].v;
        *named5 += v && v->kind == NCG_V_SLOW && v->severity == NCG_SEV_WARN &&
                   !strcmp(v->subject, "5") && strstr(v->detail, "global rank 5, pid 1005 on h");
    }
    return n;
}

/* Three levels: rank 5, two relays below the root, is slow. Each relay sends one merged slot
 * per sampled slot (the who of rank 5 once), the root names it once, on every rank, with its
 * global rank, pid and host; the root's view shows it. */
void test_slow_tree(void)
{
    srand(7);
    tree(1);
    slow_steps(0, 30, 5, 600, -1);
    int named5, n = slow_verdicts(&named5);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.by_kind[NCG_V_SLOW] == 1 && n == 6 && named5 == 6);
    CHECK(T.rslow_slots[2] >= 27 && T.rslow_slots[2] <= 29 && T.rslow_who[2] == 1);
    CHECK(T.rslow_slots[1] >= 27 && T.rslow_slots[1] <= 29 && T.rslow_who[1] == 1);
    CHECK(T.rslow_bytes[1] < 45L * T.rslow_slots[1]); /* a frame per slot and relay, no more */
    struct vseen s = view_of(0);
    CHECK(s.c.sg_rank == 5 && s.c.sg_grank == 5 && s.c.sg_pid == 1005 &&
          !strcmp(s.c.sg_host, "h") && !s.c.sg_device);
    CHECK(s.c.sg_share > 0.12 && s.c.sg_share < 0.16); /* (7000 - 2000) / 36000 = 13.9% */
    CHECK(s.c.sg_since_s > 0.5);
    s = view_of(2);
    CHECK(s.c.sg_rank == -1);       /* only the root decides */
    slow_steps(30, 40, 5, 600, -1); /* the same episode: not again */
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.by_kind[NCG_V_SLOW] == 1 && slow_verdicts(&named5) == 6);
    /* rank 5 recovers: once the window has been quiet for a window, the episode's end reaches
     * every rank (their status stops naming it), not counted as a warning; the root names none */
    slow_steps(40, 80, -1, 600, -1);
    ncg_relay_get_stats(T.r[0], &st);
    int ended = 0;
    for (int i = 0; i < T.ncl; i++)
        ended += T.cl[i].slow_ended;
    int nv = slow_verdicts(&named5);
    CHECKF(st.by_kind[NCG_V_SLOW] == 1 && st.verdicts == 1 && nv == 12 && ended == 6,
           "by_kind %llu verdicts %llu received %d ended %d",
           (unsigned long long)st.by_kind[NCG_V_SLOW], (unsigned long long)st.verdicts, nv, ended);
    CHECK(view_of(0).c.sg_rank == -1);
    tree_free(3);
}

/* Every rank jitters by 0-10% of the step, none slower: nobody is named. */
void test_slow_jitter(void)
{
    srand(11);
    tree(1);
    slow_steps(0, 80, -1, 3600, -1);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    int named5;
    CHECK(st.by_kind[NCG_V_SLOW] == 0 && slow_verdicts(&named5) == 0);
    CHECK(T.rslow_slots[2] >= 77); /* the figures did flow */
    tree_free(3);
}

/* Rank 4 sends no samples: relay 2 sends its partial slots up at the deadline (the subtree
 * passed them), and the root, missing a rank, drops them: nobody named from partial figures. */
void test_slow_partial(void)
{
    srand(3);
    tree(1);
    slow_steps(0, 40, 5, 600, 4);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    int named5;
    CHECK(st.by_kind[NCG_V_SLOW] == 0 && slow_verdicts(&named5) == 0);
    CHECK(T.rslow_slots[2] >= 30); /* sent at the deadline, with rank 5's figures only */
    tree_free(3);
}

/* A slot relay 1 sent up partial at its deadline (its child relay 2's figures late) whose late
 * figures come before relay 1's next RSLOW: the slot goes up once, not twice in one RSLOW (the
 * parent's decoder refuses an entry whose slots do not increase: the whole frame, and on a
 * socket the link). Seen with ncg-sim --samples at 131,072 ranks. */
void test_slow_late(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++) { /* every rank's first sample: no time per slot yet */
        T.cl[i].count = 1;
        T.cl[i].slow[0] = (struct ncg_report_slow){0, 8000, 0, 0};
        T.cl[i].nslow = 1;
    }
    report_all();
    tick_all(3);
    tick_all(3);
    for (int i = 0; i < T.ncl; i++) { /* slot 16: all but relay 2's ranks (4, 5) */
        T.cl[i].count = 17;
        if (T.cl[i].relay != 2) {
            T.cl[i].slow[0] = (struct ncg_report_slow){16, 8000, 36000, 0};
            T.cl[i].nslow = 1;
        }
    }
    report_all();
    T.now += 600000000ull; /* past relay 1's deadline for slot 16, no tick yet */
    T.cl[2].count = 33;    /* rank 2 (relay 1) samples slot 32: relay 1 sends 16 partial */
    T.cl[2].slow[0] = (struct ncg_report_slow){32, 8000, 36000, 0};
    T.cl[2].nslow = 1;
    report_all();
    for (int i = 0; i < T.ncl; i++) /* relay 2's ranks' slot 16, late: relay 2 sends it up */
        if (T.cl[i].relay == 2) {
            T.cl[i].slow[0] = (struct ncg_report_slow){16, 8000, 36000, 0};
            T.cl[i].nslow = 1;
        }
    report_all();
    tick_all(3);
    CHECK(T.rslow_unordered[1] == 0 && T.rslow_slots[1] == 1);
    CHECK(T.rslow_slots[2] == 1);
    tree_free(3);
}
