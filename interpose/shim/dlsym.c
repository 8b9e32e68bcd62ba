/* dlsym/dlvsym interposition (dlsym.h): NCCL functions looked up at run time (ctypes' CDLL, as
 * vLLM/SGLang pynccl do, dlopen + dlsym in C) resolve to ncclguard's wrappers. Everything else
 * is the real lookup, with RTLD_NEXT and RTLD_DEFAULT answered for the *caller*, not for us.
 * The real dlsym/dlvsym are found by reading the dynamic symbol table of the next object that
 * defines them (libc.so.6 since glibc 2.34, libdl.so.2 before), so no lookup ever recurses. */
#define _GNU_SOURCE
#include "dlsym.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>

#include "config.h"
#include "resolve.h"
#include "shim.h"

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);

static dlsym_fn real_dlsym;
static dlvsym_fn real_dlvsym;
static int boot_failed;

/* Our own wrappers, in api.def order (the addresses dlsym hands out for libnccl's names). */
static void *const our_fn[NCG_API_COUNT] = {
#define NCG_API(ret, name, params, args, cls, wrap, fail, fp) (void *)&name,
#include "api.def"
#undef NCG_API
};

extern const ElfW(Ehdr) __ehdr_start; /* this object's ELF header (a linker-defined symbol) */

/* ---------- reading an object's dynamic symbol table (no lookup, no allocation) ---------- */

struct obj {
    ElfW(Addr) base;
    const ElfW(Sym) * symtab;
    const char *strtab;
    const uint32_t *gnuhash;
    const uint32_t *sysvhash;
    const ElfW(Half) * versym;
    const ElfW(Verdef) * verdef;
};

/* strcmp(a, b) == 0 without libc: a sanitizer's strcmp interceptor is not ready while its
 * runtime initialises, and that is when it calls dlsym. */
static int same(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

static int prefix(const char *s, const char *p)
{
    while (*p && *s == *p)
        s++, p++;
    return !*p;
}

static ElfW(Addr) dyn_ptr(ElfW(Addr) base, ElfW(Addr) p)
{
    /* glibc relocates these d_ptr in place on most targets; some keep the raw vaddr. */
    return p < base ? p + base : p;
}

static int obj_from(ElfW(Addr) base, const ElfW(Dyn) * dyn, struct obj *o)
{
    *o = (struct obj){.base = base};
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB:
            o->symtab = (const ElfW(Sym) *)dyn_ptr(base, dyn->d_un.d_ptr);
            break;
        case DT_STRTAB:
            o->strtab = (const char *)dyn_ptr(base, dyn->d_un.d_ptr);
            break;
        case DT_GNU_HASH:
            o->gnuhash = (const uint32_t *)dyn_ptr(base, dyn->d_un.d_ptr);
            break;
        case DT_HASH:
            o->sysvhash = (const uint32_t *)dyn_ptr(base, dyn->d_un.d_ptr);
            break;
        case DT_VERSYM:
            o->versym = (const ElfW(Half) *)dyn_ptr(base, dyn->d_un.d_ptr);
            break;
        case DT_VERDEF:
            o->verdef = (const ElfW(Verdef) *)dyn_ptr(base, dyn->d_un.d_ptr);
            break;
        }
    }
    return o->symtab && o->strtab && (o->gnuhash || o->sysvhash) ? 0 : -1;
}

/* The version name of symbol i, or NULL (unversioned or base). */
static const char *sym_version(const struct obj *o, uint32_t i)
{
    if (!o->versym || !o->verdef)
        return NULL;
    unsigned ndx = o->versym[i] & 0x7fff;
    const ElfW(Verdef) *vd = o->verdef;
    for (;;) {
        if (vd->vd_ndx == ndx && !(vd->vd_flags & VER_FLG_BASE)) {
            const ElfW(Verdaux) *aux = (const ElfW(Verdaux) *)((const char *)vd + vd->vd_aux);
            return o->strtab + aux->vda_name;
        }
        if (!vd->vd_next)
            return NULL;
        vd = (const ElfW(Verdef) *)((const char *)vd + vd->vd_next);
    }
}

