/* ncclguard's 64-bit hashing: call fingerprints, the chained per-comm digest and communicator
 * identities. Pure functions, shared by the shim, the checker and the CLI; the formulas are part
 * of what ranks compare, so changing one changes what every member computes (keep them equal). */
#ifndef NCG_HASH_H
#define NCG_HASH_H

#include <stddef.h>
#include <stdint.h>

#define NCG_HASH_K1 0x9e3779b97f4a7c15ull /* golden ratio: spreads small integers */
#define NCG_HASH_K2 0xc2b2ae3d27d4eb4full

/* MurmurHash3's fmix64 finalizer: a bijection with full avalanche. Any thread, no allocation. */
static inline uint64_t ncg_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb93fe53a3a85ull;
    x ^= x >> 33;
    return x;
}

/* The straggler sampling's slots to the next sample after slot (shim/slow.c, and the simulator's
 * virtual ranks): 1..2n-1, n on average, from the comm id and the slot only, so every member
 * draws the same and the samples do not fall on the same call of every step. The range by a
 * multiply-high, not a modulo: a 64-bit division costs ~10 ns on the sampled path. Pure. */
static inline uint64_t ncg_slow_gap(uint64_t id, uint64_t slot, uint64_t n)
{
    if (n <= 1)
        return 1;
    uint64_t h = ncg_mix64(id ^ (slot * NCG_HASH_K1));
    return 1 + (uint64_t)(((unsigned __int128)h * (2 * n - 1)) >> 64);
}

/* Order-dependent combination of two words: H(a, b) != H(b, a). Any thread, no allocation. */
static inline uint64_t ncg_hash2(uint64_t a, uint64_t b)
{
    return ncg_mix64((ncg_mix64(a + NCG_HASH_K1) ^ b) + NCG_HASH_K2);
}

/* Fingerprint of one call: fp = H(func | dtype<<8 | redop<<16 | (uint32)root_or_peer<<32, count).
 * Two calls match iff their fingerprints match (up to 2^-64). Any thread, no allocation. */
static inline uint64_t ncg_fingerprint(uint32_t func, uint64_t count, uint32_t dtype,
                                       uint32_t redop, int32_t root_or_peer)
{
    uint64_t w = (uint64_t)(func & 0xff) | (uint64_t)(dtype & 0xff) << 8 |
                 (uint64_t)(redop & 0xff) << 16 | (uint64_t)(uint32_t)root_or_peer << 32;
    return ncg_hash2(w, count);
}

/* Chained digest of a comm's collective stream: digest(-1) = 0,
 * digest(n) = ncg_hash2(digest(n-1), fp(n)). Equal digests at slot n => equal streams 0..n.
 * Any thread, no allocation. */
static inline uint64_t ncg_digest_next(uint64_t prev, uint64_t fp)
{
    return ncg_hash2(prev, fp);
}

/* Hash of a byte string (8-byte words chained with ncg_hash2, then the length).
 * Any thread, no allocation. */
uint64_t ncg_hash_bytes(const void *p, size_t n, uint64_t seed);

/* The 64-bit token for a NCCLGUARD_TOKEN string (FNV-1a; never 0). Pure. */
uint64_t ncg_token_hash(const char *s);

#endif
