/* The comparison round's steps (round.h), for the relay tree's root. */
#include "round.h"

void ncg_round_plain(struct ncg_round *r, uint64_t t)
{
    r->narrow = 0;
    r->mode = 0;
    r->qn = 1;
    r->qslot[0] = t;
}

static void narrow_start(struct ncg_round *r)
{
    uint64_t span = r->hi - r->lo + 1;
    r->narrow = 1;
    if (span <= NCG_WIRE_MAX_SLOTS) {
        r->mode = NCG_QUERY_RECORDS;
        r->qn = (uint32_t)span;
        for (uint32_t k = 0; k < r->qn; k++)
            r->qslot[k] = r->lo + k;
    } else {
        r->mode = 0;
        r->qn = NCG_WIRE_MAX_SLOTS;
        for (uint32_t k = 0; k < r->qn; k++)
            /* (k+1)*span/32 without the product, which overflows for absurd (hostile) counts */
            r->qslot[k] = r->lo + span / NCG_WIRE_MAX_SLOTS * (k + 1) +
                          span % NCG_WIRE_MAX_SLOTS * (k + 1) / NCG_WIRE_MAX_SLOTS - 1;
    }
}

int ncg_round_done(struct ncg_round *r, int (*agrees)(void *arg, uint32_t k), void *arg,
                   uint32_t *k)
{
    if (!r->narrow) { /* single digest at t = qslot[0] */
        if (agrees(arg, 0) != 0) {
            if (r->qslot[0] + 1 > r->vc)
                r->vc = r->qslot[0] + 1;
            return NCG_ROUND_IDLE;
        }
        r->lo = r->vc;
        r->hi = r->qslot[0];
        narrow_start(r);
        return NCG_ROUND_ASK;
    }
    if (r->mode == NCG_QUERY_RECORDS) {
        for (uint32_t i = 0; i < r->qn; i++) {
            if (agrees(arg, i) == 0) {
                *k = i;
                return NCG_ROUND_MISMATCH;
            }
            r->vc = r->qslot[i] + 1;
        }
        r->narrow = 0; /* no difference found any more: resume plain rounds */
        return NCG_ROUND_IDLE;
    }
    for (uint32_t i = 0; i < r->qn; i++) {
        if (agrees(arg, i) == 0) {
            r->hi = r->qslot[i];
            r->vc = r->lo;
            narrow_start(r);
            return NCG_ROUND_ASK;
        }
        r->lo = r->qslot[i] + 1;
    }
    r->vc = r->lo;
    r->narrow = 0;
    return NCG_ROUND_IDLE;
}
