/* Unit tests of the checker's pure parts: wire encode/decode (round trips, every truncation,
 * corrupted frames), compact rank lists, call grouping, verdict codec, the diagnostic and
 * report rendering, and the coordinator state machine driven by simulated members (MISMATCH
 * found by narrowing over more than K slots, P2P MISMATCH, RANK DIED, RANK EXITED, LAG,
 * unauthenticated connections, no verdict while streams agree). Prints "ok N" lines; exit 0. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "diag.h"
#include "hash.h"
#include "ncclguard/shm.h"
#include "release.h"
#include "verdict.h"
#include "verdicts.h"
#include "wire.h"
#include "wire_io.h"

static int fails, checks;
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            fails++;                                                                               \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                        \
        }                                                                                          \
    } while (0)

static uint8_t buf[NCG_WIRE_HDR + NCG_WIRE_MAX_PAYLOAD];
static struct ncg_msg m1, m2;

static void roundtrip(const struct ncg_msg *m)
{
    long n = ncg_wire_encode(m, buf, sizeof buf);
    EXPECT(n >= (long)NCG_WIRE_HDR);
    if (n < 0)
        return;
    /* every proper prefix: "need more", never a message or a crash */
    for (long k = 0; k < n; k++) {
        long r = ncg_wire_decode(buf, (size_t)k, &m2);
        EXPECT(r == 0);
        if (r > 0)
            ncg_msg_release(&m2);
    }
    /* into a message holding garbage: decoding writes only what the type uses (wire.h), and
     * what it reads back below must not depend on the rest */
    memset(&m2, 0xa5, sizeof m2);
    long r = ncg_wire_decode(buf, (size_t)n, &m2);
    EXPECT(r == n);
    EXPECT(m2.type == m->type);
    if (m->type == NCG_MSG_REPORT) /* its entries byte for byte, padding zeroed */
        EXPECT(m2.u.report.n == m->u.report.n &&
               !memcmp(m2.u.report.e, m->u.report.e, sizeof *m->u.report.e * m->u.report.n));
    /* re-encoding the decoded message gives the same bytes */
    static uint8_t b2[sizeof buf];
    long n2 = ncg_wire_encode(&m2, b2, sizeof b2);
    EXPECT(n2 == n && memcmp(buf, b2, (size_t)n) == 0);
    ncg_msg_release(&m2);
}

