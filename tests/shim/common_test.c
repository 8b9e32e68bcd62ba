/* Unit test of common/'s helpers (pure): the host:port parser (every form, each flag, each
 * rejection), the growable buffer and its JSON / Prometheus escapes, the clocks, the getenv
 * adapter. Prints each failed expectation; exit 0 when all hold. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "conntab.h"
#include "config.h"
#include "hostport.h"

static int fails;
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "common_test:%d: expected %s\n", __LINE__, #cond);                     \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

/* s parsed with flags: rc, and when 0 the host, the host as written and the port. */
static int hp_is(const char *s, unsigned flags, int rc, const char *host, const char *raw,
                 unsigned port)
{
    struct ncg_hostport hp;
    int got = ncg_hostport_parse(s, flags, &hp);
    if (got != rc) {
        fprintf(stderr, "common_test: \"%s\" flags %u: rc %d, want %d\n", s, flags, got, rc);
        return 0;
    }
    if (rc != 0)
        return 1;
    int ok = hp.hostlen == strlen(host) && !memcmp(hp.host, host, hp.hostlen) &&
             hp.rawlen == strlen(raw) && !memcmp(hp.raw, raw, hp.rawlen) && hp.port == port;
    if (!ok)
        fprintf(stderr, "common_test: \"%s\": host \"%.*s\" raw \"%.*s\" port %u\n", s,
                (int)hp.hostlen, hp.host, (int)hp.rawlen, hp.raw, hp.port);
    return ok;
}

static void test_hostport(void)
{
    const unsigned ALL = NCG_HP_PORT_ONLY | NCG_HP_BARE_V6 | NCG_HP_PORT_ZERO;
    EXPECT(hp_is("10.0.0.1:29400", 0, 0, "10.0.0.1", "10.0.0.1", 29400));
    EXPECT(hp_is("host.example:1", 0, 0, "host.example", "host.example", 1));
    EXPECT(hp_is("[::1]:7", 0, 0, "::1", "[::1]", 7));
    EXPECT(hp_is("[]:80", 0, 0, "", "[]", 80));
    EXPECT(hp_is("h:65535", 0, 0, "h", "h", 65535));
    EXPECT(hp_is("h: 80", 0, 0, "h", "h", 80)); /* strtoul's syntax, as before */
    /* no port, no host */
    EXPECT(hp_is("justahost", 0, NCG_HP_ENOCOLON, "", "", 0));
    EXPECT(hp_is(":80", 0, NCG_HP_ENOCOLON, "", "", 0));
    EXPECT(hp_is("", 0, NCG_HP_ENOCOLON, "", "", 0));
    /* brackets */
    EXPECT(hp_is("[::1:80", 0, NCG_HP_EBRACKET, "", "", 0));
    EXPECT(hp_is("[::1]x:80", ALL, NCG_HP_EBRACKET, "", "", 0));
    EXPECT(hp_is("[:80", ALL, NCG_HP_EBRACKET, "", "", 0));
    /* bare IPv6 only with NCG_HP_BARE_V6 */
    EXPECT(hp_is("::1:9", 0, NCG_HP_EBAREV6, "", "", 0));
    EXPECT(hp_is("fe80::1:80", NCG_HP_BARE_V6, 0, "fe80::1", "fe80::1", 80));
    /* ports */
    EXPECT(hp_is("h:0", 0, NCG_HP_EPORT, "", "", 0));
    EXPECT(hp_is("h:0", NCG_HP_PORT_ZERO, 0, "h", "h", 0));
    EXPECT(hp_is("h:65536", ALL, NCG_HP_EPORT, "", "", 0));
    EXPECT(hp_is("h:99999999999999999999999", ALL, NCG_HP_EPORT, "", "", 0));
    EXPECT(hp_is("h:", ALL, NCG_HP_EPORT, "", "", 0));
    EXPECT(hp_is("h:80x", ALL, NCG_HP_EPORT, "", "", 0));
    EXPECT(hp_is("h:-1", ALL, NCG_HP_EPORT, "", "", 0));
    EXPECT(hp_is("h:+80", ALL, NCG_HP_EPORT, "", "", 0));
    EXPECT(hp_is("h:0x50", ALL, NCG_HP_EPORT, "", "", 0));
    /* the port alone */
    EXPECT(hp_is("9400", NCG_HP_PORT_ONLY, 0, "", "", 9400));
    EXPECT(hp_is(":0", NCG_HP_PORT_ONLY | NCG_HP_PORT_ZERO, 0, "", "", 0));
    EXPECT(hp_is("[80", NCG_HP_PORT_ONLY, NCG_HP_EPORT, "", "", 0));
    EXPECT(hp_is("yes", NCG_HP_PORT_ONLY, NCG_HP_EPORT, "", "", 0));
    /* the check can fail: a wrong expectation is reported */
    fprintf(stderr, "common_test: (one mismatch expected below)\n");
    EXPECT(!hp_is("h:80", 0, 0, "h", "h", 81));
}

