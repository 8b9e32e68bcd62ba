/* Fuzzing of the wire decoder: with -DNCG_LIBFUZZER a libFuzzer target (make fuzz-wire), else
 * a standalone driver that decodes random and mutated frames (tests/checker/t_unit.sh). An
 * input is one connection's bytes (v5 REPORTs refer to the previous one). The property: the
 * decoder never crashes or reads out of bounds, and what it accepts re-encodes whole. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "verdict.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ncg_msg m;
    static uint8_t out[NCG_WIRE_HDR + NCG_WIRE_MAX_PAYLOAD];
    struct ncg_report_ref ref = {0};
    size_t off = 0;
    while (off < size) {
        long n = ncg_wire_decode_ref(data + off, size - off, &m, &ref);
        if (n <= 0)
            break;
        long w = ncg_wire_encode(&m, out, sizeof out);
        if (w < 0)
            abort();                    /* accepted but not re-encodable: a decoder bug */
        if (m.type == NCG_MSG_REPORT) { /* whole, it decodes alone; the reference is this one */
            static struct ncg_msg again;
            if (ncg_wire_decode(out, (size_t)w, &again) != w || ref.n > m.u.report.n ||
                memcmp(ref.e, m.u.report.e, sizeof *ref.e * ref.n))
                abort();
        }
        ncg_msg_release(&m);
        off += (size_t)n;
    }
    return 0;
}