static void test_wire(void)
{
    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_HELLO;
    m1.u.hello.token = 0x1122334455667788ull;
    m1.u.hello.pid = 42;
    m1.u.hello.global_rank = -1;
    strcpy(m1.u.hello.host, "node-a");
    roundtrip(&m1);

    /* the exit release's two frames: a communicator id each (v7) */
    for (int t = 0; t < 2; t++) {
        memset(&m1, 0, sizeof m1);
        m1.type = t ? NCG_MSG_RELEASE : NCG_MSG_DONE;
        m1.u.exit.comm_id = 0xfedcba9876543210ull;
        roundtrip(&m1);
        long n = ncg_wire_encode(&m1, buf, sizeof buf);
        EXPECT(n == (long)NCG_WIRE_HDR + 8);
        EXPECT(ncg_wire_decode(buf, (size_t)n, &m2) == n && m2.u.exit.comm_id == m1.u.exit.comm_id);
    }

    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_REPORT;
    m1.u.report.n = 3;
    for (int i = 0; i < 3; i++)
        m1.u.report.e[i] = (struct ncg_report_entry){0xabc + (uint64_t)i,
                                                     16,
                                                     (uint32_t)i,
                                                     1000 + (uint64_t)i,
                                                     i,
                                                     900 + (uint64_t)i,
                                                     77,
                                                     950 + (uint64_t)i,
                                                     (uint8_t)(i & NCG_REP_SAMPLED)};
    roundtrip(&m1);

    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_QUERY;
    m1.u.query.comm_id = 7;
    m1.u.query.qid = 9;
    m1.u.query.mode = NCG_QUERY_RECORDS;
    m1.u.query.n = NCG_WIRE_MAX_SLOTS;
    for (uint32_t i = 0; i < m1.u.query.n; i++)
        m1.u.query.slot[i] = 100 + i;
    roundtrip(&m1);
    /* v12: slots as differences, in any order and at the extremes */
    m1.u.query.qid = UINT32_MAX;
    m1.u.query.slot[0] = UINT64_MAX;
    m1.u.query.slot[1] = 0;
    m1.u.query.slot[2] = UINT64_MAX / 2 + 1;
    roundtrip(&m1);
    {
        long n = ncg_wire_encode(&m1, buf, sizeof buf);
        EXPECT(ncg_wire_decode(buf, (size_t)n, &m2) == n && m2.u.query.qid == UINT32_MAX &&
               m2.u.query.slot[0] == UINT64_MAX && m2.u.query.slot[1] == 0 &&
               m2.u.query.slot[2] == UINT64_MAX / 2 + 1 && m2.u.query.slot[3] == 103);
        /* a plain round's QUERY (one slot ~10^6): v11 spent 35 bytes */
        m1.u.query.n = 1;
        m1.u.query.qid = 200000;
        m1.u.query.slot[0] = 1000000;
        n = ncg_wire_encode(&m1, buf, sizeof buf);
        EXPECT(n > 0 && n <= 28);
    }
    m1.u.query.qid = 9;
    m1.u.query.n = NCG_WIRE_MAX_SLOTS;
    for (uint32_t i = 0; i < m1.u.query.n; i++)
        m1.u.query.slot[i] = 100 + i;
    /* a narrowing QUERY for some representatives (the relay tree's): they come back as sent;
     * a count of 0 or past NCG_QUERY_REPS is refused both ways */
    m1.u.query.n = 3;
    m1.u.query.nrep = NCG_QUERY_REPS;
    for (uint32_t i = 0; i < NCG_QUERY_REPS; i++)
        m1.u.query.rep[i] = 16383 - i;
    roundtrip(&m1);
    {
        long qn = ncg_wire_encode(&m1, buf, sizeof buf);
        EXPECT(ncg_wire_decode(buf, (size_t)qn, &m2) == qn && m2.u.query.nrep == NCG_QUERY_REPS &&
               m2.u.query.rep[0] == 16383 && m2.u.query.rep[3] == 16380);
        /* the representatives' count follows what a QUERY without them holds */
        m1.u.query.nrep = 0;
        size_t at = (size_t)ncg_wire_encode(&m1, buf, sizeof buf);
        m1.u.query.nrep = NCG_QUERY_REPS;
        EXPECT(at > NCG_WIRE_HDR && (long)at < qn);
        ncg_wire_encode(&m1, buf, sizeof buf);
        /* frames whose lengths match their counts, so only the count's bound refuses them:
         * a count of 0 and nothing after it, a count of 5 with 5 ranks (rank 0: a byte each) */
        uint32_t plen = (uint32_t)(at + 1 - NCG_WIRE_HDR);
        buf[at] = 0;
        buf[8] = (uint8_t)(plen >> 24), buf[9] = (uint8_t)(plen >> 16);
        buf[10] = (uint8_t)(plen >> 8), buf[11] = (uint8_t)plen;
        EXPECT(ncg_wire_decode(buf, at + 1, &m2) < 0);
        plen = (uint32_t)(at + 1 + (NCG_QUERY_REPS + 1) - NCG_WIRE_HDR);
        buf[at] = NCG_QUERY_REPS + 1;
        memset(buf + at + 1, 0, NCG_QUERY_REPS + 1);
        buf[8] = (uint8_t)(plen >> 24), buf[9] = (uint8_t)(plen >> 16);
        buf[10] = (uint8_t)(plen >> 8), buf[11] = (uint8_t)plen;
        EXPECT(ncg_wire_decode(buf, NCG_WIRE_HDR + plen, &m2) < 0);
        buf[at] = NCG_QUERY_REPS; /* the same frame with a count of 4: a byte left over */
        EXPECT(ncg_wire_decode(buf, NCG_WIRE_HDR + plen, &m2) < 0);
        plen -= 1;
        buf[11] = (uint8_t)plen; /* and without it: a valid frame */
        EXPECT(ncg_wire_decode(buf, NCG_WIRE_HDR + plen, &m2) == (long)(NCG_WIRE_HDR + plen));
        m1.u.query.nrep = NCG_QUERY_REPS + 1;
        EXPECT(ncg_wire_encode(&m1, buf, sizeof buf) < 0);
    }

    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_ANSWER;
    m1.u.answer.comm_id = 7;
    m1.u.answer.n = 2;
    m1.u.answer.a[0] =
        (struct ncg_answer){NCG_ANS_OK, 0xdead, {5, 64, -1, NCG_F_ALLREDUCE, 7, 0}, "main+0x10"};
    m1.u.answer.a[1] = (struct ncg_answer){NCG_ANS_GONE, 0, {6, 0, 0, 0, 0, 0}, ""};
    roundtrip(&m1);
    /* v12's varints: the extremes come back as sent (a root or peer of any int32) */
    m1.u.answer.qid = UINT32_MAX;
    m1.u.answer.rank = UINT32_MAX;
    m1.u.answer.a[0].call = (struct ncg_call){UINT64_MAX, UINT64_MAX, INT32_MIN, 255, 255, 255};
    m1.u.answer.a[1].call = (struct ncg_call){0, 0, INT32_MAX, 0, 0, 0};
    roundtrip(&m1);
    {
        long n = ncg_wire_encode(&m1, buf, sizeof buf);
        EXPECT(ncg_wire_decode(buf, (size_t)n, &m2) == n && m2.u.answer.qid == UINT32_MAX &&
               m2.u.answer.rank == UINT32_MAX && m2.u.answer.a[0].call.root == INT32_MIN &&
               m2.u.answer.a[0].call.count == UINT64_MAX &&
               m2.u.answer.a[1].call.root == INT32_MAX);
        /* a rank's answer in a digest round of a large job (slot ~10^6, rank 16,000): v11 spent
         * 64 bytes on it, most of the node-local traffic (BENCHMARKS.md, "Where the bytes go") */
        m1.u.answer.n = 1;
        m1.u.answer.qid = 200000;
        m1.u.answer.rank = 16000;
        m1.u.answer.a[0] = (struct ncg_answer){
            NCG_ANS_OK, 0x0123456789abcdefull, {1000000, 4096, -1, NCG_F_ALLREDUCE, 7, 0}, ""};
        n = ncg_wire_encode(&m1, buf, sizeof buf);
        EXPECT(n > 0 && n <= 48);
    }

    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_P2P;
    m1.u.p2p.n = 2;
    m1.u.p2p.r[0] = (struct ncg_p2p_rec){3, 32, 1, NCG_F_SEND, 7};
    m1.u.p2p.r[1] = (struct ncg_p2p_rec){3, 32, 0, NCG_F_RECV, 7};
    roundtrip(&m1);

    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_GOODBYE;
    m1.u.goodbye.flags = NCG_BYE_PROCESS;
    m1.u.goodbye.n = 1;
    m1.u.goodbye.comm_id[0] = 5;
    m1.u.goodbye.count[0] = 77;
    roundtrip(&m1);
    m1.type = NCG_MSG_SHUTDOWN;
    roundtrip(&m1);

    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_PING;
    roundtrip(&m1);

    /* WAIT (v2): blocked calls with call sites; a bad kind or a completed count above the
     * issued one is rejected */
    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_WAIT;
    m1.u.wait.n = 2;
    m1.u.wait.w[0] = (struct ncg_wait_ent){.comm_id = 7, .rank = 1, .tid = 99, .p2p = 0};
    m1.u.wait.w[0].call = (struct ncg_call){5, 1024, -1, NCG_F_ALLREDUCE, 7, 0};
    strcpy(m1.u.wait.w[0].site, "main+0x10 (app+0x1010)");
    m1.u.wait.w[1] = (struct ncg_wait_ent){.comm_id = 8, .rank = 0, .tid = 98, .p2p = 1};
    m1.u.wait.w[1].call = (struct ncg_call){3, 16, 1, NCG_F_SEND, 7, NCG_REDOP_NONE};
    roundtrip(&m1);
    /* v4: a queued entry (asynchronous NCCL) with its stream and launch order */
    m1.u.wait.w[0].queued = 1;
    m1.u.wait.w[0].stream = 3;
    m1.u.wait.w[0].order = NCG_WIRE_ORDER_MAX;
    roundtrip(&m1);
    EXPECT(ncg_wire_decode(buf, (size_t)ncg_wire_encode(&m1, buf, sizeof buf), &m2) > 0 &&
           m2.u.wait.w[0].queued == 1 && m2.u.wait.w[0].stream == 3 &&
           m2.u.wait.w[0].order == NCG_WIRE_ORDER_MAX && m2.u.wait.w[1].queued == 0);
    m1.u.wait.w[0].order = NCG_WIRE_ORDER_MAX + 1; /* launch orders are 24-bit */
    EXPECT(ncg_wire_decode(buf, (size_t)ncg_wire_encode(&m1, buf, sizeof buf), &m2) < 0);
    m1.u.wait.w[0].order = 1;
    m1.u.wait.w[0].queued = 2;
    EXPECT(ncg_wire_decode(buf, (size_t)ncg_wire_encode(&m1, buf, sizeof buf), &m2) < 0);
    m1.u.wait.w[0].queued = 1;
    m1.u.wait.w[1].p2p = 2;
    EXPECT(ncg_wire_decode(buf, (size_t)ncg_wire_encode(&m1, buf, sizeof buf), &m2) < 0);
    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_REPORT;
    m1.u.report.n = 1;
    /* v5 sends completed counts as distances to the count: unordered bounds do not encode */
    m1.u.report.e[0] = (struct ncg_report_entry){1, 4, 1, 10, 1, 11, 5, 11, 0}; /* done > count */
    EXPECT(ncg_wire_encode(&m1, buf, sizeof buf) == -EINVAL);
    m1.u.report.e[0] = (struct ncg_report_entry){1, 4, 1, 10, 1, 6, 5, 5, 1}; /* done > done_hi */
    EXPECT(ncg_wire_encode(&m1, buf, sizeof buf) == -EINVAL);
    m1.u.report.e[0] = (struct ncg_report_entry){1, 4, 1, 10, 1, 6, 5, 11, 1}; /* hi > count */
    EXPECT(ncg_wire_encode(&m1, buf, sizeof buf) == -EINVAL);
    m1.u.report.e[0] = (struct ncg_report_entry){1, 4, 1, 10, 1, 6, 5, 8, 2}; /* unknown flag */
    EXPECT(ncg_wire_decode(buf, (size_t)ncg_wire_encode(&m1, buf, sizeof buf), &m2) < 0);
    m1.u.report.e[0] = (struct ncg_report_entry){1, 4, 1, 10, 1, 6, 5, 8, 1}; /* sampled bounds */
    EXPECT(ncg_wire_decode(buf, (size_t)ncg_wire_encode(&m1, buf, sizeof buf), &m2) > 0 &&
           m2.u.report.e[0].done == 6 && m2.u.report.e[0].done_hi == 8 &&
           m2.u.report.e[0].flags == NCG_REP_SAMPLED);

    struct ncg_verdict *v = ncg_verdict_new(16);
    v->kind = NCG_V_MISMATCH;
    v->severity = NCG_SEV_ERROR;
    v->comm_id = 0xfeed;
    v->slot = 48;
    v->last_agreed = 47;
    v->ncalls = 2;
    v->calls[0].call = (struct ncg_call){48, 64, -1, NCG_F_REDUCESCATTER, 9, 0};
    strcpy(v->calls[0].ranks, "0-2,4-15");
    v->calls[1].call = (struct ncg_call){48, 1, -1, NCG_F_ALLREDUCE, 7, 0};
    strcpy(v->calls[1].ranks, "3");
    for (int i = 0; i < 16; i++) {
        v->counts[i] = 49;
        v->members[i] = i;
    }
    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_VERDICT;
    m1.u.verdict = v;
    roundtrip(&m1);
    ncg_verdict_free(v);

    /* malformed frames */
    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_REPORT;
    m1.u.report.n = 1;
    m1.u.report.e[0] = (struct ncg_report_entry){1, 4, 1, 10, 1, 9, 5, 9, 0};
    long n = ncg_wire_encode(&m1, buf, sizeof buf);
    EXPECT(ncg_wire_decode((const uint8_t *)"GARBAGE!", 8, &m2) < 0);
    EXPECT(ncg_wire_decode((const uint8_t *)"NCGX", 4, &m2) < 0);
    EXPECT(ncg_wire_decode((const uint8_t *)"NC", 2, &m2) == 0);
    buf[4] = NCG_WIRE_VERSION + 1; /* a version this build does not speak */
    EXPECT(ncg_wire_decode(buf, (size_t)n, &m2) < 0);
    buf[4] = NCG_WIRE_VERSION;
    buf[5] = 0; /* type 0 */
    EXPECT(ncg_wire_decode(buf, (size_t)n, &m2) < 0);
    buf[5] = NCG_MSG_REPORT;
    buf[8] = 0x7f; /* length over the bound */
    EXPECT(ncg_wire_decode(buf, (size_t)n, &m2) < 0);
    n = ncg_wire_encode(&m1, buf, sizeof buf);
    buf[11]--; /* payload shorter than its content */
    EXPECT(ncg_wire_decode(buf, (size_t)n, &m2) < 0);
    n = ncg_wire_encode(&m1, buf, sizeof buf);
    buf[NCG_WIRE_HDR + 2 + 1 + 8 + 1] = 9; /* rank 9 of 4 (n, mask, comm_id, nranks) */
    EXPECT(ncg_wire_decode(buf, (size_t)n, &m2) < 0);
    /* random bit flips never crash; a decoded frame re-encodes */
    srand(1);
    for (int it = 0; it < 20000; it++) {
        n = ncg_wire_encode(&m1, buf, sizeof buf);
        int flips = 1 + rand() % 4;
        for (int f = 0; f < flips; f++)
            buf[rand() % n] ^= (uint8_t)(1u << (rand() % 8));
        long r = ncg_wire_decode(buf, (size_t)n, &m2);
        if (r > 0)
            ncg_msg_release(&m2);
    }
    EXPECT(ncg_wire_encode(&m1, buf, 5) < 0); /* too small a buffer */
}