/* s escaped with how, compared with want. */
static int esc_is(const char *s, enum ncg_esc how, const char *want)
{
    struct ncg_buf b = {0};
    ncg_buf_add(&b, "", 0);
    ncg_buf_esc(&b, s, how);
    int ok = !b.oom && b.len == strlen(want) && !strcmp(b.p, want);
    if (!ok)
        fprintf(stderr, "common_test: escaped \"%s\" as \"%s\", want \"%s\"\n", s, b.p, want);
    ncg_buf_free(&b);
    return ok;
}

static void test_buf(void)
{
    EXPECT(esc_is("plain host-1", NCG_ESC_JSON, "plain host-1"));
    EXPECT(esc_is("a\"b\\c", NCG_ESC_JSON, "a\\\"b\\\\c"));
    EXPECT(esc_is("l1\nl2", NCG_ESC_JSON, "l1\\nl2"));
    EXPECT(esc_is("t\tb\x01"
                  "d\x7f",
                  NCG_ESC_JSON, "t\\u0009b\\u0001d\\u007f"));
    EXPECT(esc_is("caf\xc3\xa9", NCG_ESC_JSON, "caf\xc3\xa9")); /* UTF-8 passes */
    EXPECT(esc_is("a\"b\\c\nd", NCG_ESC_PROM, "a\\\"b\\\\c\\nd"));
    EXPECT(esc_is("t\tb\x01"
                  "d\x7f",
                  NCG_ESC_PROM, "t?b?d?"));
    EXPECT(esc_is("", NCG_ESC_JSON, ""));
    fprintf(stderr, "common_test: (one mismatch expected below)\n");
    EXPECT(!esc_is("a\"b", NCG_ESC_JSON, "a\"b"));

    /* growth past the first 64 KiB, by adds and by one printf longer than its reserve */
    struct ncg_buf b = {0};
    char chunk[1000];
    memset(chunk, 'x', sizeof chunk);
    for (int i = 0; i < 100; i++)
        ncg_buf_add(&b, chunk, sizeof chunk);
    ncg_buf_printf(&b, "%s%0*d", "|", 70000, 7);
    EXPECT(!b.oom && b.len == 100000 + 1 + 70000 && b.p[b.len] == 0);
    EXPECT(b.p[99999] == 'x' && b.p[100000] == '|' && b.p[b.len - 1] == '7');
    ncg_buf_free(&b);
    EXPECT(b.p == NULL && b.len == 0 && b.cap == 0);

    /* the renderers' helpers: an unknown age is null, a family's two lines */
    ncg_buf_num_or_null(&b, 1.5);
    ncg_buf_add(&b, " ", 1);
    ncg_buf_num_or_null(&b, 0);
    ncg_buf_add(&b, " ", 1);
    ncg_buf_num_or_null(&b, -1);
    ncg_buf_prom_family(&b, "ncclguard_x", "gauge", "an x");
    EXPECT(!strcmp(b.p, "1.500 0.000 null# HELP ncclguard_x an x\n# TYPE ncclguard_x gauge\n"));
    ncg_buf_free(&b);

    /* array growth: from 32, doubling past need, contents kept; enough room: untouched */
    uint32_t *a = NULL;
    size_t cap = 0;
    EXPECT(ncg_grow((void **)&a, &cap, 1, sizeof *a) == 0 && a && cap == 32);
    for (uint32_t i = 0; i < 32; i++)
        a[i] = i;
    uint32_t *was = a;
    EXPECT(ncg_grow((void **)&a, &cap, 32, sizeof *a) == 0 && a == was && cap == 32);
    EXPECT(ncg_grow((void **)&a, &cap, 200, sizeof *a) == 0 && cap == 256);
    EXPECT(a[0] == 0 && a[31] == 31);
    size_t big = cap;
    EXPECT(ncg_grow((void **)&a, &cap, SIZE_MAX / 2, 8) == -1 && cap == big && a[31] == 31);
    free(a);
}

