/* DWARF line lookup through libdwfl (srcline.h). libdw has no header here (libdw-dev is not a
 * build dependency): the few entry points are declared below with the prototypes of
 * elfutils' libdwfl.h (stable ABI, ELFUTILS_0.1xx symbol versions) and resolved with dlsym. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "log.h"
#include "srcline.h"

typedef struct Dwfl Dwfl;
typedef struct Dwfl_Module Dwfl_Module;
typedef struct Dwfl_Line Dwfl_Line;
typedef uint64_t Dwarf_Addr;
typedef uint64_t Dwarf_Word;

/* libdwfl.h's Dwfl_Callbacks: three function pointers and the debuginfo path. */
typedef struct {
    void *find_elf;
    void *find_debuginfo;
    void *section_address;
    char **debuginfo_path;
} ncg_dwfl_callbacks;

static struct {
    int tried, ok;
    Dwfl *(*begin)(const ncg_dwfl_callbacks *);
    int (*proc_report)(Dwfl *, pid_t);
    void (*report_begin)(Dwfl *);
    int (*report_end)(Dwfl *, void *removed, void *arg);
    Dwfl_Module *(*addrmodule)(Dwfl *, Dwarf_Addr);
    Dwfl_Line *(*getsrc)(Dwfl_Module *, Dwarf_Addr);
    const char *(*lineinfo)(Dwfl_Line *, Dwarf_Addr *, int *, int *, Dwarf_Word *, Dwarf_Word *);
    ncg_dwfl_callbacks cb;
    Dwfl *dwfl;
    pid_t pid; /* the view's process: a fork needs a new one */
} D;

static char *debuginfo_path; /* NULL: libdw's default search path */

static void load(void)
{
    D.tried = 1;
    void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        ncg_debug(1, "libdw.so.1 not found (Debian: libdw1): call sites without file:line");
        return;
    }
    *(void **)&D.begin = dlsym(h, "dwfl_begin");
    *(void **)&D.proc_report = dlsym(h, "dwfl_linux_proc_report");
    *(void **)&D.report_begin = dlsym(h, "dwfl_report_begin");
    *(void **)&D.report_end = dlsym(h, "dwfl_report_end");
    *(void **)&D.addrmodule = dlsym(h, "dwfl_addrmodule");
    *(void **)&D.getsrc = dlsym(h, "dwfl_module_getsrc");
    *(void **)&D.lineinfo = dlsym(h, "dwfl_lineinfo");
    D.cb.find_elf = dlsym(h, "dwfl_linux_proc_find_elf");
    D.cb.find_debuginfo = dlsym(h, "dwfl_standard_find_debuginfo");
    D.cb.debuginfo_path = &debuginfo_path;
    if (!D.begin || !D.proc_report || !D.report_begin || !D.report_end || !D.addrmodule ||
        !D.getsrc || !D.lineinfo || !D.cb.find_elf || !D.cb.find_debuginfo) {
        ncg_debug(1, "libdw.so.1 lacks dwfl entry points: call sites without file:line");
        return;
    }
    D.ok = 1;
}

/* (Re)reads this process's modules from /proc/self/maps into the view. */
static int report(void)
{
    pid_t pid = getpid();
    if (!D.dwfl || D.pid != pid) {
        D.dwfl = D.begin(&D.cb); /* a stale view after fork is leaked, not freed: its
                                    memory belongs to the parent's libdw state */
        D.pid = pid;
        if (!D.dwfl)
            return -1;
    }
    D.report_begin(D.dwfl);
    int rc = D.proc_report(D.dwfl, pid);
    D.report_end(D.dwfl, NULL, NULL);
    return rc == 0 ? 0 : -1;
}

int ncg_srcline_available(void)
{
    if (!D.tried)
        load();
    return D.ok;
}

int ncg_srcline(uint64_t at, char *buf, size_t cap)
{
    if (!ncg_srcline_available() || !cap)
        return -1;
    if ((!D.dwfl || D.pid != getpid()) && report() != 0)
        return -1;
    Dwfl_Module *mod = D.addrmodule(D.dwfl, at);
    if (!mod) { /* a module loaded since the view was made */
        if (report() != 0 || !(mod = D.addrmodule(D.dwfl, at)))
            return -1;
    }
    Dwfl_Line *line = D.getsrc(mod, at);
    int lineno = 0;
    Dwarf_Addr la = 0;
    const char *file = line ? D.lineinfo(line, &la, &lineno, NULL, NULL, NULL) : NULL;
    if (!file || !*file || lineno <= 0)
        return -1;
    const char *base = strrchr(file, '/');
    snprintf(buf, cap, "%s:%d", base ? base + 1 : file, lineno);
    return 0;
}
