/* The status endpoint's HTTP/1.x request-head parser: pure logic over a byte buffer (no
 * sockets, no allocation), so it is unit-tested and fuzzed like the wire decoder. Only what a
 * read-only responder needs is kept: method, path, query, version, Host, Authorization. */
#ifndef NCG_HTTP_PARSE_H
#define NCG_HTTP_PARSE_H

#include <stddef.h>

#define NCG_HTTP_MAX_HEAD 8192u  /* request line + headers; beyond: 431 */
#define NCG_HTTP_MAX_TARGET 512u /* request target; beyond: 414 */
#define NCG_HTTP_MAX_HEADERS 64u /* header fields; beyond: 431 */
#define NCG_HTTP_MAX_AUTH 256u   /* Authorization value; beyond: 431 */

enum ncg_http_method { NCG_HTTP_OTHER = 0, NCG_HTTP_GET = 1, NCG_HTTP_HEAD = 2 };

struct ncg_http_req {
    int method;                        /* enum ncg_http_method (OTHER: answered 405) */
    int minor;                         /* HTTP/1.<minor>: 0 or 1 */
    char path[NCG_HTTP_MAX_TARGET];    /* the target up to '?', as sent (no decoding) */
    char query[NCG_HTTP_MAX_TARGET];   /* after '?', "" when none */
    int has_host;                      /* a Host field was present */
    int has_auth;                      /* an Authorization field was present */
    char auth_scheme[16];              /* "Bearer", as sent (compare case-insensitively) */
    char auth_cred[NCG_HTTP_MAX_AUTH]; /* the credentials after the scheme, trimmed */
    int close;                         /* "Connection: close" was asked for */
};

/* Parses the request head at buf[0..len). Returns the head's length in bytes (> 0) when it is
 * complete and valid, 0 when more bytes are needed, or -STATUS for a request to refuse with
 * that HTTP status: -400 malformed (bad request line, bad field, a body, a missing Host on
 * 1.1, control bytes), -414 target too long, -431 head or a field too large or too many
 * fields, -501 Transfer-Encoding, -505 an HTTP version other than 1.0/1.1. Errors are found as
 * soon as the offending line is complete; a head still incomplete at NCG_HTTP_MAX_HEAD bytes
 * is -431. Lines may end in CRLF or a bare LF. Pure: any thread, no allocation. */
long ncg_http_parse(const char *buf, size_t len, struct ncg_http_req *r);

/* The reason phrase of a status code ("OK", "Bad Request", ...; "" when unknown). Pure. */
const char *ncg_http_reason(int status);

#endif
