/* The growable text buffer and its string escapes (buf.h). */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int buf_reserve(struct ncg_buf *b, size_t n)
{
    if (b->oom)
        return -1;
    if (b->cap - b->len > n)
        return 0;
    size_t cap = b->cap ? b->cap : 65536;
    while (cap - b->len <= n)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void ncg_buf_add(struct ncg_buf *b, const char *s, size_t n)
{
    if (buf_reserve(b, n) != 0)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void ncg_buf_printf(struct ncg_buf *b, const char *fmt, ...)
{
    va_list ap;
    if (buf_reserve(b, 256) != 0)
        return;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= b->cap - b->len) {
        if (buf_reserve(b, (size_t)n + 1) != 0)
            return;
        va_start(ap, fmt);
        vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

void ncg_buf_free(struct ncg_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void ncg_buf_num_or_null(struct ncg_buf *b, double d)
{
    if (d < 0)
        ncg_buf_add(b, "null", 4);
    else
        ncg_buf_printf(b, "%.3f", d);
}

void ncg_buf_prom_family(struct ncg_buf *b, const char *name, const char *type, const char *help)
{
    ncg_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

int ncg_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    if (elem == 0 || need > SIZE_MAX / elem)
        return -1;
    size_t n = *cap ? *cap * 2 : 32;
    while (n < need)
        n *= 2;
    if (n > SIZE_MAX / elem) /* doubling went past what fits: exactly what is needed */
        n = need;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Prometheus label values use the JSON escapes for \ " \n (the exposition format's only ones). */
const char *ncg_esc_byte(unsigned char c, enum ncg_esc how, char tmp[8])
{
    if (c == '"')
        return "\\\"";
    if (c == '\\')
        return "\\\\";
    if (c == '\n')
        return "\\n";
    if (c < 0x20 || c == 0x7f) {
        if (how != NCG_ESC_JSON)
            return "?";
        snprintf(tmp, 8, "\\u%04x", c);
        return tmp;
    }
    return NULL;
}

void ncg_buf_esc(struct ncg_buf *b, const char *s, enum ncg_esc how)
{
    char tmp[8];
    for (; *s; s++) {
        const char *e = ncg_esc_byte((unsigned char)*s, how, tmp);
        if (e)
            ncg_buf_add(b, e, strlen(e));
        else
            ncg_buf_add(b, s, 1);
    }
}

void ncg_esc_fput(FILE *f, const char *s, enum ncg_esc how)
{
    char tmp[8];
    for (; *s; s++) {
        const char *e = ncg_esc_byte((unsigned char)*s, how, tmp);
        if (e)
            fputs(e, f);
        else
            fputc(*s, f);
    }
}
