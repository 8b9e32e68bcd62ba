/* The text of a call site (site.h): composed from its parts, or parsed back from a composed
 * text (a report's call_site), then fitted by one rule, fit(). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "site.h"

#define NCG_ELLIPSIS "\xe2\x80\xa6" /* U+2026, 3 bytes */

/* Length of the printable UTF-8 character at s (n > 0 bytes left); 0 when the byte there is
 * written as '?': a control byte, or no valid shortest-form sequence starts there. */
static size_t u8_char(const unsigned char *s, size_t n)
{
    unsigned c = s[0], cp, min;
    size_t len;
    if (c < 0x80)
        return c >= 0x20 && c != 0x7f;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (len > n)
        return 0;
    cp = c & (0x7fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3fu);
    }
    return cp >= min && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff) ? len : 0;
}

/* Bytes the character at s takes in the output: its own, or 1 for its '?'. */
static size_t ch_len(const char *s, size_t n)
{
    size_t k = u8_char((const unsigned char *)s, n);
    return k ? k : 1;
}

/* Output that never overflows nor splits a character: len counts every byte asked for, w
 * those written (all, until the first character that did not fit). */
struct out {
    char *b;
    size_t cap, len, w;
};

static void put_char(struct out *o, const char *s, size_t k)
{
    size_t v = u8_char((const unsigned char *)s, k) == k;
    if (o->w == o->len && o->len + k < o->cap) {
        if (v)
            memcpy(o->b + o->w, s, k);
        else
            o->b[o->w] = '?';
        o->w += k;
    }
    o->len += k;
}

/* n bytes of s, cleaned: a character the same length out as in. */
static void put(struct out *o, const char *s, size_t n)
{
    for (size_t i = 0, k; i < n; i += k) {
        k = ch_len(s + i, n - i);
        put_char(o, s + i, k);
    }
}

static size_t out_end(struct out *o)
{
    if (o->cap)
        o->b[o->w] = 0;
    return o->w;
}

/* The bytes that "operator" at s[i] and its symbol take when the symbol holds brackets
 * (operator<, operator(), operator->...): they are a name, not brackets. 0 otherwise. */
static size_t op_len(const char *s, size_t i, size_t n)
{
    static const char *const ops[] = {
        "<=>", "<<=", ">>=", "->*", "<<", ">>", "<=", ">=", "->", "()", "[]", "<", ">"};
    if (n - i < 9 || memcmp(s + i, "operator", 8) != 0)
        return 0;
    unsigned char p = i ? (unsigned char)s[i - 1] : ' ';
    if (p == '_' || (unsigned)((p | 0x20) - 'a') < 26 || (unsigned)(p - '0') < 10)
        return 0; /* my_operator< is an identifier and a bracket */
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        size_t l = strlen(ops[k]);
        if (n - i - 8 >= l && !memcmp(s + i + 8, ops[k], l))
            return 8 + l;
    }
    return 0;
}

/* 0 when the brackets of s[0, n) balance, -1 when not. Then *params is the function's parameter
 * list: the last '(' outside all brackets, n when none; *name where its qualified name starts:
 * after the last space outside brackets before *params (a function template's return type
 * ends there; "operator new" or "operator int" hold spaces of their own: 0 then), else 0. */
static int brackets(const char *s, size_t n, size_t *params, size_t *name)
{
    long angle = 0, paren = 0;
    size_t space = 0;
    *params = n;
    for (size_t i = 0; i < n; i++) {
        size_t op = op_len(s, i, n);
        if (op) {
            i += op - 1;
            continue;
        }
        if (s[i] == '<')
            angle++;
        else if (s[i] == '>' && --angle < 0)
            return -1;
        else if (s[i] == '(' || s[i] == '{' || s[i] == '[') {
            if (s[i] == '(' && !angle && !paren)
                *params = i;
            paren++;
        } else if ((s[i] == ')' || s[i] == '}' || s[i] == ']') && --paren < 0)
            return -1;
        else if (s[i] == ' ' && !angle && !paren && *params == n)
            space = i + 1;
    }
    *name = space && *params < n && !memmem(s, n, "operator", 8) ? space : 0;
    return angle || paren ? -1 : 0;
}

/* The index of the bracket that closes s[i] ('<' or '('), n when none. */
static size_t close_of(const char *s, size_t i, size_t n)
{
    int angle = s[i] == '<';
    long d = 0;
    for (size_t j = i; j < n; j++) {
        size_t op = op_len(s, j, n);
        if (op) {
            j += op - 1;
            continue;
        }
        char c = s[j];
        if (angle ? c == '<' : (c == '(' || c == '{' || c == '['))
            d++;
        else if ((angle ? c == '>' : (c == ')' || c == '}' || c == ']')) && --d == 0)
            return j;
    }
    return n;
}

