/* Unit tests of the wire (interpose/proto/wire.c): the message types' round trips with every
 * truncation, corrupted and oversized frames refused, the v5 REPORT's entries relative to the
 * connection's reference, and compact rank lists. */
#include "unit.h"

void test_wire(void)
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
        CHECK(n == (long)NCG_WIRE_HDR + 8);
        CHECK(ncg_wire_decode(buf, (size_t)n, &m2) == n && m2.u.exit.comm_id == m1.u.exit.comm_id);
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
        CHECK(ncg_wire_decode(buf, (size_t)n, &m2) == n && m2.u.query.qid == UINT32_MAX &&
              m2.u.query.slot[0] == UINT64_MAX && m2.u.query.slot[1] == 0 &&
              m2.u.query.slot[2] == UINT64_MAX / 2 + 1 && m2.u.query.slot[3] == 103);
        /* a plain round's QUERY (one slot ~10^6): v11 spent 35 bytes */
        m1.u.query.n = 1;
        m1.u.query.qid = 200000;
        m1.u.query.slot[0] = 1000000;
        n = ncg_wire_encode(&m1, buf, sizeof buf);
        CHECK(n > 0 && n <= 28);
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
        CHECK(ncg_wire_decode(buf, (size_t)qn, &m2) == qn && m2.u.query.nrep == NCG_QUERY_REPS &&
              m2.u.query.rep[0] == 16383 && m2.u.query.rep[3] == 16380);
        /* the representatives' count follows what a QUERY without them holds */
        m1.u.query.nrep = 0;
        size_t at = (size_t)ncg_wire_encode(&m1, buf, sizeof buf);
        m1.u.query.nrep = NCG_QUERY_REPS;
        CHECK(at > NCG_WIRE_HDR && (long)at < qn);
        ncg_wire_encode(&m1, buf, sizeof buf);
        /* frames whose lengths match their counts, so only the count's bound refuses them:
         * a count of 0 and nothing after it, a count of 5 with 5 ranks (rank 0: a byte each) */
        uint32_t plen = (uint32_t)(at + 1 - NCG_WIRE_HDR);
        buf[at] = 0;
        buf[8] = (uint8_t)(plen >> 24), buf[9] = (uint8_t)(plen >> 16);
        buf[10] = (uint8_t)(plen >> 8), buf[11] = (uint8_t)plen;
        CHECK(ncg_wire_decode(buf, at + 1, &m2) < 0);
        plen = (uint32_t)(at + 1 + (NCG_QUERY_REPS + 1) - NCG_WIRE_HDR);
        buf[at] = NCG_QUERY_REPS + 1;
        memset(buf + at + 1, 0, NCG_QUERY_REPS + 1);
        buf[8] = (uint8_t)(plen >> 24), buf[9] = (uint8_t)(plen >> 16);
        buf[10] = (uint8_t)(plen >> 8), buf[11] = (uint8_t)plen;
        CHECK(ncg_wire_decode(buf, NCG_WIRE_HDR + plen, &m2) < 0);
        buf[at] = NCG_QUERY_REPS; /* the same frame with a count of 4: a byte left over */
        CHECK(ncg_wire_decode(buf, NCG_WIRE_HDR + plen, &m2) < 0);
        plen -= 1;
        buf[11] = (uint8_t)plen; /* and without it: a valid frame */
        CHECK(ncg_wire_decode(buf, NCG_WIRE_HDR + plen, &m2) == (long)(NCG_WIRE_HDR + plen));
        m1.u.query.nrep = NCG_QUERY_REPS + 1;
        CHECK(ncg_wire_encode(&m1, buf, sizeof buf) < 0);
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
        CHECK(ncg_wire_decode(buf, (size_t)n, &m2) == n && m2.u.answer.qid == UINT32_MAX &&
              m2.u.answer.rank == UINT32_MAX && m2.u.answer.a[0].call.root == INT32_MIN &&
              m2.u.answer.a[0].call.count == UINT64_MAX && m2.u.answer.a[1].call.root == INT32_MAX);
        /* a rank's answer in a digest round of a large job (slot ~10^6, rank 16,000): v11 spent
         * 64 bytes on it, most of the node-local traffic (BENCHMARKS.md, "Where the bytes go") */
        m1.u.answer.n = 1;
        m1.u.answer.qid = 200000;
        m1.u.answer.rank = 16000;
        m1.u.answer.a[0] = (struct ncg_answer){
            NCG_ANS_OK, 0x0123456789abcdefull, {1000000, 4096, -1, NCG_F_ALLREDUCE, 7, 0}, ""};
        n = ncg_wire_encode(&m1, buf, sizeof buf);
        CHECK(n > 0 && n <= 48);
    }

    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_P2P;
    m1.u.p2p.n = 2;
    m1.u.p2p.r[0] = (struct ncg_p2p_rec){3, 32, 1, NCG_F_SEND, 7};
    m1.u.p2p.r[1] = (struct ncg_p2p_rec){3, 32, 0, NCG_F_RECV, 7};
    m1.u.p2p.rank = 5;
    roundtrip(&m1);
    m1.u.p2p.rank = NCG_BYE_ANYRANK;
    roundtrip(&m1);
    m1.u.p2p.rank = NCG_WIRE_MAX_RANKS; /* v14: a comm rank, or the process's */
    CHECK(ncg_wire_decode(buf, (size_t)ncg_wire_encode(&m1, buf, sizeof buf), &m2) < 0);

    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_GOODBYE;
    m1.u.goodbye.flags = NCG_BYE_PROCESS;
    m1.u.goodbye.n = 1;
    m1.u.goodbye.comm_id[0] = 5;
    m1.u.goodbye.count[0] = 77;
    m1.u.goodbye.rank[0] = 3;
    roundtrip(&m1);
    m1.u.goodbye.n = 2; /* v13: an entry for the process's ranks */
    m1.u.goodbye.comm_id[1] = 6;
    m1.u.goodbye.rank[1] = NCG_BYE_ANYRANK;
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
    CHECK(ncg_wire_decode(buf, (size_t)ncg_wire_encode(&m1, buf, sizeof buf), &m2) > 0 &&
          m2.u.wait.w[0].queued == 1 && m2.u.wait.w[0].stream == 3 &&
          m2.u.wait.w[0].order == NCG_WIRE_ORDER_MAX && m2.u.wait.w[1].queued == 0);
    m1.u.wait.w[0].order = NCG_WIRE_ORDER_MAX + 1; /* launch orders are 24-bit */
    CHECK(ncg_wire_decode(buf, (size_t)ncg_wire_encode(&m1, buf, sizeof buf), &m2) < 0);
    m1.u.wait.w[0].order = 1;
    m1.u.wait.w[0].queued = 3;
    CHECK(ncg_wire_decode(buf, (size_t)ncg_wire_encode(&m1, buf, sizeof buf), &m2) < 0);
    /* v14: a host thread waiting for its stream, with an event's recording thread */
    m1.u.wait.w[0] = (struct ncg_wait_ent){.tid = 99, .queued = NCG_WAIT_HOST, .stream = 4};
    m1.u.wait.w[0].order = 12;
    m1.u.wait.w[0].rec_tid = 98;
    strcpy(m1.u.wait.w[0].site, "cudaEventSynchronize");
    roundtrip(&m1);
    m1.u.wait.w[0].stream = NCG_WAIT_ALL_STREAMS;
    m1.u.wait.w[0].rec_tid = 0;
    roundtrip(&m1);
    m1.u.wait.w[0].p2p = 1; /* a host wait is no call */
    CHECK(ncg_wire_decode(buf, (size_t)ncg_wire_encode(&m1, buf, sizeof buf), &m2) < 0);
    m1.u.wait.w[0].p2p = 0;
    m1.u.wait.w[0].queued = 1;
    m1.u.wait.w[1].p2p = 2;
    CHECK(ncg_wire_decode(buf, (size_t)ncg_wire_encode(&m1, buf, sizeof buf), &m2) < 0);
    memset(&m1, 0, sizeof m1);
    m1.type = NCG_MSG_REPORT;
    m1.u.report.n = 1;
    /* v5 sends completed counts as distances to the count: unordered bounds do not encode */
    m1.u.report.e[0] = (struct ncg_report_entry){1, 4, 1, 10, 1, 11, 5, 11, 0}; /* done > count */
    CHECK(ncg_wire_encode(&m1, buf, sizeof buf) == -EINVAL);
    m1.u.report.e[0] = (struct ncg_report_entry){1, 4, 1, 10, 1, 6, 5, 5, 1}; /* done > done_hi */
    CHECK(ncg_wire_encode(&m1, buf, sizeof buf) == -EINVAL);
    m1.u.report.e[0] = (struct ncg_report_entry){1, 4, 1, 10, 1, 6, 5, 11, 1}; /* hi > count */
    CHECK(ncg_wire_encode(&m1, buf, sizeof buf) == -EINVAL);
    m1.u.report.e[0] = (struct ncg_report_entry){1, 4, 1, 10, 1, 6, 5, 8, 2}; /* unknown flag */
    CHECK(ncg_wire_decode(buf, (size_t)ncg_wire_encode(&m1, buf, sizeof buf), &m2) < 0);
    m1.u.report.e[0] = (struct ncg_report_entry){1, 4, 1, 10, 1, 6, 5, 8, 1}; /* sampled bounds */
    CHECK(ncg_wire_decode(buf, (size_t)ncg_wire_encode(&m1, buf, sizeof buf), &m2) > 0 &&
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
    CHECK(ncg_wire_decode((const uint8_t *)"GARBAGE!", 8, &m2) < 0);
    CHECK(ncg_wire_decode((const uint8_t *)"NCGX", 4, &m2) < 0);
    CHECK(ncg_wire_decode((const uint8_t *)"NC", 2, &m2) == 0);
    buf[4] = NCG_WIRE_VERSION + 1; /* a version this build does not speak */
    CHECK(ncg_wire_decode(buf, (size_t)n, &m2) < 0);
    buf[4] = NCG_WIRE_VERSION;
    buf[5] = 0; /* type 0 */
    CHECK(ncg_wire_decode(buf, (size_t)n, &m2) < 0);
    buf[5] = NCG_MSG_REPORT;
    buf[8] = 0x7f; /* length over the bound */
    CHECK(ncg_wire_decode(buf, (size_t)n, &m2) < 0);
    n = ncg_wire_encode(&m1, buf, sizeof buf);
    buf[11]--; /* payload shorter than its content */
    CHECK(ncg_wire_decode(buf, (size_t)n, &m2) < 0);
    n = ncg_wire_encode(&m1, buf, sizeof buf);
    buf[NCG_WIRE_HDR + 2 + 1 + 8 + 1] = 9; /* rank 9 of 4 (n, mask, comm_id, nranks) */
    CHECK(ncg_wire_decode(buf, (size_t)n, &m2) < 0);
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
    CHECK(ncg_wire_encode(&m1, buf, 5) < 0); /* too small a buffer */
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
    CHECK(n > 0);
    if (n <= 0)
        return n;
    struct ncg_report_ref keep = *rx;
    for (long k = 0; k < n; k++) /* a prefix: more bytes needed, the reference untouched */
        CHECK(ncg_wire_decode_ref(buf, (size_t)k, &d, rx) == 0);
    CHECK(!memcmp(&keep, rx, sizeof keep));
    CHECK(ncg_wire_decode_ref(buf, (size_t)n, &d, rx) == n);
    CHECK(d.type == NCG_MSG_REPORT && d.u.report.n == rep->n);
    for (uint32_t i = 0; i < rep->n && i < d.u.report.n; i++) {
        const struct ncg_report_entry *a = &rep->e[i], *b = &d.u.report.e[i];
        CHECK(a->comm_id == b->comm_id && a->nranks == b->nranks && a->rank == b->rank &&
              a->count == b->count && a->global_rank == b->global_rank && a->done == b->done &&
              a->tid == b->tid && a->done_hi == b->done_hi && a->flags == b->flags);
    }
    CHECK(!memcmp(tx, rx, sizeof *tx)); /* both ends hold the same reference */
    return n;
}

