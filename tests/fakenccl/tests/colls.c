/* colls: every collective x datatype x reduction op, in place and out of place, checked
 * against a reference this program computes itself (its own float16/bfloat16/fp8 decoders, not
 * the library's). Also PreMulSum (host-immediate and "device" scalars). Run under ncg-launch
 * with any world size; exit 0 when every element of every call is right. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"

static int g_rank, g_world, g_fail, g_pm;
static long g_checks;

static size_t esize(int dt)
{
    static const size_t s[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
    return s[dt];
}

static double dec_small(unsigned bits, int ebits, int mbits, int bias, int fnuz)
{
    int sign = (bits >> (ebits + mbits)) & 1;
    unsigned e = (bits >> mbits) & ((1u << ebits) - 1), m = bits & ((1u << mbits) - 1);
    double v;
    if (!fnuz && e == (1u << ebits) - 1)
        v = m ? NAN : INFINITY;
    else if (fnuz && e == (1u << ebits) - 1 && m == (1u << mbits) - 1)
        v = NAN;
    else if (e == 0)
        v = ldexp(m, 1 - bias - mbits);
    else
        v = ldexp(m + (1u << mbits), (int)e - bias - mbits);
    return sign ? -v : v;
}

/* Reference decoder of element i of buffer p. */
static double get(const void *p, int dt, size_t i)
{
    const unsigned char *b = p;
    switch (dt) {
    case ncclInt8:
        return (int8_t)b[i];
    case ncclUint8:
        return b[i];
    case ncclInt32:
        return ((const int32_t *)p)[i];
    case ncclUint32:
        return ((const uint32_t *)p)[i];
    case ncclInt64:
        return (double)((const int64_t *)p)[i];
    case ncclUint64:
        return (double)((const uint64_t *)p)[i];
    case ncclFloat16:
        return dec_small(((const uint16_t *)p)[i], 5, 10, 15, 0);
    case ncclFloat32:
        return ((const float *)p)[i];
    case ncclFloat64:
        return ((const double *)p)[i];
    case ncclBfloat16: {
        uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case ncclFloat8e4m3:
        return dec_small(b[i], 4, 3, 7, 1);
    default:
        return dec_small(b[i], 5, 2, 15, 0);
    }
}

/* Store a small exactly-representable value (found by searching the encodings). */
static void put(void *p, int dt, size_t i, double v)
{
    unsigned char *b = p;
    switch (dt) {
    case ncclInt8:
    case ncclUint8:
        b[i] = (unsigned char)(int)v;
        return;
    case ncclInt32:
        ((int32_t *)p)[i] = (int32_t)v;
        return;
    case ncclUint32:
        ((uint32_t *)p)[i] = (uint32_t)v;
        return;
    case ncclInt64:
        ((int64_t *)p)[i] = (int64_t)v;
        return;
    case ncclUint64:
        ((uint64_t *)p)[i] = (uint64_t)v;
        return;
    case ncclFloat32:
        ((float *)p)[i] = (float)v;
        return;
    case ncclFloat64:
        ((double *)p)[i] = v;
        return;
    default:
        break;
    }
    static int cache[ncclNumTypes][64]; /* encoding + 1 of small integers */
    int small = v >= 0 && v < 64 && v == floor(v);
    if (small && cache[dt][(int)v]) {
        unsigned bits = (unsigned)cache[dt][(int)v] - 1;
        unsigned char tmp[2] = {(unsigned char)bits, (unsigned char)(bits >> 8)};
        memcpy(b + i * esize(dt), tmp, esize(dt));
        return;
    }
    unsigned lim = esize(dt) == 2 ? 65536 : 256;
    for (unsigned bits = 0; bits < lim; bits++) {
        unsigned char tmp[2] = {(unsigned char)bits, (unsigned char)(bits >> 8)};
        if (get(tmp, dt, 0) == v) {
            memcpy(b + i * esize(dt), tmp, esize(dt));
            if (small)
                cache[dt][(int)v] = (int)bits + 1;
            return;
        }
    }
    fprintf(stderr, "colls: %g not representable in type %d\n", v, dt);
    exit(2);
}

static int is_int(int dt)
{
    return dt <= ncclUint64;
}
static int is_signed(int dt)
{
    return dt == ncclInt8 || dt == ncclInt32 || dt == ncclInt64;
}

static double tol(int dt)
{
    switch (dt) {
    case ncclFloat16:
        return 1.0 / 1024;
    case ncclBfloat16:
        return 1.0 / 128;
    case ncclFloat8e4m3:
        return 1.0 / 16;
    case ncclFloat8e5m2:
        return 1.0 / 8;
    case ncclFloat32:
        return 1e-6;
    case ncclFloat64:
        return 1e-12;
    default:
        return 0;
    }
}

/* Input element i of rank r: small values exact in every type; for prod mostly 1s. */
static double val(int r, size_t i, int op)
{
    if (op == ncclProd)
        return ((i + (size_t)r) % 8 == 0) ? 2 : 1;
    return (double)(1 + (r * 7 + (int)(i % 1000)) % 3);
}

/* Wrap an exact integer result to the type's width (the GPU's modular arithmetic). */
static double wrap(double v, int dt)
{
    int bits = (int)esize(dt) * 8;
    if (bits == 64 || !is_int(dt))
        return v;
    uint64_t m = (uint64_t)(int64_t)v & ((1ull << bits) - 1);
    if (is_signed(dt) && (m >> (bits - 1)))
        return (double)(int64_t)(m | ~((1ull << bits) - 1));
    return (double)m;
}

/* Reduce element i over ranks (premul scalar per rank: 1 + r % 4 when pm). */
static double ref_reduce(int op, int dt, size_t i, int pm)
{
    double acc = 0;
    for (int r = 0; r < g_world; r++) {
        double x = val(r, i, op);
        if (pm)
            x *= 1 + r % 4;
        if (r == 0)
            acc = x;
        else if (op == ncclProd)
            acc = wrap(acc * x, dt);
        else if (op == ncclMax)
            acc = x > acc ? x : acc;
        else if (op == ncclMin)
            acc = x < acc ? x : acc;
        else
            acc += x;
    }
    if (op == ncclAvg)
        acc = is_int(dt) ? floor(acc / g_world) : acc / g_world;
    return wrap(acc, dt);
}

static void check(const char *what, int dt, int op, int inplace, const void *buf, size_t i,
                  double want)
{
    double got = get(buf, dt, i);
    double t = tol(dt) * (fabs(want) > 1 ? fabs(want) : 1);
    if ((op == ncclAvg && !is_int(dt)) || g_pm)
        t *= 3; /* a second rounding: the division, or each rank's pre-multiplied input */
    g_checks++;
    if (!(fabs(got - want) <= t)) {
        if (g_fail++ < 10)
            fprintf(stderr, "colls: rank %d/%d: %s dtype %d op %d %s: element %zu = %g, want %g\n",
                    g_rank, g_world, what, dt, op, inplace ? "in place" : "out of place", i, got,
                    want);
    }
}

enum {
    C_ALLREDUCE,
    C_REDUCE,
    C_REDUCESCATTER,
    C_BROADCAST,
    C_BCAST,
    C_ALLGATHER,
    C_ALLTOALL,
    C_GATHER,
    C_SCATTER,
    C_NUM
};
static const char *const cname[] = {"AllReduce", "Reduce",   "ReduceScatter", "Broadcast", "Bcast",
                                    "AllGather", "AlltoAll", "Gather",        "Scatter"};

static void run_one(ncclComm_t comm, int c, int dt, int op, int inplace, size_t count, int root,
                    unsigned char *sb, unsigned char *rb, int pm)
{
    int n = g_world, me = g_rank;
    size_t es = esize(dt), total = count * (size_t)n;
    memset(sb, 0xee, total * es);
    memset(rb, 0xee, total * es);
    /* Inputs: reductions/broadcast-like use count elements; *Scatter/AlltoAll n*count. */
    int per_dest = c == C_REDUCESCATTER || c == C_ALLTOALL || c == C_SCATTER;
    size_t nin = per_dest ? total : count;
    unsigned char *send = sb, *recv = rb;
    if (inplace) {
        switch (c) {
        case C_ALLGATHER:
        case C_GATHER:
            send = rb + (size_t)me * count * es;
            recv = rb;
            break;
        case C_REDUCESCATTER:
        case C_SCATTER:
            send = rb;
            recv = rb + (size_t)me * count * es;
            break;
        default:
            send = recv = rb;
            break;
        }
    }
    for (size_t i = 0; i < nin; i++) {
        /* for *Scatter/AlltoAll element j*count+k goes to rank j: make it depend on both */
        put(send, dt, i, val(me, i, op));
    }
    ncclRedOp_t rop = (ncclRedOp_t)op;
    g_pm = pm;
    _Alignas(8) unsigned char scal[8];
    if (pm) {
        put(scal, dt, 0, 1 + me % 4);
        NCG_CHECK(ncclRedOpCreatePreMulSum(&rop, scal, (ncclDataType_t)dt,
                                           pm == 1 ? ncclScalarHostImmediate : ncclScalarDevice,
                                           comm));
        if (pm == 1)
            memset(scal, 0, sizeof scal); /* immediate: the value was captured at creation */
    }
    ncclDataType_t t = (ncclDataType_t)dt;
    switch (c) {
    case C_ALLREDUCE:
        NCG_CHECK(ncclAllReduce(send, recv, count, t, rop, comm, NULL));
        break;
    case C_REDUCE:
        NCG_CHECK(ncclReduce(send, recv, count, t, rop, root, comm, NULL));
        break;
    case C_REDUCESCATTER:
        NCG_CHECK(ncclReduceScatter(send, recv, count, t, rop, comm, NULL));
        break;
    case C_BROADCAST:
        NCG_CHECK(ncclBroadcast(send, recv, count, t, root, comm, NULL));
        break;
    case C_BCAST:
        if (!inplace)
            memcpy(recv, send, count * es);
        NCG_CHECK(ncclBcast(recv, count, t, root, comm, NULL));
        break;
    case C_ALLGATHER:
        NCG_CHECK(ncclAllGather(send, recv, count, t, comm, NULL));
        break;
    case C_ALLTOALL:
        NCG_CHECK(ncclAlltoAll(send, recv, count, t, comm, NULL));
        break;
    case C_GATHER:
        NCG_CHECK(ncclGather(send, recv, count, t, root, comm, NULL));
        break;
    case C_SCATTER:
        NCG_CHECK(ncclScatter(send, recv, count, t, root, comm, NULL));
        break;
    }
    if (pm)
        NCG_CHECK(ncclRedOpDestroy(rop, comm));
    const char *w = cname[c];
    int rop_i = op;
    for (size_t k = 0; k < count; k++) {
        switch (c) {
        case C_ALLREDUCE:
            check(w, dt, rop_i, inplace, recv, k, ref_reduce(op, dt, k, pm));
            break;
        case C_REDUCE:
            if (me == root)
                check(w, dt, rop_i, inplace, recv, k, ref_reduce(op, dt, k, pm));
            break;
        case C_REDUCESCATTER:
            check(w, dt, rop_i, inplace, recv, k, ref_reduce(op, dt, (size_t)me * count + k, pm));
            break;
        case C_BROADCAST:
        case C_BCAST:
            check(w, dt, rop_i, inplace, recv, k, val(root, k, op));
            break;
        case C_ALLGATHER:
            for (int r = 0; r < n; r++)
                check(w, dt, rop_i, inplace, recv, (size_t)r * count + k, val(r, k, op));
            break;
        case C_GATHER:
            if (me == root)
                for (int r = 0; r < n; r++)
                    check(w, dt, rop_i, inplace, recv, (size_t)r * count + k, val(r, k, op));
            break;
        case C_ALLTOALL:
            for (int r = 0; r < n; r++)
                check(w, dt, rop_i, inplace, recv, (size_t)r * count + k,
                      val(r, (size_t)me * count + k, op));
            break;
        case C_SCATTER:
            check(w, dt, rop_i, inplace, recv, k, val(root, (size_t)me * count + k, op));
            break;
        }
    }
}

int main(int argc, char **argv)
{
    size_t count = argc > 1 ? (size_t)atol(argv[1]) : 37;
    g_rank = ncg_test_rank();
    g_world = ncg_test_world();
    ncclUniqueId id;
    if (ncg_test_share_id(&id) != 0)
        return 1;
    ncclComm_t comm;
    NCG_CHECK(ncclCommInitRank(&comm, g_world, id, g_rank));
    size_t bytes = count * (size_t)g_world * 8 + 64;
    unsigned char *sb = malloc(bytes), *rb = malloc(bytes);
    if (!sb || !rb)
        return 1;
    long calls = 0;
    for (int c = 0; c < C_NUM; c++)
        for (int dt = 0; dt < ncclNumTypes; dt++) {
            int reduces = c == C_ALLREDUCE || c == C_REDUCE || c == C_REDUCESCATTER;
            for (int op = 0; op < (reduces ? ncclNumOps : 1); op++)
                for (int inplace = 0; inplace < (c == C_ALLTOALL ? 1 : 2); inplace++) {
                    int root = (int)(calls % (long)g_world);
                    run_one(comm, c, dt, reduces ? op : ncclSum, inplace, count, root, sb, rb, 0);
                    calls++;
                }
            /* PreMulSum: scalar 1 + rank % 4, host-immediate and by pointer */
            if (reduces)
                for (int pm = 1; pm <= 2; pm++) {
                    run_one(comm, c, dt, ncclSum, pm - 1, count, (int)(calls % g_world), sb, rb,
                            pm);
                    calls++;
                }
        }
    NCG_CHECK(ncclCommDestroy(comm));
    free(sb);
    free(rb);
    if (g_fail) {
        fprintf(stderr, "colls: rank %d: %d of %ld checks failed\n", g_rank, g_fail, g_checks);
        return 1;
    }
    if (g_rank == 0)
        printf("colls: %d ranks, %ld calls, count %zu: %ld element checks passed on rank 0\n",
               g_world, calls, count, g_checks);
    return 0;
}
