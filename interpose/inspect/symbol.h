/* Call-site symbolization for diagnostics: a recorded return address into "function+0xoff
 * (module+0xoff) at file.c:LINE". dladdr first; libunwind, loaded at run time when present,
 * names functions that are not exported (static, no -rdynamic); C++ names are demangled by the
 * process's own __cxa_demangle when it has one. glibc remains the only hard dependency. */
#ifndef NCG_SYMBOL_H
#define NCG_SYMBOL_H

#include <stddef.h>
#include <stdint.h>

/* What ncg_symbolize_flags may do beyond dladdr and the modules' symbol tables. Both allocate:
 * leave them out where malloc may not be called (a signal handler, a child after fork in a
 * threaded process, while another thread is stopped inside the allocator). */
#define NCG_SYM_SRCLINE 1u  /* file:line from DWARF (libdw, reads debug information) */
#define NCG_SYM_DEMANGLE 2u /* C++ names demangled (__cxa_demangle, looked up at run time) */

/* Writes the symbolized pc into buf ("" for pc 0), composed by ncg_site_compose: a name too
 * long for cap is shortened, never the offsets or file:line. Checker thread (or any thread,
 * serialized by the caller: static buffers); may dlopen libunwind and libdw once; allocates
 * only as flags allow. Returns buf. */
char *ncg_symbolize_flags(uint64_t pc, char *buf, size_t cap, unsigned flags);

/* ncg_symbolize_flags(pc, buf, cap, NCG_SYM_SRCLINE | NCG_SYM_DEMANGLE). Same context. */
char *ncg_symbolize(uint64_t pc, char *buf, size_t cap);

/* Without the DWARF file:line when srcline is 0 (cheaper: no libdw, no debug information
 * read); demangled. Same context. */
char *ncg_symbolize_opt(uint64_t pc, char *buf, size_t cap, int srcline);

/* libunwind's unw_backtrace (local unwinding, usable in a signal handler), or NULL when
 * libunwind is not there. Checker thread; may dlopen libunwind once. */
int (*ncg_symbol_unw_backtrace(void))(void **pcs, int max);

/* The demangled form of a C++ mangled name ("_Z...") into out, through the __cxa_demangle of
 * the process (libstdc++ or libc++abi already loaded; never loaded for this): 0, or -1 when
 * name is no mangled name, the process has no demangler or it fails, or the result does not
 * fit cap even simplified (ncg_site_simplify). Any thread; looks the demangler up once (again
 * only after new modules were loaded, while it is missing); allocates (inside the demangler). */
int ncg_demangle(const char *name, char *out, size_t cap);

/* A call site's text into buf (cap bytes, NUL included): "NAME+0xOFF (MODULE+0xMODOFF) at
 * SRCLINE"; "MODULE+0xMODOFF at SRCLINE" when name is NULL or ""; no " at SRCLINE" when srcline
 * is NULL or "". What does not fit gives way in this order: the name's detail (ncg_site_simplify,
 * levels 1 to 4), the middle of the name (cut to a head and a tail around "…", the tail
 * holding the function's own name when it can, down to NCG_SITE_NAME_MIN bytes), the module part;
 * then the file:line alone when it fits, else the text cut at its end. Offsets and file:line are
 * never cut while they fit. Bytes that are not printable UTF-8 (control bytes, invalid sequences)
 * are written as '?', one per byte; no cut splits a character. Returns strlen(buf). Pure: any
 * thread, no allocation. */
size_t ncg_site_compose(char *buf, size_t cap, const char *name, uint64_t off, const char *module,
                        uint64_t modoff, const char *srcline);

#define NCG_SITE_NAME_MIN 24 /* the shortest cut name worth printing, "…" included */

/* A demangled C++ name made shorter, at a level: 1 drops the " [clone .isra.0]" suffixes of
 * compiler-made copies; 2 also writes template argument lists nested in another as "<…>"; 3
 * also drops a function template's return type and writes the function's parameter list as
 * "(…)"; 4 also writes every template argument list as "<…>". A list of 3 bytes or less stays
 * ("…" is 3 bytes). Levels 2 to 4 need balanced brackets (operator<, operator() and the like
 * are read as names), else they leave the name as level 1 does. Writes at most cap bytes (NUL
 * included) as snprintf does and returns the length of the whole result; bytes as
 * ncg_site_compose writes them. Pure: any thread, no allocation. */
size_t ncg_site_simplify(char *out, size_t cap, const char *name, int level);

#endif
