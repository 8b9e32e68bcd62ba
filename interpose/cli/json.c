/* A small JSON reader for `ncclguard report`: reads a file whole and parses one document into a
 * tree of values (objects keep key order). Strict enough for the reports ncclguard writes; rejects
 * anything malformed with the byte offset, never crashes on bad input (depth and size are bounded).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"

#define MAX_DEPTH 64

struct parser {
    const char *p, *end;
    int depth;
};

static void ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static struct ncg_json *new_val(enum ncg_json_type t)
{
    struct ncg_json *v = calloc(1, sizeof(*v));
    if (v)
        v->type = t;
    return v;
}

static void put_utf8(char *out, size_t *o, unsigned cp)
{
    if (cp < 0x80) {
        out[(*o)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*o)++] = (char)(0xc0 | cp >> 6);
        out[(*o)++] = (char)(0x80 | (cp & 0x3f));
    } else {
        out[(*o)++] = (char)(0xe0 | cp >> 12);
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[(*o)++] = (char)(0x80 | (cp & 0x3f));
    }
}

/* The one-letter escapes after a backslash, and the bytes they stand for. */
static const char esc_in[] = "\"\\/bfnrt", esc_out[] = "\"\\/\b\f\n\r\t";

static char *parse_str(struct parser *ps)
{
    if (ps->p >= ps->end || *ps->p != '"')
        return NULL;
    ps->p++;
    const char *s = ps->p;
    size_t n = 0;
    while (s + n < ps->end && s[n] != '"') {
        if (s[n] == '\\')
            n++;
        n++;
    }
    if (s + n >= ps->end)
        return NULL;
    char *out = malloc(n * 3 + 1); /* \uXXXX expands to at most 3 bytes per 6 in */
    if (!out)
        return NULL;
    size_t o = 0;
    while (ps->p < ps->end && *ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p++;
        if (c < 0x20)
            goto bad;
        if (c != '\\') {
            out[o++] = (char)c;
            continue;
        }
        if (ps->p >= ps->end)
            goto bad;
        c = (unsigned char)*ps->p++;
        const char *e = memchr(esc_in, c, sizeof esc_in - 1);
        if (e) {
            out[o++] = esc_out[e - esc_in];
            continue;
        }
        if (c != 'u' || ps->end - ps->p < 4)
            goto bad;
        unsigned cp = 0;
        for (int i = 0; i < 4; i++) {
            char h = *ps->p++;
            cp <<= 4;
            if (h >= '0' && h <= '9')
                cp |= (unsigned)(h - '0');
            else if (h >= 'a' && h <= 'f')
                cp |= (unsigned)(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
                cp |= (unsigned)(h - 'A' + 10);
            else
                goto bad;
        }
        put_utf8(out, &o, cp ? cp : '?'); /* surrogates pass through as-is: display only */
    }
    if (ps->p >= ps->end)
        goto bad;
    ps->p++; /* closing quote */
    out[o] = 0;
    return out;
bad:
    free(out);
    return NULL;
}

static struct ncg_json *parse_val(struct parser *ps);

static int append(struct ncg_json *parent, struct ncg_json *child, char *key)
{
    if (parent->n == parent->cap) {
        size_t nc = parent->cap ? parent->cap * 2 : 8;
        struct ncg_json **k = realloc(parent->kids, nc * sizeof(*k));
        if (!k)
            return -1;
        parent->kids = k;
        if (parent->type == NCG_JSON_OBJECT) {
            char **ks = realloc(parent->keys, nc * sizeof(*ks));
            if (!ks)
                return -1;
            parent->keys = ks;
        }
        parent->cap = nc;
    }
    parent->kids[parent->n] = child;
    if (parent->type == NCG_JSON_OBJECT)
        parent->keys[parent->n] = key;
    parent->n++;
    return 0;
}

static struct ncg_json *parse_container(struct parser *ps, int obj)
{
    struct ncg_json *v = new_val(obj ? NCG_JSON_OBJECT : NCG_JSON_ARRAY);
    if (!v)
        return NULL;
    ps->p++;
    ws(ps);
    if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
        ps->p++;
        return v;
    }
    for (;;) {
        char *key = NULL;
        ws(ps);
        if (obj) {
            key = parse_str(ps);
            if (!key)
                goto bad;
            ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                free(key);
                goto bad;
            }
            ps->p++;
        }
        struct ncg_json *kid = parse_val(ps);
        if (!kid || append(v, kid, key) < 0) {
            free(key);
            ncg_cli_json_free(kid);
            goto bad;
        }
        ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
            ps->p++;
            return v;
        }
        goto bad;
    }
