/* Call-site symbolization for diagnostics: a recorded return address into "function+0xoff
 * (module+0xoff)". dladdr first; libunwind, loaded at run time when present, names functions
 * that are not exported (static, no -rdynamic). glibc remains the only hard dependency. */
#ifndef NCG_SYMBOL_H
#define NCG_SYMBOL_H

#include <stddef.h>
#include <stdint.h>

/* Writes the symbolized pc into buf ("" for pc 0). Checker thread (or any thread, serialized
 * by the caller); may dlopen libunwind once; no allocation of its own. Returns buf. */
char *ncg_symbolize(uint64_t pc, char *buf, size_t cap);

/* ncg_symbolize without the DWARF file:line when srcline is 0 (cheaper: no libdw, no debug
 * information read). Same context. */
char *ncg_symbolize_opt(uint64_t pc, char *buf, size_t cap, int srcline);

/* libunwind's unw_backtrace (local unwinding, usable in a signal handler), or NULL when
 * libunwind is not there. Checker thread; may dlopen libunwind once. */
int (*ncg_symbol_unw_backtrace(void))(void **pcs, int max);

#endif