/* Symbol i defines name (at version, when given; else any version). */
static int sym_ok(const struct obj *o, uint32_t i, const char *name, const char *version)
{
    const ElfW(Sym) *s = &o->symtab[i];
    int bind = ELF64_ST_BIND(s->st_info), type = ELF64_ST_TYPE(s->st_info);
    if (s->st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK) ||
        (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT &&
         type != STT_NOTYPE)) /* no TLS */
        return 0;
    if (!same(o->strtab + s->st_name, name))
        return 0;
    if (!version)
        return 1;
    const char *v = sym_version(o, i);
    return v && same(v, version);
}

/* The object's definition of name (at version, or the default version first, glibc's
 * dlsym@GLIBC_2.2.5 and @@GLIBC_2.34 being one function), or NULL. Any thread; pure reads. */
static const ElfW(Sym) * obj_lookup(const struct obj *o, const char *name, const char *version)
{
    const ElfW(Sym) *hidden = NULL;
    if (o->gnuhash) {
        uint32_t h = 5381;
        for (const unsigned char *p = (const unsigned char *)name; *p; p++)
            h = h * 33 + *p;
        const uint32_t nb = o->gnuhash[0], off = o->gnuhash[1], nbloom = o->gnuhash[2];
        const ElfW(Addr) *bloom = (const ElfW(Addr) *)&o->gnuhash[4];
        const uint32_t *buckets = (const uint32_t *)&bloom[nbloom], *chain = &buckets[nb];
        if (!nb)
            return NULL;
        for (uint32_t i = buckets[h % nb]; i >= off && i; i++) {
            uint32_t h2 = chain[i - off];
            if ((h | 1) == (h2 | 1) && sym_ok(o, i, name, version)) {
                if (version || !o->versym || !(o->versym[i] & 0x8000))
                    return &o->symtab[i];
                hidden = &o->symtab[i];
            }
            if (h2 & 1)
                break;
        }
        return hidden;
    }
    uint32_t h = 0, g;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h = (h << 4) + *p;
        g = h & 0xf0000000u;
        h ^= g >> 24;
        h &= ~g;
    }
    const uint32_t nb = o->sysvhash[0], *buckets = &o->sysvhash[2], *chain = &buckets[nb];
    for (uint32_t i = nb ? buckets[h % nb] : 0; i; i = chain[i])
        if (sym_ok(o, i, name, version)) {
            if (version || !o->versym || !(o->versym[i] & 0x8000))
                return &o->symtab[i];
            hidden = &o->symtab[i];
        }
    return hidden;
}

/* The run-time address of s (an IFUNC's resolver is run, as the dynamic linker does). */
static void *sym_addr(const struct obj *o, const ElfW(Sym) * s)
{
    void *a = (void *)(o->base + s->st_value);
    if (ELF64_ST_TYPE(s->st_info) == STT_GNU_IFUNC)
        a = ((void *(*)(void))a)();
    return a;
}

/* How many entries the object's .dynsym has: DT_HASH says (nchain); DT_GNU_HASH only through
 * its last chain (from the highest bucket start to the chain's end bit). */
static uint32_t obj_nsyms(const struct obj *o)
{
    if (o->sysvhash)
        return o->sysvhash[1];
    const uint32_t nb = o->gnuhash[0], off = o->gnuhash[1], nbloom = o->gnuhash[2];
    const uint32_t *buckets = (const uint32_t *)&((const ElfW(Addr) *)&o->gnuhash[4])[nbloom];
    const uint32_t *chain = &buckets[nb];
    uint32_t last = 0;
    for (uint32_t b = 0; b < nb; b++)
        if (buckets[b] > last)
            last = buckets[b];
    if (last < off)
        return off; /* no hashed symbol: only the unhashed (undefined) ones */
    while (!(chain[last - off] & 1))
        last++;
    return last + 1;
}

