/* Unit tests of the relay tree (interpose/relay/, wire_relay.c): the pure helpers (group
 * merging, rank ranges, agreement), the new frames' codecs (round trip, every truncation),
 * and small trees driven through an in-memory network where every message is encoded and
 * decoded: counts as min/max, digest rounds, a mismatch found and named, verdict fan-out
 * exactly once, a client's death and a relay's death, p2p records matched where they meet. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ncclguard/shm.h"
#include "p2pmatch.h"
#include "relay.h"
#include "straggler.h"
#include "verdict.h"
#include "wire.h"

static int fails;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "relay_unit: %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c);      \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

/* Failed allocations, in-process (tests/checker/failalloc.c's approach): while fail_alloc is
 * set, malloc/calloc/realloc of this program fail with ENOMEM. Not under ASan/TSan, whose own
 * allocators these would bypass. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NCG_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define NCG_SANITIZED 1
#endif
#endif
static int fail_alloc;
#ifndef NCG_SANITIZED
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t m);
void *__libc_realloc(void *p, size_t n);
void *malloc(size_t n)
{
    if (fail_alloc) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t m)
{
    if (fail_alloc) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n)
{
    if (fail_alloc && n) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, n);
}
#endif

/* ---- pure helpers ---- */

static struct ncg_rgroup grp(uint8_t st, uint64_t d, uint32_t lo, uint32_t hi)
{
    struct ncg_rgroup g = {0};
    g.status = st;
    g.digest = d;
    g.nranks = hi - lo + 1;
    g.nrange = 1;
    g.r[0].lo = lo;
    g.r[0].hi = hi;
    return g;
}

static void test_helpers(void)
{
    struct ncg_rslot s = {0};
    char b[256];
    struct ncg_rgroup g = grp(NCG_ANS_OK, 7, 0, 3);
    ncg_rslot_merge(&s, &g);
    g = grp(NCG_ANS_OK, 7, 5, 7);
    ncg_rslot_merge(&s, &g);
    CHECK(ncg_rslot_agrees(&s) == 1);
    g = grp(NCG_ANS_OK, 7, 4, 4);
    ncg_rslot_merge(&s, &g);
    CHECK(s.ngroups == 1 && s.g[0].nranks == 8 && s.g[0].nrange == 1);
    CHECK(!strcmp(ncg_rgroup_ranks(&s.g[0], b, sizeof b), "0-7"));
    g = grp(NCG_ANS_OK, 9, 12, 12);
    ncg_rslot_merge(&s, &g);
    CHECK(ncg_rslot_agrees(&s) == 0 && s.ngroups == 2);
    g = grp(NCG_ANS_GONE, 0, 20, 21);
    ncg_rslot_merge(&s, &g);
    CHECK(ncg_rslot_agrees(&s) == -1);
    /* more distinct answers than groups: "more", still a difference */
    struct ncg_rslot t = {0};
    for (uint32_t i = 0; i < NCG_RELAY_GROUPS + 2; i++) {
        g = grp(NCG_ANS_OK, 100 + i, i, i);
        ncg_rslot_merge(&t, &g);
    }
    CHECK(t.ngroups == NCG_RELAY_GROUPS && t.more == 1 && ncg_rslot_agrees(&t) == 0);
    /* one rank alone cannot agree with anyone */
    struct ncg_rslot u = {0};
    g = grp(NCG_ANS_OK, 1, 3, 3);
    ncg_rslot_merge(&u, &g);
    CHECK(ncg_rslot_agrees(&u) == -1);
    /* ranges past the bound: truncated, count exact */
    struct ncg_rslot v = {0};
    for (uint32_t i = 0; i < 2 * NCG_RELAY_RANGES; i++) {
        g = grp(NCG_ANS_OK, 5, 10 * i, 10 * i + 1);
        ncg_rslot_merge(&v, &g);
    }
    CHECK(v.g[0].truncated && v.g[0].nranks == 4 * NCG_RELAY_RANGES &&
          v.g[0].nrange == NCG_RELAY_RANGES);
    ncg_rgroup_ranks(&v.g[0], b, sizeof b);
    CHECK(strstr(b, "0-1,10-11,") == b && strstr(b, "... (32 ranks)"));
}

/* ---- codecs ---- */

static void roundtrip(const struct ncg_msg *m, struct ncg_msg *out)
{
    static uint8_t buf[1 << 17];
    long n = ncg_wire_encode(m, buf, sizeof buf);
    CHECK(n > 0);
    if (n <= 0)
        return;
    for (long cut = 0; cut < n; cut++) { /* every truncation: "more bytes", never a message */
        struct ncg_msg t;
        long k = ncg_wire_decode(buf, (size_t)cut, &t);
        CHECK(k == 0);
        if (k > 0)
            ncg_msg_release(&t);
    }
    CHECK(ncg_wire_decode(buf, (size_t)n, out) == n);
    buf[NCG_WIRE_HDR + 1] ^= 0xff; /* corrupt the payload: decoded or refused, never a crash */
    struct ncg_msg t;
    if (ncg_wire_decode(buf, (size_t)n, &t) > 0)
        ncg_msg_release(&t);
}

static void test_codecs(void)
{
    static struct ncg_msg m, o;
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RHELLO;
    m.u.rhello.token = 0x1122334455667788ull;
    m.u.rhello.pid = 77;
    m.u.rhello.node = 12;
    strcpy(m.u.rhello.host, "h1");
    roundtrip(&m, &o);
    CHECK(o.u.rhello.token == m.u.rhello.token && o.u.rhello.node == 12 &&
          !strcmp(o.u.rhello.host, "h1"));

    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RSTAT;
    m.u.rstat.n = 2;
    for (int i = 0; i < 2; i++) {
        struct ncg_rstat_ent *e = &m.u.rstat.e[i];
        e->comm_id = 100 + (uint64_t)i;
        e->nranks = 64;
        e->known = 8;
        e->active = 7;
        e->min = 5;
        e->max = 9;
        e->nown = 2;
        e->own[0] = 8;
        e->own[1] = 9;
        e->dmin = 3; /* completion: bounds, idle time, the ranks at the minimum */
        e->dhi = 4;
        e->sampled = 1;
        e->didle_ms = 2500;
        e->ndlow = 5;
        e->ndlow_l = 2;
        e->dlow[0] = 10;
        e->dlow[1] = 63;
    }
    roundtrip(&m, &o);
    CHECK(o.u.rstat.n == 2 && o.u.rstat.e[1].comm_id == 101 && o.u.rstat.e[1].min == 5 &&
          o.u.rstat.e[1].nown == 2 && o.u.rstat.e[1].own[1] == 9);
    CHECK(o.u.rstat.e[1].dmin == 3 && o.u.rstat.e[1].dhi == 4 && o.u.rstat.e[1].sampled == 1 &&
          o.u.rstat.e[1].didle_ms == 2500 && o.u.rstat.e[1].ndlow == 5 &&
          o.u.rstat.e[1].ndlow_l == 2 && o.u.rstat.e[1].dlow[1] == 63);
    {
        /* v12's varints and differences: the extremes come back as sent, whatever the order
         * of the counts they are taken from (min and max, the completion bounds, a gone
         * rank's final count below min, ranks listed downwards) */
        static struct ncg_msg x;
        x = m;
        struct ncg_rstat_ent *e = &x.u.rstat.e[0];
        e->nranks = e->known = e->active = NCG_WIRE_MAX_RANKS;
        e->min = 0;
        e->max = UINT64_MAX;
        e->dmin = e->dhi = UINT64_MAX;
        e->idle_ms = e->didle_ms = UINT32_MAX;
        e->ngone = 1;
        e->gone[0] = (struct ncg_rgone){NCG_WIRE_MAX_RANKS - 1, NCG_BYE_ABORT, 3};
        e->own[0] = NCG_WIRE_MAX_RANKS - 1;
        e->own[1] = 0;
        e->nlow = NCG_RELAY_LOW;
        e->low_more = 1;
        for (uint32_t j = 0; j < NCG_RELAY_LOW; j++)
            e->low[j] = NCG_WIRE_MAX_RANKS - 1 - j * 1000;
        roundtrip(&x, &o);
        const struct ncg_rstat_ent *d = &o.u.rstat.e[0];
        CHECK(d->nranks == NCG_WIRE_MAX_RANKS && d->min == 0 && d->max == UINT64_MAX &&
              d->dmin == UINT64_MAX && d->dhi == UINT64_MAX && d->didle_ms == UINT32_MAX);
        CHECK(d->ngone == 1 && d->gone[0].count == 3 && d->gone[0].how == NCG_BYE_ABORT &&
              d->own[0] == NCG_WIRE_MAX_RANKS - 1 && d->own[1] == 0 && d->nlow == NCG_RELAY_LOW &&
              d->low_more == 1 && d->low[NCG_RELAY_LOW - 1] == NCG_WIRE_MAX_RANKS - 1 - 7000);
        /* a node relay's steady entry (16,384 ranks, counts ~10^6, its 8 ranks at the minimum
         * and its 8 at the completed minimum): v11 spent 148 bytes on it, RSTAT most of the
         * bytes between nodes */
        memset(&x, 0, sizeof x);
        x.type = NCG_MSG_RSTAT;
        x.u.rstat.n = 1;
        e = &x.u.rstat.e[0];
        *e = (struct ncg_rstat_ent){.comm_id = 0x0123456789abcdefull,
                                    .nranks = 16384,
                                    .known = 8,
                                    .active = 8,
                                    .min = 1000000,
                                    .max = 1000003,
                                    .idle_ms = 12,
                                    .nlow = 8,
                                    .dmin = 999998,
                                    .dhi = 999999,
                                    .didle_ms = 3,
                                    .ndlow = 8,
                                    .ndlow_l = 8};
        for (uint32_t j = 0; j < 8; j++)
            e->low[j] = e->dlow[j] = 12000 + j;
        static uint8_t b[4096];
        long n = ncg_wire_encode(&x, b, sizeof b);
        CHECK(n > 0 && n <= 70);
    }
    {
        static uint8_t buf[8192];
        struct ncg_msg t;
        /* each out of bounds: refused by the decoder (or the encoder, past the array) */
        struct ncg_rstat_ent *e = &m.u.rstat.e[0], keep = *e;
        for (int c = 0; c < 7; c++) {
            *e = keep;
            if (c == 0)
                e->min = 10; /* min > max */
            else if (c == 1)
                e->dmin = 5; /* dmin > dhi */
            else if (c == 2)
                e->sampled = 2;
            else if (c == 3)
                e->ndlow = 8; /* more at the minimum than active */
            else if (c == 4)
                e->ndlow_l = 6; /* more listed than at the minimum */
            else if (c == 5)
                e->dlow[1] = 64; /* not a rank of the comm */
            else
                e->ndlow_l = NCG_RELAY_LOW + 1;
            long n = ncg_wire_encode(&m, buf, sizeof buf);
            CHECK(c == 6 ? n < 0 : n > 0 && ncg_wire_decode(buf, (size_t)n, &t) < 0);
        }
        *e = keep;
    }

    static struct ncg_msg_ranswer a;
    memset(&a, 0, sizeof a);
    a.comm_id = 5;
    a.qid = 3;
    a.n = 2;
    a.s[0].ngroups = 2;
    a.s[0].g[0] = grp(NCG_ANS_OK, 11, 0, 14);
    a.s[0].g[1] = grp(NCG_ANS_OK, 12, 15, 15);
    a.s[0].g[1].call.func = 2;
    a.s[0].g[1].call.count = 64;
    strcpy(a.s[0].g[1].site, "main+0x10");
    a.s[1].ngroups = 1;
    a.s[1].more = 1;
    a.s[1].g[0] = grp(NCG_ANS_GONE, 0, 0, 15);
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RANSWER;
    m.u.ranswer = &a;
    roundtrip(&m, &o);
    CHECK(o.u.ranswer && o.u.ranswer->n == 2 && o.u.ranswer->s[0].g[1].digest == 12 &&
          o.u.ranswer->s[0].g[1].call.count == 64 &&
          !strcmp(o.u.ranswer->s[0].g[1].site, "main+0x10") && o.u.ranswer->s[1].more == 1);
    ncg_msg_release(&o);
    m.u.ranswer = NULL; /* no payload: refused by the encoder */
    {
        uint8_t buf[64];
        CHECK(ncg_wire_encode(&m, buf, sizeof buf) < 0);
    }

    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RFAULT;
    m.u.rfault.comm_id = 9;
    m.u.rfault.nranks = 100;
    m.u.rfault.n = 2;
    m.u.rfault.rank[0] = 4;
    m.u.rfault.rank[1] = 99;
    strcpy(m.u.rfault.detail, "pid 1 on h, connection lost");
    roundtrip(&m, &o);
    CHECK(o.u.rfault.n == 2 && o.u.rfault.rank[1] == 99 &&
          !strcmp(o.u.rfault.detail, m.u.rfault.detail));

    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RVERDICT;
    m.u.rverdict.comm_nranks = 16384;
    m.u.rverdict.v = ncg_verdict_new(0);
    m.u.rverdict.v->kind = NCG_V_RANK_DIED;
    m.u.rverdict.v->severity = NCG_SEV_ERROR;
    m.u.rverdict.v->comm_id = 42;
    strcpy(m.u.rverdict.v->subject, "12345");
    roundtrip(&m, &o);
    CHECK(o.u.rverdict.comm_nranks == 16384 && o.u.rverdict.v &&
          !strcmp(o.u.rverdict.v->subject, "12345") && o.u.rverdict.v->comm_id == 42);
    ncg_msg_release(&o);
    ncg_verdict_free(m.u.rverdict.v);
}

