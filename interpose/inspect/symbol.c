/* Symbolization of recorded call sites (symbol.h). The recorded pc is a return address: look
 * up pc-1 so a call at the very end of a function is attributed to it. A name is printed only
 * when the address lies inside that symbol (its size known): dladdr's symbol entry, else the
 * module file's symbol tables (elfsym.c), else libunwind (dlopen()ed, never linked) within the
 * procedure's bounds; otherwise module+offset. file:line comes from DWARF (srcline.c), C++
 * names from the process's __cxa_demangle; the text is composed by ncg_site_compose (pure). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "elfsym.h"
#include "srcline.h"
#include "symbol.h"
#include "unw.h"

int (*ncg_symbol_unw_backtrace(void))(void **pcs, int max)
{
    return ncg_unw()->backtrace;
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

/* ---------- the text of a call site (pure) ---------- */

#define NCG_ELLIPSIS "\xe2\x80\xa6" /* U+2026, 3 bytes */

/* Length of the printable UTF-8 character at s (n > 0 bytes left); 0 when the byte there is
 * written as '?': a control byte, or no valid shortest-form sequence starts there. */
static size_t u8_char(const unsigned char *s, size_t n)
{
    unsigned c = s[0], cp, min;
    size_t len;
    if (c < 0x80)
        return c >= 0x20 && c != 0x7f;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (len > n)
        return 0;
    cp = c & (0x7fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3fu);
    }
    return cp >= min && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff) ? len : 0;
}

/* Bytes the character at s takes in the output: its own, or 1 for its '?'. */
static size_t ch_len(const char *s, size_t n)
{
    size_t k = u8_char((const unsigned char *)s, n);
    return k ? k : 1;
}

/* Output that never overflows nor splits a character: len counts every byte asked for, w
 * those written (all, until the first character that did not fit). */
struct out {
    char *b;
    size_t cap, len, w;
};

static void put_char(struct out *o, const char *s, size_t k)
{
    size_t v = u8_char((const unsigned char *)s, k) == k;
    if (o->w == o->len && o->len + k < o->cap) {
        if (v)
            memcpy(o->b + o->w, s, k);
        else
            o->b[o->w] = '?';
        o->w += k;
    }
    o->len += k;
}

/* n bytes of s, cleaned: a character the same length out as in. */
static void put(struct out *o, const char *s, size_t n)
{
    for (size_t i = 0, k; i < n; i += k) {
        k = ch_len(s + i, n - i);
        put_char(o, s + i, k);
    }
}

static void putz(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

static size_t out_end(struct out *o)
{
    if (o->cap)
        o->b[o->w] = 0;
    return o->w;
}

/* The bytes that "operator" at s[i] and its symbol take when the symbol holds brackets
 * (operator<, operator(), operator->...): they are a name, not brackets. 0 otherwise. */
static size_t op_len(const char *s, size_t i, size_t n)
{
    static const char *const ops[] = {
        "<=>", "<<=", ">>=", "->*", "<<", ">>", "<=", ">=", "->", "()", "[]", "<", ">"};
    if (n - i < 9 || memcmp(s + i, "operator", 8) != 0)
        return 0;
    unsigned char p = i ? (unsigned char)s[i - 1] : ' ';
    if (p == '_' || (unsigned)((p | 0x20) - 'a') < 26 || (unsigned)(p - '0') < 10)
        return 0; /* my_operator< is an identifier and a bracket */
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        size_t l = strlen(ops[k]);
        if (n - i - 8 >= l && !memcmp(s + i + 8, ops[k], l))
            return 8 + l;
    }
    return 0;
}

/* 0 when the brackets of s[0, n) balance, -1 when not. Then *params is the function's parameter
 * list: the last '(' outside all brackets, n when none; *name where its qualified name starts:
 * after the last space outside brackets before *params (a function template's return type
 * ends there; "operator new" or "operator int" hold spaces of their own: 0 then), else 0. */
static int brackets(const char *s, size_t n, size_t *params, size_t *name)
{
    long angle = 0, paren = 0;
    size_t space = 0;
    *params = n;
    for (size_t i = 0; i < n; i++) {
        size_t op = op_len(s, i, n);
        if (op) {
            i += op - 1;
            continue;
        }
        if (s[i] == '<')
            angle++;
        else if (s[i] == '>' && --angle < 0)
            return -1;
        else if (s[i] == '(' || s[i] == '{' || s[i] == '[') {
            if (s[i] == '(' && !angle && !paren)
                *params = i;
            paren++;
        } else if ((s[i] == ')' || s[i] == '}' || s[i] == ']') && --paren < 0)
            return -1;
        else if (s[i] == ' ' && !angle && !paren && *params == n)
            space = i + 1;
    }
    *name = space && *params < n && !memmem(s, n, "operator", 8) ? space : 0;
    return angle || paren ? -1 : 0;
}

/* Where the last component of a C++ name starts: its "::" outside brackets, 0 when none. */
static size_t last_component(const char *s, size_t n)
{
    long d = 0;
    size_t at = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        size_t op = op_len(s, i, n);
        if (op) {
            i += op - 1;
            continue;
        }
        if (s[i] == '<' || s[i] == '(' || s[i] == '{' || s[i] == '[')
            d++;
        else if (s[i] == '>' || s[i] == ')' || s[i] == '}' || s[i] == ']')
            d--;
        else if (!d && s[i] == ':' && s[i + 1] == ':')
            at = i++;
    }
    return at;
}

