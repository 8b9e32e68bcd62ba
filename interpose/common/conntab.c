/* The connection table (conntab.h): slots of the caller's size, grown to the highest id seen
 * plus some room, zeroed when opened. */
#include "conntab.h"

#include <stdlib.h>
#include <string.h>

void *ncg_conntab_at(const struct ncg_conntab *t, int i)
{
    return (char *)t->slot + t->size * (size_t)i;
}

void *ncg_conntab_get(const struct ncg_conntab *t, int id)
{
    if (id < 0 || id >= t->n)
        return NULL;
    struct ncg_conn *c = ncg_conntab_at(t, id);
    return c->used ? c : NULL;
}

int ncg_conntab_authed(const struct ncg_conntab *t, int i)
{
    const struct ncg_conn *c = ncg_conntab_get(t, i);
    return c && c->authed;
}

void *ncg_conntab_open(struct ncg_conntab *t, int id, uint64_t now_ns)
{
    if (id < 0)
        return NULL;
    if (id >= t->n) {
        int n = id + 16;
        char *ns = realloc(t->slot, t->size * (size_t)n);
        if (!ns)
            return NULL;
        memset(ns + t->size * (size_t)t->n, 0, t->size * (size_t)(n - t->n));
        t->slot = ns;
        t->n = n;
    }
    struct ncg_conn *c = ncg_conntab_at(t, id);
    memset(c, 0, t->size);
    c->used = 1;
    c->since_ns = c->last_rx_ns = now_ns;
    c->grank = -1;
    return c;
}

void ncg_conntab_close(struct ncg_conntab *t, int id)
{
    if (id >= 0 && id < t->n)
        memset(ncg_conntab_at(t, id), 0, t->size);
}

int ncg_conntab_unauthed(const struct ncg_conntab *t, int *oldest)
{
    int n = 0;
    uint64_t first = UINT64_MAX;
    *oldest = -1;
    for (int i = 0; i < t->n; i++) {
        const struct ncg_conn *c = ncg_conntab_at(t, i);
        if (c->used && !c->authed) {
            n++;
            if (c->since_ns < first) {
                first = c->since_ns;
                *oldest = i;
            }
        }
    }
    return n;
}

int ncg_conntab_resume(struct ncg_conntab *t, uint64_t last_tick_ns, uint64_t now_ns,
                       uint64_t hb_ns, int hello_too)
{
    if (!last_tick_ns || !hb_ns || now_ns - last_tick_ns <= hb_ns / 2)
        return 0;
    for (int i = 0; i < t->n; i++) {
        struct ncg_conn *c = ncg_conntab_at(t, i);
        c->last_rx_ns = now_ns;
        if (hello_too)
            c->since_ns = now_ns;
    }
    return 1;
}

enum ncg_conn_due ncg_conn_due(const struct ncg_conn *h, uint64_t now_ns, uint64_t hb_ns)
{
    if (!h->used)
        return NCG_CONN_FINE;
    if (!h->authed)
        return now_ns - h->since_ns > 5000000000ull ? NCG_CONN_NO_HELLO : NCG_CONN_FINE;
    return hb_ns && now_ns - h->last_rx_ns > hb_ns ? NCG_CONN_SILENT : NCG_CONN_FINE;
}

void ncg_conntab_free(struct ncg_conntab *t)
{
    free(t->slot);
    t->slot = NULL;
    t->n = 0;
}