static long encode_decode(const struct ncg_msg *m)
{
    static uint8_t buf[8192];
    struct ncg_msg t;
    long n = ncg_wire_encode(m, buf, sizeof buf);
    if (n <= 0)
        return n;
    n = ncg_wire_decode(buf, (size_t)n, &t);
    if (n > 0)
        ncg_msg_release(&t);
    return n;
}

/* RP2P: round trip (every truncation: roundtrip), a full frame, and each refused field. */
static void test_codec_rp2p(void)
{
    static struct ncg_msg m, o;
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RP2P;
    m.u.rp2p.comm_id = 0x1234567890abcdefull;
    m.u.rp2p.nranks = NCG_WIRE_MAX_RANKS;
    m.u.rp2p.n = 2;
    m.u.rp2p.r[0] = (struct ncg_rp2p_rec){65535, {1ull << 40, 33, 3, NCG_F_SEND, 7}};
    m.u.rp2p.r[1] = (struct ncg_rp2p_rec){3, {1ull << 40, 32, 65535, NCG_F_RECV, 7}};
    roundtrip(&m, &o);
    CHECK(o.type == NCG_MSG_RP2P && o.u.rp2p.comm_id == m.u.rp2p.comm_id &&
          o.u.rp2p.nranks == NCG_WIRE_MAX_RANKS && o.u.rp2p.n == 2);
    CHECK(!memcmp(&o.u.rp2p.r[0].rec, &m.u.rp2p.r[0].rec, sizeof o.u.rp2p.r[0].rec) &&
          o.u.rp2p.r[0].rank == 65535 && o.u.rp2p.r[1].rank == 3 &&
          o.u.rp2p.r[1].rec.peer == 65535 && o.u.rp2p.r[1].rec.count == 32);
    m.u.rp2p.n = NCG_WIRE_MAX_P2P; /* the bound itself */
    for (uint32_t i = 0; i < NCG_WIRE_MAX_P2P; i++)
        m.u.rp2p.r[i] = (struct ncg_rp2p_rec){i, {i, 8, (int32_t)i + 1, NCG_F_SEND, 7}};
    roundtrip(&m, &o);
    CHECK(o.u.rp2p.n == NCG_WIRE_MAX_P2P && o.u.rp2p.r[63].rank == 63 &&
          o.u.rp2p.r[63].rec.peer == 64);
    {
        uint8_t buf[8192];
        long n = ncg_wire_encode(&m, buf, sizeof buf);
        struct ncg_msg t;
        buf[NCG_WIRE_HDR + 13] = NCG_WIRE_MAX_P2P + 1; /* the count past it: refused */
        CHECK(n > 0 && ncg_wire_decode(buf, (size_t)n, &t) < 0);
        m.u.rp2p.n = NCG_WIRE_MAX_P2P + 1; /* and by the encoder */
        CHECK(ncg_wire_encode(&m, buf, sizeof buf) < 0);
    }
    m.u.rp2p.n = 1;
    m.u.rp2p.nranks = 8;
    m.u.rp2p.r[0] = (struct ncg_rp2p_rec){2, {0, 8, 3, NCG_F_SEND, 7}};
    CHECK(encode_decode(&m) > 0);
    m.u.rp2p.r[0].rank = 8; /* each field out of its bounds: refused by the decoder */
    CHECK(encode_decode(&m) < 0);
    m.u.rp2p.r[0].rank = 2;
    m.u.rp2p.r[0].rec.peer = 8;
    CHECK(encode_decode(&m) < 0);
    m.u.rp2p.r[0].rec.peer = -1;
    CHECK(encode_decode(&m) < 0);
    m.u.rp2p.r[0].rec.peer = 3;
    m.u.rp2p.r[0].rec.func = NCG_F_ALLREDUCE;
    CHECK(encode_decode(&m) < 0);
    m.u.rp2p.r[0].rec.func = NCG_F_RECV;
    m.u.rp2p.nranks = 0;
    CHECK(encode_decode(&m) < 0);
    m.u.rp2p.nranks = NCG_WIRE_MAX_RANKS + 1;
    CHECK(encode_decode(&m) < 0);
}

/* ---- trees over an in-memory network ---- */

#define MAXR 4 /* relays */
#define MAXK 8 /* child connections per relay */
#define MAXQ 4096

enum { TO_CHILD, TO_PARENT, TO_CLIENT }; /* who receives */
struct pkt {
    int kind, relay, conn; /* TO_CHILD: relay's child conn; TO_PARENT: relay gets it from its
                              parent; TO_CLIENT: relay's client on conn */
    long n;
    uint8_t *b;
};

struct client { /* one rank per client process */
    int relay, conn, rank;
    uint32_t pid;
    uint64_t count, odd_from; /* digest differs from slot odd_from (UINT64_MAX: never) */
    uint8_t same_call;        /* from odd_from the digest differs but the call looks the same */
    uint64_t done, done_hi;   /* completed slots, and the upper bound when sampled */
    uint8_t sampled;
    uint8_t none_targeted; /* answers a QUERY limited to representatives with "none" */
    int verdicts, plain;
    int releases;          /* RELEASEs received (the exit release) */
    int queries, targeted; /* QUERYs received, of which limited to representatives */
    struct ncg_verdict *v;
    uint8_t nslow; /* straggler samples for its next REPORT */
    struct ncg_report_slow slow[NCG_WIRE_MAX_SLOW];
};

static struct {
    struct ncg_relay *r[MAXR];
    int parent[MAXR], parent_conn[MAXR]; /* the conn id this relay has at its parent */
    int child_relay[MAXR][MAXK];         /* -1: conn is a client */
    struct client cl[64];
    int ncl;
    struct pkt q[MAXQ];
    int qh, qt;
    uint64_t now;
    uint8_t client_verdicts;
    uint8_t fork; /* tree(1): relay 2 under the root (conn 3), a sibling of relay 1 */
    double lag_warn_s, lag_abort_s, stuck_warn_s, stuck_abort_s, exit_wait_s;
    int frozen; /* a relay that runs no more (frames to it are lost), or -1 */
    /* what each relay said: event lines about a bound (refused, merged), and sent up */
    int refused_ev[MAXR], merged_ev[MAXR];
    int stat_ents[MAXR];                      /* RSTAT entries */
    struct ncg_rstat_ent stat_last[MAXR];     /* the latest RSTAT entry */
    int rfaults[MAXR], rfault_ranks[MAXR];    /* RFAULTs, and ranks in them */
    struct ncg_msg_rfault rfault_first[MAXR]; /* the first RFAULT */
    int rp2p_recs[MAXR];                      /* p2p records sent up (RP2P) */
    int p2p_ev[MAXR];                         /* event lines about the p2p bound */
    int rwait_up[MAXR];                       /* RWAITs sent up */
    int rslow_slots[MAXR], rslow_who[MAXR];   /* RSLOW: slots sent up, of which with who */
    int rslow_unordered[MAXR]; /* RSLOW entries whose slots do not increase (refused whole) */
    long rslow_bytes[MAXR];    /* their frames' bytes */
} T;

static void push(int kind, int relay, int conn, const struct ncg_msg *m)
{
    static uint8_t buf[1 << 17];
    long n = ncg_wire_encode(m, buf, sizeof buf);
    CHECK(n > 0);
    if (n <= 0 || T.qt - T.qh >= MAXQ)
        return;
    struct pkt *p = &T.q[T.qt++ % MAXQ];
    p->kind = kind;
    p->relay = relay;
    p->conn = conn;
    p->n = n;
    p->b = malloc((size_t)n);
    memcpy(p->b, buf, (size_t)n);
}

struct opsarg {
    int relay;
};
static struct opsarg OA[MAXR];

static void op_send(void *arg, int conn, const struct ncg_msg *m)
{
    int ri = ((struct opsarg *)arg)->relay;
    int cr = T.child_relay[ri][conn];
    if (cr >= 0)
        push(TO_PARENT, cr, 0, m);
    else
        push(TO_CLIENT, ri, conn, m);
}
static void op_drop(void *arg, int conn)
{
    (void)arg;
    (void)conn;
}
static void op_up(void *arg, const struct ncg_msg *m)
{
    int ri = ((struct opsarg *)arg)->relay;
    if (m->type == NCG_MSG_RSTAT && m->u.rstat.n) {
        T.stat_ents[ri] += (int)m->u.rstat.n;
        T.stat_last[ri] = m->u.rstat.e[m->u.rstat.n - 1];
    }
    if (m->type == NCG_MSG_RP2P)
        T.rp2p_recs[ri] += (int)m->u.rp2p.n;
    T.rwait_up[ri] += m->type == NCG_MSG_RWAIT;
    if (m->type == NCG_MSG_RSLOW) {
        static uint8_t b[1 << 16];
        T.rslow_bytes[ri] += ncg_wire_encode(m, b, sizeof b);
        for (uint32_t e = 0; e < m->u.rslow->n; e++)
            for (uint32_t j = 0; j < m->u.rslow->e[e].ns; j++) {
                T.rslow_slots[ri]++;
                T.rslow_who[ri] += m->u.rslow->e[e].s[j].has_who;
                T.rslow_unordered[ri] +=
                    j && m->u.rslow->e[e].s[j].slot <= m->u.rslow->e[e].s[j - 1].slot;
            }
    }
    if (m->type == NCG_MSG_RFAULT) {
        if (!T.rfaults[ri]++)
            T.rfault_first[ri] = m->u.rfault;
        T.rfault_ranks[ri] += (int)m->u.rfault.n;
    }
    push(TO_CHILD, T.parent[ri], T.parent_conn[ri], m);
}
static void op_event(void *arg, const char *line)
{
    int ri = ((struct opsarg *)arg)->relay;
    T.refused_ev[ri] += strstr(line, "refused") != NULL;
    T.merged_ev[ri] += strstr(line, "merged") != NULL;
    T.p2p_ev[ri] += strstr(line, "p2p records") != NULL;
}

static uint64_t digest_of(const struct client *c, uint64_t slot)
{
    return slot >= c->odd_from ? 0xbad0000 + slot : 0x600d0000 + slot;
}

static struct client *client_at(int relay, int conn)
{
    for (int i = 0; i < T.ncl; i++)
        if (T.cl[i].relay == relay && T.cl[i].conn == conn)
            return &T.cl[i];
    return NULL;
}

