/* libunwind's local unwinder, dlopen()ed (never linked: a job without it still runs; its
 * absence only costs names and native frames), found once for the whole inspect layer: the
 * stack walker (stack.c) and the symbolizer (symbol.c) take what they need from one table.
 * x86_64 only; elsewhere every entry is NULL. */
#ifndef NCG_UNW_H
#define NCG_UNW_H

#include <stddef.h>
#include <stdint.h>

/* Opaque libunwind objects, sized generously (x86_64: cursor 127 words, context a ucontext). */
typedef struct {
    _Alignas(16) unsigned char b[4096];
} ncg_unw_buf;

#define NCG_UNW_RIP 16 /* UNW_X86_64_RIP */

/* Each entry NULL when libunwind (or that function) is missing. */
struct ncg_unw {
    int (*getcontext)(void *ctx);
    int (*init_local)(void *cur, void *ctx);
    int (*init_local2)(void *cur, void *uc, int flags);
    int (*step)(void *cur);
    int (*get_reg)(void *cur, int reg, uint64_t *val);
    int (*set_reg)(void *cur, int reg, uint64_t val);
    int (*get_proc_name)(void *cur, char *buf, size_t len, uint64_t *off);
    int (*get_proc_info)(void *cur, void *pi);
    int (*backtrace)(void **pcs, int max);
};

/* The table, loaded at the first call (any thread, once; may block in dlopen: not from a
 * signal handler nor while another thread is parked for a walk). Never NULL. */
const struct ncg_unw *ncg_unw(void);

#endif
