/* Call-site symbolization for diagnostics: a recorded return address into "function+0xoff
 * (module+0xoff) at file.c:LINE". dladdr first; libunwind, loaded at run time when present,
 * names functions that are not exported (static, no -rdynamic); C++ names are demangled by the
 * process's own __cxa_demangle when it has one. glibc remains the only hard dependency. */
#ifndef NCG_SYMBOL_H
#define NCG_SYMBOL_H

#include <stddef.h>
#include <stdint.h>
#include "site.h"

/* What ncg_symbolize_flags may do beyond dladdr and the modules' symbol tables. Both allocate:
 * leave them out where malloc may not be called (a signal handler, a child after fork in a
 * threaded process, while another thread is stopped inside the allocator). */
#define NCG_SYM_SRCLINE 1u  /* file:line from DWARF (libdw, reads debug information) */
#define NCG_SYM_DEMANGLE 2u /* C++ names demangled (__cxa_demangle, looked up at run time) */

/* Writes the symbolized pc into buf ("" for pc 0), composed by ncg_site_compose: what does not
 * fit cap gives way by its rule (site.h; an identifier is never cut). Checker thread (or any
 * thread, serialized by the caller: static buffers); may dlopen libunwind and libdw once; allocates
 * only as flags allow. Returns buf. */
char *ncg_symbolize_flags(uint64_t pc, char *buf, size_t cap, unsigned flags);

/* ncg_symbolize_flags(pc, buf, cap, NCG_SYM_SRCLINE | NCG_SYM_DEMANGLE). Same context. */
char *ncg_symbolize(uint64_t pc, char *buf, size_t cap);

/* Without the DWARF file:line when srcline is 0 (cheaper: no libdw, no debug information
 * read); demangled. Same context. */
char *ncg_symbolize_opt(uint64_t pc, char *buf, size_t cap, int srcline);

/* The demangled form of a C++ mangled name ("_Z...") into out, through the __cxa_demangle of
 * the process (libstdc++ or libc++abi already loaded; never loaded for this): 0, or -1 when
 * name is no mangled name, the process has no demangler or it fails, or the result does not
 * fit cap even simplified (ncg_site_simplify). Any thread; looks the demangler up once (again
 * only after new modules were loaded, while it is missing); allocates (inside the demangler). */
int ncg_demangle(const char *name, char *out, size_t cap);

#endif