/* One REPORT over a connection (tx: the sender's reference, rx: the receiver's): the receiver
 * rebuilds every field exactly. Returns the frame's length. */
static long rep_over(const struct ncg_msg_report *rep, struct ncg_report_ref *tx,
                     struct ncg_report_ref *rx)
{
    static struct ncg_msg m, d;
    m.type = NCG_MSG_REPORT;
    m.u.report = *rep;
    long n = ncg_wire_encode_ref(&m, buf, sizeof buf, tx);
    EXPECT(n > 0);
    if (n <= 0)
        return n;
    struct ncg_report_ref keep = *rx;
    for (long k = 0; k < n; k++) /* a prefix: more bytes needed, the reference untouched */
        EXPECT(ncg_wire_decode_ref(buf, (size_t)k, &d, rx) == 0);
    EXPECT(!memcmp(&keep, rx, sizeof keep));
    EXPECT(ncg_wire_decode_ref(buf, (size_t)n, &d, rx) == n);
    EXPECT(d.type == NCG_MSG_REPORT && d.u.report.n == rep->n);
    for (uint32_t i = 0; i < rep->n && i < d.u.report.n; i++) {
        const struct ncg_report_entry *a = &rep->e[i], *b = &d.u.report.e[i];
        EXPECT(a->comm_id == b->comm_id && a->nranks == b->nranks && a->rank == b->rank &&
               a->count == b->count && a->global_rank == b->global_rank && a->done == b->done &&
               a->tid == b->tid && a->done_hi == b->done_hi && a->flags == b->flags);
    }
    EXPECT(!memcmp(tx, rx, sizeof *tx)); /* both ends hold the same reference */
    return n;
}

