/* Symbolization of recorded call sites (symbol.h). The recorded pc is a return address: look
 * up pc-1 so a call at the very end of a function is attributed to it. libunwind is dlopen()ed
 * (never linked), and only its local-unwinding proc-name lookup is used, on a cursor whose IP
 * we set to the pc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "symbol.h"

/* Opaque libunwind objects, sized generously (x86_64: cursor 127 words, context a ucontext). */
typedef struct {
    _Alignas(16) unsigned char b[4096];
} ncg_unw_buf;
typedef int (*unw_getcontext_fn)(void *ctx);
typedef int (*unw_init_local_fn)(void *cur, void *ctx);
typedef int (*unw_set_reg_fn)(void *cur, int reg, uint64_t val);
typedef int (*unw_get_proc_name_fn)(void *cur, char *buf, size_t len, uint64_t *off);
typedef int (*unw_backtrace_fn)(void **pcs, int max);

static struct {
    int tried;
    unw_getcontext_fn getcontext;
    unw_init_local_fn init_local;
    unw_set_reg_fn set_reg;
    unw_get_proc_name_fn get_proc_name;
    unw_backtrace_fn backtrace;
} unw;

static void unw_load(void)
{
    unw.tried = 1;
#if defined(__x86_64__)
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    unw.getcontext = (unw_getcontext_fn)dlsym(h, "_Ux86_64_getcontext");
    unw.init_local = (unw_init_local_fn)dlsym(h, "_ULx86_64_init_local");
    unw.set_reg = (unw_set_reg_fn)dlsym(h, "_ULx86_64_set_reg");
    unw.get_proc_name = (unw_get_proc_name_fn)dlsym(h, "_ULx86_64_get_proc_name");
    if (!unw.getcontext || !unw.init_local || !unw.set_reg || !unw.get_proc_name)
        unw.get_proc_name = NULL;
    unw.backtrace = (unw_backtrace_fn)dlsym(h, "unw_backtrace");
#endif
}

int (*ncg_symbol_unw_backtrace(void))(void **pcs, int max)
{
    if (!unw.tried)
        unw_load();
    return unw.backtrace;
}

static int unw_name(uint64_t pc, char *name, size_t cap, uint64_t *off)
{
    static ncg_unw_buf ctx, cur; /* callers serialize (checker thread) */
    if (!unw.tried)
        unw_load();
    if (!unw.get_proc_name)
        return -1;
    if (unw.getcontext(&ctx) != 0 || unw.init_local(&cur, &ctx) != 0)
        return -1;
    if (unw.set_reg(&cur, 16 /* UNW_X86_64_RIP */, pc) != 0)
        return -1;
    return unw.get_proc_name(&cur, name, cap, off) == 0 ? 0 : -1;
}

char *ncg_symbolize(uint64_t pc, char *buf, size_t cap)
{
    Dl_info di;
    if (cap)
        buf[0] = 0;
    if (!pc || !cap)
        return buf;
    uint64_t at = pc - 1;
    memset(&di, 0, sizeof di);
    if (!dladdr((void *)(uintptr_t)at, &di) || !di.dli_fname) {
        snprintf(buf, cap, "0x%" PRIx64, pc);
        return buf;
    }
    const char *mod = strrchr(di.dli_fname, '/');
    mod = mod ? mod + 1 : di.dli_fname;
    if (!*mod)
        mod = "?";
    uint64_t modoff = at - (uint64_t)(uintptr_t)di.dli_fbase;
    char name[128];
    uint64_t off = 0;
    if (di.dli_sname && di.dli_saddr) {
        snprintf(name, sizeof name, "%s", di.dli_sname);
        off = at - (uint64_t)(uintptr_t)di.dli_saddr;
    } else if (unw_name(at, name, sizeof name, &off) != 0) {
        name[0] = 0;
    }
    if (name[0])
        snprintf(buf, cap, "%s+0x%" PRIx64 " (%s+0x%" PRIx64 ")", name, off, mod, modoff);
    else
        snprintf(buf, cap, "%s+0x%" PRIx64, mod, modoff);
    return buf;
}