/* The index of the bracket that closes s[i] ('<' or '('), n when none. */
static size_t close_of(const char *s, size_t i, size_t n)
{
    int angle = s[i] == '<';
    long d = 0;
    for (size_t j = i; j < n; j++) {
        size_t op = op_len(s, j, n);
        if (op) {
            j += op - 1;
            continue;
        }
        char c = s[j];
        if (angle ? c == '<' : (c == '(' || c == '{' || c == '['))
            d++;
        else if ((angle ? c == '>' : (c == ')' || c == '}' || c == ']')) && --d == 0)
            return j;
    }
    return n;
}

size_t ncg_site_simplify(char *out, size_t cap, const char *name, int level)
{
    struct out o = {out, cap, 0, 0};
    size_t n = strlen(name), params, start = 0;
    const char *clone = strstr(name, " [clone ");
    if (level >= 1 && clone)
        n = (size_t)(clone - name);
    if (level < 2 || brackets(name, n, &params, &start) != 0)
        level = 1;
    long angle = 0;
    for (size_t i = level >= 3 ? start : 0, k; i < n; i += k) {
        size_t op = level > 1 ? op_len(name, i, n) : 0;
        if (op) {
            put(&o, name + i, op);
            k = op;
            continue;
        }
        char c = name[i];
        int fold = 0;
        if (level > 1 && c == '<')
            fold = ++angle >= (level >= 4 ? 1 : 2);
        else if (level > 1 && c == '>')
            angle--;
        else if (level >= 3 && i == params)
            fold = 1;
        size_t e = fold ? close_of(name, i, n) : n;
        /* "…" takes 3 bytes: shorter lists stay; "(anonymous namespace)::" is no parameter list */
        if (e < n && e - i - 1 > 3 && !(c == '(' && !strncmp(name + e + 1, "::", 2))) {
            put(&o, name + i, 1);
            put(&o, NCG_ELLIPSIS, 3);
            put(&o, name + e, 1);
            angle -= c == '<';
            k = e + 1 - i;
            continue;
        }
        k = ch_len(name + i, n - i);
        put_char(&o, name + i, k);
    }
    out_end(&o);
    return o.len;
}

/* n bytes of s in at most room bytes: whole when they fit, else a head and a tail around "…",
 * cut between characters. The tail gets 3/5, or more to hold a C++ name's last component
 * whole (the function, from its "::") while the head keeps 8 bytes. */
static void put_cut(struct out *o, const char *s, size_t n, size_t room)
{
    if (n <= room) {
        put(o, s, n);
        return;
    }
    if (room < 3)
        return;
    size_t keep = room - 3, tail = keep * 3 / 5, c = last_component(s, n), h = 0, t = n;
    if (c && n - c > tail && n - c + 8 <= keep)
        tail = n - c;
    size_t head = keep - tail;
    for (size_t i = 0; i < n; i += ch_len(s + i, n - i)) {
        if (i <= head)
            h = i;
        if (i >= n - tail) {
            t = i;
            break;
        }
    }
    put(o, s, h);
    put(o, NCG_ELLIPSIS, 3);
    put(o, s + t, n - t);
}

size_t ncg_site_compose(char *buf, size_t cap, const char *name, uint64_t off, const char *module,
                        uint64_t modoff, const char *srcline)
{
    struct out o = {buf, cap, 0, 0};
    char offs[24], mods[24], simple[1024];
    if (!cap)
        return 0;
    name = name ? name : "";
    srcline = srcline ? srcline : "";
    module = module && *module ? module : "?";
    snprintf(offs, sizeof offs, "+0x%" PRIx64, off);
    snprintf(mods, sizeof mods, "+0x%" PRIx64, modoff);
    size_t room = cap - 1, n = strlen(name), lm = strlen(module), ls = strlen(srcline);
    size_t at = ls ? 4 + ls : 0, lo = strlen(offs), lmo = strlen(mods);
    const char *s = name;
    if (!n && lmo + at + (lm < 8 ? lm : 8) <= room) { /* "module+0xoff at file:line" */
        put_cut(&o, module, lm, room - lmo - at);
        putz(&o, mods);
    } else if (n) {
        size_t full = lo + 2 + lm + lmo + 1 + at, bare = lo + at;
        for (int lv = 1; lv <= 4 && full + n > room; lv++) {
            size_t l = ncg_site_simplify(simple, sizeof simple, name, lv);
            if (l < sizeof simple)
                s = simple, n = l;
        }
        if (full + NCG_SITE_NAME_MIN <= room || full + n <= room) {
            put_cut(&o, s, n, room - full);
            putz(&o, offs);
            put(&o, " (", 2);
            putz(&o, module);
            putz(&o, mods);
            put(&o, ")", 1);
        } else if (bare + NCG_SITE_NAME_MIN <= room || bare + n <= room) {
            put_cut(&o, s, n, room - bare); /* the module part gives way */
            putz(&o, offs);
        } else {
            at = 0;
        }
    } else {
        at = 0;
    }
    if (at) {
        put(&o, " at ", 4);
        putz(&o, srcline);
    } else if (ls && ls <= room) { /* too small a buffer: the file:line alone */
        putz(&o, srcline);
    } else if (!o.len) { /* not even that: the text cut at its end */
        put(&o, s, n);
        putz(&o, n ? offs : "");
        putz(&o, n ? " (" : "");
        putz(&o, module);
        putz(&o, mods);
        putz(&o, n ? ")" : "");
        putz(&o, ls ? " at " : "");
        putz(&o, srcline);
    }
    return out_end(&o);
}
