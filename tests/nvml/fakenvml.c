/* A fake NVML for the CLI's tests (build/tests/nvml/libnvidia-ml.so.1): the few functions
 * `ncclguard` loads, answering from the file $FAKENVML_FILE, re-read on every call so that a
 * test can switch a GPU's readings while the CLI runs. One GPU per line:
 *     BUS_ID UTIL_PERCENT POWER_W LIMIT_W      e.g. "0000:10:00.0 100 35 700"
 * Bus ids compare case-insensitively, ignoring leading zeros of the domain ("00000000:10:00.0"
 * is "0000:10:00.0"). Handles are 1 + the line's index. Return codes are NVML's: 0 success,
 * 1 uninitialized, 2 invalid argument, 6 not found. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define API __attribute__((visibility("default")))
#define MAXG 64

struct gpu {
    char bus[64];
    unsigned util, power_mw, limit_mw;
};

struct util {
    unsigned gpu, memory;
};

/* The exports (NVML's signatures, with its opaque types as void *). */
API int nvmlInit_v2(void);
API int nvmlShutdown(void);
API const char *nvmlErrorString(int r);
API int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev);
API int nvmlDeviceGetUtilizationRates(void *dev, struct util *u);
API int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw);
API int nvmlDeviceGetEnforcedPowerLimit(void *dev, unsigned *mw);

static int inited;

static int load(struct gpu *g)
{
    const char *path = getenv("FAKENVML_FILE");
    FILE *f = path ? fopen(path, "r") : NULL;
    int n = 0;
    double p, l;
    while (f && n < MAXG && fscanf(f, "%63s %u %lf %lf", g[n].bus, &g[n].util, &p, &l) == 4) {
        g[n].power_mw = (unsigned)(p * 1000);
        g[n].limit_mw = (unsigned)(l * 1000);
        n++;
    }
    if (f)
        fclose(f);
    return n;
}

/* "0000:3b:00.0" -> "3b:00.0" with the domain's value kept apart. */
static const char *norm(const char *b, unsigned long *dom)
{
    const char *c = strchr(b, ':');
    *dom = c && strchr(c + 1, ':') ? strtoul(b, NULL, 16) : 0;
    return c && strchr(c + 1, ':') ? c + 1 : b;
}

static struct gpu *find(uintptr_t h, struct gpu *g)
{
    int n = load(g);
    return h >= 1 && (int)h <= n ? &g[h - 1] : NULL;
}

API int nvmlInit_v2(void)
{
    inited = 1;
    return 0;
}

API int nvmlShutdown(void)
{
    inited = 0;
    return 0;
}

API const char *nvmlErrorString(int r)
{
    return r ? "fakenvml error" : "success";
}

API int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev)
{
    struct gpu g[MAXG];
    if (!inited)
        return 1;
    if (!bus || !dev)
        return 2;
    unsigned long d1, d2;
    const char *want = norm(bus, &d1);
    int n = load(g);
    for (int i = 0; i < n; i++)
        if (!strcasecmp(norm(g[i].bus, &d2), want) && d1 == d2) {
            *dev = (void *)(uintptr_t)(i + 1);
            return 0;
        }
    return 6;
}

API int nvmlDeviceGetUtilizationRates(void *dev, struct util *u)
{
    struct gpu g[MAXG], *x = find((uintptr_t)dev, g);
    if (!inited)
        return 1;
    if (!x || !u)
        return 2;
    u->gpu = x->util;
    u->memory = 0;
    return 0;
}

API int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw)
{
    struct gpu g[MAXG], *x = find((uintptr_t)dev, g);
    if (!inited)
        return 1;
    if (!x || !mw)
        return 2;
    *mw = x->power_mw;
    return 0;
}

API int nvmlDeviceGetEnforcedPowerLimit(void *dev, unsigned *mw)
{
    struct gpu g[MAXG], *x = find((uintptr_t)dev, g);
    if (!inited)
        return 1;
    if (!x || !mw)
        return 2;
    *mw = x->limit_mw;
    return 0;
}
