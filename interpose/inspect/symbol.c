/* Symbolization of recorded call sites (symbol.h). The recorded pc is a return address: look
 * up pc-1 so a call at the very end of a function is attributed to it. A name is printed only
 * when the address lies inside that symbol (its size known): dladdr's symbol entry, else the
 * module file's symbol tables (elfsym.c), else libunwind (dlopen()ed, never linked) within the
 * procedure's bounds; otherwise module+offset. file:line comes from DWARF (srcline.c). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include "elfsym.h"
#include "srcline.h"
#include "symbol.h"

/* Opaque libunwind objects, sized generously (x86_64: cursor 127 words, context a ucontext). */
typedef struct {
    _Alignas(16) unsigned char b[4096];
} ncg_unw_buf;
typedef int (*unw_getcontext_fn)(void *ctx);
typedef int (*unw_init_local_fn)(void *cur, void *ctx);
typedef int (*unw_set_reg_fn)(void *cur, int reg, uint64_t val);
typedef int (*unw_get_proc_name_fn)(void *cur, char *buf, size_t len, uint64_t *off);
typedef int (*unw_get_proc_info_fn)(void *cur, void *pi);
typedef int (*unw_backtrace_fn)(void **pcs, int max);

static struct {
    int tried;
    unw_getcontext_fn getcontext;
    unw_init_local_fn init_local;
    unw_set_reg_fn set_reg;
    unw_get_proc_name_fn get_proc_name;
    unw_get_proc_info_fn get_proc_info;
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
    unw.get_proc_info = (unw_get_proc_info_fn)dlsym(h, "_ULx86_64_get_proc_info");
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

/* libunwind's name for the procedure containing at, only when at lies within that procedure's
 * bounds (unw_get_proc_info) and the name is the one starting there: libunwind's name lookup
 * alone returns the nearest symbol below, whatever its size. */
static int unw_name(uint64_t at, char *name, size_t cap, uint64_t *off)
{
    static ncg_unw_buf ctx, cur; /* callers serialize (checker thread) */
    struct {
        uint64_t start_ip, end_ip, lsda, handler, gp, flags;
        int format, unwind_info_size;
        void *unwind_info;
        unsigned char extra[128]; /* unw_tdep_proc_info_t, with room to spare */
    } pi;                         /* libunwind's unw_proc_info_t (x86_64) */
    if (!unw.tried)
        unw_load();
    if (!unw.get_proc_name || !unw.get_proc_info)
        return -1;
    if (unw.getcontext(&ctx) != 0 || unw.init_local(&cur, &ctx) != 0)
        return -1;
    if (unw.set_reg(&cur, 16 /* UNW_X86_64_RIP */, at) != 0)
        return -1;
    memset(&pi, 0, sizeof pi);
    if (unw.get_proc_info(&cur, &pi) != 0 || at < pi.start_ip || at >= pi.end_ip)
        return -1;
    if (unw.get_proc_name(&cur, name, cap, off) != 0 || at - *off != pi.start_ip)
        return -1;
    return 0;
}

/* The load bias and the file of the module containing at (the main program as /proc/self/exe,
 * since its recorded name may be relative to a directory the process left). */
static int module_of(uint64_t at, Dl_info *di, const ElfW(Sym) * *sym, uint64_t *bias,
                     const char **file)
{
    struct link_map *lm = NULL;
    memset(di, 0, sizeof *di);
    *sym = NULL;
    if (!dladdr1((void *)(uintptr_t)at, di, (void **)sym, RTLD_DL_SYMENT) || !di->dli_fname)
        return -1;
    Dl_info d2;
    if (dladdr1((void *)(uintptr_t)at, &d2, (void **)&lm, RTLD_DL_LINKMAP) && lm) {
        *bias = (uint64_t)lm->l_addr;
        *file = lm->l_name && lm->l_name[0] ? lm->l_name : "/proc/self/exe";
    } else {
        *bias = (uint64_t)(uintptr_t)di->dli_fbase;
        *file = di->dli_fname;
    }
    return 0;
}

char *ncg_symbolize(uint64_t pc, char *buf, size_t cap)
{
    return ncg_symbolize_opt(pc, buf, cap, 1);
}

char *ncg_symbolize_opt(uint64_t pc, char *buf, size_t cap, int srcline)
{
    Dl_info di;
    const ElfW(Sym) * sym;
    const char *file;
    uint64_t bias = 0;
    if (cap)
        buf[0] = 0;
    if (!pc || !cap)
        return buf;
    uint64_t at = pc - 1;
    if (module_of(at, &di, &sym, &bias, &file) != 0) {
        snprintf(buf, cap, "0x%" PRIx64, pc);
        return buf;
    }
    const char *mod = strrchr(di.dli_fname, '/');
    mod = mod ? mod + 1 : di.dli_fname;
    if (!*mod)
        mod = "?";
    uint64_t modoff = at - (uint64_t)(uintptr_t)di.dli_fbase;
    char name[128], line[96];
    uint64_t off = 0;
    name[0] = 0;
    /* 1. dladdr's (exported) symbol, when its size says the address is inside it. */
    if (di.dli_sname && di.dli_saddr && sym && sym->st_size > 0 &&
        at - (uint64_t)(uintptr_t)di.dli_saddr < sym->st_size) {
        snprintf(name, sizeof name, "%s", di.dli_sname);
        off = at - (uint64_t)(uintptr_t)di.dli_saddr;
    } else if (ncg_elfsym_lookup(file, at - bias, name, sizeof name, &off) != 0 &&
               unw_name(at, name, sizeof name, &off) != 0) {
        /* 2. the file's .symtab/.dynsym by containment; 3. libunwind within the proc bounds */
        name[0] = 0;
    }
    if (!srcline || ncg_srcline(at, line, sizeof line) != 0)
        line[0] = 0;
    if (name[0])
        snprintf(buf, cap, "%s+0x%" PRIx64 " (%s+0x%" PRIx64 ")%s%s", name, off, mod, modoff,
                 line[0] ? " at " : "", line);
    else
        snprintf(buf, cap, "%s+0x%" PRIx64 "%s%s", mod, modoff, line[0] ? " at " : "", line);
    return buf;
}