/* ncg_site_simplify of the n bytes at name into o. */
static void simplify(struct out *o, const char *name, size_t n, int level)
{
    size_t params, start = 0;
    const char *clone = memmem(name, n, " [clone ", 8);
    if (level >= 1 && clone)
        n = (size_t)(clone - name);
    if (level < 2 || brackets(name, n, &params, &start) != 0)
        level = 1;
    long angle = 0;
    for (size_t i = level >= 3 ? start : 0, k; i < n; i += k) {
        size_t op = level > 1 ? op_len(name, i, n) : 0;
        if (op) {
            put(o, name + i, op);
            k = op;
            continue;
        }
        char c = name[i];
        int fold = 0;
        if (level > 1 && c == '<')
            fold = ++angle >= (level >= 4 ? 1 : 2);
        else if (level > 1 && c == '>')
            angle--;
        else if (level >= 3 && i == params)
            fold = 1;
        size_t e = fold ? close_of(name, i, n) : n;
        /* "…" takes 3 bytes: shorter lists stay; "(anonymous namespace)::" is no parameter list */
        if (e < n && e - i - 1 > 3 && !(c == '(' && !strncmp(name + e + 1, "::", 2))) {
            put(o, name + i, 1);
            put(o, NCG_ELLIPSIS, 3);
            put(o, name + e, 1);
            angle -= c == '<';
            k = e + 1 - i;
            continue;
        }
        k = ch_len(name + i, n - i);
        put_char(o, name + i, k);
    }
}

size_t ncg_site_simplify(char *out, size_t cap, const char *name, int level)
{
    struct out o = {out, cap, 0, 0};
    simplify(&o, name, strlen(name), level);
    out_end(&o);
    return o.len;
}

/* ---------- fitting a site ---------- */

/* A site's parts, spans of one text or of the caller's strings. */
struct parts {
    const char *name, *off, *mod, *at, *tail;
    size_t n, lo, lm, la, lt;
    /* name: the function, or without one the module; off: "+0x1a2" (the module's offset
     * without a name); mod: " (module+0x11a2)", none without a name; at: " at file.c:26";
     * tail: what follows, kept with the name (" (in a CUDA graph replay)") */
};

/* Length of "+0xHEX" at s (n bytes), 0 when none. */
static size_t hex_off(const char *s, size_t n)
{
    if (n < 4 || memcmp(s, "+0x", 3) != 0)
        return 0;
    size_t k = 3;
    while (k < n && ((unsigned)(s[k] - '0') < 10 || (unsigned)(s[k] - 'a') < 6))
        k++;
    return k > 3 ? k : 0;
}

/* The parts of a composed site: the name ends at the first "+0xHEX" outside brackets that a
 * space or the end follows; no such offset: the whole text is the name. */
static void parse(const char *s, struct parts *p)
{
    size_t n = strlen(s), i, k = 0;
    long d = 0;
    memset(p, 0, sizeof *p);
    p->name = s;
    p->n = n;
    for (i = 0; i < n; i++) {
        size_t op = op_len(s, i, n);
        if (op) {
            i += op - 1;
            continue;
        }
        char c = s[i];
        if (c == '<' || c == '(' || c == '{' || c == '[')
            d++;
        else if (c == '>' || c == ')' || c == '}' || c == ']')
            d--;
        else if (c == '+' && d <= 0 && (k = hex_off(s + i, n - i)) &&
                 (i + k == n || s[i + k] == ' '))
            break;
    }
    if (i >= n)
        return;
    p->n = i;
    p->off = s + i;
    p->lo = k;
    size_t j = i + k;
    const char *close = j + 2 < n && !memcmp(s + j, " (", 2) ? strchr(s + j + 2, ')') : NULL;
    if (close) { /* " (module+0xHEX)": a module name has no space */
        size_t e = (size_t)(close - s), m = j + 2;
        while (m < e && s[m] != ' ' && !hex_off(s + m, e - m))
            m++;
        if (m < e && s[m] != ' ' && hex_off(s + m, e - m) == e - m) {
            p->mod = s + j;
            p->lm = e + 1 - j;
            j = e + 1;
        }
    }
    if (j + 4 < n && !memcmp(s + j, " at ", 4)) {
        const char *end = strstr(s + j + 4, " (");
        size_t e = end ? (size_t)(end - s) : n;
        p->at = s + j;
        p->la = e - j;
        j = e;
    }
    p->tail = s + j;
    p->lt = n - j;
}

