/* The exit release's bookkeeping (release.h): which connections an error verdict reached and
 * which of them have finished with it. */
#include <stdlib.h>
#include <string.h>
#include "release.h"

void ncg_release_begin(struct ncg_release *r, uint64_t deadline_ns)
{
    r->state = NCG_REL_WAITING;
    r->deadline_ns = deadline_ns;
    r->n = 0;
}

int ncg_release_add(struct ncg_release *r, int conn)
{
    if (conn < 0)
        return 0;
    for (uint32_t i = 0; i < r->n; i++)
        if (r->conn[i] == conn)
            return 0;
    if (r->n == r->cap) {
        uint32_t cap = r->cap ? r->cap * 2 : 8;
        int *c = realloc(r->conn, sizeof *c * cap);
        if (!c)
            return -1;
        r->conn = c;
        uint8_t *d = realloc(r->done, cap);
        if (!d)
            return -1;
        r->done = d;
        r->cap = cap;
    }
    r->conn[r->n] = conn;
    r->done[r->n++] = 0;
    return 0;
}

void ncg_release_mark(struct ncg_release *r, int conn)
{
    if (conn < 0)
        return;
    for (uint32_t i = 0; i < r->n; i++)
        if (r->conn[i] == conn)
            r->done[i] = 1;
}

int ncg_release_adopt(struct ncg_release *r, int conn)
{
    for (uint32_t i = 0; i < r->n; i++)
        if (r->conn[i] == conn)
            return 0;
    for (uint32_t i = 0; i < r->n; i++)
        if (r->conn[i] == -1 && !r->done[i]) {
            r->conn[i] = conn;
            return 1;
        }
    return 0;
}

void ncg_release_drop(struct ncg_release *r, int conn, int orphan)
{
    if (conn < 0)
        return;
    for (uint32_t i = 0; i < r->n; i++) {
        if (r->conn[i] != conn)
            continue;
        if (orphan && !r->done[i] && r->state == NCG_REL_WAITING) {
            r->conn[i] = -1;
            continue;
        }
        r->conn[i] = r->conn[r->n - 1];
        r->done[i] = r->done[r->n - 1];
        r->n--;
        i--;
    }
}

int ncg_release_note(struct ncg_release *r, uint64_t id, int conn, uint64_t comm_id, int gone,
                     int relay)
{
    if (gone)
        ncg_release_drop(r, conn, relay);
    if (r->state != NCG_REL_WAITING || (!gone && id != comm_id))
        return 0;
    if (!gone && relay)
        ncg_release_adopt(r, conn);
    if (!gone)
        ncg_release_mark(r, conn);
    return 1;
}

uint32_t ncg_release_pending(const struct ncg_release *r, int *first)
{
    uint32_t n = 0;
    *first = -1;
    for (uint32_t i = 0; i < r->n; i++)
        if (!r->done[i] && n++ == 0)
            *first = r->conn[i];
    return n;
}

int ncg_release_due(const struct ncg_release *r, uint64_t now_ns)
{
    int first;
    if (r->state != NCG_REL_WAITING)
        return 0;
    return ncg_release_pending(r, &first) == 0 || now_ns >= r->deadline_ns;
}

void ncg_release_free(struct ncg_release *r)
{
    free(r->conn);
    free(r->done);
    memset(r, 0, sizeof *r);
}