static void test_clock_env(void)
{
    uint64_t a = ncg_now_ns(), c = ncg_coarse_ns(), z = ncg_now_ns();
    EXPECT(a > 0 && z >= a);
    /* the same epoch: the coarse clock lags by at most a tick or so */
    EXPECT(c <= z + 1000000ull && c + 100000000ull >= a);
    setenv("NCG_COMMON_TEST_VAR", "v1", 1);
    const char *v = ncg_env_process("NCG_COMMON_TEST_VAR", NULL);
    EXPECT(v && !strcmp(v, "v1"));
    EXPECT(ncg_env_process("NCG_COMMON_TEST_UNSET_VAR", NULL) == NULL);
}

/* The connection table coord and relay share: slots of the caller's struct, opened zeroed,
 * grown to any id, closed; HELLO and silence bounds; a paused process's own silence. */
struct slot {
    struct ncg_conn h;
    int payload;
};
static void test_conntab(void)
{
    struct ncg_conntab t = {.size = sizeof(struct slot)};
    EXPECT(ncg_conntab_get(&t, 0) == NULL && ncg_conntab_get(&t, -1) == NULL);
    EXPECT(ncg_conntab_open(&t, -1, 1) == NULL);
    struct slot *a = ncg_conntab_open(&t, 3, 1000);
    EXPECT(a && a->h.used && !a->h.authed && a->h.since_ns == 1000 && a->h.last_rx_ns == 1000);
    EXPECT(a->h.grank == -1 && a->payload == 0 && t.n > 3);
    a->payload = 7;
    struct slot *b = ncg_conntab_open(&t, 200, 2000); /* grows: slot 3 keeps its content */
    a = ncg_conntab_get(&t, 3);
    EXPECT(b && a && a->payload == 7 && t.n > 200);
    EXPECT(ncg_conntab_get(&t, 4) == NULL && ncg_conntab_at(&t, 4) != NULL);
    int oldest = -2;
    EXPECT(ncg_conntab_unauthed(&t, &oldest) == 2 && oldest == 3);
    a->h.authed = 1;
    EXPECT(ncg_conntab_authed(&t, 3) && !ncg_conntab_authed(&t, 200));
    EXPECT(ncg_conntab_unauthed(&t, &oldest) == 1 && oldest == 200);
    /* HELLO within 5 s, then frames within the heartbeat timeout */
    EXPECT(ncg_conn_due(&b->h, 2000 + 5000000000ull, 0) == NCG_CONN_FINE);
    EXPECT(ncg_conn_due(&b->h, 2001 + 5000000000ull, 0) == NCG_CONN_NO_HELLO);
    EXPECT(ncg_conn_due(&a->h, 1000 + 3000000000ull, 2000000000ull) == NCG_CONN_SILENT);
    EXPECT(ncg_conn_due(&a->h, 1000 + 2000000000ull, 2000000000ull) == NCG_CONN_FINE);
    EXPECT(ncg_conn_due(&a->h, 1000 + 3000000000ull, 0) == NCG_CONN_FINE); /* no timeout */
    /* our own pause (a tick 3 s late with a 2 s timeout): everyone's clocks restart */
    EXPECT(ncg_conntab_resume(&t, 1000, 1000 + 3000000000ull, 2000000000ull, 1) == 1);
    EXPECT(a->h.last_rx_ns == 1000 + 3000000000ull);
    EXPECT(ncg_conn_due(&a->h, 1000 + 4000000000ull, 2000000000ull) == NCG_CONN_FINE);
    EXPECT(ncg_conntab_resume(&t, 1000 + 3000000000ull, 1000 + 3500000000ull, 2000000000ull, 1) ==
           0); /* a tick on time: nothing */
    ncg_conntab_close(&t, 3);
    ncg_conntab_close(&t, 100000); /* out of range: nothing */
    EXPECT(ncg_conntab_get(&t, 3) == NULL && ncg_conntab_get(&t, 200) != NULL);
    ncg_conntab_free(&t);
    EXPECT(t.n == 0 && ncg_conntab_get(&t, 200) == NULL);
}

int main(void)
{
    test_hostport();
    test_conntab();
    test_buf();
    test_clock_env();
    if (fails)
        return 1;
    printf("common_test: ok\n");
    return 0;
}
