/* The exit release: after an error verdict, the processes it reached print their part, write
 * their report and say DONE; the checker then sends RELEASE and only then may any of them exit
 * (a launcher such as mpirun kills every rank at the first non-zero exit, so the first to exit
 * must be the last to finish). One per communicator, in every relay of the tree: the connections
 * the verdict went to, which of them said DONE or closed, and the deadline after which the rest are
 * released anyway. Pure: no sockets, threads or clock. */
#ifndef NCG_RELEASE_H
#define NCG_RELEASE_H

#include <stdint.h>

enum ncg_release_state {
    NCG_REL_NONE = 0,     /* no error verdict yet */
    NCG_REL_WAITING = 1,  /* the verdict is out: waiting for DONEs */
    NCG_REL_READY = 2,    /* below the root: nobody left to wait for (DONE up, now or on
                             reattaching) */
    NCG_REL_RELEASED = 3, /* RELEASE sent: later members get it with the verdict */
};

struct ncg_release {
    uint8_t state;
    uint64_t deadline_ns; /* UINT64_MAX: none (a relay below the root waits for its parent) */
    uint32_t n, cap;
    int *conn;     /* [n] connections the verdict went to */
    uint8_t *done; /* [n] 1: said DONE (a closed connection is dropped, or orphaned) */
};

/* The caller serializes; none blocks. */
/* The verdict goes out now; released at deadline_ns at the latest. No allocation. */
void ncg_release_begin(struct ncg_release *r, uint64_t deadline_ns);
/* The verdict went to conn too (once per process). Allocates; -1 when out of memory (then conn
 * is not waited for). */
int ncg_release_add(struct ncg_release *r, int conn);
/* conn said DONE: it is not waited for any more. */
void ncg_release_mark(struct ncg_release *r, int conn);
/* conn's connection closed. A process's (orphan 0): forgotten, neither waited for nor sent a
 * RELEASE (its id may be reused by another connection). A child relay's (orphan 1), not done
 * yet: its subtree may come back through another connection, so it stays waited for until the
 * deadline, under no connection (-1). */
void ncg_release_drop(struct ncg_release *r, int conn, int orphan);
/* 1 when r is WAITING and nobody is left to wait for, or its deadline passed. */
int ncg_release_due(const struct ncg_release *r, uint64_t now_ns);
/* Child relay conn, not among those the verdict went to, is a subtree that reattached here: it
 * takes an orphan's place (ncg_release_drop), still waited for; 1 when there was one. */
int ncg_release_adopt(struct ncg_release *r, int conn);
/* What the coordinator and every relay do with the release of comm id when conn said DONE for
 * comm_id (gone 0; a child relay's, relay 1: it may be an orphan's subtree come back, adopted),
 * or when conn closed (gone 1, any comm: ncg_release_drop, orphaned when relay). 1 when r is
 * WAITING and concerned: the caller then checks ncg_release_due. */
int ncg_release_note(struct ncg_release *r, uint64_t id, int conn, uint64_t comm_id, int gone,
                     int relay);
/* Connections still waited for (the first of them in *first, -1 none or an orphan). */
uint32_t ncg_release_pending(const struct ncg_release *r, int *first);
void ncg_release_free(struct ncg_release *r);

#endif
