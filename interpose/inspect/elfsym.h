/* Symbol lookup in a module's ELF file (.symtab, then .dynsym), by containment only: a name is
 * returned when the address lies inside that symbol's [value, value + size). Sizeless symbols
 * (st_size 0) never match. Used by symbol.c at diagnostic time, never on the call path. */
#ifndef NCG_ELFSYM_H
#define NCG_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

/* Finds the function (or sized code symbol) of the ELF file at path that contains vaddr (an
 * address in the file's own link-time address space: run-time address minus load bias). On
 * success writes its name into name, the offset of vaddr in it into *off, and returns 0; -1
 * when no symbol contains vaddr or the file cannot be read. Checker thread (callers
 * serialize); maps each file once (a small cache of modules, kept for the process's life). */
int ncg_elfsym_lookup(const char *path, uint64_t vaddr, char *name, size_t cap, uint64_t *off);

#endif