#ifndef NCG_LIBFUZZER
int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 200000;
    static uint8_t b[4096];
    static struct ncg_msg seed;
    srand(12345);
    for (long it = 0; it < iters; it++) {
        size_t n;
        if (it % 2) {
            /* a valid frame of a random type, then mutated */
            memset(&seed, 0, sizeof seed);
            seed.type = (uint8_t)(1 + rand() % (NCG_MSG_TYPE_MAX_ - 1));
            if (seed.type == NCG_MSG_RANSWER)
                seed.type = NCG_MSG_PING;   /* payload behind a pointer: not from a union */
            static struct ncg_msg_rwait rw; /* RWAIT: one membership, one blocked call */
            static struct ncg_verdict *sv;
            if (seed.type == NCG_MSG_VERDICT || seed.type == NCG_MSG_RVERDICT) {
                /* a SLOW warning: its figures (v11) after the words; the tree's without arrays */
                ncg_verdict_free(sv);
                if (!(sv = ncg_verdict_new(seed.type == NCG_MSG_VERDICT ? 4 : 0)))
                    abort();
                sv->kind = NCG_V_SLOW;
                sv->comm_id = 0xa0;
                sv->slot = -1;
                sv->slow = (struct ncg_vslow){.rank = rand() % 4,
                                              .global_rank = rand() % 2 ? rand() % 64 : -1,
                                              .pid = rand() % 2 ? (uint32_t)rand() : 0,
                                              .device = (uint8_t)(rand() % 2),
                                              .share = (rand() % 1001) / 1000.0,
                                              .since_s = rand() % 600 / 10.0};
                if (rand() % 2)
                    snprintf(sv->slow.host, sizeof sv->slow.host, "node%d", rand() % 100);
                snprintf(sv->subject, sizeof sv->subject, "%d", sv->slow.rank);
                snprintf(sv->detail, sizeof sv->detail, "they lose %.1f%%", sv->slow.share * 100);
                if (seed.type == NCG_MSG_VERDICT)
                    seed.u.verdict = sv;
                else
                    seed.u.rverdict = (struct ncg_msg_rverdict){4, sv};
            } else if (seed.type == NCG_MSG_RWAIT) {
                rw = (struct ncg_msg_rwait){.pid = 7, .grank = 3, .gen = (uint64_t)it, .nm = 1};
                rw.m[0] = (struct ncg_rwait_mem){0xa0, 4, 3, 7, 21, 20};
                rw.w.n = (uint32_t)(rand() % 3);
                for (uint32_t i = 0; i < rw.w.n; i++)
                    rw.w.w[i] = (struct ncg_wait_ent){
                        .comm_id = 0xa0, .rank = 3, .tid = 7, .queued = (uint8_t)(rand() % 2)};
                seed.u.rwait = &rw;
            } else if (seed.type == NCG_MSG_RFIGA) { /* a few runs, some coarse (figruns.h) */
                static struct ncg_msg_rfiga fa;
                memset(&fa, 0, sizeof fa);
                fa.comm_id = 0xa0;
                fa.nranks = 1u + (uint32_t)(rand() % 70000);
                fa.qid = (uint32_t)it;
                for (uint32_t lo = (uint32_t)(rand() % 3); lo < fa.nranks && fa.n < 6;) {
                    struct ncg_figrun *x = &fa.r[fa.n++];
                    x->lo = lo;
                    x->n = 1u + (uint32_t)rand() % (fa.nranks - lo);
                    x->count = rand() % 5 ? rand() % 1000 : -1;
                    x->flags = x->count >= 0 && rand() % 3 == 0 ? NCG_FIG_COARSE : 0;
                    x->count_hi = x->count + (x->flags ? rand() % 9 : 0);
                    x->done = x->count >= 0 ? x->count - 1 : -1;
                    x->glo = rand() % 2 ? (int32_t)lo : -1;
                    x->gstride = x->glo >= 0 && x->n > 1 ? 1 : 0;
                    x->state = (uint8_t)(rand() % 4);
                    lo += x->n + (uint32_t)(rand() % 3);
                }
                seed.u.rfiga = &fa;
            } else if (seed.type == NCG_MSG_RSLOW) { /* one comm, a few slots, some with who */
                static struct ncg_msg_rslow sl;
                memset(&sl, 0, sizeof sl);
                sl.n = 1;
                sl.e[0].comm_id = 0xa0;
                sl.e[0].nranks = 1u + (uint32_t)(rand() % 20000);
                sl.e[0].ns = (uint8_t)(1 + rand() % NCG_RSLOW_SLOTS);
                for (uint32_t i = 0; i < sl.e[0].ns; i++) {
                    struct ncg_rslow_slot *y = &sl.e[0].s[i];
                    y->slot = (uint64_t)it * 16 + i * 3;
                    y->n = 1u + (uint32_t)rand() % sl.e[0].nranks;
                    y->argmin = (int32_t)((uint32_t)rand() % sl.e[0].nranks) - (rand() % 4 == 0);
                    y->side = (uint8_t)(rand() % 2);
                    y->min_ns = (uint64_t)(rand() % 50000) * 1000;
                    y->sum_ns = y->min_ns * y->n + (uint64_t)(rand() % 9000) * 1000;
                    y->step_ns = (uint64_t)(rand() % 90000) * 1000 * y->n;
                    y->has_who = (uint8_t)(rand() % 2);
                    y->grank = y->has_who ? y->argmin : -1;
                    y->pid = y->has_who ? (uint32_t)rand() : 0;
                    if (y->has_who)
                        snprintf(y->host, sizeof y->host, "node%d", rand() % 100);
                }
                seed.u.rslow = &sl;
            } else if (seed.type == NCG_MSG_RFIGQ) {
                seed.u.rfigq = (struct ncg_msg_rfigq){0xa0, 16, (uint32_t)it, 2, 9};
            } else if (seed.type == NCG_MSG_QUERY) { /* a few slots, maybe representatives */
                seed.u.query.n = (uint32_t)(rand() % 4);
                seed.u.query.nrep = (uint8_t)(rand() % (NCG_QUERY_REPS + 1));
                for (uint32_t i = 0; i < seed.u.query.nrep; i++)
                    seed.u.query.rep[i] = (uint32_t)rand() % 16384;
            } else {
                seed.u.report.n = (uint32_t)(rand() % 4);
                for (uint32_t i = 0; i < seed.u.report.n; i++)
                    seed.u.report.e[i].nranks = 4;
            }
            struct ncg_report_ref tx = {0};
            long k = ncg_wire_encode_ref(&seed, b, sizeof b, &tx);
            n = k > 0 ? (size_t)k : 0;
            if (seed.type == NCG_MSG_REPORT && n) { /* then compact ones referring to it */
                for (int more = rand() % 3; more >= 0; more--) {
                    for (uint32_t i = 0; i < seed.u.report.n; i++) {
                        struct ncg_report_entry *e = &seed.u.report.e[i];
                        e->count += (uint64_t)(rand() % 300);
                        e->done_hi = e->count - (uint64_t)(rand() % 2);
                        e->done = e->done_hi - (uint64_t)(rand() % 2);
                        e->tid ^= (uint32_t)(rand() % 2);
                    }
                    k = ncg_wire_encode_ref(&seed, b + n, sizeof b - n, &tx);
                    n += k > 0 ? (size_t)k : 0;
                }
            }
            for (int f = rand() % 6; f >= 0 && n; f--)
                b[(size_t)rand() % n] = (uint8_t)rand();
            if (n && rand() % 3 == 0)
                n = (size_t)rand() % n; /* truncated */
        } else {
            n = (size_t)(rand() % 64);
            memcpy(b, "NCGW\x01", 5);
            for (size_t i = (rand() % 2) ? 5 : 0; i < n; i++)
                b[i] = (uint8_t)rand();
        }
        LLVMFuzzerTestOneInput(b, n);
    }
    printf("fuzz_wire: %ld inputs, no crash\n", iters);
    return 0;
}
#endif