static void client_rx(struct client *c, const struct ncg_msg *m)
{
    if (m->type == NCG_MSG_QUERY) {
        c->queries++;
        c->targeted += m->u.query.nrep != 0;
        static struct ncg_msg a;
        memset(&a, 0, sizeof a);
        a.type = NCG_MSG_ANSWER;
        a.u.answer.comm_id = m->u.query.comm_id;
        a.u.answer.qid = m->u.query.qid;
        a.u.answer.rank = (uint32_t)c->rank;
        a.u.answer.n = m->u.query.n;
        for (uint32_t k = 0; k < m->u.query.n; k++) {
            uint64_t s = m->u.query.slot[k];
            struct ncg_answer *x = &a.u.answer.a[k];
            x->status = m->u.query.nrep && c->none_targeted ? NCG_ANS_NONE : NCG_ANS_OK;
            x->digest = digest_of(c, s);
            x->call.seq = s;
            x->call.func = s >= c->odd_from && !c->same_call ? 2 : 1;
            x->call.count = 8;
            x->call.root = -1;
        }
        push(TO_CHILD, c->relay, c->conn, &a);
    } else if (m->type == NCG_MSG_RVERDICT) {
        c->verdicts++;
        if (!c->v) {
            c->v = m->u.rverdict.v;
            ((struct ncg_msg *)m)->u.rverdict.v = NULL; /* keep it */
        }
    } else if (m->type == NCG_MSG_RELEASE) {
        c->releases++;
    } else if (m->type == NCG_MSG_VERDICT) { /* client_verdicts: the plain form */
        c->verdicts++;
        c->plain++;
        if (!c->v) {
            c->v = m->u.verdict;
            ((struct ncg_msg *)m)->u.verdict = NULL;
        }
    }
}

static void pump(void)
{
    while (T.qh < T.qt) {
        struct pkt p = T.q[T.qh++ % MAXQ];
        struct ncg_msg m;
        long k = ncg_wire_decode(p.b, (size_t)p.n, &m);
        CHECK(k == p.n);
        free(p.b);
        if (k != p.n)
            continue;
        if (p.relay == T.frozen) {
            ncg_msg_release(&m);
            continue;
        }
        if (p.kind == TO_CHILD)
            ncg_relay_message(T.r[p.relay], p.conn, &m, T.now);
        else if (p.kind == TO_PARENT)
            ncg_relay_parent_message(T.r[p.relay], &m, T.now);
        else {
            struct client *c = client_at(p.relay, p.conn);
            if (c)
                client_rx(c, &m);
        }
        ncg_msg_release(&m);
    }
}

static void report_all(void)
{
    for (int i = 0; i < T.ncl; i++) {
        struct client *c = &T.cl[i];
        if (c->relay < 0)
            continue;
        struct ncg_msg m = {.type = NCG_MSG_REPORT};
        m.u.report.n = 1;
        m.u.report.e[0].comm_id = 0xc0;
        m.u.report.e[0].nranks = (uint32_t)T.ncl;
        m.u.report.e[0].rank = (uint32_t)c->rank;
        m.u.report.e[0].count = c->count;
        m.u.report.e[0].global_rank = c->rank;
        m.u.report.e[0].done = c->done;
        m.u.report.e[0].done_hi = c->done_hi;
        m.u.report.e[0].flags = c->sampled ? NCG_REP_SAMPLED : 0;
        m.u.report.nslow[0] = c->nslow;
        memcpy(m.u.report.slow[0], c->slow, sizeof c->slow);
        c->nslow = 0;
        push(TO_CHILD, c->relay, c->conn, &m);
    }
    pump();
}

static void tick_all(int nr)
{
    T.now += 100000000ull;
    for (int i = nr - 1; i >= 0; i--) { /* leaves first: their RSTAT reaches the root */
        ncg_relay_tick(T.r[i], T.now);
        pump();
    }
}

/* Root 0 with clients 0,1 and child relay 1 (conn 2); relay 1 with clients 2,3 (rank 2 is in
 * relay 1's own process). With three_levels, relay 2 under relay 1 (conn 2) holds ranks 4,5
 * (with T.fork: under the root, conn 3). */
static void tree(int three_levels)
{
    uint8_t cv = T.client_verdicts, fork = T.fork;
    double lw = T.lag_warn_s, la = T.lag_abort_s, sw = T.stuck_warn_s, sa = T.stuck_abort_s;
    double ew = T.exit_wait_s;
    memset(&T, 0, sizeof T);
    T.client_verdicts = cv;
    T.fork = fork;
    T.lag_warn_s = lw;
    T.lag_abort_s = la;
    T.stuck_warn_s = sw;
    T.stuck_abort_s = sa;
    T.exit_wait_s = ew;
    T.frozen = -1;
    memset(T.child_relay, -1, sizeof T.child_relay);
    int nr = three_levels ? 3 : 2;
    for (int i = 0; i < nr; i++) {
        struct ncg_relay_params p = {0};
        p.interval_ms = 100;
        p.heartbeat_timeout_s = 10;
        p.node = (uint32_t)i;
        p.root = i == 0;
        p.pid = 1000 + 2 * (uint32_t)i; /* = the pid of the relay's first rank */
        p.client_verdicts = T.client_verdicts;
        p.lag_warn_s = T.lag_warn_s;
        p.lag_abort_s = T.lag_abort_s;
        p.stuck_warn_s = T.stuck_warn_s;
        p.stuck_abort_s = T.stuck_abort_s;
        p.exit_wait_s = T.exit_wait_s;
        p.slow_window = 16; /* not from the environment */
        p.slow_share = 0.05;
        strcpy(p.host, "h");
        OA[i].relay = i;
        struct ncg_relay_ops ops = {op_send, op_drop, op_up, op_event, &OA[i]};
        T.r[i] = ncg_relay_new(&p, &ops);
    }
    int nranks = 2 * nr;
    for (int rk = 0; rk < nranks; rk++) {
        struct client *c = &T.cl[T.ncl++];
        c->relay = rk / 2;
        c->conn = rk % 2;
        c->rank = rk;
        c->pid = 1000 + (uint32_t)rk;
        c->odd_from = UINT64_MAX;
        ncg_relay_connected(T.r[c->relay], c->conn, T.now);
        struct ncg_msg h = {.type = NCG_MSG_HELLO};
        h.u.hello.pid = c->pid;
        h.u.hello.global_rank = rk;
        strcpy(h.u.hello.host, "h");
        push(TO_CHILD, c->relay, c->conn, &h);
    }
    for (int i = 1; i < nr; i++) {
        int up = T.fork && i == 2 ? 0 : i - 1, conn = T.fork && i == 2 ? 3 : 2;
        T.parent[i] = up;
        T.parent_conn[i] = conn;
        T.child_relay[up][conn] = i;
        ncg_relay_connected(T.r[up], conn, T.now);
        ncg_relay_parent_up(T.r[i], T.now);
    }
    pump();
}

static void tree_free(int nr)
{
    for (int i = 0; i < nr; i++)
        ncg_relay_free(T.r[i]);
    for (int i = 0; i < T.ncl; i++)
        ncg_verdict_free(T.cl[i].v);
    while (T.qh < T.qt)
        free(T.q[T.qh++ % MAXQ].b);
}

static void test_agree(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    for (int t = 0; t < 5; t++)
        tick_all(3);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.rounds >= 1 && st.verdicts == 0);
    ncg_relay_get_stats(T.r[2], &st);
    CHECK(st.rounds >= 1); /* the root's query reached the leaf */
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 0);
    tree_free(3);
}

static void test_mismatch(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    for (int t = 0; t < 4; t++)
        tick_all(3); /* slots 0..9 verified */
    int q0[6];
    for (int i = 0; i < T.ncl; i++) {
        T.cl[i].count = 100;
        q0[i] = T.cl[i].queries;
    }
    T.cl[5].odd_from = 57; /* rank 5, under two relays */
    report_all();
    for (int t = 0; t < 10; t++)
        tick_all(3);
    for (int i = 0; i < T.ncl; i++) {
        CHECK(T.cl[i].verdicts == 1); /* every rank, exactly once */
        CHECK(T.cl[i].v && T.cl[i].v->kind == NCG_V_MISMATCH);
    }
    /* the plain round at slot 99 asked every rank; the narrowing after it (32 spaced digests
     * over slots 10..99, then the records) only rank 0 for 0-4 and rank 5, down relay 1 to
     * relay 2 and not to ranks 2 and 3 */
    for (int i = 0; i < T.ncl; i++) {
        int want = i == 0 || i == 5 ? 3 : 1;
        CHECK(T.cl[i].queries - q0[i] == want);
        CHECK(T.cl[i].targeted == want - 1);
    }
    const struct ncg_verdict *v = T.cl[0].v;
    if (v) {
        CHECK(v->slot == 57 && !strcmp(v->subject, "5") && v->ncalls == 2);
        CHECK(!strcmp(v->calls[0].ranks, "0-4") && !strcmp(v->calls[1].ranks, "5"));
        CHECK(v->calls[1].call.func == 2 && v->last_agreed == 56);
    }
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.verdicts == 1);
    /* the same verdict again from the parent: ignored, not delivered twice */
    struct ncg_msg m = {.type = NCG_MSG_RVERDICT};
    m.u.rverdict.comm_nranks = 6;
    m.u.rverdict.v = T.cl[0].v;
    ncg_relay_parent_message(T.r[2], &m, T.now);
    pump();
    ncg_relay_get_stats(T.r[2], &st);
    CHECK(st.forwarded == 1 && st.ignored == 1 && T.cl[4].verdicts == 1);
    tree_free(3);
}

/* Every rank at 100 calls, rank 5 (beneath two relays) differing from slot 57 on (its other
 * flags set by the caller), reported, then ten ticks: the verdict is in. */
static void run_rank5_odd_from57(void)
{
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 100;
    T.cl[5].odd_from = 57;
    report_all();
    for (int t = 0; t < 10; t++)
        tick_all(3);
}

/* A narrowing round's representative does not answer (here: "none" for the slots): the root
 * asks the same slots of every rank and narrows from there, naming the same ranks. */
static void test_mismatch_rep_missing(void)
{
    tree(1);
    T.cl[5].none_targeted = 1;
    run_rank5_odd_from57();
    const struct ncg_verdict *v = T.cl[0].v;
    CHECK(T.cl[0].verdicts == 1 && v && v->kind == NCG_V_MISMATCH);
    if (v)
        CHECK(v->slot == 57 && !strcmp(v->subject, "5") && !strcmp(v->calls[0].ranks, "0-4") &&
              !strcmp(v->calls[1].ranks, "5"));
    /* plain, narrowing for representatives, the same of everyone, the records of everyone */
    CHECK(T.cl[5].targeted == 1 && T.cl[5].queries == 4 && T.cl[1].queries == 3);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.targeted == 1 && st.verdicts == 1);
    tree_free(3);
}

/* Relays 1 and 2 both under the root (fork): the narrowing for ranks 0 and 5 goes down to
 * relay 2 only; relay 1's subtree (ranks 2, 3) hears the plain round alone. */
static void test_mismatch_sibling(void)
{
    T.fork = 1;
    tree(1);
    T.fork = 0;
    run_rank5_odd_from57();
    const struct ncg_verdict *v = T.cl[0].v;
    CHECK(v && v->kind == NCG_V_MISMATCH && v->slot == 57 && !strcmp(v->subject, "5"));
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 1);
    struct ncg_relay_stats s1, s2;
    ncg_relay_get_stats(T.r[1], &s1);
    ncg_relay_get_stats(T.r[2], &s2);
    CHECK(s1.targeted == 0 && s2.targeted == 2 && s1.rounds == 1);
    CHECK(T.cl[2].queries == 1 && T.cl[3].queries == 1 && T.cl[4].queries == 1);
    tree_free(3);
}

/* A rank the differing plain round did not hear from (rank 5 has not reported: rounds start
 * without it after the root's wait) might differ earlier than the groups that answered, were
 * it to answer later: representatives stand only for groups that name every rank, so here the
 * narrowing asks every rank it has. */
