/* HTTP/1.x request-head parsing (http_parse.h): RFC 9112's request line and field syntax,
 * strictly, line by line as far as the buffer holds complete lines, so garbage is refused as
 * soon as its first line ends. A read-only responder never reads a body: any is refused. */
#include <string.h>
#include "http_parse.h"

static int is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return 1;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* Case-insensitive equality of buf[0..n) with the NUL-terminated lowercase word w. */
static int ieq(const char *b, size_t n, const char *w)
{
    size_t k;
    for (k = 0; k < n && w[k]; k++)
        if (lower((unsigned char)b[k]) != w[k])
            return 0;
    return k == n && !w[k];
}

/* The next line in buf[off..len): sets *eol to the index of its terminator and *next past it.
 * 0 when no complete line is there yet; -1 for a bare CR (not followed by LF). */
static int line_at(const char *buf, size_t len, size_t off, size_t *eol, size_t *next)
{
    for (size_t i = off; i < len; i++) {
        if (buf[i] == '\n') {
            *eol = i > off && buf[i - 1] == '\r' ? i - 1 : i;
            *next = i + 1;
            return 1;
        }
        if (buf[i] == '\r' && i + 1 < len && buf[i + 1] != '\n')
            return -1;
    }
    return 0;
}

/* The length of the token (1*tchar) that s[0..n) starts with when sep follows it, else 0. */
static size_t token_before(const char *s, size_t n, char sep)
{
    size_t i = 0;
    while (i < n && is_tchar((unsigned char)s[i]))
        i++;
    return i < n && s[i] == sep ? i : 0;
}

static long request_line(const char *s, size_t n, struct ncg_http_req *r)
{
    size_t i = token_before(s, n, ' ');
    if (!i)
        return -400;
    r->method = i == 3 && !memcmp(s, "GET", 3)    ? NCG_HTTP_GET
                : i == 4 && !memcmp(s, "HEAD", 4) ? NCG_HTTP_HEAD
                                                  : NCG_HTTP_OTHER;
    size_t t = ++i;
    while (i < n && s[i] != ' ') {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f)
            return -400;
        i++;
    }
    size_t tl = i - t;
    if (tl == 0 || i >= n)
        return -400;
    if (tl >= NCG_HTTP_MAX_TARGET)
        return -414;
    if (s[t] != '/')
        return -400; /* origin-form only: no absolute URIs, no "*" */
    const char *q = memchr(s + t, '?', tl);
    size_t pl = q ? (size_t)(q - (s + t)) : tl;
    memcpy(r->path, s + t, pl);
    r->path[pl] = 0;
    if (q) {
        memcpy(r->query, q + 1, tl - pl - 1);
        r->query[tl - pl - 1] = 0;
    }
    i++; /* the single space before the version */
    if (n - i != 8 || memcmp(s + i, "HTTP/", 5) != 0 || s[i + 6] != '.' || s[i + 5] < '0' ||
        s[i + 5] > '9' || s[i + 7] < '0' || s[i + 7] > '9')
        return -400;
    if (s[i + 5] != '1' || (s[i + 7] != '0' && s[i + 7] != '1'))
        return -505;
    r->minor = s[i + 7] - '0';
    return 0;
}

/* One field line s[0..n). */
static long field_line(const char *s, size_t n, struct ncg_http_req *r)
{
    size_t nl = token_before(s, n, ':');
    if (!nl)
        return -400; /* also: whitespace before the colon, obs-fold, an empty name */
    size_t i = nl + 1;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    size_t e = n;
    while (e > i && (s[e - 1] == ' ' || s[e - 1] == '\t'))
        e--;
    for (size_t k = i; k < e; k++) {
        unsigned char c = (unsigned char)s[k];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return -400;
    }
    const char *v = s + i;
    size_t vl = e - i;
    if (ieq(s, nl, "host")) {
        if (r->has_host)
            return -400;
        r->has_host = 1;
    } else if (ieq(s, nl, "authorization")) {
        if (r->has_auth)
            return -400;
        r->has_auth = 1;
        size_t k = 0;
        while (k < vl && v[k] != ' ' && v[k] != '\t')
            k++;
        if (k >= sizeof r->auth_scheme)
            return -400;
        memcpy(r->auth_scheme, v, k);
        r->auth_scheme[k] = 0;
        while (k < vl && (v[k] == ' ' || v[k] == '\t'))
            k++;
        if (vl - k >= sizeof r->auth_cred)
            return -431;
        memcpy(r->auth_cred, v + k, vl - k);
        r->auth_cred[vl - k] = 0;
    } else if (ieq(s, nl, "content-length")) {
        for (size_t k = 0; k < vl; k++)
            if (v[k] != '0')
                return -400; /* no body on a read-only endpoint */
        if (vl == 0)
            return -400;
    } else if (ieq(s, nl, "transfer-encoding")) {
        return -501;
    } else if (ieq(s, nl, "connection")) {
        for (size_t k = 0; k + 5 <= vl; k++)
            if (ieq(v + k, 5, "close") && (k == 0 || v[k - 1] == ' ' || v[k - 1] == ',') &&
                (k + 5 == vl || v[k + 5] == ' ' || v[k + 5] == ','))
                r->close = 1;
    }
    return 0;
}

long ncg_http_parse(const char *buf, size_t len, struct ncg_http_req *r)
{
    memset(r, 0, sizeof *r);
    size_t off = 0, eol, next;
    unsigned nfields = 0;
    /* RFC 9112 2.2: ignore at least one empty line before the request line. */
    if (len >= 2 && buf[0] == '\r' && buf[1] == '\n')
        off = 2;
    else if (len >= 1 && buf[0] == '\n')
        off = 1;
    for (int first = 1;; first = 0) {
        int k = line_at(buf, len, off, &eol, &next);
        if (k < 0)
            return -400;
        if (k == 0)
            return len >= NCG_HTTP_MAX_HEAD ? -431 : 0;
        if (next > NCG_HTTP_MAX_HEAD)
            return -431;
        for (size_t i = off; i < eol; i++)
            if (buf[i] == 0 || buf[i] == '\r' || buf[i] == '\n')
                return -400;
        if (first) {
            long rc = request_line(buf + off, eol - off, r);
            if (rc < 0)
                return rc;
        } else if (eol == off) {
            if (r->minor == 1 && !r->has_host)
                return -400;
            return (long)next;
        } else {
            if (++nfields > NCG_HTTP_MAX_HEADERS)
                return -431;
            long rc = field_line(buf + off, eol - off, r);
            if (rc < 0)
                return rc;
        }
        off = next;
    }
}

const char *ncg_http_reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 414:
        return "URI Too Long";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "";
    }
}