/* v5 REPORT entries: only what changed since the previous REPORT on the connection. */
static void test_report_ref(void)
{
    static struct ncg_report_ref tx, rx;
    static struct ncg_msg_report rep;
    memset(&tx, 0, sizeof tx);
    memset(&rx, 0, sizeof rx);
    memset(&rep, 0, sizeof rep);
    rep.n = 3;
    for (uint32_t i = 0; i < 3; i++)
        rep.e[i] = (struct ncg_report_entry){0xc0ffee00u + i, 8, 3, 100, 11, 100, 4242, 100, 0};
    long first = rep_over(&rep, &tx, &rx);
    for (uint32_t i = 0; i < 3; i++)
        rep.e[i].count = rep.e[i].done = rep.e[i].done_hi = 110;
    /* steady: a mask byte and the increase per communicator */
    EXPECT(rep_over(&rep, &tx, &rx) == (long)(NCG_WIRE_HDR + 2 + 3 * 2));
    EXPECT(rep_over(&rep, &tx, &rx) == (long)(NCG_WIRE_HDR + 2 + 3 * 1)); /* nothing moved */
    EXPECT(first > (long)(NCG_WIRE_HDR + 2 + 3 * 2));
    /* each field alone; sampled completion bounds (done < done_hi < count) */
    rep.e[1].done = 90;
    rep_over(&rep, &tx, &rx);
    rep.e[1].done_hi = 105;
    rep.e[1].flags = NCG_REP_SAMPLED;
    rep_over(&rep, &tx, &rx);
    rep.e[1].count = 120; /* bounds stay where they were: their distances change */
    rep_over(&rep, &tx, &rx);
    rep.e[2].tid = 7;
    rep_over(&rep, &tx, &rx);
    rep.e[0].count = 50; /* a count going down: sent whole */
    rep.e[0].done = rep.e[0].done_hi = 50;
    rep_over(&rep, &tx, &rx);
    rep.e[0] = rep.e[2]; /* the first comm destroyed: the others move up a position */
    rep.e[1].comm_id = 0xc0ffee01u;
    rep.n = 2;
    rep_over(&rep, &tx, &rx);
    /* past the reference's size: later entries go whole, still rebuilt */
    rep.n = NCG_WIRE_REF_COMMS + 4;
    for (uint32_t i = 0; i < rep.n; i++)
        rep.e[i] = (struct ncg_report_entry){0xd0 + i, 2, 1, i, -1, i, i, i, 0};
    rep_over(&rep, &tx, &rx);
    long n = rep_over(&rep, &tx, &rx);
    EXPECT(n == (long)(NCG_WIRE_HDR + 2 + NCG_WIRE_REF_COMMS + 4 * (1 + 8 + 1 + 1 + 5 + 1 + 1)));
    /* a compact entry without a reference, or past it, is garbage; the reference is kept */
    struct ncg_report_ref empty = {0}, keep = rx;
    EXPECT(ncg_wire_decode_ref(buf, (size_t)n, &m2, NULL) < 0);
    EXPECT(ncg_wire_decode_ref(buf, (size_t)n, &m2, &empty) < 0 && empty.n == 0);
    buf[NCG_WIRE_HDR + 1] = NCG_WIRE_REF_COMMS + 5; /* n: one entry more than the frame holds */
    EXPECT(ncg_wire_decode_ref(buf, (size_t)n, &m2, &rx) < 0);
    EXPECT(!memcmp(&keep, &rx, sizeof keep));
    /* hand-made entries against a reference of one {count 10, done 8, done_hi 9} */
    struct ncg_report_ref one = {1, {{5, 4, 1, 10, 1, 8, 3, 9, NCG_REP_SAMPLED}}};
    static const struct {
        uint8_t b[16];
        size_t len;
        int ok;
    } cases[] = {
        {{0x00}, 1, 1},                               /* unchanged */
        {{0x02, 0x05}, 2, 1},                         /* count 15, done 13, done_hi 14 */
        {{0x40}, 1, 0},                               /* an unknown field */
        {{0x04, 0x0b}, 2, 0},                         /* done 10 below zero */
        {{0x08, 0x03}, 2, 0},                         /* done_hi below done */
        {{0x0c, 0x05, 0x06}, 3, 0},                   /* the same */
        {{0x10, 0xff, 0xff, 0xff, 0xff, 0x10}, 6, 0}, /* a tid over 32 bits */
        {{0x02, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 12, 0},
        {{0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 11, 0}, /* wraps */
        {{0x02, 0x80}, 2, 0},                                      /* cut inside a number */
        {{0x01, 0, 0, 0, 0, 0, 0, 0, 5, 0x04, 0x04}, 11, 0},       /* rank 4 of 4 */
        {{0x01, 0, 0, 0, 0, 0, 0, 0, 5, 0x00, 0x00, 0x00}, 12, 0}, /* no ranks */
        {{0x01, 0, 0, 0, 0, 0, 0, 0, 5, 0x84, 0x80, 0x40, 0x01, 0x00}, 14, 0}, /* 2^20+4 ranks */
        /* rank 131071 of 131072 (2^17 ranks: within NCG_WIRE_MAX_RANKS, 2^20) */
        {{0x01, 0, 0, 0, 0, 0, 0, 0, 5, 0x80, 0x80, 0x08, 0xff, 0xff, 0x07, 0x00}, 16, 1},
        {{0x01, 0, 0, 0, 0, 0, 0, 0, 6, 0x04, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f}, 16, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t f[64];
        struct ncg_wbuf w = {f, sizeof f, 0, 0};
        ncg_put32(&w, NCG_WIRE_MAGIC);
        ncg_put8(&w, NCG_WIRE_VERSION);
        ncg_put8(&w, NCG_MSG_REPORT);
        ncg_put16(&w, 0);
        ncg_put32(&w, (uint32_t)(2 + cases[i].len));
        ncg_put16(&w, 1);
        ncg_putb(&w, cases[i].b, cases[i].len);
        struct ncg_report_ref r = one;
        long got = ncg_wire_decode_ref(f, w.len, &m2, &r);
        EXPECT((got == (long)w.len) == cases[i].ok);
        EXPECT(cases[i].ok || !memcmp(&r, &one, sizeof r));
        if (got > 0 && i == 1)
            EXPECT(m2.u.report.e[0].count == 15 && m2.u.report.e[0].done == 13 &&
                   m2.u.report.e[0].done_hi == 14 && m2.u.report.e[0].tid == 3);
        if (got > 0 && i == sizeof cases / sizeof cases[0] - 1)
            EXPECT(m2.u.report.e[0].comm_id == 6 && m2.u.report.e[0].global_rank == -1 &&
                   m2.u.report.e[0].count == 0 && r.e[0].comm_id == 6);
    }
    /* random evolutions of up to 12 comms: every field rebuilt exactly, every time */
    memset(&tx, 0, sizeof tx);
    memset(&rx, 0, sizeof rx);
    memset(&rep, 0, sizeof rep);
    srand(7);
    for (int it = 0; it < 3000; it++) {
        if (rep.n < 12 && rand() % 20 == 0) { /* a comm created */
            struct ncg_report_entry *e = &rep.e[rep.n++];
            *e = (struct ncg_report_entry){.comm_id = (uint64_t)rand() << 20,
                                           .nranks = 1 + (uint32_t)(rand() % 64)};
            e->rank = (uint32_t)rand() % e->nranks;
            e->global_rank = rand() % 3 ? rand() % 4096 : -1;
        }
        if (rep.n && rand() % 30 == 0) { /* one destroyed */
            uint32_t k = (uint32_t)rand() % rep.n;
            memmove(&rep.e[k], &rep.e[k + 1], sizeof rep.e[0] * (rep.n - k - 1));
            rep.n--;
        }
        for (uint32_t i = 0; i < rep.n; i++) {
            struct ncg_report_entry *e = &rep.e[i];
            int big = rand() % 8 == 0, shift = rand() % 32; /* one order of rand() calls */
            if (rand() % 3)
                e->count += (uint64_t)(rand() % (big ? 100000 : 40));
            if (rand() % 50 == 0)
                e->count = (uint64_t)rand() << shift;
            e->done_hi = e->count - (rand() % 2 ? 0 : (uint64_t)rand() % (e->count + 1));
            e->done = e->done_hi - (rand() % 2 ? 0 : (uint64_t)rand() % (e->done_hi + 1));
            e->flags = e->done != e->count ? NCG_REP_SAMPLED : 0;
            if (rand() % 10 == 0)
                e->tid = (uint32_t)rand();
        }
        rep_over(&rep, &tx, &rx);
    }
}

static void test_ranks(void)
{
    char b[256];
    int32_t r1[] = {15, 0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
    EXPECT(!strcmp(ncg_ranks_compact(r1, 15, b, sizeof b), "0-2,4-15"));
    int32_t r2[] = {3};
    EXPECT(!strcmp(ncg_ranks_compact(r2, 1, b, sizeof b), "3"));
    int32_t r3[] = {1, 3, 5, 5, 6};
    EXPECT(!strcmp(ncg_ranks_compact(r3, 5, b, sizeof b), "1,3,5-6"));
    EXPECT(!strcmp(ncg_ranks_compact(r3, 0, b, sizeof b), ""));
    int32_t many[200];
    for (int i = 0; i < 200; i++)
        many[i] = 2 * i;
    ncg_ranks_compact(many, 200, b, 40);
    EXPECT(strlen(b) < 40 && strstr(b, ",...") != NULL);
    int64_t c[] = {49, 49, 49, 48, 49, -1};
    EXPECT(!strcmp(ncg_counts_compact(c, 6, b, sizeof b), "49 on 0-2,4; 48 on 3; ? on 5"));
}

static void test_group_and_render(void)
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
    EXPECT(ncg_group_calls(v, calls, valid, sites, 16) == 2);
    EXPECT(!strcmp(v->calls[0].ranks, "0-2,4-15"));
    EXPECT(!strcmp(v->calls[1].ranks, "3"));
    EXPECT(!strcmp(v->subject, "3"));
    EXPECT(!strcmp(v->calls[1].site, "barrier+0x8"));
    char s[1024];
    ncg_verdict_summary(v, s, sizeof s);
    EXPECT(strstr(s, "AllReduce(count=1, float32, sum) on rank 3 vs ReduceScatter(count=64, "
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
                             0};
    static char d[16384];
    ncg_diag_render(v, &x, d, sizeof d);
    /* every line starts with the prefix */
    int lines = 0;
    for (char *p = d; *p; lines++) {
        EXPECT(!strncmp(p, "ncclguard: ", 11));
        char *e = strchr(p, '\n');
        if (!e)
            break;
        p = e + 1;
    }
    EXPECT(lines >= 7);
    EXPECT(strstr(d, "last slot all ranks agreed on: 47"));
    EXPECT(strstr(d, "collective calls issued per rank: 49 on 0-15"));
    EXPECT(strstr(d, "action: abort (exit status 86); report: /tmp/r.json"));
    /* the launcher's variable is named when it is not RANK, and in the report */
    EXPECT(strstr(d, "this process (comm rank 3, global rank 3, pid 99 on host)"));
    x.rank_var = "SLURM_PROCID";
    ncg_diag_render(v, &x, d, sizeof d);
    EXPECT(strstr(d, "this process (comm rank 3, global rank 3 (SLURM_PROCID), pid 99 on host)"));
    size_t need0 = ncg_diag_json(v, &x, NULL, 0);
    char *j0 = malloc(need0 + 1);
    ncg_diag_json(v, &x, j0, need0 + 1);
    EXPECT(strstr(j0, "\"rank_var\":\"SLURM_PROCID\""));
    free(j0);
    x.rank_var = NULL;
    ncg_diag_render(v, &x, d, sizeof d);
    size_t need = ncg_diag_json(v, &x, NULL, 0);
    char *j = malloc(need + 1);
    EXPECT(ncg_diag_json(v, &x, j, need + 1) == need);
    EXPECT(strstr(j, "\"verdict\":\"MISMATCH\""));
    EXPECT(strstr(j, "\"global_ranks\":\"0-2,4-15\""));
    EXPECT(j[need - 1] == '\n');
    EXPECT(strstr(j, "\"stack_tid\":null,\"stack\":[]"));
    free(j);
    EXPECT(!strstr(d, "stack of thread"));
    /* with the stuck thread's stack: a header and one line per frame, and the JSON array */
    static const char *const frames[] = {"fn_wait+0x10 (libnccl.so.2+0x1234)",
                                         "ncclAllReduce+0x5c (libncclguard.so+0x88)",
                                         "main+0x2a (\"app\"+0x1)"};
    x.stack_tid = 4242;
    x.stack_what = "slot 48 AllReduce(count=1, float32, sum)";
    x.stack = frames;
    x.nstack = 3;
    ncg_diag_render(v, &x, d, sizeof d);
    EXPECT(strstr(d, "ncclguard:   stack of thread 4242 (issued slot 48 AllReduce(count=1, "
                     "float32, sum)), innermost first:\n"
                     "ncclguard:     #0 fn_wait+0x10 (libnccl.so.2+0x1234)\n"
                     "ncclguard:     #1 ncclAllReduce+0x5c (libncclguard.so+0x88)\n"));
    EXPECT(strstr(d, "\nncclguard:     #2 main+0x2a"));
    EXPECT(strstr(d, "(\"app\"+0x1)\nncclguard:   action: abort"));
    need = ncg_diag_json(v, &x, NULL, 0);
    j = malloc(need + 1);
    EXPECT(ncg_diag_json(v, &x, j, need + 1) == need);
    EXPECT(strstr(j, "\"stack_tid\":4242,\"stack\":[\"fn_wait+0x10 (libnccl.so.2+0x1234)\","
                     "\"ncclAllReduce+0x5c (libncclguard.so+0x88)\",\"main+0x2a "
                     "(\\\"app\\\"+0x1)\"]"));
    free(j);
    /* a call that differs only by root / op class is another call */
    struct ncg_call a = {1, 8, 0, NCG_F_BROADCAST, 7, NCG_REDOP_NONE}, b2 = a;
    b2.root = 1;
    EXPECT(!ncg_call_same(&a, &b2));
    ncg_verdict_free(v);
}

/* ---- coordinator simulation ---- */

#define MAXC 16
struct sim {
    struct ncg_coord *co;
    int nconn;
    struct ncg_msg_query q[MAXC]; /* last query per conn */
    int has_q[MAXC];
    int verdicts[MAXC];
    int nq[MAXC]; /* QUERYs sent to each connection */
    int drops[MAXC];
    int releases[MAXC]; /* RELEASEs sent to each connection (the exit release) */
    uint8_t vkind[MAXC];
    uint8_t vsev[MAXC];
    char vsum[MAXC][512];
    uint64_t now;
    /* member streams: calls per conn (one comm, rank = conn) */
    struct ncg_call calls[MAXC][4096];
    uint64_t count[MAXC];
};

static struct sim S;

static void sim_send(void *arg, int conn, const struct ncg_msg *m)
{
    (void)arg;
    if (m->type == NCG_MSG_QUERY) {
        S.q[conn] = m->u.query;
        S.has_q[conn] = 1;
        S.nq[conn]++;
    } else if (m->type == NCG_MSG_VERDICT) {
        S.verdicts[conn]++;
        S.vkind[conn] = m->u.verdict->kind;
        S.vsev[conn] = m->u.verdict->severity;
        ncg_verdict_summary(m->u.verdict, S.vsum[conn], sizeof S.vsum[conn]);
    } else if (m->type == NCG_MSG_RELEASE) {
        S.releases[conn]++;
    }
}

static void sim_drop(void *arg, int conn)
{
    (void)arg;
    S.drops[conn]++;
}

static double sim_exit_wait = 5; /* the exit release's bound of the next sim_init */

static void sim_init(int n, uint64_t token, double lag_warn, double lag_abort)
{
    memset(&S, 0, sizeof S);
    struct ncg_coord_params p = {.token = token,
                                 .interval_ms = 100,
                                 .heartbeat_timeout_s = 5,
                                 .lag_warn_s = lag_warn,
                                 .lag_abort_s = lag_abort,
                                 .exit_wait_s = sim_exit_wait};
    struct ncg_coord_ops ops = {sim_send, sim_drop, NULL, NULL};
    S.co = ncg_coord_new(&p, &ops);
    S.nconn = n;
    S.now = 1000000000ull;
    for (int i = 0; i < n; i++) {
        ncg_coord_connected(S.co, i, S.now);
        struct ncg_msg h = {.type = NCG_MSG_HELLO};
        h.u.hello.token = token;
        h.u.hello.pid = 100 + (uint32_t)i;
        h.u.hello.global_rank = i;
        strcpy(h.u.hello.host, "h");
        ncg_coord_message(S.co, i, &h, S.now);
    }
}

static uint64_t digest_at(int r, uint64_t slot)
{
    uint64_t d = 0;
    for (uint64_t s = 0; s <= slot; s++) {
        const struct ncg_call *c = &S.calls[r][s];
        d = ncg_digest_next(d, ncg_fingerprint(c->func, c->count, c->dtype, c->redop, c->root));
    }
    return d;
}

static void sim_issue(int r, struct ncg_call c)
{
    c.seq = S.count[r];
    S.calls[r][S.count[r]++] = c;
}

/* One interval: every live member reports, answers its pending query, then a tick. */
static void sim_round(int alive_mask)
{
    S.now += 100000000ull;
    for (int r = 0; r < S.nconn; r++) {
        if (!(alive_mask & (1 << r)))
            continue;
        struct ncg_msg m = {.type = NCG_MSG_REPORT};
        m.u.report.n = 1;
        m.u.report.e[0] = (struct ncg_report_entry){
            0xc0, (uint32_t)S.nconn, (uint32_t)r, S.count[r], r, 0, 0, 0, 0};
        ncg_coord_message(S.co, r, &m, S.now);
    }
    for (int loop = 0; loop < 8; loop++) {
        int any = 0;
        for (int r = 0; r < S.nconn; r++) {
            if (!(alive_mask & (1 << r)) || !S.has_q[r])
                continue;
            S.has_q[r] = 0;
            any = 1;
            static struct ncg_msg a;
            memset(&a, 0, sizeof a);
            a.type = NCG_MSG_ANSWER;
            a.u.answer.comm_id = S.q[r].comm_id;
            a.u.answer.qid = S.q[r].qid;
            a.u.answer.rank = (uint32_t)r;
            a.u.answer.n = S.q[r].n;
            for (uint32_t k = 0; k < S.q[r].n; k++) {
                uint64_t s = S.q[r].slot[k];
                struct ncg_answer *x = &a.u.answer.a[k];
                x->call.seq = s;
                if (s >= S.count[r]) {
                    x->status = NCG_ANS_NONE;
                    continue;
                }
                x->status = NCG_ANS_OK;
                x->digest = digest_at(r, s);
                x->call = S.calls[r][s];
                snprintf(x->site, sizeof x->site, "rank%d", r);
            }
            ncg_coord_message(S.co, r, &a, S.now);
        }
        if (!any)
            break;
    }
    ncg_coord_tick(S.co, S.now);
}

static int total_verdicts(void)
{
    int n = 0;
    for (int i = 0; i < S.nconn; i++)
        n += S.verdicts[i];
    return n;
}

static const struct ncg_call AR = {0, 8, -1, NCG_F_ALLREDUCE, 7, 0};

/* The view's communicators (a scraper's): how many, and *done of the last one. */
static void count_comm(void *arg, const struct ncg_coord_comm_view *c)
{
    int *a = arg;
    a[0]++;
    a[1] = c->done && c->verdict;
}
static int view_comms(int *done)
{
    int a[2] = {0, 0};
    struct ncg_coord_view_ops ops = {.comm = count_comm, .arg = a};
    ncg_coord_view(S.co, S.now, &ops);
    if (done)
        *done = a[1];
    return a[0];
}

static void test_coord_mismatch(void)
{
    sim_init(4, 77, 60, 0);
    /* 300 agreeing calls over several rounds: no verdict */
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 50; i++)
            for (int r = 0; r < 4; r++)
                sim_issue(r, AR);
        sim_round(0xf);
    }
    sim_round(0xf);
    EXPECT(total_verdicts() == 0);
    /* then 200 more calls in one burst with a count mismatch on rank 2 at slot 300+137:
     * found by narrowing over more than K slots */
    for (int i = 0; i < 200; i++)
        for (int r = 0; r < 4; r++) {
            struct ncg_call c = AR;
            if (r == 2 && i == 137)
                c.count = 9;
            sim_issue(r, c);
        }
    for (int k = 0; k < 6; k++)
        sim_round(0xf);
    EXPECT(total_verdicts() == 4);
    EXPECT(S.vkind[0] == NCG_V_MISMATCH);
    EXPECT(strstr(S.vsum[0], "slot 437") != NULL);
    EXPECT(strstr(S.vsum[0], "AllReduce(count=9, float32, sum) on rank 2 vs AllReduce(count=8, "
                             "float32, sum) on ranks 0-1,3"));
    /* the ranks exit (the verdict's action): the comm and its verdict stay in the view (a
     * scraper's /metrics) for NCG_CO_KEEP_NS, then go; its id registering again starts anew.
     * Every process says its last goodbye first; then a REPORT of the comm still comes on rank
     * 0's connection (a late frame of a process that left): it neither revives the rank nor
     * replaces the kept verdict with a comm of phantom members */
    struct ncg_msg bye = {.type = NCG_MSG_GOODBYE};
    bye.u.goodbye.flags = NCG_BYE_PROCESS | NCG_BYE_VERDICT;
    for (int r = 0; r < 4; r++)
        ncg_coord_message(S.co, r, &bye, S.now);
    S.now += 11000000000ull; /* past the exit release's bound */
    ncg_coord_tick(S.co, S.now);
    int done = 0;
    EXPECT(view_comms(&done) == 1 && done == 1);
    struct ncg_msg late = {.type = NCG_MSG_REPORT};
    late.u.report.n = 1;
    late.u.report.e[0] = (struct ncg_report_entry){0xc0, 4, 0, S.count[0], 0, 0, 0, 0, 0};
    ncg_coord_message(S.co, 0, &late, S.now);
    ncg_coord_tick(S.co, S.now);
    EXPECT(view_comms(&done) == 1 && done == 1);
    for (int r = 0; r < 4; r++)
        ncg_coord_closed(S.co, r, S.now);
    ncg_coord_tick(S.co, S.now);
    EXPECT(view_comms(&done) == 1 && done == 1);
    S.now += 60000000000ull;
    ncg_coord_tick(S.co, S.now);
    EXPECT(view_comms(&done) == 1 && done == 1);
    S.now += 61000000000ull;
    ncg_coord_tick(S.co, S.now);
    EXPECT(view_comms(NULL) == 0);
    ncg_coord_free(S.co);
    /* kept, then the same id reports again (a job restarted with a fixed NCCL_COMM_ID): a new
     * comm, not the old verdict */
    sim_init(2, 77, 60, 0);
    for (int r = 0; r < 2; r++)
        sim_issue(r, AR);
    sim_issue(1, AR);
    sim_issue(0, (struct ncg_call){0, 9, -1, NCG_F_ALLREDUCE, 7, 0});
    for (int k = 0; k < 4; k++)
        sim_round(0x3);
    EXPECT(total_verdicts() == 2);
    for (int r = 0; r < 2; r++)
        ncg_coord_closed(S.co, r, S.now);
    S.now += 11000000000ull;
    ncg_coord_tick(S.co, S.now);
    EXPECT(view_comms(&done) == 1 && done == 1);
    for (int r = 0; r < 2; r++) { /* new connections, same comm id, counts from 0 */
        ncg_coord_connected(S.co, r, S.now);
        struct ncg_msg h = {.type = NCG_MSG_HELLO};
        h.u.hello.token = 77;
        h.u.hello.global_rank = r;
        ncg_coord_message(S.co, r, &h, S.now);
        S.count[r] = 0;
    }
    sim_round(0x3);
    EXPECT(view_comms(&done) == 1 && done == 0);
    ncg_coord_free(S.co);
}

static void test_coord_auth(void)
{
    sim_init(2, 77, 60, 0);
    /* conn 5: wrong token; conn 6: garbage type before HELLO; both dropped, state unchanged */
    ncg_coord_connected(S.co, 5, S.now);
    struct ncg_msg h = {.type = NCG_MSG_HELLO};
    h.u.hello.token = 78;
    ncg_coord_message(S.co, 5, &h, S.now);
    EXPECT(S.drops[5] == 1);
    ncg_coord_connected(S.co, 6, S.now);
    struct ncg_msg r = {.type = NCG_MSG_REPORT};
    r.u.report.n = 1;
    r.u.report.e[0] = (struct ncg_report_entry){0xc0, 2, 0, 999, 0, 0, 0, 0, 0};
    ncg_coord_message(S.co, 6, &r, S.now);
    EXPECT(S.drops[6] == 1);
    ncg_coord_closed(S.co, 6, S.now); /* no effect after the drop */
    for (int i = 0; i < 3; i++) {
        sim_issue(0, AR);
        sim_issue(1, AR);
        sim_round(0x3);
    }
    EXPECT(total_verdicts() == 0);
    ncg_coord_free(S.co);
}

static void test_coord_p2p(void)
{
    sim_init(2, 0, 60, 0);
    sim_round(0x3);
    struct ncg_msg p = {.type = NCG_MSG_P2P};
    p.u.p2p.comm_id = 0xc0;
    p.u.p2p.n = 2;
    p.u.p2p.r[0] = (struct ncg_p2p_rec){0, 32, 1, NCG_F_SEND, 7};
    p.u.p2p.r[1] = (struct ncg_p2p_rec){1, 33, 1, NCG_F_SEND, 7};
    ncg_coord_message(S.co, 0, &p, S.now);
    p.u.p2p.r[0] = (struct ncg_p2p_rec){0, 32, 0, NCG_F_RECV, 7};
    p.u.p2p.r[1] = (struct ncg_p2p_rec){1, 32, 0, NCG_F_RECV, 7};
    ncg_coord_message(S.co, 1, &p, S.now);
    EXPECT(S.verdicts[0] == 1 && S.verdicts[1] == 1);
    EXPECT(S.vkind[1] == NCG_V_P2P_MISMATCH);
    EXPECT(strstr(
        S.vsum[1],
        "Send(count=33, float32, peer=1) on rank 0 vs Recv(count=32, float32, peer=0) on rank 1"));
    ncg_coord_free(S.co);
}

static void test_coord_liveness(void)
{
    /* connection lost without goodbye: RANK DIED to the others */
    sim_init(3, 0, 60, 0);
    sim_round(0x7);
    ncg_coord_closed(S.co, 1, S.now);
    EXPECT(S.verdicts[0] == 1 && S.verdicts[2] == 1 && S.vkind[0] == NCG_V_RANK_DIED);
    EXPECT(strstr(S.vsum[0], "rank 1 died"));
    ncg_coord_free(S.co);

    /* silent past the heartbeat timeout (5 s) */
    sim_init(3, 0, 60, 0);
    sim_round(0x7);
    for (int i = 0; i < 60; i++)
        sim_round(0x5);
    EXPECT(S.vkind[0] == NCG_V_RANK_DIED && S.drops[1] == 1);
    EXPECT(strstr(S.vsum[0], "silent"));
    ncg_coord_free(S.co);

    /* the coordinator itself was suspended for 20 s: nobody is declared dead */
    sim_init(3, 0, 60, 0);
    sim_round(0x7);
    S.now += 20000000000ull;
    ncg_coord_tick(S.co, S.now);
    sim_round(0x7);
    EXPECT(total_verdicts() == 0);
    ncg_coord_free(S.co);

    /* clean goodbye at equal counts: nothing; then others go on: RANK EXITED */
    sim_init(3, 0, 60, 0);
    for (int r = 0; r < 3; r++)
        sim_issue(r, AR);
    sim_round(0x7);
    struct ncg_msg g = {.type = NCG_MSG_GOODBYE};
    g.u.goodbye.flags = NCG_BYE_PROCESS;
    g.u.goodbye.n = 1;
    g.u.goodbye.comm_id[0] = 0xc0;
    g.u.goodbye.count[0] = 1;
    ncg_coord_message(S.co, 1, &g, S.now);
    ncg_coord_closed(S.co, 1, S.now);
    sim_round(0x5);
    EXPECT(total_verdicts() == 0);
    sim_issue(0, AR);
    sim_round(0x5);
    EXPECT(S.verdicts[0] == 1 && S.vkind[0] == NCG_V_RANK_EXITED);
    ncg_coord_free(S.co);
}

static void test_coord_lag(void)
{
    /* equal counts for a long time (a checkpoint pause): no verdict */
    sim_init(2, 0, 1.0, 3.0);
    sim_issue(0, AR);
    sim_issue(1, AR);
    for (int i = 0; i < 50; i++)
        sim_round(0x3);
    EXPECT(total_verdicts() == 0);
    /* counts differ but someone progresses every round: no verdict */
    for (int i = 0; i < 50; i++) {
        sim_issue(0, AR);
        sim_round(0x3);
    }
    EXPECT(total_verdicts() == 0);
    /* nobody progresses: a warning after 1 s, an error after 3 s */
    for (int i = 0; i < 15; i++)
        sim_round(0x3);
    EXPECT(S.vkind[0] == NCG_V_LAG && S.vsev[0] == NCG_SEV_WARN);
    for (int i = 0; i < 25; i++)
        sim_round(0x3);
    EXPECT(S.vkind[0] == NCG_V_LAG && S.vsev[0] == NCG_SEV_ERROR);
    EXPECT(strstr(S.vsum[0], "rank 1 behind"));
    ncg_coord_free(S.co);
}

/* Who prints the full block under NCCLGUARD_DIAG=auto: the subject and the lowest other. */
static void test_diag_full(void)
{
    struct ncg_verdict *v = ncg_verdict_new(16);
    char on[64];
    snprintf(v->subject, sizeof v->subject, "3");
    EXPECT(ncg_diag_full_here(v, 3, on, sizeof on) == 1 && !strcmp(on, "0,3"));
    EXPECT(ncg_diag_full_here(v, 0, on, sizeof on) == 1);
    EXPECT(ncg_diag_full_here(v, 5, on, sizeof on) == 0 && !strcmp(on, "0,3"));
    snprintf(v->subject, sizeof v->subject, "0");
    EXPECT(ncg_diag_full_here(v, 1, on, sizeof on) == 1 && !strcmp(on, "0-1"));
    EXPECT(ncg_diag_full_here(v, 2, on, sizeof on) == 0);
    snprintf(v->subject, sizeof v->subject, "0-2,4-15"); /* a minority of one, inverted */
    EXPECT(ncg_diag_full_here(v, 3, on, sizeof on) == 1 && !strcmp(on, "0-15"));
    snprintf(v->subject, sizeof v->subject, "1,2"); /* a p2p pair */
    EXPECT(ncg_diag_full_here(v, 0, on, sizeof on) == 1 && !strcmp(on, "0-2"));
    EXPECT(ncg_diag_full_here(v, 3, on, sizeof on) == 0);
    /* not a rank list (a local verdict's text, a truncated list): every rank */
    snprintf(v->subject, sizeof v->subject, "holding the checker (global rank 0)");
    EXPECT(ncg_diag_full_here(v, 7, on, sizeof on) == 1 && !strcmp(on, "every rank"));
    snprintf(v->subject, sizeof v->subject, "1,3,...");
    EXPECT(ncg_diag_full_here(v, 7, on, sizeof on) == 1);
    snprintf(v->subject, sizeof v->subject, "3-99");
    EXPECT(ncg_diag_full_here(v, 7, on, sizeof on) == 1);
    ncg_verdict_free(v);
}

/* DEADLOCK under asynchronous NCCL, through the coordinator: two ranks, comms 0xc0 and 0xd0,
 * slot 20 of each enqueued in opposite orders on one stream (queued WAIT entries). */
static void dl_report(int r, uint64_t done_c0)
{
    struct ncg_msg m = {.type = NCG_MSG_REPORT};
    m.u.report.n = 2;
    m.u.report.e[0] = (struct ncg_report_entry){
        0xc0, 2, (uint32_t)r, 24, r, done_c0, 50, done_c0 > 24 ? done_c0 : 24, NCG_REP_SAMPLED};
    m.u.report.e[1] =
        (struct ncg_report_entry){0xd0, 2, (uint32_t)r, 24, r, 20, 50, 24, NCG_REP_SAMPLED};
    ncg_coord_message(S.co, r, &m, S.now);
}

static void dl_wait(int r, uint64_t first, uint8_t stream_c0)
{
    struct ncg_msg m = {.type = NCG_MSG_WAIT};
    m.u.wait.n = 2;
    for (int k = 0; k < 2; k++) {
        struct ncg_wait_ent *e = &m.u.wait.w[k];
        /* rank 0: c0 then d0; rank 1: d0 then c0 */
        int c0 = (k == 0) == (r == 0);
        *e = (struct ncg_wait_ent){.comm_id = c0 ? 0xc0 : 0xd0,
                                   .rank = (uint32_t)r,
                                   .tid = 50,
                                   .queued = 1,
                                   .stream = c0 ? stream_c0 : 1,
                                   .order = (uint32_t)(first + (uint64_t)k)};
        e->call = AR;
        e->call.seq = 20;
        snprintf(e->site, sizeof e->site, "train.c:%d", c0 ? 10 : 11);
    }
    ncg_coord_message(S.co, r, &m, S.now);
}

/* rounds of REPORT + WAIT from both ranks; returns the DEADLOCK verdicts received */
static int dl_rounds(int rounds, uint64_t done_c0, uint8_t stream_c0)
{
    for (int i = 0; i < rounds; i++) {
        S.now += 100000000ull;
        for (int r = 0; r < 2; r++) {
            dl_report(r, done_c0);
            dl_wait(r, 7 + (uint64_t)r, stream_c0);
        }
        ncg_coord_tick(S.co, S.now);
    }
    int n = 0;
    for (int r = 0; r < 2; r++)
        n += S.verdicts[r] && S.vkind[r] == NCG_V_DEADLOCK ? S.verdicts[r] : 0;
    return n;
}

static void test_coord_deadlock_streams(void)
{
    /* one sighting is not enough: the second, after both processes sent a newer WAIT, is */
    sim_init(2, 77, 60, 0);
    EXPECT(dl_rounds(1, 20, 1) == 0);
    EXPECT(dl_rounds(1, 20, 1) == 4); /* a verdict per comm, to both members */
    EXPECT(S.vsev[0] == NCG_SEV_ERROR);
    EXPECT(strstr(S.vsum[0], "wait on each other across comms") != NULL);
    ncg_coord_free(S.co);
    /* rank 1's c0 call on another stream: the two streams may overlap, no verdict */
    sim_init(2, 77, 60, 0);
    EXPECT(dl_rounds(6, 20, 2) == 0 && total_verdicts() == 0);
    ncg_coord_free(S.co);
    /* slot 20 of c0 known complete on the members (their REPORTs moved on): stale entries */
    sim_init(2, 77, 60, 0);
    EXPECT(dl_rounds(6, 21, 1) == 0 && total_verdicts() == 0);
    ncg_coord_free(S.co);
}

/* A process holding two ranks of a comm gets one QUERY per round (it answers for both). */
static void test_coord_multirank(void)
{
    sim_init(2, 77, 60, 0);
    for (int round = 0; round < 3; round++) {
        S.now += 100000000ull;
        for (int p = 0; p < 2; p++) {
            struct ncg_msg m = {.type = NCG_MSG_REPORT};
            m.u.report.n = 2;
            for (uint32_t k = 0; k < 2; k++)
                m.u.report.e[k] = (struct ncg_report_entry){
                    0xe0, 4, 2 * (uint32_t)p + k, 10 * ((uint64_t)round + 1), 2 * p + (int)k, 0, 0,
                    0,    0};
            ncg_coord_message(S.co, p, &m, S.now);
        }
        ncg_coord_tick(S.co, S.now);
        for (int p = 0; p < 2; p++) {
            EXPECT(S.nq[p] == round + 1);
            if (!S.has_q[p])
                continue;
            S.has_q[p] = 0;
            for (uint32_t k = 0; k < 2; k++) { /* the client's answer for each of its ranks */
                static struct ncg_msg a;
                memset(&a, 0, sizeof a);
                a.type = NCG_MSG_ANSWER;
                a.u.answer.comm_id = 0xe0;
                a.u.answer.qid = S.q[p].qid;
                a.u.answer.rank = 2 * (uint32_t)p + k;
                a.u.answer.n = S.q[p].n;
                for (uint32_t j = 0; j < S.q[p].n; j++) {
                    a.u.answer.a[j].status = NCG_ANS_OK;
                    a.u.answer.a[j].call = AR;
                    a.u.answer.a[j].call.seq = S.q[p].slot[j];
                    a.u.answer.a[j].digest = 0x1234 + S.q[p].slot[j];
                }
                ncg_coord_message(S.co, p, &a, S.now);
            }
        }
    }
    EXPECT(total_verdicts() == 0);
    ncg_coord_free(S.co);
}

static int total_releases(void)
{
    int n = 0;
    for (int i = 0; i < S.nconn; i++)
        n += S.releases[i];
    return n;
}

static void sim_done(int conn)
{
    struct ncg_msg d = {.type = NCG_MSG_DONE, .u.exit.comm_id = 0xc0};
    ncg_coord_message(S.co, conn, &d, S.now);
}

/* The exit release: a MISMATCH on 4 ranks; nobody is released before every process said DONE
 * (or closed), each exactly once; a process that never says it holds the others until the
 * bound (2 s here) and no longer; a DONE for another comm releases nothing. */
static void test_coord_release(void)
{
    for (int variant = 0; variant < 3; variant++) {
        sim_exit_wait = 2;
        sim_init(4, 77, 60, 0);
        for (int i = 0; i < 10; i++)
            for (int r = 0; r < 4; r++) {
                struct ncg_call c = AR;
                if (r == 3 && i == 5)
                    c.count = 9;
                sim_issue(r, c);
            }
        for (int k = 0; k < 4 && total_verdicts() == 0; k++)
            sim_round(0xf);
        EXPECT(total_verdicts() == 4);
        uint64_t t0 = S.now;
        sim_done(0);
        sim_done(1);
        struct ncg_msg other = {.type = NCG_MSG_DONE, .u.exit.comm_id = 0xdead};
        ncg_coord_message(S.co, 2, &other, S.now);
        sim_round(0xf);
        EXPECT(total_releases() == 0); /* 2 and 3 have not said DONE */
        if (variant == 0) {            /* everyone finishes */
            sim_done(2);
            EXPECT(total_releases() == 0);
            sim_done(3);
            EXPECT(total_releases() == 4);
        } else if (variant == 1) { /* 3 closes (killed), 2 says DONE */
            ncg_coord_closed(S.co, 3, S.now);
            EXPECT(total_releases() == 0);
            sim_done(2);
            EXPECT(total_releases() == 3 && S.releases[3] == 0);
        } else { /* 3 never says it: released at the bound, not before */
            sim_done(2);
            while (S.now < t0 + 1900000000ull) {
                sim_round(0x7);
                EXPECT(total_releases() == 0);
            }
            for (int k = 0; k < 3; k++)
                sim_round(0x7);
            EXPECT(S.now <= t0 + 2300000000ull && total_releases() == 4);
        }
        for (int k = 0; k < 5; k++) /* once */
            sim_round(0x7);
        EXPECT(total_releases() == (variant == 1 ? 3 : 4));
        ncg_coord_free(S.co);
    }
    sim_exit_wait = 5;
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
           a->device == b->device && a->share == b->share && a->since_s == b->since_s &&
           !strcmp(a->host, b->host);
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
static void test_diag_slow(void)
{
    struct ncg_vcomm flat = {0xabc, 4, 6, vc_ranks, NULL}, tree = {0xabc, 4, 6, NULL, NULL};
    static const char want[] = ",\"slow\":{\"rank\":2,\"global_rank\":7,\"host\":\"node-b\","
                               "\"pid\":4321,\"share\":0.146,\"since_s\":12,\"side\":\"gpu\"}";
    struct ncg_vslow f;
    struct ncg_verdict *v = ncg_v_slow(&flat, 2, 7, 4321, "node-b", 0.1456, 12.4, 1);
    EXPECT(v && !strcmp(v->subject, "2") &&
           !strcmp(v->detail, "they lose 14.6% of the step waiting for it, for 12 s; late on its "
                              "GPU (its stream starts the collective late) (global rank 7, pid "
                              "4321 on node-b)"));
    EXPECT(v && ncg_diag_slow_figs(v, &f) == 0);
    EXPECT(f.rank == 2 && f.global_rank == 7 && f.pid == 4321 && !strcmp(f.host, "node-b"));
    EXPECT(f.share == 0.1456 && f.since_s == 12.4 && f.device == 1);
    char *j = slow_json(v);
    EXPECT(j && !strcmp(j, want));
    free(j);
    /* off the wire: the same figures, the same object, though the words are gone */
    long n = ncg_verdict_encode(v, buf, sizeof buf);
    EXPECT(n > 0 && (size_t)n <= ncg_verdict_wire_size(v));
    struct ncg_verdict *d = n > 0 ? ncg_verdict_decode(buf, (size_t)n) : NULL;
    EXPECT(d && d->kind == NCG_V_SLOW && vslow_same(&d->slow, &v->slow));
    if (d) {
        snprintf(d->detail, sizeof d->detail, "they lose a lot");
        snprintf(d->subject, sizeof d->subject, "?");
        j = slow_json(d);
        EXPECT(j && !strcmp(j, want));
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
    EXPECT(n > 40 && buf[at + 3] == 2 && buf[n - 7] == 6);
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
        else if (c == 4) /* neither host nor GPU */
            b[at + 12] = 2;
        else if (c == 5) /* a NUL inside the host */
            b[n - 3] = 0;
        else if (c == 6) /* a host over its bound */
            b[n - 7] = NCG_VSLOW_HOST;
        else if (c == 7) /* truncated */
            len--;
        else /* figures after a verdict of another kind */
            b[0] = NCG_V_LAG;
        d = ncg_verdict_decode(b, len);
        EXPECT(d == NULL);
        ncg_verdict_free(d);
    }
    v->slow.share = 2; /* and never encoded */
    EXPECT(ncg_verdict_encode(v, buf, sizeof buf) == -EINVAL);
    v->kind = NCG_V_LAG;
    EXPECT(ncg_diag_slow_figs(v, &f) == -EINVAL && !slow_json(v));
    ncg_verdict_free(v);
    v = ncg_v_slow(&flat, 3, -1, 0, "", 0.05, 0, 0); /* who unknown: the members' global rank */
    EXPECT(v && !strcmp(v->detail, "they lose 5.0% of the step waiting for it, for 0 s; late on "
                                   "its host (it issues the collective late)"));
    EXPECT(v && ncg_diag_slow_figs(v, &f) == 0);
    EXPECT(f.rank == 3 && f.global_rank == 103 && f.pid == 0 && !f.host[0] && f.device == 0);
    ncg_verdict_free(v);
    v = ncg_v_slow(&tree, 1, -1, 77, "n", 0.2, 30, 0); /* pid and host only, no arrays */
    EXPECT(v && ncg_diag_slow_figs(v, &f) == 0);
    EXPECT(f.rank == 1 && f.global_rank == -1 && f.pid == 77 && !strcmp(f.host, "n"));
    EXPECT(v && strstr(v->detail, "collective late) (pid 77 on n)"));
    ncg_verdict_free(v);
    v = ncg_v_slow(&tree, 1, 9, 0, NULL, 0.2, 30, 0); /* the tree's root: the host not known */
    EXPECT(v && strstr(v->detail, "collective late) (global rank 9 on an unknown host)"));
    EXPECT(v && ncg_diag_slow_figs(v, &f) == 0);
    EXPECT(f.rank == 1 && f.global_rank == 9 && f.pid == 0 && !f.host[0]);
    /* the tree's RVERDICT: the named rank within the comm's size, then the client's copy */
    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_RVERDICT;
    m1.u.rverdict = (struct ncg_msg_rverdict){4, v};
    roundtrip(&m1);
    struct ncg_verdict *c = ncg_verdict_copy(v, 4);
    EXPECT(c && c->nranks == 4 && vslow_same(&c->slow, &v->slow));
    ncg_verdict_free(c);
    m1.u.rverdict.comm_nranks = 1; /* rank 1 of 1 */
    EXPECT(ncg_wire_encode(&m1, buf, sizeof buf) < 0);
    ncg_verdict_free(v);
    v = ncg_v_slow(&tree, 0, -1, 0, NULL, 0.07, 3, 1); /* nothing known of who */
    EXPECT(v && strstr(v->detail, "collective late) (on an unknown host)"));
    ncg_verdict_free(v);
}

static void test_verdicts(void)
{
    struct ncg_vcomm flat = {0xabc, 4, 6, vc_ranks, NULL}, tree = {0xabc, 4, 6, NULL, NULL};
    /* when due: an error past abort_s, a warning past warn_s once, else nothing */
    EXPECT(ncg_v_due(5, 2, 10, 0) == 1);
    EXPECT(ncg_v_due(5, 2, 10, 1) == 0); /* warned already */
    EXPECT(ncg_v_due(1, 2, 10, 0) == 0);
    EXPECT(ncg_v_due(10, 2, 10, 1) == 2);
    EXPECT(ncg_v_due(10, 0, 0, 0) == 0); /* neither set */
    uint8_t warned = 1;
    EXPECT(ncg_v_lag_due(7, 7, 100, 1, 2, &warned) == 0 && warned == 0); /* counts agree */
    warned = 1;
    EXPECT(ncg_v_lag_due(UINT64_MAX, 0, 100, 1, 2, &warned) == 0 && warned == 0);
    EXPECT(ncg_v_lag_due(5, 7, 1.5, 1, 2, &warned) == 1);
    warned = 1;
    EXPECT(ncg_v_lag_due(5, 7, 1.5, 1, 2, &warned) == 0 && warned == 1);
    /* LAG: the flat coordinator's per-rank arrays, the tree's "more than listed" */
    int32_t who[] = {3, 1};
    struct ncg_verdict *v = ncg_v_lag(&flat, who, 2, 0, 0, 5, 9, 2.5);
    EXPECT(v && v->kind == NCG_V_LAG && v->severity == NCG_SEV_WARN && v->slot == 5);
    EXPECT(v && v->nranks == 4 && v->counts[3] == 13 && v->members[2] == 102);
    EXPECT(v && v->comm_id == 0xabc && v->last_agreed == 6 && !strcmp(v->subject, "1,3"));
    EXPECT(v && !strcmp(v->detail, "for 2.5 s (slot counts 5..9)"));
    ncg_verdict_free(v);
    v = ncg_v_lag(&tree, who, 2, 1, 1, 5, 9, 2.5);
    EXPECT(v && v->nranks == 0 && v->severity == NCG_SEV_ERROR && !strcmp(v->subject, "1,3,..."));
    ncg_verdict_free(v);
    /* RANK EXITED: the detail's first words say how */
    int32_t ex[] = {2};
    v = ncg_v_exited(&tree, ex, 1, 4, 8, NCG_BYE_ABORT);
    EXPECT(v && v->kind == NCG_V_RANK_EXITED && v->slot == 4);
    EXPECT(v && !strcmp(v->detail, NCG_EXITED_ABORT " after 4 calls; others issued up to 8"));
    ncg_verdict_free(v);
    v = ncg_v_exited(&tree, ex, 1, 4, 8, 0);
    EXPECT(v && !strcmp(v->detail, "left after 4 calls; others issued up to 8"));
    ncg_verdict_free(v);
    /* RANK DIED, with and without a detail */
    char why[96];
    EXPECT(!strcmp(ncg_v_silent(why, sizeof why, 2500000000ull),
                   "silent for 2.5 s (frozen or unreachable)"));
    int32_t dead[] = {0, 1, 2};
    v = ncg_v_rank_died(&flat, dead, 3, "pid 7 on h, gone");
    EXPECT(v && v->kind == NCG_V_RANK_DIED && !strcmp(v->subject, "0-2") &&
           !strcmp(v->detail, "pid 7 on h, gone"));
    ncg_verdict_free(v);
    v = ncg_v_rank_died(&flat, dead, 3, NULL);
    EXPECT(v && v->detail[0] == 0);
    ncg_verdict_free(v);
    /* MISMATCH: the caller's calls, then the words on what could not be shown */
    int called = 0;
    v = ncg_v_mismatch(&tree, 42, vc_calls, &called, 0);
    EXPECT(called == 1 && v && v->kind == NCG_V_MISMATCH && v->slot == 42);
    EXPECT(v && strstr(v->detail, "the calls at slot 42 look alike") == v->detail);
    ncg_verdict_free(v);
    v = ncg_v_mismatch(&tree, 42, vc_calls, &called, 1);
    EXPECT(v && strstr(v->detail, "distinct calls at this slot") != NULL);
    ncg_verdict_free(v);
    /* STUCK: a list (more than listed), or every rank named whole; the caller's lines last */
    struct ncg_call call = {.seq = 3, .func = 1, .count = 8};
    int32_t stalled[] = {1};
    struct ncg_stuck_fig s = {3, 3, 12.0, 0, stalled, 1, 2, 0, &call, "site.c:1", "tail line\n"};
    v = ncg_v_stuck(&tree, &s);
    EXPECT(v && v->kind == NCG_V_STUCK && v->severity == NCG_SEV_WARN && v->slot == 3);
    EXPECT(v && !strcmp(v->subject, "1,...") && v->ncalls == 1 && v->calls[0].call.seq == 3);
    EXPECT(v && !strcmp(v->calls[0].site, "site.c:1"));
    EXPECT(v && v->notes && strstr(v->notes, "a hang inside NCCL") == v->notes);
    EXPECT(v && v->notes && strlen(v->notes) > 10 &&
           !strcmp(v->notes + strlen(v->notes) - 10, "tail line\n"));
    ncg_verdict_free(v);
    s.whole = 1;
    s.nstalled = 4;
    s.act = 1;
    s.call = NULL;
    s.tail = NULL;
    v = ncg_v_stuck(&tree, &s);
    EXPECT(v && !strcmp(v->subject, "0-3") && v->ncalls == 0 && v->severity == NCG_SEV_ERROR);
    EXPECT(v && strstr(v->detail, "completed on none") == v->detail);
    ncg_verdict_free(v);
    /* the exit release: a DONE for another comm changes nothing; a closed one, every comm */
    struct ncg_release rel = {0};
    EXPECT(ncg_release_note(&rel, 9, 1, 9, 0, 0) == 0); /* no verdict yet */
    ncg_release_begin(&rel, UINT64_MAX);
    EXPECT(ncg_release_add(&rel, 1) == 0 && ncg_release_add(&rel, 2) == 0);
    EXPECT(ncg_release_note(&rel, 9, 1, 8, 0, 0) == 0);
    EXPECT(ncg_release_note(&rel, 9, 1, 9, 0, 0) == 1 && !ncg_release_due(&rel, 0));
    EXPECT(ncg_release_note(&rel, 9, 2, 0, 1, 0) == 1 && ncg_release_due(&rel, 0));
    ncg_release_free(&rel);
}

int main(void)
{
    test_diag_full();
    printf("ok diag full/short\n");
    test_wire();
    printf("ok wire\n");
    test_report_ref();
    printf("ok report reference (v5)\n");
    test_ranks();
    printf("ok ranks\n");
    test_group_and_render();
    printf("ok group/render\n");
    test_coord_mismatch();
    printf("ok coord mismatch\n");
    test_coord_auth();
    printf("ok coord auth\n");
    test_coord_p2p();
    printf("ok coord p2p\n");
    test_coord_liveness();
    printf("ok coord liveness\n");
    test_coord_lag();
    printf("ok coord lag\n");
    test_coord_deadlock_streams();
    printf("ok coord deadlock (streams)\n");
    test_coord_multirank();
    printf("ok coord multi-rank process\n");
    test_coord_release();
    printf("ok coord exit release\n");
    test_verdicts();
    test_diag_slow();
    printf("ok verdicts (judge)\n");
    printf("%d checks, %d failed\n", checks, fails);
    return fails ? 1 : 0;
}
