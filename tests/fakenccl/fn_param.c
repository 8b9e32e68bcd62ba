/* fakenccl's parameter system (NCCL 2.30's ncclParam* API): the fake's own settings (README,
 * Environment), each read from the environment at the call, else its default. Handles are
 * pointers into the fixed table; returned strings live in it or in the environment. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fn_internal.h"

struct ncclParamHandle {
    const char *key, *dflt;
};

static struct ncclParamHandle g_params[] = {
    {"FAKENCCL_ASYNC", "0"},
    {"FAKENCCL_CUDA", "0"},
    {"FAKENCCL_TIMEOUT_S", "0"},
    {"FAKENCCL_STAGE_BYTES", "1048576"},
    {"FAKENCCL_P2P_BYTES", "262144"},
    {"FAKENCCL_PUT_BYTES", "65536"},
    {"NCCL_COMM_ID", ""},
};
#define NPARAMS (sizeof g_params / sizeof *g_params)

static const char *value_of(const struct ncclParamHandle *h)
{
    const char *v = getenv(h->key);
    return v && *v ? v : h->dflt;
}

static struct ncclParamHandle *find(const char *key)
{
    for (size_t i = 0; key && i < NPARAMS; i++)
        if (!strcmp(g_params[i].key, key))
            return &g_params[i];
    return NULL;
}

static int valid(ncclParamHandle_t h)
{
    return h >= g_params && h < g_params + NPARAMS;
}

FN_API ncclResult_t pncclParamBind(ncclParamHandle_t *out, const char *key)
{
    struct ncclParamHandle *h = find(key);
    if (!out || !h) {
        fn_set_last_error("ncclParamBind: unknown parameter %s", key ? key : "(null)");
        return ncclInvalidArgument;
    }
    *out = h;
    return ncclSuccess;
}
FN_ALIAS(ncclParamBind);

/* The value as an integer in [lo, hi]; unsigned ones parse as unsigned. */
static ncclResult_t get_int(ncclParamHandle_t h, int is_signed, long double lo, long double hi,
                            long double *v)
{
    if (!valid(h))
        return ncclInvalidArgument;
    const char *s = value_of(h);
    char *end;
    errno = 0;
    *v = is_signed ? (long double)strtoll(s, &end, 0) : (long double)strtoull(s, &end, 0);
    if (errno || end == s || *end || *v < lo || *v > hi || (!is_signed && *s == '-')) {
        fn_set_last_error("parameter %s=\"%s\" is not such an integer", h->key, s);
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

#define FN_PARAM_INT(name, type, sgn, lo, hi)                                                      \
    FN_API ncclResult_t p##name(ncclParamHandle_t h, type *out)                                    \
    {                                                                                              \
        long double v;                                                                             \
        ncclResult_t r = out ? get_int(h, sgn, lo, hi, &v) : ncclInvalidArgument;                  \
        if (r == ncclSuccess)                                                                      \
            *out = (type)v;                                                                        \
        return r;                                                                                  \
    }                                                                                              \
    FN_ALIAS(name);
FN_PARAM_INT(ncclParamGetI8, int8_t, 1, INT8_MIN, INT8_MAX)
FN_PARAM_INT(ncclParamGetI16, int16_t, 1, INT16_MIN, INT16_MAX)
FN_PARAM_INT(ncclParamGetI32, int32_t, 1, INT32_MIN, INT32_MAX)
FN_PARAM_INT(ncclParamGetI64, int64_t, 1, INT64_MIN, INT64_MAX)
FN_PARAM_INT(ncclParamGetU8, uint8_t, 0, 0, UINT8_MAX)
FN_PARAM_INT(ncclParamGetU16, uint16_t, 0, 0, UINT16_MAX)
FN_PARAM_INT(ncclParamGetU32, uint32_t, 0, 0, UINT32_MAX)
FN_PARAM_INT(ncclParamGetU64, uint64_t, 0, 0, UINT64_MAX)

FN_API ncclResult_t pncclParamGetStr(ncclParamHandle_t h, const char **out)
{
    if (!valid(h) || !out)
        return ncclInvalidArgument;
    *out = value_of(h);
    return ncclSuccess;
}
FN_ALIAS(ncclParamGetStr);

/* The string's bytes with its terminating NUL; *len is what was copied. */
FN_API ncclResult_t pncclParamGet(ncclParamHandle_t h, void *out, int maxLen, int *len)
{
    if (!valid(h) || !out || maxLen < 0 || !len)
        return ncclInvalidArgument;
    const char *v = value_of(h);
    size_t n = strlen(v) + 1;
    if (n > (size_t)maxLen) {
        fn_set_last_error("parameter %s needs %zu bytes", h->key, n);
        return ncclInvalidArgument;
    }
    memcpy(out, v, n);
    *len = (int)n;
    return ncclSuccess;
}
FN_ALIAS(ncclParamGet);

FN_API ncclResult_t pncclParamGetParameter(const char *key, const char **value, int *valueLen)
{
    struct ncclParamHandle *h = find(key);
    if (!h || !value || !valueLen)
        return ncclInvalidArgument;
    *value = value_of(h);
    *valueLen = (int)strlen(*value);
    return ncclSuccess;
}
FN_ALIAS(ncclParamGetParameter);

FN_API ncclResult_t pncclParamGetAllParameterKeys(const char ***table, int *tableLen)
{
    static const char *keys[NPARAMS];
    if (!table || !tableLen)
        return ncclInvalidArgument;
    for (size_t i = 0; i < NPARAMS; i++)
        keys[i] = g_params[i].key;
    *table = keys;
    *tableLen = (int)NPARAMS;
    return ncclSuccess;
}
FN_ALIAS(ncclParamGetAllParameterKeys);

FN_API void pncclParamDumpAll(void)
{
    for (size_t i = 0; i < NPARAMS; i++)
        fprintf(stderr, "fakenccl: param %s=%s\n", g_params[i].key, value_of(&g_params[i]));
}
FN_ALIAS(ncclParamDumpAll);
