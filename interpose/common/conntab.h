/* A growable table of connection slots, indexed by the host's connection ids (small integers it
 * reuses): the relay's. Each slot is the caller's struct, opening with
 * struct ncg_conn (whether a connection holds it, whether it said a valid HELLO, its clocks).
 * Pure: no sockets, no clock of its own. */
#ifndef NCG_CONNTAB_H
#define NCG_CONNTAB_H

#include <stddef.h>
#include <stdint.h>

/* The first member of every slot. */
struct ncg_conn {
    uint8_t used;                  /* a connection holds the slot */
    uint8_t authed;                /* it presented a valid HELLO */
    uint64_t since_ns, last_rx_ns; /* it connected; its last frame */
    int32_t grank;                 /* the global rank its HELLO gave (-1: none) */
};

/* Zero-initialized but for size (the caller's slot struct): empty. */
struct ncg_conntab {
    void *slot; /* n slots of size bytes */
    size_t size;
    int n;
};

/* All functions: the thread that owns t; never block; only ncg_conntab_open allocates. */
/* Slot i (0 <= i < n), used or not. */
void *ncg_conntab_at(const struct ncg_conntab *t, int i);
/* The slot of connection id, or NULL when no connection holds it. */
void *ncg_conntab_get(const struct ncg_conntab *t, int id);
/* 1 when connection i holds its slot and said a valid HELLO. */
int ncg_conntab_authed(const struct ncg_conntab *t, int i);
/* Connection id's slot, zeroed and held since now_ns (also its last frame), no global rank yet;
 * the table grows to hold it (allocates). NULL when id < 0, or out of memory (the table unchanged).
 */
void *ncg_conntab_open(struct ncg_conntab *t, int id, uint64_t now_ns);
/* Connection id's slot zeroed: no connection holds it (nothing when id is out of range). */
void ncg_conntab_close(struct ncg_conntab *t, int id);
/* Connections that have not said a valid HELLO yet, and the oldest of them (-1: none). */
int ncg_conntab_unauthed(const struct ncg_conntab *t, int *oldest);
/* Called first in each tick: when the caller's last tick (last_tick_ns, 0: none yet) is more than
 * half the heartbeat timeout hb_ns ago (0: none), it was not running itself (the whole job
 * suspended, a VM paused): everyone's silence is its own, so every slot's last frame (and with
 * hello_too, its HELLO bound's clock) restarts at now_ns instead of every peer being declared
 * dead. Returns 1 when it did so. */
int ncg_conntab_resume(struct ncg_conntab *t, uint64_t last_tick_ns, uint64_t now_ns,
                       uint64_t hb_ns, int hello_too);

/* What the tick owes the connection in h at now_ns. */
enum ncg_conn_due {
    NCG_CONN_FINE = 0, /* nothing (or no connection holds the slot) */
    NCG_CONN_NO_HELLO, /* no valid HELLO within 5 s of connecting: to be refused */
    NCG_CONN_SILENT,   /* a HELLO, then no frame for more than hb_ns (0: never): to be lost */
};
enum ncg_conn_due ncg_conn_due(const struct ncg_conn *h, uint64_t now_ns, uint64_t hb_ns);

/* Frees the slots (not what they point to); t is empty after. */
void ncg_conntab_free(struct ncg_conntab *t);

#endif
