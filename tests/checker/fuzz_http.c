/* Fuzzing of the status endpoint's request parser (interpose/net/http_parse.c): with
 * -DNCG_LIBFUZZER a libFuzzer target (make fuzz-http), else a standalone driver over random
 * and mutated requests (tests/checker/t_http_unit.sh). Properties: no crash or out-of-bounds
 * read; a result is 0, a known -STATUS, or a head length within the input; an accepted head
 * parses alone to the same length, with a path that starts with '/' and no control bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ncg_http_req r, r2;
    long n = ncg_http_parse((const char *)data, size, &r);
    if (n > 0) {
        if ((size_t)n > size || r.path[0] != '/' ||
            ncg_http_parse((const char *)data, (size_t)n, &r2) != n)
            abort();
        for (const char *p = r.path; *p; p++)
            if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
                abort();
    } else if (n < 0 && n != -400 && n != -414 && n != -431 && n != -501 && n != -505) {
        abort();
    }
    return 0;
}

#ifndef NCG_LIBFUZZER
int main(int argc, char **argv)
{
    static const char *const seeds[] = {
        "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer 0123456789abcdef\r\n\r\n",
        "HEAD /status?x=1 HTTP/1.0\r\n\r\n",
        "GET /healthz HTTP/1.1\nHost: a\nConnection: close\n\n",
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
    };
    long iters = argc > 1 ? atol(argv[1]) : 200000;
    static uint8_t b[NCG_HTTP_MAX_HEAD + 64];
    srand(4242);
    for (long it = 0; it < iters; it++) {
        size_t n;
        if (it % 3) {
            const char *s = seeds[rand() % 4];
            n = strlen(s);
            memcpy(b, s, n);
            for (int f = rand() % 5; f >= 0 && n; f--) {
                size_t at = (size_t)rand() % n;
                switch (rand() % 4) {
                case 0:
                    b[at] = (uint8_t)rand();
                    break;
                case 1:
                    b[at] = "\r\n :\t/?\0"[rand() % 8];
                    break;
                case 2: /* duplicate a slice: repeated headers, long lines */
                    if (n + 40 < sizeof b) {
                        memmove(b + at + 40, b + at, n - at);
                        n += 40;
                    }
                    break;
                default:
                    n = at; /* truncated */
                    break;
                }
            }
        } else {
            n = (size_t)rand() % sizeof b;
            for (size_t i = 0; i < n; i++)
                b[i] = (uint8_t)(rand() % 4 ? "GET /HTP1.\r\n: ab"[rand() % 16] : rand());
        }
        LLVMFuzzerTestOneInput(b, n);
    }
    printf("fuzz_http: %ld inputs, no crash\n", iters);
    return 0;
}
#endif