static void test_mismatch_absent_rank(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 100;
    T.cl[5].relay = -1; /* never reports */
    T.cl[4].odd_from = 90;
    report_all();
    tick_all(3);
    T.now += 1000000000ull; /* past the root's wait for every rank */
    for (int t = 0; t < 10; t++)
        tick_all(3);
    const struct ncg_verdict *v = T.cl[0].v;
    CHECK(v && v->kind == NCG_V_MISMATCH);
    if (v)
        CHECK(v->slot == 90 && !strcmp(v->subject, "4"));
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.targeted == 0 && st.verdicts == 1);
    for (int i = 0; i < 5; i++)
        CHECK(T.cl[i].targeted == 0 && T.cl[i].queries >= 3);
    tree_free(3);
}

/* The digests differ from slot 57 on but every record there reads the same call (the
 * difference lies in slots the rings no longer keep): one call, said so as coord.c does. */
static void test_mismatch_alike(void)
{
    tree(1);
    T.cl[5].same_call = 1;
    run_rank5_odd_from57();
    const struct ncg_verdict *v = T.cl[0].v;
    CHECK(T.cl[0].verdicts == 1 && v && v->kind == NCG_V_MISMATCH);
    if (v) {
        CHECK(v->slot == 57 && v->ncalls == 1 && !strcmp(v->calls[0].ranks, "0-5"));
        CHECK(!strcmp(v->detail, "the calls at slot 57 look alike: the first difference lies in "
                                 "slots no longer kept"));
        CHECK(v->subject[0] == 0);
    }
    tree_free(3);
}

static void test_client_died(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    ncg_relay_closed(T.r[2], 1, T.now); /* rank 5's process */
    T.cl[5].relay = -1;
    pump();
    for (int i = 0; i < 5; i++)
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].v && T.cl[i].v->kind == NCG_V_RANK_DIED &&
              !strcmp(T.cl[i].v->subject, "5"));
    CHECK(T.cl[5].verdicts == 0);
    if (T.cl[0].v)
        CHECK(strstr(T.cl[0].v->detail, "pid 1005") != NULL);
    tree_free(3);
}

static void test_relay_died(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3); /* relay 1 reports its own rank (2, pid 1002) */
    /* relay 1's process dies: its rank 2 with it; rank 3 and relay 2 reattach to the root */
    ncg_relay_closed(T.r[0], 2, T.now);
    T.cl[2].relay = T.cl[3].relay = -1;
    pump();
    for (int i = 0; i < 2; i++)
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].v && T.cl[i].v->kind == NCG_V_RANK_DIED &&
              !strcmp(T.cl[i].v->subject, "2"));
    if (T.cl[0].v)
        CHECK(strstr(T.cl[0].v->detail, "relay of node 1") != NULL);
    /* reattach: relay 2 as a child of the root on conn 3, rank 3 as a client on conn 4 */
    ncg_relay_parent_down(T.r[2]);
    T.parent[2] = 0;
    T.parent_conn[2] = 3;
    T.child_relay[0][3] = 2;
    ncg_relay_connected(T.r[0], 3, T.now);
    ncg_relay_parent_up(T.r[2], T.now);
    T.cl[3].relay = 0;
    T.cl[3].conn = 4;
    ncg_relay_connected(T.r[0], 4, T.now);
    struct ncg_msg h = {.type = NCG_MSG_HELLO};
    h.u.hello.pid = T.cl[3].pid;
    push(TO_CHILD, 0, 4, &h);
    pump();
    report_all();
    tick_all(3);
    for (int i = 3; i < 6; i++) /* the late ones get it from the root, once */
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].v && T.cl[i].v->kind == NCG_V_RANK_DIED);
    tree_free(3);
}

static void test_detached_fault(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    ncg_relay_parent_down(T.r[2]);      /* relay 2 lost its parent... */
    ncg_relay_closed(T.r[2], 0, T.now); /* ...and then rank 4 died: the fault waits */
    T.cl[4].relay = -1;
    pump();
    CHECK(T.cl[0].verdicts == 0);
    T.parent_conn[2] = 3; /* reattached on a new connection: the fault goes up */
    T.child_relay[1][3] = 2;
    ncg_relay_connected(T.r[1], 3, T.now);
    ncg_relay_parent_up(T.r[2], T.now);
    pump();
    CHECK(T.cl[0].verdicts == 0); /* decided: its figures gathered first */
    for (int t = 0; t < 4; t++)   /* relay 1 still waits on relay 2's old link: its deadline */
        tick_all(3);
    CHECK(T.cl[0].verdicts == 1 && T.cl[0].v && !strcmp(T.cl[0].v->subject, "4"));
    CHECK(T.cl[5].verdicts == 1);
    tree_free(3);
}

static void test_topology(void)
{
    /* every node's ancestors cover it, subtrees are contiguous, the depth is log_k */
    const uint32_t sizes[] = {1, 2, 8, 17, 128, 2048, 3000};
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        uint32_t n = sizes[t], maxdepth = 0;
        uint32_t *fan = calloc(n, sizeof *fan);
        CHECK(ncg_relay_parent(0, n, 16) == 0);
        for (uint32_t i = 1; i < n; i++) {
            uint32_t p = ncg_relay_parent(i, n, 16), d = 1;
            CHECK(p < i); /* a parent precedes its children */
            fan[p]++;
            /* contiguity: every node between the parent and i has an ancestor chain to p */
            if (i > p + 1) {
                uint32_t q = i - 1;
                while (q > p)
                    q = ncg_relay_parent(q, n, 16);
                CHECK(q == p);
            }
            for (uint32_t q = p; q; q = ncg_relay_parent(q, n, 16))
                d++;
            maxdepth = d > maxdepth ? d : maxdepth;
        }
        for (uint32_t i = 0; i < n; i++)
            CHECK(fan[i] <= 16);
        if (n == 2048)
            CHECK(maxdepth == 3 && fan[0] == 16);
        free(fan);
    }
    CHECK(ncg_relay_parent(5, 8, 2) == 0 && ncg_relay_parent(6, 8, 2) == 5 &&
          ncg_relay_parent(2, 8, 2) == 1 && ncg_relay_parent(4, 8, 2) == 1);
}

/* Real clients (interpose/agent/client.c) read a plain VERDICT: with client_verdicts, clients get
 * that form (the comm's size, per-rank arrays) and relays still get RVERDICT. */
static void test_client_verdicts(void)
{
    T.client_verdicts = 1;
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    ncg_relay_closed(T.r[2], 1, T.now);
    T.cl[5].relay = -1;
    pump();
    for (int i = 0; i < 5; i++)
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].plain == 1 && T.cl[i].v && T.cl[i].v->nranks == 6 &&
              !strcmp(T.cl[i].v->subject, "5"));
    for (int i = 0; i < 5; i++) /* every rank's figures gathered, the dead one's from its relay */
        for (int k = 0; k < 6 && T.cl[i].v; k++)
            CHECK(T.cl[i].v->counts[k] == 10 && T.cl[i].v->members[k] == k);
    tree_free(3);
    T.client_verdicts = 0;
}

/* Field by field (a struct's padding is not compared). */
static int same_runs(const struct ncg_figrun *x, const struct ncg_figrun *y, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (x[i].lo != y[i].lo || x[i].n != y[i].n || x[i].count != y[i].count ||
            x[i].count_hi != y[i].count_hi || x[i].done != y[i].done || x[i].glo != y[i].glo ||
            x[i].gstride != y[i].gstride || x[i].state != y[i].state || x[i].flags != y[i].flags)
            return 0;
    return 1;
}

/* The figures gather for a status view (relay.h): a request at the root gathers every rank's
 * figures through two levels of relays (counts, completed counts, global ranks, a dead rank's
 * last figures from its node relay); a range; the refusals; the codecs of its frames and of a
 * tree verdict carrying runs. */
static void test_figs_gather(void)
{
    const struct ncg_figrun *fr;
    uint32_t n, lo, hi;
    uint64_t at;
    char t[256];
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = T.cl[i].done = T.cl[i].done_hi = i == 3 ? 9 : 10;
    report_all();
    tick_all(3);
    CHECK(ncg_relay_figs_last(T.r[0], 0xc0, &fr, &n, &lo, &hi, &at) == -ENOENT);
    CHECK(ncg_relay_figs_request(T.r[0], 0xc1, 0, 5, T.now) == -ENOENT);
    CHECK(ncg_relay_figs_request(T.r[0], 0xc0, 3, 6, T.now) == -EINVAL);
    CHECK(ncg_relay_figs_request(T.r[0], 0xc0, 4, 3, T.now) == -EINVAL);
    ncg_relay_closed(T.r[2], 1, T.now); /* rank 5 dies: the RANK DIED verdict gathers too */
    T.cl[5].relay = -1;
    pump();
    CHECK(ncg_relay_figs_last(T.r[0], 0xc0, &fr, &n, &lo, &hi, &at) == 0);
    CHECK(lo == 0 && hi == 5 && at == T.now);
    CHECK(!strcmp(ncg_figruns_counts_text(fr, n, 6, t, sizeof t), "10 on 0-2,4-5; 9 on 3"));
    for (uint32_t j = 0; j < n; j++) {
        CHECK(ncg_figrun_grank(&fr[j], 0) == (int32_t)fr[j].lo); /* global = comm rank here */
        if (fr[j].lo + fr[j].n == 6)
            CHECK(fr[j].state == NCG_FIG_DEAD && fr[j].n == 1 && fr[j].done == 10);
    }
    tree_free(3);

    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 20 + (uint64_t)i;
    report_all();
    tick_all(3);
    CHECK(ncg_relay_figs_request(T.r[0], 0xc0, 2, 4, T.now) == 0);
    CHECK(ncg_relay_figs_request(T.r[0], 0xc0, 0, 5, T.now) == -EBUSY); /* relays not answered */
    pump();
    CHECK(ncg_relay_figs_last(T.r[0], 0xc0, &fr, &n, &lo, &hi, &at) == 0 && lo == 2 && hi == 4);
    CHECK(!strcmp(ncg_figruns_counts_text(fr, n, 6, t, sizeof t),
                  "? on 0-1,5; 22 on 2; 23 on 3; 24 on 4"));
    /* a subtree that never answers: the root's deadline, its ranks unknown */
    CHECK(ncg_relay_figs_request(T.r[0], 0xc0, 0, 5, T.now) == 0);
    T.frozen = 1; /* relay 1 (ranks 2-5 beneath) hears nothing more */
    pump();
    CHECK(ncg_relay_figs_request(T.r[0], 0xc0, 0, 5, T.now) == -EBUSY);
    for (int k = 0; k < 11; k++)
        tick_all(3);
    T.frozen = -1;
    CHECK(ncg_relay_figs_last(T.r[0], 0xc0, &fr, &n, &lo, &hi, &at) == 0 && lo == 0 && hi == 5);
    CHECK(!strcmp(ncg_figruns_counts_text(fr, n, 6, t, sizeof t), "20 on 0; 21 on 1; ? on 2-5"));
    tree_free(3);

    static struct ncg_msg m, o;
    static struct ncg_msg_rfiga a;
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RFIGQ;
    m.u.rfigq = (struct ncg_msg_rfigq){0xc0, NCG_WIRE_MAX_RANKS, 7, 100, (NCG_WIRE_MAX_RANKS)-1};
    roundtrip(&m, &o);
    CHECK(o.u.rfigq.nranks == NCG_WIRE_MAX_RANKS && o.u.rfigq.lo == 100 &&
          o.u.rfigq.hi == (NCG_WIRE_MAX_RANKS)-1);
    memset(&a, 0, sizeof a);
    a = (struct ncg_msg_rfiga){0xc0, NCG_WIRE_MAX_RANKS, 7, 2, {{0}}};
    a.r[0] =
        (struct ncg_figrun){0, NCG_WIRE_MAX_RANKS / 2, 1235, 1235, 1234, 0, 1, NCG_FIG_ACTIVE, 0};
    a.r[1] = (struct ncg_figrun){
        NCG_WIRE_MAX_RANKS / 2, NCG_WIRE_MAX_RANKS / 2, 1230, 1235, 1230, -1, 0, 0, NCG_FIG_COARSE};
    m.type = NCG_MSG_RFIGA;
    m.u.rfiga = &a;
    roundtrip(&m, &o);
    CHECK(o.u.rfiga && o.u.rfiga->n == 2 && same_runs(o.u.rfiga->r, a.r, 2));
    ncg_msg_release(&o);
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RVERDICT;
    m.u.rverdict.comm_nranks = NCG_WIRE_MAX_RANKS;
    m.u.rverdict.v = ncg_verdict_new(0);
    m.u.rverdict.v->kind = NCG_V_LAG;
    CHECK(ncg_verdict_set_figs(m.u.rverdict.v, a.r, 2) == 0);
    roundtrip(&m, &o);
    CHECK(o.u.rverdict.v && o.u.rverdict.v->nfigs == 2 && same_runs(o.u.rverdict.v->figs, a.r, 2));
    ncg_msg_release(&o);
    m.u.rverdict.comm_nranks = (NCG_WIRE_MAX_RANKS)-1; /* runs past the comm: refused */
    {
        static uint8_t buf[4096];
        CHECK(ncg_wire_encode(&m, buf, sizeof buf) < 0);
    }
    ncg_verdict_free(m.u.rverdict.v);
}

