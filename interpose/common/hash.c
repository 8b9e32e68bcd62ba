/* Byte-string hashing for identities (ncclUniqueId bytes, exclude lists); the inline
 * word-level functions live in hash.h. */
#include "hash.h"

#include <string.h>

uint64_t ncg_hash_bytes(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *b = p;
    uint64_t h = ncg_mix64(seed ^ NCG_HASH_K2);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8); /* unaligned-safe; ids live in arbitrary user memory */
        h = ncg_hash2(h, w);
    }
    if (i < n) {
        uint64_t w = 0;
        memcpy(&w, b + i, n - i);
        h = ncg_hash2(h, w);
    }
    return ncg_hash2(h, (uint64_t)n);
}

uint64_t ncg_token_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h ? h : 1;
}