/* Emits name s (n bytes) and the parts chosen. */
static void emit(struct out *o, const char *s, size_t n, const struct parts *p, int off, int mod,
                 int at)
{
    put(o, s, n);
    if (off)
        put(o, p->off, p->lo);
    if (mod)
        put(o, p->mod, p->lm);
    if (at)
        put(o, p->at, p->la);
    put(o, p->tail, p->lt);
}

/* The rule (site.h, ncg_site_fit) on p into o. */
static void fit(struct out *o, const struct parts *p, size_t width)
{
    char simple[NCG_SITE_FULL];
    size_t room = o->cap - 1, n = p->n, rest = p->lo + p->lm + p->la + p->lt;
    const char *s = p->name;
    width = width < room ? width : room;
    for (int lv = 1; lv <= 4 && n + rest > width; lv++) {
        struct out t = {simple, sizeof simple, 0, 0};
        simplify(&t, p->name, p->n, lv);
        if (t.len >= sizeof simple)
            break; /* levels only shorten: a name this long stays as it is */
        s = simple;
        n = t.len;
    }
    if (n + rest <= width) {
        emit(o, s, n, p, 1, 1, 1);
        return;
    }
    if (n + rest - p->lm <= room) { /* long rather than cut */
        emit(o, s, n, p, 1, !p->lm, 1);
        return;
    }
    /* a hard bound: what is not the name gives way */
    static const int keep[][2] = {{0, 1}, {1, 0}, {0, 0}}; /* {offset, file:line} */
    for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++)
        if (n + (keep[k][0] ? p->lo : 0) + (keep[k][1] ? p->la : 0) + p->lt <= room) {
            emit(o, s, n, p, keep[k][0], 0, keep[k][1]);
            return;
        }
    /* then the qualified name's leading components, whole */
    long d = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        size_t op = op_len(s, i, n);
        if (op) {
            i += op - 1;
            continue;
        }
        if (s[i] == '<' || s[i] == '(' || s[i] == '{' || s[i] == '[')
            d++;
        else if (s[i] == '>' || s[i] == ')' || s[i] == '}' || s[i] == ']')
            d--;
        else if (!d && s[i] == ':' && s[i + 1] == ':' && 3 + n - i + p->lt <= room) {
            put(o, NCG_ELLIPSIS, 3);
            emit(o, s + i, n - i, p, 0, 0, 0);
            return;
        }
    }
    /* no name: the module form with file:line, file:line alone, the module form alone */
    size_t lmf = p->lm > 3 ? p->lm - 3 : 0; /* " (" and ")" left out */
    if (lmf && lmf + p->la + p->lt <= room) {
        put(o, p->mod + 2, lmf);
        put(o, p->at, p->la);
        put(o, p->tail, p->lt);
    } else if (p->la > 4 && p->la - 4 <= room) {
        put(o, p->at + 4, p->la - 4);
    } else if (lmf && lmf <= room) {
        put(o, p->mod + 2, lmf);
    } else { /* a buffer of a few bytes: the text cut at its end */
        emit(o, s, n, p, 1, 1, 1);
    }
}

size_t ncg_site_fit(char *out, size_t cap, const char *site, size_t width)
{
    struct out o = {out, cap, 0, 0};
    struct parts p;
    if (!cap)
        return 0;
    parse(site ? site : "", &p);
    fit(&o, &p, width);
    return out_end(&o);
}

size_t ncg_site_compose(char *buf, size_t cap, const char *name, uint64_t off, const char *module,
                        uint64_t modoff, const char *srcline)
{
    struct out o = {buf, cap, 0, 0};
    char offs[24], mod[320], at[320];
    struct parts p = {0};
    if (!cap)
        return 0;
    name = name ? name : "";
    module = module && *module ? module : "?";
    snprintf(offs, sizeof offs, "+0x%" PRIx64, off);
    p.at = at;
    p.la = srcline && *srcline ? (size_t)snprintf(at, sizeof at, " at %.300s", srcline) : 0;
    p.tail = "";
    if (*name) {
        p.name = name;
        p.n = strlen(name);
        p.off = offs;
        p.lo = strlen(offs);
        p.mod = mod;
        p.lm = (size_t)snprintf(mod, sizeof mod, " (%.280s+0x%" PRIx64 ")", module, modoff);
    } else { /* the module form: the module is the name, its offset the offset */
        snprintf(offs, sizeof offs, "+0x%" PRIx64, modoff);
        p.name = module;
        p.n = strlen(module);
        p.off = offs;
        p.lo = strlen(offs);
    }
    fit(&o, &p, cap - 1);
    return out_end(&o);
}
