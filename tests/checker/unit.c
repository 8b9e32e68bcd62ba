/* Unit tests of the checker's pure parts: wire encode/decode (round trips, every truncation,
 * corrupted frames), compact rank lists, call grouping, verdict codec, the diagnostic and
 * report rendering, the verdicts' texts (judge/). The checker's state machine (the relay tree's,
 * its root the checker of every job) is tested by relay_unit*.c. This file: the shared round
 * trip and main, which runs each topic's tests (unit_<topic>.c, unit.h) and prints "ok" lines. */
#include "unit.h"

NCG_CHECK_PROGRAM("unit");

uint8_t buf[NCG_WIRE_HDR + NCG_WIRE_MAX_PAYLOAD];
struct ncg_msg m1, m2;

void roundtrip(const struct ncg_msg *m)
{
    long n = ncg_wire_encode(m, buf, sizeof buf);
    CHECK(n >= (long)NCG_WIRE_HDR);
    if (n < 0)
        return;
    /* every proper prefix: "need more", never a message or a crash */
    for (long k = 0; k < n; k++) {
        long r = ncg_wire_decode(buf, (size_t)k, &m2);
        CHECK(r == 0);
        if (r > 0)
            ncg_msg_release(&m2);
    }
    /* into a message holding garbage: decoding writes only what the type uses (wire.h), and
     * what it reads back below must not depend on the rest */
    memset(&m2, 0xa5, sizeof m2);
    long r = ncg_wire_decode(buf, (size_t)n, &m2);
    CHECK(r == n);
    CHECK(m2.type == m->type);
    if (m->type == NCG_MSG_REPORT) /* its entries byte for byte, padding zeroed */
        CHECK(m2.u.report.n == m->u.report.n &&
              !memcmp(m2.u.report.e, m->u.report.e, sizeof *m->u.report.e * m->u.report.n));
    /* re-encoding the decoded message gives the same bytes */
    static uint8_t b2[sizeof buf];
    long n2 = ncg_wire_encode(&m2, b2, sizeof b2);
    CHECK(n2 == n && memcmp(buf, b2, (size_t)n) == 0);
    ncg_msg_release(&m2);
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
    test_verdicts();
    test_diag_slow();
    printf("ok verdicts (judge)\n");
    test_ranks_named();
    printf("ok ranks named (global ranks in headlines)\n");
    return ncg_check_done();
}
