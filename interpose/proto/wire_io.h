/* Bounded big-endian cursors for wire.c and verdict.c: a write past the capacity or a read
 * past the end sets err and touches nothing, so codecs check once at the end. */
#ifndef NCG_WIRE_IO_H
#define NCG_WIRE_IO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct ncg_wbuf {
    uint8_t *p;
    size_t cap, len;
    int err;
};
struct ncg_rbuf {
    const uint8_t *p;
    size_t cap, pos;
    int err;
};

static inline void ncg_putb(struct ncg_wbuf *w, const void *b, size_t n)
{
    if (w->err || w->cap - w->len < n) {
        w->err = 1;
        return;
    }
    memcpy(w->p + w->len, b, n);
    w->len += n;
}
static inline void ncg_putbe(struct ncg_wbuf *w, uint64_t v, unsigned bytes)
{
    uint8_t b[8];
    for (unsigned i = 0; i < bytes; i++)
        b[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
    ncg_putb(w, b, bytes);
}
static inline void ncg_put8(struct ncg_wbuf *w, uint8_t v)
{
    ncg_putbe(w, v, 1);
}
static inline void ncg_put16(struct ncg_wbuf *w, uint16_t v)
{
    ncg_putbe(w, v, 2);
}
static inline void ncg_put32(struct ncg_wbuf *w, uint32_t v)
{
    ncg_putbe(w, v, 4);
}
static inline void ncg_put64(struct ncg_wbuf *w, uint64_t v)
{
    ncg_putbe(w, v, 8);
}

/* Unsigned LEB128 (v5 REPORT entries): 7 bits a byte, low first, at most 10 bytes. */
static inline void ncg_putv(struct ncg_wbuf *w, uint64_t v)
{
    uint8_t b[10];
    unsigned n = 0;
    do {
        b[n] = (uint8_t)(v & 0x7fu);
        v >>= 7;
        b[n++] |= v ? 0x80u : 0u;
    } while (v);
    ncg_putb(w, b, n);
}

static inline size_t ncg_rleft(const struct ncg_rbuf *r)
{
    return r->err ? 0 : r->cap - r->pos;
}
static inline void ncg_getb(struct ncg_rbuf *r, void *b, size_t n)
{
    if (r->err || r->cap - r->pos < n) {
        r->err = 1;
        memset(b, 0, n);
        return;
    }
    memcpy(b, r->p + r->pos, n);
    r->pos += n;
}
static inline uint64_t ncg_getbe(struct ncg_rbuf *r, unsigned bytes)
{
    uint8_t b[8];
    uint64_t v = 0;
    ncg_getb(r, b, bytes);
    for (unsigned i = 0; i < bytes; i++)
        v = (v << 8) | b[i];
    return v;
}
static inline uint8_t ncg_get8(struct ncg_rbuf *r)
{
    return (uint8_t)ncg_getbe(r, 1);
}
static inline uint16_t ncg_get16(struct ncg_rbuf *r)
{
    return (uint16_t)ncg_getbe(r, 2);
}
static inline uint32_t ncg_get32(struct ncg_rbuf *r)
{
    return (uint32_t)ncg_getbe(r, 4);
}
static inline uint64_t ncg_get64(struct ncg_rbuf *r)
{
    return ncg_getbe(r, 8);
}

/* A LEB128 value of at most max: longer than 10 bytes, above max or past the end sets err. */
static inline uint64_t ncg_getv(struct ncg_rbuf *r, uint64_t max)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < 10; i++) {
        uint8_t b = ncg_get8(r);
        if (i == 9 && b > 1)
            break; /* bits beyond 64 */
        v |= (uint64_t)(b & 0x7fu) << (7 * i);
        if (!(b & 0x80u)) {
            if (v > max)
                break;
            return v;
        }
    }
    r->err = 1;
    return 0;
}

/* A signed difference as a zigzag LEB128 (v12): 0, -1, 1, -2 ... as 0, 1, 2, 3 ... The
 * difference is taken modulo 2^64 and read back the same way, so any two words round-trip,
 * whatever their order; close ones take a byte. */
