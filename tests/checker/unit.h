/* The checker's pure-parts unit tests (unit*.c), shared: the wire scratch buffers and the
 * round trip every topic's frames take (unit.c), and each topic file's tests, which main runs
 * in order. Everything here runs on the test's one thread; nothing blocks. */
#ifndef NCG_TESTS_UNIT_H
#define NCG_TESTS_UNIT_H

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "diag.h"
#include "hash.h"
#include "ncclguard/shm.h"
#include "release.h"
#include "verdict.h"
#include "verdicts.h"
#include "wire.h"
#include "wire_io.h"

/* Scratch for one frame and two messages, shared by the tests (one at a time). */
extern uint8_t buf[NCG_WIRE_HDR + NCG_WIRE_MAX_PAYLOAD];
extern struct ncg_msg m1, m2;

/* m encoded into buf; every proper prefix decoded ("need more"); decoded whole into m2 over
 * garbage (the same type, a REPORT's entries byte for byte), re-encoded to the same bytes. */
void roundtrip(const struct ncg_msg *m);

/* unit_wire.c: the wire codec (round trips, truncations, corrupted frames, limits), the v5
 * REPORT reference, compact rank lists. */
void test_wire(void);
void test_report_ref(void);
void test_ranks(void);

/* unit_verdicts.c: call grouping and the diagnostic's rendering, who prints the full block,
 * each verdict kind from plain figures (judge/verdicts.c), SLOW's figures as data. */
void test_group_and_render(void);
void test_diag_full(void);
void test_verdicts(void);
void test_diag_slow(void);
void test_ranks_named(void);

#endif
