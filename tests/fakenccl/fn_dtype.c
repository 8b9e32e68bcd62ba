/* fakenccl data types and reductions: element sizes, float16/bfloat16/fp8 conversions
 * (round to nearest even) and the five built-in reductions. Integer arithmetic wraps like the
 * GPU's; small floats are reduced in float and rounded once per result element. */
#include <math.h>
#include <string.h>

#include "fn_internal.h"

size_t fn_dtype_size(ncclDataType_t dt)
{
    switch (dt) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
        return 1;
    case ncclFloat16:
    case ncclBfloat16:
        return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
        return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
        return 8;
    default:
        return 0;
    }
}

int fn_dtype_valid(int dt)
{
    return dt >= 0 && dt < ncclNumTypes;
}

/* A small binary float format: exponent bits, mantissa bits, bias; fn = e4m3 "finite" flavour
 * (no infinities, only S.1111.111 is NaN, saturates at 448). */
struct fn_fmt {
    int ebits, mbits, bias, fn;
};
static const struct fn_fmt FMT_HALF = {5, 10, 15, 0};
static const struct fn_fmt FMT_BF16 = {8, 7, 127, 0};
static const struct fn_fmt FMT_E4M3 = {4, 3, 7, 1};
static const struct fn_fmt FMT_E5M2 = {5, 2, 15, 0};

static double fmt_decode(unsigned bits, const struct fn_fmt *f)
{
    unsigned emask = (1u << f->ebits) - 1, mmask = (1u << f->mbits) - 1;
    int sign = (bits >> (f->ebits + f->mbits)) & 1;
    unsigned e = (bits >> f->mbits) & emask, m = bits & mmask;
    double v;
    if (f->fn && e == emask && m == mmask)
        return NAN;
    if (!f->fn && e == emask)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, 1 - f->bias - f->mbits);
    else
        v = ldexp((double)(m | (1u << f->mbits)), (int)e - f->bias - f->mbits);
    return sign ? -v : v;
}

static unsigned fmt_encode(double v, const struct fn_fmt *f)
{
    unsigned sbit = 1u << (f->ebits + f->mbits), emask = (1u << f->ebits) - 1;
    unsigned mmask = (1u << f->mbits) - 1;
    int emax = f->fn ? (int)emask - f->bias : (int)emask - 1 - f->bias;
    unsigned sign = signbit(v) ? sbit : 0;
    if (isnan(v))
        return f->fn ? (emask << f->mbits) | mmask : (emask << f->mbits) | (1u << (f->mbits - 1));
    double a = fabs(v);
    if (a == 0)
        return sign;
    if (isinf(a))
        goto overflow;
    int ex;
    frexp(a, &ex);
    int e = ex - 1;
    if (e < 1 - f->bias)
        e = 1 - f->bias;
    double q = nearbyint(ldexp(a, f->mbits - e)); /* ties to even in the default mode */
    if (q >= ldexp(1.0, f->mbits + 1)) {
        q /= 2;
        e++;
    }
    if (e > emax)
        goto overflow;
    unsigned qi = (unsigned)q;
    if (qi < (1u << f->mbits))
        return sign | qi; /* subnormal (or zero after rounding) */
    unsigned out = sign | ((unsigned)(e + f->bias) << f->mbits) | (qi & mmask);
    if (f->fn && ((out & ~sbit) == ((emask << f->mbits) | mmask)))
        goto overflow; /* the NaN pattern: saturate instead */
    return out;
overflow:
    if (f->fn)
        return sign | (emask << f->mbits) | (mmask - 1); /* 448: saturating, as satfinite */
    return sign | (emask << f->mbits);                   /* infinity */
}

double fn_load(const void *p, ncclDataType_t dt, size_t i)
{
    const unsigned char *b = p;
    switch (dt) {
    case ncclInt8:
        return ((const int8_t *)p)[i];
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
        return fmt_decode(((const uint16_t *)p)[i], &FMT_HALF);
    case ncclFloat32:
        return ((const float *)p)[i];
    case ncclFloat64:
        return ((const double *)p)[i];
    case ncclBfloat16:
        return fmt_decode(((const uint16_t *)p)[i], &FMT_BF16);
    case ncclFloat8e4m3:
        return fmt_decode(b[i], &FMT_E4M3);
    case ncclFloat8e5m2:
        return fmt_decode(b[i], &FMT_E5M2);
    default:
        return 0;
    }
}

void fn_store(void *p, ncclDataType_t dt, size_t i, double v)
{
    switch (dt) {
    case ncclInt8:
        ((int8_t *)p)[i] = (int8_t)v;
        break;
    case ncclUint8:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case ncclInt32:
        ((int32_t *)p)[i] = (int32_t)v;
        break;
    case ncclUint32:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    case ncclInt64:
        ((int64_t *)p)[i] = (int64_t)v;
        break;
    case ncclUint64:
        ((uint64_t *)p)[i] = (uint64_t)v;
        break;
    case ncclFloat16:
        ((uint16_t *)p)[i] = (uint16_t)fmt_encode(v, &FMT_HALF);
        break;
    case ncclFloat32:
        ((float *)p)[i] = (float)v;
        break;
    case ncclFloat64:
        ((double *)p)[i] = v;
        break;
    case ncclBfloat16:
        ((uint16_t *)p)[i] = (uint16_t)fmt_encode(v, &FMT_BF16);
        break;
    case ncclFloat8e4m3:
        ((uint8_t *)p)[i] = (uint8_t)fmt_encode(v, &FMT_E4M3);
        break;
    case ncclFloat8e5m2:
        ((uint8_t *)p)[i] = (uint8_t)fmt_encode(v, &FMT_E5M2);
        break;
    default:
        break;
    }
}