static inline void ncg_putz(struct ncg_wbuf *w, uint64_t v, uint64_t base)
{
    uint64_t d = v - base;
    ncg_putv(w, (d << 1) ^ (0 - (d >> 63)));
}
static inline uint64_t ncg_getz(struct ncg_rbuf *r, uint64_t base)
{
    uint64_t z = ncg_getv(r, UINT64_MAX);
    return base + ((z >> 1) ^ (0 - (z & 1)));
}

/* A list of n 32-bit ranks (v12), each as its zigzag difference from the one before (the first
 * from 0): a node's ranks, mostly consecutive, take a byte each. get: -1 when a rank is not
 * below bound. */
static inline void ncg_put_ranks(struct ncg_wbuf *w, const uint32_t *a, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        ncg_putz(w, a[i], i ? a[i - 1] : 0);
}
static inline int ncg_get_ranks(struct ncg_rbuf *r, uint32_t *a, uint32_t n, uint64_t bound)
{
    for (uint32_t i = 0; i < n; i++) {
        uint64_t v = ncg_getz(r, i ? a[i - 1] : 0);
        if (v >= bound)
            return -1;
        a[i] = (uint32_t)v;
    }
    return 0;
}

struct ncg_call;
struct ncg_p2p_rec;
/* Shared field codecs (wire.c). Pure. */
void ncg_wire_put_call(struct ncg_wbuf *w, const struct ncg_call *c);
void ncg_wire_get_call(struct ncg_rbuf *r, struct ncg_call *c);
/* A P2P record (also inside the tree's RP2P). */
void ncg_wire_put_p2p(struct ncg_wbuf *w, const struct ncg_p2p_rec *r);
void ncg_wire_get_p2p(struct ncg_rbuf *r, struct ncg_p2p_rec *p);
/* A WAIT's body (also inside the tree's RWAIT); -1 past NCG_WIRE_MAX_WAITS or a bad entry. */
int ncg_wire_put_wait(struct ncg_wbuf *w, const struct ncg_msg_wait *m);
int ncg_wire_get_wait(struct ncg_rbuf *r, struct ncg_msg_wait *m);
void ncg_wire_put_str(struct ncg_wbuf *w, const char *s, size_t bound);
int ncg_wire_get_str(struct ncg_rbuf *r, char *s, size_t bound);

/* A fixed-layout message's fields in wire order, each the member at `off` of its struct:
 * an unsigned or two's-complement integer of `size` bytes (1, 2, 4, 8), big-endian; or
 * (str) a string in a char array of `size`, as ncg_wire_put_str writes it. */
struct ncg_wfield {
    uint16_t off, size;
    uint8_t str;
};
#define NCG_WF(type, member)                                                                       \
    {                                                                                              \
        offsetof(type, member), sizeof(((type *)0)->member), 0                                     \
    }
#define NCG_WS(type, member)                                                                       \
    {                                                                                              \
        offsetof(type, member), sizeof(((type *)0)->member), 1                                     \
    }
#define NCG_WFIELDS(a) (a), sizeof(a) / sizeof((a)[0])
/* The fields f[n] of the struct at x; the get fills them, -1 on a string out of bounds (r->err
 * says whether the bytes ran out). */
void ncg_wire_put_fields(struct ncg_wbuf *w, const void *x, const struct ncg_wfield *f, size_t n);
int ncg_wire_get_fields(struct ncg_rbuf *r, void *x, const struct ncg_wfield *f, size_t n);

/* One message type's codec: its fixed fields first (f[nf], none when NULL), then put / get for
 * the rest (NULL: nothing more). put checks what the decoder will refuse and returns -1 on it;
 * get fills m->u (what it allocates is released with the message, also when it fails) and
 * returns -1 on a frame out of its bounds. A type has a codec when f or put is set. */
struct ncg_msg;
struct ncg_wcodec {
    const struct ncg_wfield *f;
    size_t nf;
    int (*put)(struct ncg_wbuf *w, const struct ncg_msg *m);
    int (*get)(struct ncg_rbuf *r, struct ncg_msg *m);
};
/* put / get of a type with no payload. */
int ncg_wire_put_nothing(struct ncg_wbuf *w, const struct ncg_msg *m);
int ncg_wire_get_nothing(struct ncg_rbuf *r, struct ncg_msg *m);

#endif