int ncg_dyn_functions(const void *addr, void (*fn)(const char *name, void *arg), void *arg,
                      const char **path)
{
    Dl_info di;
    struct link_map *map = NULL;
    struct obj o;
    if (!dladdr1(addr, &di, (void **)&map, RTLD_DL_LINKMAP) || !map ||
        obj_from(map->l_addr, (const ElfW(Dyn) *)map->l_ld, &o) != 0)
        return -1;
    if (path)
        *path = di.dli_fname ? di.dli_fname : "";
    uint32_t n = obj_nsyms(&o);
    int count = 0;
    for (uint32_t i = 1; i < n; i++) {
        const ElfW(Sym) *s = &o.symtab[i];
        int bind = ELF64_ST_BIND(s->st_info), type = ELF64_ST_TYPE(s->st_info);
        if (s->st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK) ||
            (type != STT_FUNC && type != STT_GNU_IFUNC) || (o.versym && (o.versym[i] & 0x8000)))
            continue;
        fn(o.strtab + s->st_name, arg);
        count++;
    }
    return count;
}

/* ---------- bootstrap: the real dlsym and dlvsym ---------- */

/* A sanitizer runtime is loaded: RTLD_NEXT/RTLD_DEFAULT are not emulated (see lookup). */
static int sanitized;

struct boot {
    int seen_self, any, san;
    void *ds, *dvs;
};

/* One loaded object (name, load bias, dynamic section): 1 when it holds the dlsym we want. */
static int boot_obj(struct boot *b, const char *nm, ElfW(Addr) base, const ElfW(Dyn) * dyn)
{
    for (const char *p = nm; *p; p++) /* no libc string call: see same() */
        if (*p == '/')
            nm = p + 1;
    if (prefix(nm, "libasan.so") || prefix(nm, "libtsan.so") || prefix(nm, "libubsan.so"))
        b->san = 1;
    if ((const void *)base == (const void *)&__ehdr_start) {
        b->seen_self = 1;
        return 0;
    }
    struct obj o;
    if (!dyn || obj_from(base, dyn, &o) != 0)
        return 0;
    /* The next definition after us (true RTLD_NEXT for us): an interposer of dlsym loaded
     * before us is skipped, so its hook and ours never call each other in a loop. The
     * second pass (we were not found: never in a preload) takes the first definition. */
    if (!b->seen_self && !b->any)
        return 0;
    const ElfW(Sym) *s = obj_lookup(&o, "dlsym", NULL), *v = obj_lookup(&o, "dlvsym", NULL);
    if (s && v && !b->ds) {
        b->ds = (void *)(o.base + s->st_value);
        b->dvs = (void *)(o.base + v->st_value);
        return 1;
    }
    return 0;
}

static int boot_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum && !dyn; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    return boot_obj(arg, info->dlpi_name ? info->dlpi_name : "", info->dlpi_addr, dyn);
}

/* ThreadSanitizer intercepts dl_iterate_phdr and resolves its interceptors through dlsym while
 * it initialises: its dl_iterate_phdr would call a function it has not found yet. Under it the
 * objects are read from the dynamic linker's list (r_debug) instead, in the same load order
 * (at that point nothing else runs). */
extern void __tsan_init(void) __attribute__((weak));

/* The dynamic linker's list, through the executable's DT_DEBUG entry (naming _r_debug would
 * make ld.so a dependency of ours). NULL when there is none. */
static const struct r_debug *boot_rdebug(void)
{
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
    size_t n = getauxval(AT_PHNUM);
    ElfW(Addr) bias = 0;
    for (size_t i = 0; ph && i < n; i++)
        if (ph[i].p_type == PT_PHDR)
            bias = (ElfW(Addr))ph - ph[i].p_vaddr;
    for (size_t i = 0; ph && i < n; i++) {
        if (ph[i].p_type != PT_DYNAMIC)
            continue;
        for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(bias + ph[i].p_vaddr); d->d_tag != DT_NULL;
             d++)
            if (d->d_tag == DT_DEBUG)
                return (const struct r_debug *)d->d_un.d_ptr;
    }
    return NULL;
}

