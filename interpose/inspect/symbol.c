/* Symbolization of recorded call sites (symbol.h). The recorded pc is a return address: look
 * up pc-1 so a call at the very end of a function is attributed to it. A name is printed only
 * when the address lies inside that symbol (its size known): dladdr's symbol entry, else the
 * module file's symbol tables (elfsym.c), else libunwind (dlopen()ed, never linked) within the
 * procedure's bounds; otherwise module+offset. file:line comes from DWARF (srcline.c), C++
 * names from the process's __cxa_demangle; the text is composed by ncg_site_compose (site.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "elfsym.h"
#include "site.h"
#include "srcline.h"
#include "symbol.h"
#include "unw.h"

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
    const struct ncg_unw *u = ncg_unw();
    if (!u->getcontext || !u->init_local || !u->set_reg || !u->get_proc_name || !u->get_proc_info)
        return -1;
    if (u->getcontext(&ctx) != 0 || u->init_local(&cur, &ctx) != 0)
        return -1;
    if (u->set_reg(&cur, NCG_UNW_RIP, at) != 0)
        return -1;
    memset(&pi, 0, sizeof pi);
    if (u->get_proc_info(&cur, &pi) != 0 || at < pi.start_ip || at >= pi.end_ip)
        return -1;
    if (u->get_proc_name(&cur, name, cap, off) != 0 || at - *off != pi.start_ip)
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

/* ---------- C++ names: the process's own demangler ---------- */

typedef char *(*cxa_demangle_fn)(const char *mangled, char *out, size_t *len, int *status);

static int phdr_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
    unsigned long long *adds = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
        *adds = info->dlpi_adds;
    return 1;
}

/* A loaded C++ runtime's path (libstdc++, libc++abi), loaded RTLD_LOCAL maybe: a Python
 * extension's dependencies are not in the global scope that RTLD_DEFAULT searches. */
static int phdr_cxxrt(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const char *n = info->dlpi_name, *b = n ? strrchr(n, '/') : NULL;
    b = b ? b + 1 : n;
    if (!b || (strncmp(b, "libstdc++.so", 12) && strncmp(b, "libc++abi.so", 12) &&
               strncmp(b, "libc++.so", 9)))
        return 0;
    snprintf(arg, 512, "%s", n);
    return 1;
}

/* __cxa_demangle of this process, or NULL. Found once and kept (its library is pinned by the
 * RTLD_NOLOAD handle); while missing, looked up again only when modules were loaded since. */
static cxa_demangle_fn demangler(void)
{
    static void *fn;                /* __atomic */
    static unsigned long long seen; /* __atomic: dlpi_adds at the last miss, 0 none yet */
    void *f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
    if (!f) {
        unsigned long long adds = 0;
        dl_iterate_phdr(phdr_adds, &adds);
        if (adds && adds == __atomic_load_n(&seen, __ATOMIC_RELAXED))
            return NULL;
        f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
        char path[512] = "";
        if (!f && dl_iterate_phdr(phdr_cxxrt, path) && path[0]) {
            void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
            f = h ? dlsym(h, "__cxa_demangle") : NULL;
        }
        if (f)
            __atomic_store_n(&fn, f, __ATOMIC_RELEASE); /* racing finders store the same */
        else
            __atomic_store_n(&seen, adds, __ATOMIC_RELAXED);
    }
    cxa_demangle_fn d;
    *(void **)&d = f;
    return d;
}

int ncg_demangle(const char *name, char *out, size_t cap)
{
    if (!name || strncmp(name, "_Z", 2) != 0 || !cap)
        return -1;
    cxa_demangle_fn dm = demangler();
    int status = -1;
    char *d = dm ? dm(name, NULL, NULL, &status) : NULL;
    if (!d || status != 0) {
        free(d);
        return -1;
    }
    size_t n = strlen(d);
    int rc = 0;
    if (n < cap)
        memcpy(out, d, n + 1);
    else if (ncg_site_simplify(out, cap, d, 4) >= cap)
        rc = -1;
    free(d);
    return rc;
}

char *ncg_symbolize(uint64_t pc, char *buf, size_t cap)
{
    return ncg_symbolize_flags(pc, buf, cap, NCG_SYM_SRCLINE | NCG_SYM_DEMANGLE);
}

char *ncg_symbolize_opt(uint64_t pc, char *buf, size_t cap, int srcline)
{
    return ncg_symbolize_flags(pc, buf, cap, NCG_SYM_DEMANGLE | (srcline ? NCG_SYM_SRCLINE : 0));
}

char *ncg_symbolize_flags(uint64_t pc, char *buf, size_t cap, unsigned flags)
{
    /* Static: callers serialize. Long enough for a mangled C++ name whole (a cut one does not
     * demangle) and for most demangled ones (longer ones are simplified by ncg_demangle). */
    static char name[4096], demangled[4096];
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
    char line[96];
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
    if (!(flags & NCG_SYM_SRCLINE) || ncg_srcline(at, line, sizeof line) != 0)
        line[0] = 0;
    const char *shown = name;
    if ((flags & NCG_SYM_DEMANGLE) && ncg_demangle(name, demangled, sizeof demangled) == 0)
        shown = demangled;
    ncg_site_compose(buf, cap, shown, off, mod, modoff, line);
    return buf;
}