static void goodbye(struct client *c, uint64_t count, uint8_t flags)
{
    struct ncg_msg m = {.type = NCG_MSG_GOODBYE};
    m.u.goodbye.flags = flags | NCG_BYE_PROCESS;
    m.u.goodbye.n = 1;
    m.u.goodbye.comm_id[0] = 0xc0;
    m.u.goodbye.count[0] = count;
    push(TO_CHILD, c->relay, c->conn, &m);
    pump();
    ncg_relay_closed(T.r[c->relay], c->conn, T.now); /* then the process exits */
    c->relay = -1;
}

static void test_exited(void)
{
    /* everyone leaves after the same count: no verdict */
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    for (int i = T.ncl - 1; i >= 1; i--)
        goodbye(&T.cl[i], 10, 0);
    for (int t = 0; t < 3; t++)
        tick_all(3);
    CHECK(T.cl[0].verdicts == 0);
    tree_free(3);
    /* rank 5 (beneath two relays) leaves after 10 calls, the others go on to 20 */
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    goodbye(&T.cl[5], 10, NCG_BYE_ABORT);
    for (int t = 0; t < 2; t++)
        tick_all(3);
    CHECK(T.cl[0].verdicts == 0); /* nobody went beyond it yet */
    for (int i = 0; i < 5; i++)
        T.cl[i].count = 20;
    report_all();
    for (int t = 0; t < 3; t++)
        tick_all(3);
    for (int i = 0; i < 5; i++)
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].v && T.cl[i].v->kind == NCG_V_RANK_EXITED &&
              !strcmp(T.cl[i].v->subject, "5"));
    if (T.cl[0].v)
        CHECK(strstr(T.cl[0].v->detail, NCG_EXITED_ABORT " after 10 calls; others issued up to "
                                                         "20") == T.cl[0].v->detail);
    tree_free(3);
}

/* A frozen relay (SIGSTOP, a partitioned host): its parent hears nothing for the heartbeat
 * timeout and declares its own ranks dead; its child relay sees a silent parent. */
static void test_silent_relay(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    CHECK(!ncg_relay_parent_silent(T.r[2], T.now));
    /* relay 1 freezes: only the root, relay 2 and their own clients go on */
    T.frozen = 1;
    for (int t = 0; t < 60; t++) {
        T.now += 200000000ull;
        for (int i = 0; i < T.ncl; i++)
            if (T.cl[i].relay == 0 || T.cl[i].relay == 2) {
                struct ncg_msg m = {.type = NCG_MSG_REPORT};
                m.u.report.n = 1;
                m.u.report.e[0].comm_id = 0xc0;
                m.u.report.e[0].nranks = (uint32_t)T.ncl;
                m.u.report.e[0].rank = (uint32_t)T.cl[i].rank;
                m.u.report.e[0].count = 10;
                push(TO_CHILD, T.cl[i].relay, T.cl[i].conn, &m);
            }
        ncg_relay_tick(T.r[2], T.now);
        ncg_relay_tick(T.r[0], T.now);
        pump();
    }
    CHECK(ncg_relay_parent_silent(T.r[2], T.now)); /* its caller reattaches it */
    CHECK(T.cl[0].verdicts == 1 && T.cl[0].v && T.cl[0].v->kind == NCG_V_RANK_DIED &&
          !strcmp(T.cl[0].v->subject, "2"));
    if (T.cl[0].v)
        CHECK(strstr(T.cl[0].v->detail, "silent for") != NULL);
    tree_free(3);
}

/* LAG: rank 5 (beneath two relays) stays 2 calls behind and nobody progresses: one warning
 * (the checking goes on), or with lag_abort_s an error verdict. */
static void test_lag(void)
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

static void test_stuck(void)
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

/* (Found in review.) Every rank under relay 2 leaves, then relayd's frequent ticks come before
 * the next RSTAT: the comm must not be forgotten before its last RSTAT says the ranks left
 * (fast = a tick 20 ms later); RANK EXITED reaches the others either way. */
static void probe_exited(int fast)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    goodbye(&T.cl[4], 10, 0);
    goodbye(&T.cl[5], 10, 0);
    if (fast) { /* relayd ticks every poll (<= 20 ms), not once per interval */
        T.now += 20000000ull;
        ncg_relay_tick(T.r[2], T.now);
        pump();
    }
    for (int i = 0; i < 4; i++)
        T.cl[i].count = 20;
    report_all();
    for (int t = 0; t < 5; t++)
        tick_all(3);
    CHECK(T.cl[0].verdicts == 1 && T.cl[0].v && T.cl[0].v->kind == NCG_V_RANK_EXITED &&
          !strcmp(T.cl[0].v->subject, "4-5"));
    (void)fast;
    tree_free(3);
}

/* (Found in review.) A member that registers after the verdict, once the other members under its
 * relay ended, still gets it. */
static void probe_late(void)
{
    tree(0); /* root: ranks 0,1; relay 1: ranks 2,3 */
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    T.cl[3].relay = -1; /* rank 3 slow to register */
    report_all();
    tick_all(2);
    ncg_relay_closed(T.r[0], 0, T.now); /* rank 0 died */
    T.cl[0].relay = -1;
    pump();
    CHECK(T.cl[1].verdicts == 1 && T.cl[2].verdicts == 1);
    goodbye(&T.cl[2], 10, NCG_BYE_VERDICT); /* rank 2 ends by the verdict */
    T.now += 20000000ull;
    ncg_relay_tick(T.r[1], T.now);
    pump();
    T.cl[3].relay = 1; /* rank 3 registers now */
    report_all();
    for (int t = 0; t < 3; t++)
        tick_all(2);
    CHECK(T.cl[3].verdicts == 1);
    tree_free(2);
}

/* (Found in review.) Ranks die while their relay is detached from its parent, and the relay
 * ticks while it redials: the queued RANK DIED survives and goes up on reattach. */
static void probe_detached(int tick_between)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    ncg_relay_parent_down(T.r[2]);
    ncg_relay_closed(T.r[2], 0, T.now); /* rank 4 died */
    ncg_relay_closed(T.r[2], 1, T.now); /* rank 5 died (node-wide kill) */
    T.cl[4].relay = T.cl[5].relay = -1;
    pump();
    if (tick_between) { /* the relay keeps ticking while it redials (200 ms) */
        T.now += 20000000ull;
        ncg_relay_tick(T.r[2], T.now);
        pump();
    }
    T.parent_conn[2] = 3;
    T.child_relay[1][3] = 2;
    ncg_relay_connected(T.r[1], 3, T.now);
    ncg_relay_parent_up(T.r[2], T.now);
    pump();
    CHECK(T.cl[0].verdicts == 0); /* decided: its figures gathered first */
    for (int t = 0; t < 4; t++)   /* relay 1 still waits on relay 2's old link: its deadline */
        tick_all(3);
    CHECK(T.cl[0].verdicts == 1 && T.cl[0].v && !strcmp(T.cl[0].v->subject, "4"));
    tree_free(3);
}

/* A node relay dies (rank 2's process); its other process (rank 3) comes to the root directly,
 * after every other member has left: the root kept the comm and its verdict for it (it was
 * forgotten once its last kid left, and rank 3 waited for nothing forever). */
static void test_late_at_root(void)
{
    tree(0); /* root: ranks 0,1; relay 1: ranks 2,3 (rank 2 in relay 1's process) */
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(2);
    ncg_relay_closed(T.r[0], 2, T.now); /* relay 1's process died */
    T.cl[2].relay = T.cl[3].relay = -1;
    pump();
    CHECK(T.cl[0].verdicts == 1 && T.cl[0].v && !strcmp(T.cl[0].v->subject, "2"));
    goodbye(&T.cl[0], 10, NCG_BYE_VERDICT);
    goodbye(&T.cl[1], 10, NCG_BYE_VERDICT);
    for (int t = 0; t < 5; t++)
        tick_all(1);
    T.cl[3].relay = 0;
    T.cl[3].conn = 5;
    ncg_relay_connected(T.r[0], 5, T.now);
    struct ncg_msg h = {.type = NCG_MSG_HELLO};
    h.u.hello.pid = T.cl[3].pid;
    strcpy(h.u.hello.host, "h");
    push(TO_CHILD, 0, 5, &h);
    report_all();
    tick_all(1);
    CHECK(T.cl[3].verdicts == 1 && T.cl[3].v && !strcmp(T.cl[3].v->subject, "2"));
    tree_free(2);
}

/* The root's rounds wait (up to a second) for every rank of the comm: a mismatch found among
 * the ranks attached first would name only them. */
static void test_round_waits(void)
{
    tree(0);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    T.cl[1].odd_from = 5;
    T.cl[2].relay = T.cl[3].relay = -1; /* relay 1's ranks attach late */
    report_all();
    for (int t = 0; t < 5; t++)
        tick_all(2);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.rounds == 0 && T.cl[0].verdicts == 0);
    T.cl[2].relay = T.cl[3].relay = 1;
    report_all();
    for (int t = 0; t < 8; t++)
        tick_all(2);
    CHECK(T.cl[0].verdicts == 1 && T.cl[3].verdicts == 1);
    if (T.cl[0].v) /* every member named: 1 vs 0,2-3 */
        CHECK(T.cl[0].v->ncalls == 2 && (!strcmp(T.cl[0].v->calls[0].ranks, "0,2-3") ||
                                         !strcmp(T.cl[0].v->calls[1].ranks, "0,2-3")));
    tree_free(2);
    /* a rank that never registers delays the check by a second only */
    tree(0);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    T.cl[3].relay = -1;
    report_all();
    for (int t = 0; t < 14; t++)
        tick_all(2);
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.rounds >= 1);
    tree_free(2);
}

/* A client connection registers more comm ranks than a process holds (NCG_RELAY_CONN_RANKS):
 * the rest are refused with one event line, and only the first go up. */
static void test_conn_cap(void)
{
    tree(1);
    struct ncg_msg m = {.type = NCG_MSG_REPORT};
    for (uint32_t b = 0; b < 2; b++) { /* rank 4 (relay 2, conn 0): 100 comms in two reports */
        m.u.report.n = 50;
        for (uint32_t e = 0; e < 50; e++) {
            m.u.report.e[e].comm_id = 0x1000 + b * 50 + e;
            m.u.report.e[e].nranks = 6;
            m.u.report.e[e].rank = 4;
            m.u.report.e[e].count = 5;
        }
        ncg_relay_message(T.r[2], 0, &m, T.now);
    }
    tick_all(3);
    CHECK(T.stat_ents[2] == (int)NCG_RELAY_CONN_RANKS && T.refused_ev[2] == 1);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[2], &st);
    CHECK(st.comms == NCG_RELAY_CONN_RANKS && st.refused == 100 - NCG_RELAY_CONN_RANKS);
    tree_free(3);
}

