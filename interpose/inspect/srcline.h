/* file:line of a code address from the module's DWARF line table, through elfutils' libdw
 * (libdw.so.1, Debian package libdw1), loaded at run time when present: never a dependency.
 * Diagnostic time only. */
#ifndef NCG_SRCLINE_H
#define NCG_SRCLINE_H

#include <stddef.h>
#include <stdint.h>

/* Writes "file.c:26" (the file's base name) for the run-time address at into buf and returns
 * 0; -1 when libdw is absent or the module has no line information for it. Checker thread
 * (callers serialize); dlopens libdw once and keeps a view of this process's modules, reread
 * when an address falls outside every module it knows. Allocates (inside libdw). */
int ncg_srcline(uint64_t at, char *buf, size_t cap);

/* 1 when libdw could be loaded, 0 when not (then one NCCLGUARD_VERBOSE line said so). */
int ncg_srcline_available(void);

#endif