static void boot_walk(struct boot *b)
{
    const struct r_debug *r = &__tsan_init ? boot_rdebug() : NULL;
    if (!r || !r->r_map) {
        dl_iterate_phdr(boot_cb, b);
        return;
    }
    for (const struct link_map *m = r->r_map; m; m = m->l_next)
        if (boot_obj(b, m->l_name ? m->l_name : "", m->l_addr, (const ElfW(Dyn) *)m->l_ld))
            return;
}

static int boot(void)
{
    if (__atomic_load_n(&real_dlsym, __ATOMIC_ACQUIRE))
        return 0;
    if (__atomic_load_n(&boot_failed, __ATOMIC_RELAXED))
        return -1;
    struct boot b = {0, 0, 0, NULL, NULL};
    boot_walk(&b);
    __atomic_store_n(&sanitized, b.san, __ATOMIC_RELAXED);
    if (!b.ds) {
        b.any = 1;
        boot_walk(&b);
    }
    if (!b.ds) {
        __atomic_store_n(&boot_failed, 1, __ATOMIC_RELAXED);
        return -1;
    }
    /* Racing threads find the same pair; dlvsym first so that dlsym != NULL implies both. */
    __atomic_store_n(&real_dlvsym, (dlvsym_fn)b.dvs, __ATOMIC_RELEASE);
    __atomic_store_n(&real_dlsym, (dlsym_fn)b.ds, __ATOMIC_RELEASE);
    return 0;
}

void *ncg_real_dlsym(void *handle, const char *name)
{
    return boot() == 0 ? real_dlsym(handle, name) : NULL;
}

/* ---------- the redirection ---------- */

/* The api.def index of name when it is one of our wrappers' names, else -1. */
static int api_index(const char *name)
{
    if (name[0] != 'n' || strncmp(name, "nccl", 4) != 0)
        return -1;
    for (int i = 0; i < NCG_API_COUNT; i++)
        if (strcmp(ncg_api_names[i], name) == 0)
            return i;
    return -1;
}

/* r, found for nccl name idx, is libnccl's own API function: its module also defines the
 * strong alias pncclX at that address (genuine NCCL, the CPU NCCL), or (a build without the
 * p-aliases) the module is a libnccl.so*. A program's own ncclFoo elsewhere is left alone. */