/* A child relay announces more communicators than a relay tracks (NCG_RELAY_MAX_COMMS). */
static void test_comm_cap(void)
{
    tree(1);
    static struct ncg_msg m;
    uint32_t total = NCG_RELAY_MAX_COMMS + 100;
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RSTAT;
    for (uint32_t b = 0; b * NCG_RELAY_STAT < total; b++) { /* to relay 1 from relay 2 (conn 2) */
        m.u.rstat.n = 0;
        for (uint32_t e = 0; e < NCG_RELAY_STAT && b * NCG_RELAY_STAT + e < total; e++) {
            struct ncg_rstat_ent *x = &m.u.rstat.e[m.u.rstat.n++];
            memset(x, 0, sizeof *x);
            x->comm_id = 0x100000 + b * NCG_RELAY_STAT + e;
            x->nranks = 6;
            x->known = x->active = 1;
            x->min = x->max = 5;
        }
        ncg_relay_message(T.r[1], 2, &m, T.now);
    }
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[1], &st);
    CHECK(st.comms == NCG_RELAY_MAX_COMMS && st.refused == 100 && T.refused_ev[1] == 1);
    T.now += 100000000ull;
    ncg_relay_tick(T.r[1], T.now);
    CHECK(T.stat_ents[1] == (int)NCG_RELAY_MAX_COMMS);
    tree_free(3);
}

/* Rank 4's process says goodbye and exits, then the same rank registers again, twenty times,
 * on new connections: its one kid is reused (was one more per registration). */
static void test_reregister(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    struct client *c = &T.cl[4];
    for (int t = 0; t < 20; t++) {
        goodbye(c, 10, 0);
        c->relay = 2;
        ncg_relay_connected(T.r[2], c->conn, T.now);
        struct ncg_msg h = {.type = NCG_MSG_HELLO};
        h.u.hello.pid = c->pid;
        push(TO_CHILD, 2, c->conn, &h);
        pump();
        report_all();
    }
    T.now += 100000000ull;
    ncg_relay_tick(T.r[2], T.now);
    pump();
    const struct ncg_rstat_ent *e = &T.stat_last[2];
    CHECK(e->comm_id == 0xc0 && e->known == 2 && e->active == 1 && e->ngone == 1 &&
          e->gone[0].rank == 4);
    tree_free(3);
}

/* Faults keep coming while a relay is detached (a child relay floods RFAULTs): at most
 * NCG_RELAY_PEND are queued, the later ranks merged into the last, the first kept as it was;
 * one event line. */
static void test_pend_cap(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(3);
    ncg_relay_parent_down(T.r[1]);
    for (uint32_t i = 0; i < 40; i++) {
        struct ncg_msg f = {.type = NCG_MSG_RFAULT};
        f.u.rfault.comm_id = 0xe0;
        f.u.rfault.nranks = 1000;
        f.u.rfault.n = 1;
        f.u.rfault.rank[0] = 100 + i;
        snprintf(f.u.rfault.detail, sizeof f.u.rfault.detail, "fault %u", i);
        ncg_relay_message(T.r[1], 2, &f, T.now);
        if (i == 20) /* a duplicate: nothing new */
            ncg_relay_message(T.r[1], 2, &f, T.now);
    }
    CHECK(T.rfaults[1] == 0 && T.merged_ev[1] == 1);
    T.parent_conn[1] = 3; /* reattached to the root on a new connection */
    T.child_relay[0][3] = 1;
    ncg_relay_connected(T.r[0], 3, T.now);
    ncg_relay_parent_up(T.r[1], T.now);
    pump();
    CHECK(T.rfaults[1] == (int)NCG_RELAY_PEND && T.rfault_ranks[1] == 40);
    CHECK(T.rfault_first[1].n == 1 && T.rfault_first[1].rank[0] == 100 &&
          !strcmp(T.rfault_first[1].detail, "fault 0"));
    tree_free(3);
}

/* A report for a new comm while allocations fail: the relay says it lost state, and the root
 * issues no verdict from it (as coord.c: its host stops the checker instead). */
static void test_nomem(void)
{
#ifdef NCG_SANITIZED
    printf("relay_unit: out-of-memory case skipped (sanitizer allocator)\n");
    return;
#endif
    tree(0); /* root: ranks 0,1; relay 1: ranks 2,3 */
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 10;
    report_all();
    tick_all(2);
    CHECK(!ncg_relay_out_of_memory(T.r[0]) && !ncg_relay_out_of_memory(T.r[1]));
    struct ncg_msg m = {.type = NCG_MSG_REPORT};
    m.u.report.n = 1;
    m.u.report.e[0].comm_id = 0xd0;
    m.u.report.e[0].nranks = 4;
    m.u.report.e[0].count = 3;
    for (int i = 0; i < 2; i++) {
        m.u.report.e[0].rank = (uint32_t)(2 * i);
        fail_alloc = 1;
        ncg_relay_message(T.r[i], 0, &m, T.now);
        fail_alloc = 0;
        CHECK(ncg_relay_out_of_memory(T.r[i]));
    }
    ncg_relay_closed(T.r[0], 1, T.now); /* rank 1 dies: a RANK DIED, judged from lost state */
    T.cl[1].relay = -1;
    pump();
    tick_all(2);
    struct ncg_relay_stats st;
    ncg_relay_get_stats(T.r[0], &st);
    CHECK(st.verdicts == 0 && T.cl[0].verdicts == 0 && T.cl[2].verdicts == 0);
    tree_free(2);
}

/* ---- p2p ---- */

/* Client c's k-th send to (send) or recv from peer, of count float32 elements. */
static void p2p(const struct client *c, int send, int peer, uint64_t k, uint64_t count)
{
    struct ncg_msg m = {.type = NCG_MSG_P2P};
    m.u.p2p.comm_id = 0xc0;
    m.u.p2p.n = 1;
    m.u.p2p.r[0] = (struct ncg_p2p_rec){k, count, peer, send ? NCG_F_SEND : NCG_F_RECV, 7};
    push(TO_CHILD, c->relay, c->conn, &m);
    pump();
}

static void stats(int relay, struct ncg_relay_stats *st)
{
    ncg_relay_get_stats(T.r[relay], st);
}

static int verdicts_total(void)
{
    int n = 0;
    for (int i = 0; i < T.ncl; i++)
        n += T.cl[i].verdicts;
    return n;
}

/* Both ends beneath one relay: matched there, nothing sent up, no verdict. The other side may
 * come an interval later (the hold). */
static void test_p2p_leaf(void)
{
    tree(1);
    report_all();
    tick_all(3);
    p2p(&T.cl[4], 1, 5, 0, 8);
    p2p(&T.cl[5], 0, 4, 0, 8);
    p2p(&T.cl[5], 0, 4, 1, 16); /* the recv first, the send one tick later */
    p2p(&T.cl[5], 0, 4, 1, 16); /* the same side again: dropped */
    tick_all(3);
    p2p(&T.cl[4], 1, 5, 1, 16);
    for (int t = 0; t < 5; t++)
        tick_all(3);
    struct ncg_relay_stats st;
    stats(2, &st);
    CHECK(st.p2p_matched == 2 && st.p2p_held == 0 && st.p2p_up == 0 && T.rp2p_recs[2] == 0);
    stats(0, &st);
    CHECK(st.p2p_matched == 0 && st.p2p_held == 0 && st.verdicts == 0);
    CHECK(verdicts_total() == 0);
    tree_free(3);
}

/* Ends beneath different relays: each sends its record up after the hold and the lowest
 * common relay matches them. Forked tree: relays 1 and 2 under the root (ranks 2 and 4); chain:
 * rank 3 at relay 1, rank 5 at relay 2 beneath it (matched at relay 1, not at the root). */
static void test_p2p_cross(void)
{
    T.fork = 1;
    tree(1);
    report_all();
    tick_all(3);
    p2p(&T.cl[2], 1, 4, 0, 8);
    p2p(&T.cl[4], 0, 2, 0, 8);
    for (int t = 0; t < 4; t++)
        tick_all(3);
    struct ncg_relay_stats st;
    CHECK(T.rp2p_recs[1] == 1 && T.rp2p_recs[2] == 1);
    stats(0, &st);
    CHECK(st.p2p_matched == 1 && st.p2p_held == 0 && st.verdicts == 0);
    stats(1, &st);
    CHECK(st.p2p_matched == 0 && st.p2p_held == 0);
    CHECK(verdicts_total() == 0);
    tree_free(3);
    T.fork = 0;

    tree(1);
    report_all();
    tick_all(3);
    p2p(&T.cl[5], 1, 3, 0, 8);
    p2p(&T.cl[3], 0, 5, 0, 8);
    for (int t = 0; t < 4; t++)
        tick_all(3);
    CHECK(T.rp2p_recs[2] == 1 && T.rp2p_recs[1] == 0);
    stats(1, &st);
    CHECK(st.p2p_matched == 1 && st.p2p_held == 0);
    stats(0, &st);
    CHECK(st.p2p_matched == 0 && st.p2p_held == 0 && st.verdicts == 0);
    CHECK(verdicts_total() == 0);
    tree_free(3);
}

/* The verdict every client got: the flat coordinator's P2P MISMATCH, word for word. */
static void check_p2p_verdict(int src, int dst, const char *summary)
{
    char want[256], sum[512];
    snprintf(want, sizeof want, "%d,%d", src < dst ? src : dst, src < dst ? dst : src);
    for (int i = 0; i < T.ncl; i++) {
        const struct ncg_verdict *v = T.cl[i].v;
        CHECK(T.cl[i].verdicts == 1 && T.cl[i].plain == 1 && v && v->kind == NCG_V_P2P_MISMATCH);
        if (!v)
            continue;
        CHECK(!strcmp(v->subject, want) && v->slot == 0 && v->ncalls == 2 && v->nranks == 6);
        snprintf(want, sizeof want, "send #0 from rank %d to rank %d", src, dst);
        CHECK(!strcmp(v->detail, want));
        ncg_verdict_summary(v, sum, sizeof sum);
        CHECK(strstr(sum, summary) != NULL);
        snprintf(want, sizeof want, "%d,%d", src < dst ? src : dst, src < dst ? dst : src);
    }
}

/* A send of 33 against a recv of 32 beneath one relay: found there, sent up as its two
 * records, the root's verdict reaches every client once (as real clients read it). */
static void test_p2p_mismatch_leaf(void)
{
    T.client_verdicts = 1;
    tree(1);
    report_all();
    tick_all(3);
    p2p(&T.cl[4], 1, 5, 0, 33);
    p2p(&T.cl[5], 0, 4, 0, 32);
    struct ncg_relay_stats st;
    stats(2, &st);
    CHECK(st.p2p_matched == 1 && st.p2p_held == 0);
    for (int t = 0; t < 4; t++)
        tick_all(3);
    CHECK(T.rp2p_recs[2] == 2 && T.rp2p_recs[1] == 2); /* the pair, passed on by relay 1 */
    stats(0, &st);
    CHECK(st.verdicts == 1);
    stats(2, &st);
    CHECK(st.verdicts == 0); /* only the root issues verdicts */
    check_p2p_verdict(4, 5,
                      "P2P MISMATCH on comm 00000000000000c0 (6 ranks): Send(count=33, float32, "
                      "peer=5) on rank 4 vs Recv(count=32, float32, peer=4) on rank 5");
    p2p(&T.cl[4], 1, 5, 1, 40); /* after the verdict: ignored */
    p2p(&T.cl[5], 0, 4, 1, 41);
    for (int t = 0; t < 4; t++)
        tick_all(3);
    CHECK(verdicts_total() == T.ncl);
    tree_free(3);
    T.client_verdicts = 0;
}

/* The mismatching ends in sibling subtrees (forked tree, ranks 2 and 4): matched at the root. */
static void test_p2p_mismatch_cross(void)
{
    T.client_verdicts = 1;
    T.fork = 1;
    tree(1);
    report_all();
    tick_all(3);
    p2p(&T.cl[4], 0, 2, 0, 32); /* the recv first */
    tick_all(3);
    p2p(&T.cl[2], 1, 4, 0, 33);
    for (int t = 0; t < 4; t++)
        tick_all(3);
    struct ncg_relay_stats st;
    stats(0, &st);
    CHECK(st.verdicts == 1 && st.p2p_matched == 1);
    check_p2p_verdict(2, 4,
                      "P2P MISMATCH on comm 00000000000000c0 (6 ranks): Send(count=33, float32, "
                      "peer=4) on rank 2 vs Recv(count=32, float32, peer=2) on rank 4");
    tree_free(3);
    T.fork = 0;
    T.client_verdicts = 0;
}

