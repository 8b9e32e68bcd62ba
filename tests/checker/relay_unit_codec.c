/* Relay unit tests, the parts without a tree: group merging, rank ranges and agreement
 * (relay_group.c), the relay frames' codecs (round trip, every truncation, refused fields), and
 * the tree's shape (ncg_relay_parent), a relay's settings from a configuration. */
#include <math.h>

#include "config.h"
#include "relay_unit.h"

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

void test_helpers(void)
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

void test_codecs(void)
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

/* RP2P: round trip (every truncation: roundtrip), a full frame, and each refused field. */
void test_codec_rp2p(void)
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

void test_topology(void)
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

static const char *fake_env(const char *name, void *arg)
{
    const char *const *kv = arg;
    for (; kv[0]; kv += 2)
        if (!strcmp(kv[0], name))
            return kv[1];
    return NULL;
}

/* What NCCLGUARD_* says a relay does (ncg_relay_params_of), and a relay whose host sets no SLOW
 * gets the configuration's defaults (config.c's, the one place they are written). */
void test_params_of(void)
{
    struct ncg_config c;
    ncg_config_defaults(&c);
    struct ncg_relay_params p = ncg_relay_params_of(&c);
    CHECK(p.interval_ms == 100 && p.heartbeat_timeout_s == 10 && p.lag_warn_s == 60 &&
          p.lag_abort_s == 0 && p.stuck_warn_s == 60 && p.stuck_abort_s == 0 && p.exit_wait_s == 5);
    CHECK(!p.slow_off && p.slow_window == 16 && fabs(p.slow_share - 0.05) < 1e-12 &&
          p.slow_hold_s == 5);
    CHECK(!p.token && !p.node && !p.root && !p.pid && !p.host[0]); /* its host's to set */
    const char *env[] = {"NCCLGUARD_INTERVAL_MS",
                         "200",
                         "NCCLGUARD_HEARTBEAT_TIMEOUT_S",
                         "30",
                         "NCCLGUARD_LAG_WARN_S",
                         "40",
                         "NCCLGUARD_LAG_ABORT_S",
                         "50",
                         "NCCLGUARD_STUCK_WARN_S",
                         "20",
                         "NCCLGUARD_STUCK_ABORT_S",
                         "90",
                         "NCCLGUARD_EXIT_WAIT_S",
                         "2.5",
                         "NCCLGUARD_SLOW",
                         "0",
                         "NCCLGUARD_SLOW_WINDOW",
                         "32",
                         "NCCLGUARD_SLOW_SHARE_PCT",
                         "7",
                         "NCCLGUARD_SLOW_HOLD_S",
                         "3",
                         NULL,
                         NULL};
    ncg_config_parse(&c, fake_env, NULL, env);
    p = ncg_relay_params_of(&c);
    CHECK(p.interval_ms == 200 && p.heartbeat_timeout_s == 30 && p.lag_warn_s == 40 &&
          p.lag_abort_s == 50 && p.stuck_warn_s == 20 && p.stuck_abort_s == 90 &&
          p.exit_wait_s == 2.5);
    CHECK(p.slow_off == 1 && p.slow_window == 32 && fabs(p.slow_share - 0.07) < 1e-12 &&
          p.slow_hold_s == 3);
    /* SLOW unset by the host: the defaults, the same as NCCLGUARD_SLOW*'s */
    struct ncg_relay_params z = {.root = 1};
    struct ncg_relay_ops ops = {0}; /* made, read and freed: it sends nothing */
    struct ncg_relay *r = ncg_relay_new(&z, &ops);
    CHECK(r != NULL);
    if (!r)
        return;
    const struct ncg_relay_params *q = ncg_relay_get_params(r);
    ncg_config_defaults(&c);
    CHECK(q->interval_ms == 100 && !q->slow_off && q->slow_window == c.slow_window &&
          fabs(q->slow_share - c.slow_share_pct / 100) < 1e-12 && q->slow_hold_s == c.slow_hold_s);
    ncg_relay_free(r);
}