bad:
    ncg_cli_json_free(v);
    return NULL;
}

static struct ncg_json *parse_val(struct parser *ps)
{
    ws(ps);
    if (ps->p >= ps->end || ++ps->depth > MAX_DEPTH)
        return NULL;
    struct ncg_json *v = NULL;
    char c = *ps->p;
    if (c == '{' || c == '[') {
        v = parse_container(ps, c == '{');
    } else if (c == '"') {
        char *s = parse_str(ps);
        if (s && (v = new_val(NCG_JSON_STRING)) != NULL)
            v->str = s;
        else
            free(s);
    } else if (c == 't' && ps->end - ps->p >= 4 && !memcmp(ps->p, "true", 4)) {
        ps->p += 4;
        if ((v = new_val(NCG_JSON_BOOL)) != NULL)
            v->num = 1;
    } else if (c == 'f' && ps->end - ps->p >= 5 && !memcmp(ps->p, "false", 5)) {
        ps->p += 5;
        v = new_val(NCG_JSON_BOOL);
    } else if (c == 'n' && ps->end - ps->p >= 4 && !memcmp(ps->p, "null", 4)) {
        ps->p += 4;
        v = new_val(NCG_JSON_NULL);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        char buf[64];
        size_t n = 0;
        while (ps->p + n < ps->end && n < sizeof(buf) - 1 && strchr("+-0123456789.eE", ps->p[n]))
            n++;
        memcpy(buf, ps->p, n);
        buf[n] = 0;
        char *end;
        double d = strtod(buf, &end);
        if (end != buf + n)
            return NULL;
        ps->p += n;
        if ((v = new_val(NCG_JSON_NUMBER)) != NULL)
            v->num = d;
    }
    ps->depth--;
    return v;
}

struct ncg_json *ncg_cli_json_parse(const char *text, size_t len, size_t *err_at)
{
    struct parser ps = {text, text + len, 0};
    struct ncg_json *v = parse_val(&ps);
    ws(&ps);
    if (v && ps.p != ps.end) {
        ncg_cli_json_free(v);
        v = NULL;
    }
    if (!v && err_at)
        *err_at = (size_t)(ps.p - text);
    return v;
}

void ncg_cli_json_free(struct ncg_json *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++) {
        ncg_cli_json_free(v->kids[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->kids);
    free(v->keys);
    free(v->str);
    free(v);
}

const struct ncg_json *ncg_cli_json_get(const struct ncg_json *o, const char *key)
{
    if (!o || o->type != NCG_JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->keys[i], key) == 0)
            return o->kids[i];
    return NULL;
}

char *ncg_cli_slurp(const char *path, size_t max, size_t *len)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char *buf = malloc(max + 1);
    if (!buf) {
        fclose(f);
        return NULL;
    }
    *len = fread(buf, 1, max + 1, f);
    fclose(f);
    if (*len > max) {
        free(buf);
        return NULL;
    }
    buf[*len] = 0;
    return buf;
}

const char *ncg_cli_json_s(const struct ncg_json *o, const char *key, const char *dflt)
{
    const struct ncg_json *v = ncg_cli_json_get(o, key);
    return v && v->type == NCG_JSON_STRING ? v->str : dflt;
}

double ncg_cli_json_n(const struct ncg_json *o, const char *key, double dflt)
{
    const struct ncg_json *v = ncg_cli_json_get(o, key);
    return v && v->type == NCG_JSON_NUMBER ? v->num : dflt;
}