/* Unmatched records go up to the root and age out there after NCG_P2PM_AGE_NS: the other side
 * arriving later is held alone (no verdict, even though it differs). */
static void test_p2p_age(void)
{
    tree(1);
    report_all();
    tick_all(3);
    p2p(&T.cl[4], 1, 0, 0, 8); /* to rank 0, which never receives it (yet) */
    p2p(&T.cl[1], 1, 0, 0, 8);
    for (int t = 0; t < 5; t++)
        tick_all(3);
    struct ncg_relay_stats st;
    stats(2, &st);
    CHECK(st.p2p_held == 0 && st.p2p_up == 1);
    stats(1, &st);
    CHECK(st.p2p_held == 0 && st.p2p_up == 1);
    stats(0, &st);
    CHECK(st.p2p_held == 2);
    T.now += NCG_P2PM_AGE_NS - 2000000000ull; /* not yet */
    report_all();
    tick_all(3);
    stats(0, &st);
    CHECK(st.p2p_held == 2);
    T.now += 3000000000ull;
    report_all();
    tick_all(3);
    tick_all(3);
    stats(0, &st);
    CHECK(st.p2p_held == 0);
    p2p(&T.cl[0], 0, 4, 0, 9);
    for (int t = 0; t < 3; t++)
        tick_all(3);
    stats(0, &st);
    CHECK(st.p2p_held == 1 && st.verdicts == 0 && verdicts_total() == 0);
    tree_free(3);
}

/* At most NCG_P2PM_MAX records held per comm: the others are refused with one event line
 * (at the root, and at a relay beneath it whose parent link is down, which holds them). */
static void test_p2p_cap(void)
{
    tree(1);
    report_all();
    tick_all(3);
    static struct ncg_msg m;
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_P2P;
    m.u.p2p.comm_id = 0xc0;
    uint32_t total = NCG_P2PM_MAX + 100;
    for (int relay = 0; relay < 3; relay += 2) {
        if (relay)
            ncg_relay_parent_down(T.r[2]);
        for (uint32_t k = 0; k < total; k += NCG_WIRE_MAX_P2P) {
            m.u.p2p.n = 0;
            for (uint32_t j = 0; j < NCG_WIRE_MAX_P2P && k + j < total; j++)
                m.u.p2p.r[m.u.p2p.n++] =
                    (struct ncg_p2p_rec){k + j, 8, relay ? 5 : 1, NCG_F_SEND, 7};
            ncg_relay_message(T.r[relay], 0, &m, T.now); /* rank 0 to 1, or 4 to 5 */
        }
        struct ncg_relay_stats st;
        stats(relay, &st);
        CHECK(st.p2p_held == NCG_P2PM_MAX && st.refused == 100 && T.p2p_ev[relay] == 1);
        /* one of them received, as sent: it matches, and makes room for one more */
        m.u.p2p.n = 1;
        m.u.p2p.r[0] = (struct ncg_p2p_rec){7, 8, relay ? 4 : 0, NCG_F_RECV, 7};
        ncg_relay_message(T.r[relay], 1, &m, T.now);
        m.u.p2p.r[0] = (struct ncg_p2p_rec){total, 8, relay ? 5 : 1, NCG_F_SEND, 7};
        ncg_relay_message(T.r[relay], 0, &m, T.now);
        stats(relay, &st);
        CHECK(st.p2p_matched == 1 && st.p2p_held == NCG_P2PM_MAX && st.refused == 100);
    }
    CHECK(T.rp2p_recs[2] == 0 && verdicts_total() == 0);
    tree_free(3);
}

/* An allocation failing for a p2p record: the relay says it lost state. */
static void test_p2p_nomem(void)
{
#ifdef NCG_SANITIZED
    return;
#endif
    tree(1);
    report_all();
    tick_all(3);
    struct ncg_msg m = {.type = NCG_MSG_P2P};
    m.u.p2p.comm_id = 0xc0;
    m.u.p2p.n = 1;
    m.u.p2p.r[0] = (struct ncg_p2p_rec){0, 8, 5, NCG_F_SEND, 7};
    fail_alloc = 1;
    ncg_relay_message(T.r[2], 0, &m, T.now);
    fail_alloc = 0;
    CHECK(ncg_relay_out_of_memory(T.r[2]));
    tree_free(3);
}

/* ---- DEADLOCK through the tree (relay_dl.c) ---- */

/* Comms A (0xa0) and B (0xb0) of the 6 ranks, taken A then B; rank `inv` (under relay `inv /
 * 2`) takes B first at slot 20: each rank's REPORT (both comms) and WAIT (streams 0: the
 * blocked thread's call; 1: the calls queued on its stream, asynchronous NCCL). */
static void dl_report(int inv, int streams, int waits)
{
    for (int i = 0; i < T.ncl; i++) {
        struct client *c = &T.cl[i];
        int me = c->rank == inv;
        static struct ncg_msg m;
        memset(&m, 0, sizeof m);
        m.type = NCG_MSG_REPORT;
        m.u.report.n = 2;
        for (int k = 0; k < 2; k++) { /* A: the others issued 21; B: rank inv did */
            struct ncg_report_entry *e = &m.u.report.e[k];
            e->comm_id = k ? 0xb0 : 0xa0;
            e->nranks = (uint32_t)T.ncl;
            e->rank = (uint32_t)c->rank;
            e->count = (k == 1) == me ? 21 : 20;
            e->done = e->done_hi = 20;
            e->global_rank = c->rank;
            e->tid = c->pid;
        }
        push(TO_CHILD, c->relay, c->conn, &m);
        memset(&m, 0, sizeof m);
        m.type = NCG_MSG_WAIT;
        for (int q = 0; waits && q < (streams ? 2 : 1); q++) {
            struct ncg_wait_ent *w = &m.u.wait.w[m.u.wait.n++];
            w->comm_id = (q == 1) != me ? 0xb0 : 0xa0;
            w->rank = (uint32_t)c->rank;
            w->tid = c->pid;
            w->queued = (uint8_t)streams;
            w->stream = streams ? 1 : 0;
            w->order = streams ? (uint32_t)q + 1 : 0;
            w->call = (struct ncg_call){20, 8, -1, 1, 7, 0};
            snprintf(w->site, sizeof w->site, "train_step+0x%x", 16 * (q + 1));
        }
        push(TO_CHILD, c->relay, c->conn, &m);
    }
    pump();
}

static void dl_run(int inv, int streams, int ticks, int waits_until)
{
    for (int t = 0; t < ticks; t++) {
        dl_report(inv, streams, t < waits_until);
        tick_all(3);
    }
}

static void test_deadlock(void)
{
    static struct ncg_msg m, o;
    /* the RWAIT codec: a round trip, and refused fields */
    memset(&m, 0, sizeof m);
    m.type = NCG_MSG_RWAIT;
    struct ncg_msg_rwait *w = calloc(1, sizeof *w);
    w->node = 3;
    w->conn = 5;
    w->pid = 77;
    w->grank = 12;
    strcpy(w->host, "node3");
    w->gen = 9;
    w->nm = 2;
    w->m[0] = (struct ncg_rwait_mem){0xa0, 16, 12, 777, 21, 20};
    w->m[1] = (struct ncg_rwait_mem){0xb0, 4, 3, 778, 5, 4};
    w->w.n = 1;
    w->w.w[0] = (struct ncg_wait_ent){.comm_id = 0xa0,
                                      .rank = 12,
                                      .tid = 777,
                                      .queued = 1,
                                      .stream = 2,
                                      .order = 5,
                                      .call = {20, 8, -1, 1, 7, 0}};
    strcpy(w->w.w[0].site, "f+0x10");
    m.u.rwait = w;
    roundtrip(&m, &o);
    CHECK(o.type == NCG_MSG_RWAIT && o.u.rwait && !memcmp(o.u.rwait, w, sizeof *w));
    ncg_msg_release(&o);
    w->m[1].rank = 4; /* not below its nranks */
    CHECK(encode_decode(&m) < 0);
    w->m[1].rank = 3;
    w->nm = NCG_WIRE_MAX_COMMS + 1;
    CHECK(encode_decode(&m) < 0);
    free(w);

    /* threads: rank 0 (at the root) in A's slot 20, which rank 4 (two levels down) has not
     * issued, being in B's slot 20, which the others have not: every rank gets a DEADLOCK on
     * each comm, naming the cycle */
    for (int inv = 4; inv >= 1; inv -= 3) { /* rank 4: two levels down; rank 1: at the root */
        tree(1);
        dl_run(inv, 0, 6, 6);
        for (int i = 0; i < T.ncl; i++)
            CHECK(T.cl[i].verdicts == 2 && T.cl[i].v && T.cl[i].v->kind == NCG_V_DEADLOCK &&
                  T.cl[i].v->severity == NCG_SEV_ERROR && T.cl[i].v->slot == 20);
        const struct ncg_verdict *v = T.cl[5].v;
        char want[160];
        snprintf(want, sizeof want,
                 "global rank %d (rank %d of comm 00000000000000b0, pid %d on h, thread %d): "
                 "in slot 20 AllReduce(count=8, float32, sum) from train_step+0x10; waits for",
                 inv, inv, 1000 + inv, 1000 + inv);
        if (v) {
            CHECK(!strncmp(v->detail, "global ranks ", 13) &&
                  strstr(v->detail, " wait on each other across comms ") &&
                  strstr(v->detail, "00000000000000a0") && strstr(v->detail, "00000000000000b0"));
            CHECK(v->notes && strstr(v->notes, "cycle of 2 (each waits for the next") == v->notes &&
                  strstr(v->notes, want));
        }
        struct ncg_relay_stats st;
        ncg_relay_get_stats(T.r[0], &st);
        CHECK(st.verdicts == 2);
        tree_free(3);
    }

    /* asynchronous NCCL: the same inversion in the order on the ranks' streams */
    tree(1);
    dl_run(4, 1, 6, 6);
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 2 && T.cl[i].v && T.cl[i].v->kind == NCG_V_DEADLOCK);
    if (T.cl[2].v)
        CHECK(T.cl[2].v->notes && strstr(T.cl[2].v->notes, "asynchronous NCCL: each rank below") &&
              strstr(T.cl[2].v->notes, "global rank 4 (rank 4 of comm 00000000000000b0, pid 1004 "
                                       "on h, thread 1004, stream 1): in slot 20"));
    tree_free(3);

    /* seen once, then the WAITs stop (the calls completed): no verdict; nor when nobody
     * inverted (everyone in A's slot 20 waits for nobody) */
    tree(1);
    dl_run(4, 0, 8, 1);
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 0);
    tree_free(3);
    /* and WAITs that repeat go up once: 30 intervals of a hang without a cycle cost the leaf
     * relay one RWAIT per process (with the cycle: the first ones and one refresh each after
     * the root's RASK) */
    tree(1);
    dl_run(-1, 0, 30, 30);
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 0);
    CHECK(T.rwait_up[2] == 2 && T.rwait_up[1] == 4);
    tree_free(3);
    tree(1);
    dl_run(4, 0, 30, 30);
    CHECK(T.cl[0].verdicts == 2);
    CHECK(T.rwait_up[2] >= 4 && T.rwait_up[2] <= 6);
    tree_free(3);
}

/* The root's table of waiting processes at scale, fed RWAITs as if from child relay 1 (conn 2):
 * NP processes of comms 0xe0 and 0xf0 (NP ranks each) blocked in 0xe0's slot 20, `inv` (or
 * none: -1) in 0xf0's first; the rest (`from` on) only, as earlier ones left. */