/* Integer reductions in the unsigned type U (wrap-around, no UB), compared in signed type S. */
#define FN_INT_REDUCE(S, U)                                                                        \
    do {                                                                                           \
        for (size_t i = 0; i < n; i++) {                                                           \
            U acc = ((const U *)srcs[0])[i];                                                       \
            for (int s = 1; s < nsrc; s++) {                                                       \
                U x = ((const U *)srcs[s])[i];                                                     \
                switch (op) {                                                                      \
                case ncclProd:                                                                     \
                    acc = (U)(acc * x);                                                            \
                    break;                                                                         \
                case ncclMax:                                                                      \
                    acc = ((S)x > (S)acc) ? x : acc;                                               \
                    break;                                                                         \
                case ncclMin:                                                                      \
                    acc = ((S)x < (S)acc) ? x : acc;                                               \
                    break;                                                                         \
                default:                                                                           \
                    acc = (U)(acc + x);                                                            \
                    break;                                                                         \
                }                                                                                  \
            }                                                                                      \
            if (op == ncclAvg)                                                                     \
                acc = (U)((S)acc / (S)nranks);                                                     \
            ((U *)dst)[i] = acc;                                                                   \
        }                                                                                          \
    } while (0)

/* Floating reductions accumulate in T (float for float32 and narrower, double for float64). */
#define FN_FLT_REDUCE(T)                                                                           \
    do {                                                                                           \
        for (size_t i = 0; i < n; i++) {                                                           \
            T acc = (T)fn_load(srcs[0], dt, i);                                                    \
            for (int s = 1; s < nsrc; s++) {                                                       \
                T x = (T)fn_load(srcs[s], dt, i);                                                  \
                switch (op) {                                                                      \
                case ncclProd:                                                                     \
                    acc *= x;                                                                      \
                    break;                                                                         \
                case ncclMax:                                                                      \
                    acc = x > acc ? x : acc;                                                       \
                    break;                                                                         \
                case ncclMin:                                                                      \
                    acc = x < acc ? x : acc;                                                       \
                    break;                                                                         \
                default:                                                                           \
                    acc += x;                                                                      \
                    break;                                                                         \
                }                                                                                  \
            }                                                                                      \
            if (op == ncclAvg)                                                                     \
                acc /= (T)nranks;                                                                  \
            fn_store(dst, dt, i, (double)acc);                                                     \
        }                                                                                          \
    } while (0)

void fn_reduce(void *dst, const void *const *srcs, int nsrc, size_t n, ncclDataType_t dt,
               ncclRedOp_t op, int nranks)
{
    if (op >= ncclNumOps)
        op = ncclSum; /* user ops are PreMulSum: inputs were pre-multiplied on deposit */
    switch (dt) {
    case ncclInt8:
        FN_INT_REDUCE(int8_t, uint8_t);
        break;
    case ncclUint8:
        FN_INT_REDUCE(uint8_t, uint8_t);
        break;
    case ncclInt32:
        FN_INT_REDUCE(int32_t, uint32_t);
        break;
    case ncclUint32:
        FN_INT_REDUCE(uint32_t, uint32_t);
        break;
    case ncclInt64:
        FN_INT_REDUCE(int64_t, uint64_t);
        break;
    case ncclUint64:
        FN_INT_REDUCE(uint64_t, uint64_t);
        break;
    case ncclFloat64:
        FN_FLT_REDUCE(double);
        break;
    default:
        FN_FLT_REDUCE(float);
        break;
    }
}

void fn_premul(void *dst, const void *src, size_t n, ncclDataType_t dt, const void *scalar)
{
    switch (dt) {
#define FN_INT_PREMUL(U)                                                                           \
    do {                                                                                           \
        U k;                                                                                       \
        memcpy(&k, scalar, sizeof k);                                                              \
        for (size_t i = 0; i < n; i++)                                                             \
            ((U *)dst)[i] = (U)(((const U *)src)[i] * k);                                          \
    } while (0)
    case ncclInt8:
    case ncclUint8:
        FN_INT_PREMUL(uint8_t);
        break;
    case ncclInt32:
    case ncclUint32:
        FN_INT_PREMUL(uint32_t);
        break;
    case ncclInt64:
    case ncclUint64:
        FN_INT_PREMUL(uint64_t);
        break;
#undef FN_INT_PREMUL
    default: {
        _Alignas(8) unsigned char kb[8]; /* the scalar may sit at any address */
        memcpy(kb, scalar, fn_dtype_size(dt));
        double k = fn_load(kb, dt, 0);
        for (size_t i = 0; i < n; i++)
            fn_store(dst, dt, i, fn_load(src, dt, i) * k);
        break;
    }
    }
}
