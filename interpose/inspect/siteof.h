/* A recorded call's site as diagnostics and answers show it: the record's return address
 * symbolized, a CUDA graph replay's said to be its capture's. */
#ifndef NCG_SITEOF_H
#define NCG_SITEOF_H

#include <stddef.h>
#include "ncclguard/shm.h"

/* rec's call site into buf (n bytes, NUL-terminated), with file:line; " (in a CUDA graph
 * replay)" after it for a replay ("a CUDA graph replay" when its site is unknown). Checker
 * thread (symbol.h's static buffers); allocates (demangling, debug information). */
void ncg_site_of(const struct ncg_shm_record *rec, char *buf, size_t n);

#endif