#define DL_NP 5000u
static void dl_many(int inv, uint32_t from, uint64_t gen, int empty_below)
{
    static struct ncg_msg_rwait w;
    struct ncg_msg m = {.type = NCG_MSG_RWAIT};
    m.u.rwait = &w;
    for (uint32_t k = 0; k < DL_NP; k++) {
        if (k < from && !empty_below)
            continue;
        memset(&w, 0, sizeof w);
        w.node = 1 + k % 7; /* keys that collide on pid across nodes and connections */
        w.conn = k / 7;
        w.pid = 4242;
        w.grank = (int32_t)k;
        strcpy(w.host, "same-host");
        w.gen = gen;
        if (k >= from) {
            w.nm = 2;
            for (int c = 0; c < 2; c++)
                w.m[c] = (struct ncg_rwait_mem){
                    c ? 0xf0 : 0xe0, DL_NP, k, 7, (c == 1) == ((int)k == inv) ? 21 : 20, 20};
            w.w.n = 1;
            w.w.w[0] = (struct ncg_wait_ent){.comm_id = (int)k == inv ? 0xf0 : 0xe0,
                                             .rank = k,
                                             .tid = 7,
                                             .call = {20, 8, -1, 1, 7, 0}};
        }
        push(TO_CHILD, 0, 2, &m);
        if (k % 1000 == 999)
            pump();
    }
    pump();
}

static void test_deadlock_many(void)
{
    tree(1);
    static struct ncg_msg st;
    memset(&st, 0, sizeof st);
    st.type = NCG_MSG_RSTAT;
    st.u.rstat.n = 2;
    for (int c = 0; c < 2; c++)
        st.u.rstat.e[c] = (struct ncg_rstat_ent){.comm_id = c ? 0xf0 : 0xe0,
                                                 .nranks = DL_NP,
                                                 .known = DL_NP,
                                                 .active = DL_NP,
                                                 .min = 20,
                                                 .max = 21,
                                                 .dmin = 20,
                                                 .dhi = 20};
    uint64_t gen = 1;
    for (int t = 0; t < 4; t++) { /* every process waits; nobody inverted: no verdict */
        push(TO_CHILD, 0, 2, &st);
        dl_many(-1, 0, gen++, 0);
        T.now += 100000000ull;
        ncg_relay_tick(T.r[0], T.now);
        pump();
    }
    struct ncg_relay_stats s0;
    ncg_relay_get_stats(T.r[0], &s0);
    CHECK(s0.verdicts == 0);
    /* 4,000 leave (empty RWAITs: removals, the index rebuilt), then process 4,500 of the
     * others is found inverted: its record, not a stale copy, makes the cycle */
    dl_many(-1, 4000, gen++, 1);
    for (int t = 0; t < 6; t++) {
        push(TO_CHILD, 0, 2, &st);
        dl_many(4500, 4000, gen++, 0);
        T.now += 100000000ull;
        ncg_relay_tick(T.r[0], T.now);
        pump();
    }
    ncg_relay_get_stats(T.r[0], &s0);
    CHECK(s0.verdicts == 2 && s0.refused == 0);
    tree_free(3);
}

static void client_done(const struct client *c)
{
    struct ncg_msg d = {.type = NCG_MSG_DONE, .u.exit.comm_id = 0xc0};
    push(TO_CHILD, c->relay, c->conn, &d);
    pump();
}

static int releases_total(void)
{
    int n = 0;
    for (int i = 0; i < T.ncl; i++)
        n += T.cl[i].releases;
    return n;
}

/* A three-level tree with the exit release's bound of wait_s; every rank at 100 calls, rank 5
 * differing from slot 57; ticks until the verdict is out (every rank has it). */
static void release_setup(double wait_s)
{
    T.exit_wait_s = wait_s;
    tree(1);
    for (int i = 0; i < T.ncl; i++)
        T.cl[i].count = 100;
    T.cl[5].odd_from = 57;
    report_all();
    for (int t = 0; t < 20 && !T.cl[0].verdicts; t++)
        tick_all(3);
    for (int i = 0; i < T.ncl; i++)
        CHECK(T.cl[i].verdicts == 1);
}

/* The exit release through three levels: rank 5 (beneath two relays) differs; nobody is
 * released while a rank has not said DONE; then every rank exactly once, when the last says it
 * (variant 0), when its connection closes (1), or at the root's bound of 1 s (2), not before. */
static void test_release(void)
{
    for (int variant = 0; variant < 3; variant++) {
        release_setup(1);
        uint64_t t0 = T.now; /* the verdict went out during this tick */
        for (int i = 0; i < 5; i++)
            client_done(&T.cl[i]);
        tick_all(3);
        CHECK(releases_total() == 0);
        if (variant == 0) {
            client_done(&T.cl[5]);
            CHECK(releases_total() == 6);
        } else if (variant == 1) {
            ncg_relay_closed(T.r[2], T.cl[5].conn, T.now);
            pump();
            CHECK(releases_total() == 5 && T.cl[5].releases == 0);
        } else {
            while (T.now + 200000000ull < t0 + 1000000000ull) {
                tick_all(3);
                CHECK(releases_total() == 0);
            }
            for (int t = 0; t < 3; t++)
                tick_all(3);
            CHECK(releases_total() == 6 && T.now <= t0 + 1300000000ull);
        }
        for (int t = 0; t < 5; t++)
            tick_all(3);
        CHECK(releases_total() == (variant == 1 ? 5 : 6)); /* once */
        tree_free(3);
    }
    T.exit_wait_s = 0;
}

/* The exit release while relay 2 (ranks 4-5) loses its link to relay 1: its subtree is not
 * taken as done (nobody released while 4-5 print), its DONE, ready while detached, goes up when
 * it reattaches (through another connection) and releases everyone at once, it included. */
static void test_release_detached(void)
{
    release_setup(5);
    ncg_relay_parent_down(T.r[2]); /* the link 1-2 is lost */
    T.child_relay[1][2] = -1;
    ncg_relay_closed(T.r[1], 2, T.now);
    for (int i = 0; i < 4; i++)
        client_done(&T.cl[i]);
    tick_all(3);
    CHECK(releases_total() == 0); /* ranks 4-5 are still printing */
    client_done(&T.cl[4]);
    client_done(&T.cl[5]);
    tick_all(3);
    CHECK(releases_total() == 0); /* relay 2 is ready but cannot say it */
    T.child_relay[1][4] = 2;      /* it reattaches, through connection 4 */
    T.parent_conn[2] = 4;
    ncg_relay_connected(T.r[1], 4, T.now);
    ncg_relay_parent_up(T.r[2], T.now);
    pump();
    tick_all(3);
    CHECK(releases_total() == 6); /* long before the root's 5 s */
    tree_free(3);
    T.exit_wait_s = 0;
}

/* ---- the read-only view (relay_view.c: the status endpoint's source) ---- */

struct vseen {
    int nconn, nrelay;
    uint32_t relay_node;
    struct ncg_relay_comm_view c;
    struct ncg_relay_rank_view here[8];
    int ncomm;
};

static void view_conn(void *arg, const struct ncg_relay_conn_view *v)
{
    struct vseen *s = arg;
    s->nconn++;
    if (v->relay) {
        s->nrelay++;
        s->relay_node = v->node;
    }
}

static void view_comm(void *arg, const struct ncg_relay_comm_view *v)
{
    struct vseen *s = arg;
    s->ncomm++;
    s->c = *v;
    for (uint32_t i = 0; i < v->nhere && i < 8; i++)
        s->here[i] = v->here[i];
}

static struct vseen view_of(int relay)
{
    struct vseen s;
    memset(&s, 0, sizeof s);
    struct ncg_relay_view_ops ops = {view_conn, view_comm, &s};
    ncg_relay_view(T.r[relay], T.now, &ops);
    return s;
}

/* Three levels (ranks 0,1 at the root, 2,3 at relay 1, 4,5 at relay 2): rank 5 behind. The
 * root's view: every rank's aggregates (issued 8..10, completed from 7), rank 5 the slowest,
 * one child relay, its own two ranks' rows; relay 2's view: its two ranks with their counts and
 * global ranks. A goodbye: left counted, the row says so. */
static void test_view(void)
{
    tree(1);
    for (int i = 0; i < T.ncl; i++) {
        T.cl[i].count = i == 5 ? 8 : 10;
        T.cl[i].done = T.cl[i].done_hi = T.cl[i].count - 1;
    }
    report_all();
    for (int t = 0; t < 3; t++)
        tick_all(3);
    struct vseen s = view_of(0);
    CHECK(s.nconn == 3 && s.nrelay == 1 && s.relay_node == 1 && s.ncomm == 1);
    CHECK(s.c.id == 0xc0 && s.c.nranks == 6 && s.c.known == 6 && s.c.active == 6 && !s.c.left);
    CHECK(s.c.issued_min == 8 && s.c.issued_max == 10 && s.c.done_min == 7);
    CHECK(s.c.nslow == 1 && s.c.slow[0] == 5 && !s.c.slow_more);
    CHECK(s.c.nrelays == 1 && !s.c.done && s.c.verdict == NULL);
    CHECK(s.c.nhere == 2 && s.here[0].rank == 0 && s.here[1].rank == 1);
    CHECK(s.here[1].global_rank == 1 && s.here[1].pid == 1001 && s.here[1].issued == 10 &&
          s.here[1].done == 9 && s.here[1].state == 1 && !strcmp(s.here[1].host, "h"));
    CHECK(ncg_relay_get_params(T.r[0])->root == 1);
    s = view_of(2);
    CHECK(s.nconn == 2 && s.nrelay == 0 && s.c.nrelays == 0 && s.c.nhere == 2);
    CHECK(s.here[0].rank == 4 && s.here[0].global_rank == 4 && s.here[0].issued == 10 &&
          s.here[1].rank == 5 && s.here[1].issued == 8 && s.here[1].done == 7);
    CHECK(s.c.issued_min == 8 && s.c.issued_max == 10 && s.c.nslow == 1 && s.c.slow[0] == 5);
    /* all equal: nobody is the slowest */
    T.cl[5].count = 10;
    report_all();
    for (int t = 0; t < 2; t++)
        tick_all(3);
    s = view_of(0);
    CHECK(s.c.issued_min == 10 && s.c.nslow == 0);
    goodbye(&T.cl[1], 10, 0);
    pump();
    s = view_of(0);
    CHECK(s.c.known == 6 && s.c.active == 5 && s.c.left == 1 && s.here[1].state == 2);
    tree_free(3);
}

/* ---- SLOW through the tree (relay_slow.c) ---- */

/* RSLOW: slots with and without who round-trip; bad figures are refused. */
static void test_codec_rslow(void)
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
static void test_slow_pend(void)
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
static void test_slow_tree(void)
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
    tree_free(3);
}

/* Every rank jitters by 0-10% of the step, none slower: nobody is named. */
static void test_slow_jitter(void)
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
static void test_slow_partial(void)
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
static void test_slow_late(void)
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

int main(void)
{
    test_codec_rslow();
    test_slow_pend();
    test_slow_tree();
    test_slow_jitter();
    test_slow_partial();
    test_slow_late();
    test_release_detached();
    test_release();
    test_lag();
    test_stuck();
    test_silent_relay();
    test_exited();
    test_topology();
    test_helpers();
    test_codecs();
    test_codec_rp2p();
    test_agree();
    test_mismatch();
    test_mismatch_alike();
    test_mismatch_rep_missing();
    test_mismatch_sibling();
    test_mismatch_absent_rank();
    test_client_verdicts();
    test_figs_gather();
    test_client_died();
    test_relay_died();
    test_detached_fault();
    for (int k = 0; k < 2; k++) {
        probe_exited(k);
        probe_detached(k);
    }
    probe_late();
    test_nomem();
    test_conn_cap();
    test_comm_cap();
    test_reregister();
    test_pend_cap();
    test_p2p_leaf();
    test_p2p_cross();
    test_p2p_mismatch_leaf();
    test_p2p_mismatch_cross();
    test_p2p_age();
    test_p2p_cap();
    test_p2p_nomem();
    test_late_at_root();
    test_round_waits();
    test_view();
    test_deadlock();
    test_deadlock_many();
    if (fails) {
        fprintf(stderr, "relay_unit: %d check(s) failed\n", fails);
        return 1;
    }
    printf("relay_unit: all checks passed\n");
    return 0;
}
