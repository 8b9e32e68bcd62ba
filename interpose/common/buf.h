/* A growable text buffer (status documents, job files) and the string escapes of what is
 * written into it: JSON string bodies, Prometheus label values. */
#ifndef NCG_BUF_H
#define NCG_BUF_H

#include <stddef.h>
#include <stdio.h>

/* Zero-initialized: empty. oom is set (and further output dropped) when realloc fails; p is
 * NUL-terminated whenever len > 0. */
struct ncg_buf {
    char *p;
    size_t len, cap;
    int oom;
};

/* Every function: the thread that owns b; never blocks; allocates (64 KiB at first). */
void ncg_buf_add(struct ncg_buf *b, const char *s, size_t n);
void ncg_buf_printf(struct ncg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ncg_buf_free(struct ncg_buf *b);
/* A number with 3 decimals, or null when negative (unknown): the status documents' ages. */
void ncg_buf_num_or_null(struct ncg_buf *b, double d);
/* The two comment lines that open a Prometheus metric family. */
void ncg_buf_prom_family(struct ncg_buf *b, const char *name, const char *type, const char *help);

/* Grows the array *p (elem bytes each, *cap of them) to hold need, doubling from 32: 0, or -1
 * (*p and *cap unchanged) when out of memory. The renderers' snapshot tables. */
int ncg_grow(void **p, size_t *cap, size_t need, size_t elem);

enum ncg_esc {
    NCG_ESC_JSON, /* \" \\ \n, other control characters and DEL as \u00XX */
    NCG_ESC_PROM, /* \" \\ \n, other control characters and DEL as '?' */
};
/* Appends s escaped (no surrounding quotes). */
void ncg_buf_esc(struct ncg_buf *b, const char *s, enum ncg_esc how);
/* The same to a stream (reports, dumps, the command's --json). */
void ncg_esc_fput(FILE *f, const char *s, enum ncg_esc how);
/* The one decision behind both: the escape of byte c, or NULL when it stands as is (tmp, which
 * the result may point into, holds a \u00XX). Pure. */
const char *ncg_esc_byte(unsigned char c, enum ncg_esc how, char tmp[8]);

#endif