static int is_libnccl_fn(void *r, int idx)
{
    Dl_info di;
    struct link_map *map = NULL;
    if (!dladdr1(r, &di, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return 0;
    if ((const void *)di.dli_fbase == (const void *)&__ehdr_start)
        return 0; /* already ours */
    char p[80] = "p";
    strncat(p, ncg_api_names[idx], sizeof p - 2);
    if (real_dlsym(map, p) == r)
        return 1;
    const char *base = di.dli_fname ? strrchr(di.dli_fname, '/') : NULL;
    base = base ? base + 1 : di.dli_fname;
    return base && strncmp(base, "libnccl.so", 10) == 0;
}

static void *redirect(void *r, const char *name)
{
    if (!r || !name)
        return r;
    int idx = api_index(name);
    if (idx < 0)
        return r;
    if (ncg_state_get() == NCG_ST_DISABLED)
        return r; /* NCCLGUARD=0: the real answer, always */
    return is_libnccl_fn(r, idx) ? our_fn[idx] : r;
}

static int caller_map(const void *caller, struct link_map **map)
{
    Dl_info di;
    *map = NULL;
    if (!caller || !dladdr1(caller, &di, (void **)map, RTLD_DL_LINKMAP) || !*map)
        return -1;
    return (const void *)di.dli_fbase == (const void *)&__ehdr_start ? 1 : 0;
}

/* RTLD_NEXT for caller's object: the first object after it in load order that defines name
 * (as glibc's search list; objects loaded with RTLD_LOCAL are skipped unless they are the
 * caller's own dependencies, a corner left to the fallback). */
static void *next_after(struct link_map *me, const char *name, const char *version,
                        const struct link_map *stop)
{
    for (struct link_map *l = me->l_next; l; l = l->l_next) {
        if (l == stop)
            break;
        struct obj o;
        const ElfW(Sym) * s;
        if (obj_from(l->l_addr, l->l_ld, &o) == 0 && (s = obj_lookup(&o, name, version)))
            return s->st_shndx == SHN_ABS ? (void *)s->st_value : sym_addr(&o, s);
    }
    return NULL;
}

/* Whether map comes after this object in load order; *self: our own map. */
static int after_us(const struct link_map *map, struct link_map **self)
{
    *self = NULL;
    if (caller_map((const void *)&__ehdr_start, self) != 1 || !*self)
        return 1;
    for (const struct link_map *l = (*self)->l_next; l; l = l->l_next)
        if (l == map)
            return 1;
    return 0;
}

static void *lookup(void *handle, const char *name, const char *version, const void *caller)
{
    struct link_map *map;
    int mine = caller_map(caller, &map);
    /* Under a sanitizer runtime (which resolves its interceptors through dlsym while it
     * initialises), the answers are glibc's from here, only libnccl's names redirected: the
     * emulation below breaks an ASan process's environment in a way not yet understood. */
    if (__atomic_load_n(&sanitized, __ATOMIC_RELAXED) && mine != 1 && name) {
        void *r = version ? real_dlvsym(handle, name, version) : real_dlsym(handle, name);
        return redirect(r, name);
    }
    if (mine == 1 || !name) /* ncclguard's own lookups (resolve.c, symbol.c): never redirected */
        return version ? real_dlvsym(handle, name, version) : real_dlsym(handle, name);
    void *r;
    if (handle == RTLD_NEXT) {
        /* A caller loaded before us (the executable, an earlier preload such as a sanitizer
         * runtime): glibc's own answer from here is the same (nothing lies between it and us
         * but our few exports, handled below). A caller after us: emulated, so that a library's
         * "next malloc" is never its own malloc. */
        struct link_map *self;
        if (mine == 0 && after_us(map, &self)) {
            r = next_after(map, name, version, NULL);
        } else {
            /* The objects between the caller and us, and us, then glibc's answer from here. */
            r = mine == 0 && self ? next_after(map, name, version, self->l_next) : NULL;
            if (!r)
                r = version ? real_dlvsym(RTLD_NEXT, name, version) : real_dlsym(RTLD_NEXT, name);
        }
        if (!r) /* keep dlerror's message meaningful */
            (void)(version ? real_dlvsym(RTLD_NEXT, name, version) : real_dlsym(RTLD_NEXT, name));
    } else {
        r = version ? real_dlvsym(handle, name, version) : real_dlsym(handle, name);
        /* RTLD_DEFAULT also searches the caller's own scope, which for an object dlopen()ed
         * RTLD_LOCAL holds its dependencies; its handle comes from RTLD_NOLOAD (a map of the
         * initial set has no search list of its own: the global scope above was its scope). */
        if (!r && handle == RTLD_DEFAULT && mine == 0 && map->l_name && map->l_name[0]) {
            void *self = dlopen(map->l_name, RTLD_NOLOAD | RTLD_LAZY);
            if (self) {
                r = version ? real_dlvsym(self, name, version) : real_dlsym(self, name);
                dlclose(self);
            }
            if (!r)
                (void)(version ? real_dlvsym(handle, name, version) : real_dlsym(handle, name));
        }
    }
    return redirect(r, name);
}

__attribute__((visibility("default"))) void *dlsym(void *handle, const char *name)
{
    if (boot() != 0)
        return NULL;
    return lookup(handle, name, NULL, __builtin_return_address(0));
}

__attribute__((visibility("default"))) void *dlvsym(void *handle, const char *name,
                                                    const char *version)
{
    if (boot() != 0)
        return NULL;
    return lookup(handle, name, version, __builtin_return_address(0));
}
