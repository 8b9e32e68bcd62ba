/* Drives interpose/inspect/symbol.c for t_symbol.sh: "sweep MODULE STEP" dlopens MODULE and prints
 * "<path> 0x<module offset> <symbolized>" for every STEP-th address of its executable segments;
 * "addrs MODULE" prints the symmod_addrs() of tests/shim/symmod.c as module offsets. Built as
 * a library too (libsymtest.so), whose symtest_frames() prints its caller's stack the same way
 * (for a Python caller through ctypes and libffi). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "symbol.h"

struct seg {
    const char *want;
    uintptr_t base, lo[8], hi[8];
    int n;
};

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct seg *s = arg;
    if (!info->dlpi_name || !strstr(info->dlpi_name, s->want) || s->n)
        return 0;
    s->base = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum && s->n < 8; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_LOAD && (p->p_flags & PF_X)) {
            s->lo[s->n] = info->dlpi_addr + p->p_vaddr;
            s->hi[s->n++] = info->dlpi_addr + p->p_vaddr + p->p_memsz;
        }
    }
    return 1;
}

static void print_one(uintptr_t pc)
{
    char buf[256];
    Dl_info di;
    const char *path = dladdr((void *)(pc - 1), &di) && di.dli_fname ? di.dli_fname : "?";
    uintptr_t base = di.dli_fbase ? (uintptr_t)di.dli_fbase : 0;
    printf("%s 0x%" PRIxPTR " %s\n", *path ? path : "?", pc - 1 - base,
           ncg_symbolize(pc, buf, sizeof buf));
}

__attribute__((visibility("default"))) int symtest_frames(void);
__attribute__((visibility("default"), noinline)) int symtest_frames(void)
{
    void *pcs[64];
    int n = backtrace(pcs, 64);
    for (int i = 0; i < n; i++)
        print_one((uintptr_t)pcs[i]);
    fflush(stdout);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "symtest: %s\n", dlerror());
        return 3;
    }
    struct seg s = {.want = strrchr(argv[2], '/') ? strrchr(argv[2], '/') + 1 : argv[2]};
    dl_iterate_phdr(phdr_cb, &s);
    if (!s.n) {
        fprintf(stderr, "symtest: no executable segment of %s\n", argv[2]);
        return 3;
    }
    char buf[256];
    if (!strcmp(argv[1], "addrs")) {
        void (*addrs)(uintptr_t *) = (void (*)(uintptr_t *))dlsym(h, "symmod_addrs");
        uintptr_t a[3];
        if (!addrs)
            return 3;
        addrs(a);
        for (int i = 0; i < 3; i++)
            printf("0x%" PRIxPTR "\n", a[i] - s.base);
        return 0;
    }
    long step = strtol(argv[3 < argc ? 3 : 2], NULL, 0);
    if (argc < 4 || step <= 0)
        step = 1;
    for (int k = 0; k < s.n; k++)
        for (uintptr_t a = s.lo[k]; a < s.hi[k]; a += (uintptr_t)step)
            printf("%s 0x%" PRIxPTR " %s\n", argv[2], a - s.base,
                   ncg_symbolize(a + 1, buf, sizeof buf));
    return 0;
}
