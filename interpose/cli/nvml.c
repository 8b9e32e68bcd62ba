/* GPU utilization and board power per rank, from NVML loaded at run time (libnvidia-ml.so.1 is
 * never linked: absent, the CLI shows no GPU columns). Each segment names its CUDA device by
 * PCI bus id (layout 3); NVML maps a bus id to a device handle. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"

typedef void *nvml_dev;
struct nvml_util {
    unsigned gpu, memory;
};

static struct {
    int tried, ok;
    char why[160];
    int (*init)(void);
    int (*by_bus)(const char *, nvml_dev *);
    int (*util)(nvml_dev, struct nvml_util *);
    int (*power)(nvml_dev, unsigned *);
    int (*limit)(nvml_dev, unsigned *);
} nv;

static int nvml_open(void)
{
    if (nv.tried)
        return nv.ok;
    nv.tried = 1;
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(nv.why, sizeof nv.why, "NVML not loaded (%s)", dlerror());
        return 0;
    }
    nv.init = (int (*)(void))dlsym(h, "nvmlInit_v2");
    nv.by_bus = (int (*)(const char *, nvml_dev *))dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
    nv.util = (int (*)(nvml_dev, struct nvml_util *))dlsym(h, "nvmlDeviceGetUtilizationRates");
    nv.power = (int (*)(nvml_dev, unsigned *))dlsym(h, "nvmlDeviceGetPowerUsage");
    nv.limit = (int (*)(nvml_dev, unsigned *))dlsym(h, "nvmlDeviceGetEnforcedPowerLimit");
    if (!nv.init || !nv.by_bus || !nv.util || !nv.power || !nv.limit) {
        snprintf(nv.why, sizeof nv.why, "NVML lacks a function this ncclguard uses");
        return 0;
    }
    int rc = nv.init();
    if (rc != 0) {
        snprintf(nv.why, sizeof nv.why, "nvmlInit_v2 failed (NVML error %d)", rc);
        return 0;
    }
    nv.ok = 1;
    return 1;
}

int ncg_nvml_fill(struct ncg_snap *s, char *why, size_t len)
{
    int any = 0;
    for (int i = 0; i < s->nprocs; i++)
        any |= s->procs[i].bus_id[0] != 0;
    if (!any) {
        snprintf(why, len, "no rank recorded its CUDA device");
        return 0;
    }
    if (!nvml_open()) {
        snprintf(why, len, "%s", nv.why);
        return 0;
    }
    for (int i = 0; i < s->nprocs; i++) {
        struct ncg_cli_proc *p = &s->procs[i];
        nvml_dev d;
        struct nvml_util u;
        unsigned mw = 0, lim = 0;
        p->gpu_ok = p->bus_id[0] && nv.by_bus(p->bus_id, &d) == 0 && nv.util(d, &u) == 0 &&
                    nv.power(d, &mw) == 0;
        if (!p->gpu_ok)
            continue;
        p->gpu_util = u.gpu;
        p->gpu_power_w = mw / 1000.0;
        p->gpu_limit_w = nv.limit(d, &lim) == 0 ? lim / 1000.0 : 0;
    }
    why[0] = 0;
    return 1;
}

void ncg_cli_fmt_gpu(char *buf, size_t len, const struct ncg_cli_proc *p)
{
    if (!p->gpu_ok)
        snprintf(buf, len, "-");
    else if (p->gpu_limit_w > 0)
        snprintf(buf, len, "%u%% %.0f/%.0fW", p->gpu_util, p->gpu_power_w, p->gpu_limit_w);
    else
        snprintf(buf, len, "%u%% %.0fW", p->gpu_util, p->gpu_power_w);
}