/* v5 REPORT entries: only what changed since the previous REPORT on the connection. */
void test_report_ref(void)
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
    CHECK(rep_over(&rep, &tx, &rx) == (long)(NCG_WIRE_HDR + 2 + 3 * 2));
    CHECK(rep_over(&rep, &tx, &rx) == (long)(NCG_WIRE_HDR + 2 + 3 * 1)); /* nothing moved */
    CHECK(first > (long)(NCG_WIRE_HDR + 2 + 3 * 2));
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
    CHECK(n == (long)(NCG_WIRE_HDR + 2 + NCG_WIRE_REF_COMMS + 4 * (1 + 8 + 1 + 1 + 5 + 1 + 1)));
    /* a compact entry without a reference, or past it, is garbage; the reference is kept */
    struct ncg_report_ref empty = {0}, keep = rx;
    CHECK(ncg_wire_decode_ref(buf, (size_t)n, &m2, NULL) < 0);
    CHECK(ncg_wire_decode_ref(buf, (size_t)n, &m2, &empty) < 0 && empty.n == 0);
    buf[NCG_WIRE_HDR + 1] = NCG_WIRE_REF_COMMS + 5; /* n: one entry more than the frame holds */
    CHECK(ncg_wire_decode_ref(buf, (size_t)n, &m2, &rx) < 0);
    CHECK(!memcmp(&keep, &rx, sizeof keep));
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
        CHECK((got == (long)w.len) == cases[i].ok);
        CHECK(cases[i].ok || !memcmp(&r, &one, sizeof r));
        if (got > 0 && i == 1)
            CHECK(m2.u.report.e[0].count == 15 && m2.u.report.e[0].done == 13 &&
                  m2.u.report.e[0].done_hi == 14 && m2.u.report.e[0].tid == 3);
        if (got > 0 && i == sizeof cases / sizeof cases[0] - 1)
            CHECK(m2.u.report.e[0].comm_id == 6 && m2.u.report.e[0].global_rank == -1 &&
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

void test_ranks(void)
{
    char b[256];
    int32_t r1[] = {15, 0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
    CHECK(!strcmp(ncg_ranks_compact(r1, 15, b, sizeof b), "0-2,4-15"));
    int32_t r2[] = {3};
    CHECK(!strcmp(ncg_ranks_compact(r2, 1, b, sizeof b), "3"));
    int32_t r3[] = {1, 3, 5, 5, 6};
    CHECK(!strcmp(ncg_ranks_compact(r3, 5, b, sizeof b), "1,3,5-6"));
    CHECK(!strcmp(ncg_ranks_compact(r3, 0, b, sizeof b), ""));
    int32_t many[200];
    for (int i = 0; i < 200; i++)
        many[i] = 2 * i;
    ncg_ranks_compact(many, 200, b, 40);
    CHECK(strlen(b) < 40 && strstr(b, ",...") != NULL);
    int64_t c[] = {49, 49, 49, 48, 49, -1};
    CHECK(
        !strcmp(ncg_counts_compact(c, 6, b, sizeof b), "49 on 0-2,4; 48 on 3; not gathered on 5"));
}
