/* The coordinator: the state machine that compares the members' call streams per
 * communicator and issues verdicts. Pure-ish: it is fed decoded messages, connection events
 * and the time, and emits messages through callbacks; no sockets, no threads, no clock of its
 * own (unit-tested in tests/checker/t_unit.sh). channel.c runs it behind a TCP listener. */
#ifndef NCG_COORD_H
#define NCG_COORD_H

#include <stddef.h>
#include <stdint.h>
#include "wire.h"

struct ncg_coord_params {
    uint64_t token; /* 0: no token required (explicit NCCLGUARD_COORD without NCCLGUARD_TOKEN) */
    uint32_t interval_ms; /* clients' report period; paces pings and queries */
    double heartbeat_timeout_s;
    double lag_warn_s;
    double lag_abort_s; /* 0: LAG stays a warning */
    uint8_t embedded;   /* the coordinator runs inside a rank's process */
    int32_t global_rank;
    uint32_t pid;
    char host[64];
};

/* Where the coordinator's output goes. send() must not call back into the coordinator;
 * drop() closes the connection later (the coordinator has already forgotten it). */
struct ncg_coord_ops {
    void (*send)(void *arg, int conn, const struct ncg_msg *m);
    void (*drop)(void *arg, int conn);
    void *arg;
};

struct ncg_coord_stats {
    uint64_t verdicts; /* verdicts issued (each comm counts once per verdict) */
    uint64_t queries;  /* QUERY rounds started */
    uint64_t dropped;  /* connections dropped for bad token, protocol misuse or silence */
};

struct ncg_coord;

/* All functions below: one thread at a time (the caller serializes), never block; they
 * allocate (comm tables, query answers). */
struct ncg_coord *ncg_coord_new(const struct ncg_coord_params *p, const struct ncg_coord_ops *ops);
void ncg_coord_free(struct ncg_coord *co);
void ncg_coord_connected(struct ncg_coord *co, int conn, uint64_t now_ns);
/* A decoded message from conn. Before a valid HELLO, anything else drops the connection. */
void ncg_coord_message(struct ncg_coord *co, int conn, const struct ncg_msg *m, uint64_t now_ns);
/* The connection ended (EOF, error). Without a prior process GOODBYE this is RANK DIED. */
void ncg_coord_closed(struct ncg_coord *co, int conn, uint64_t now_ns);
/* Periodic work: liveness, LAG, RANK EXITED, starting comparison rounds, pings. Call at least
 * every interval_ms. */
void ncg_coord_tick(struct ncg_coord *co, uint64_t now_ns);
/* 1 once an allocation failed: from then on no verdict is issued, and the caller should stop
 * the checker (ncg_server_handle does: a SHUTDOWN with NCG_BYE_FAILED to every client). */
int ncg_coord_out_of_memory(const struct ncg_coord *co);
/* Connections that have not presented a valid HELLO yet, and the oldest of them (-1: none). */
int ncg_coord_unauthed(const struct ncg_coord *co, int *oldest);
/* The coordinator's process exits cleanly: tell every client (SHUTDOWN). */
void ncg_coord_shutdown(struct ncg_coord *co);
void ncg_coord_get_stats(const struct ncg_coord *co, struct ncg_coord_stats *st);

/* Runs a standalone coordinator in the calling thread (for `ncclguard coord`) until *stop
 * becomes nonzero: listens on listen_host:port (NULL or "" = all interfaces; port 0 =
 * ephemeral, printed), token_or_null as NCCLGUARD_TOKEN (hashed; NULL = no token). Reads
 * NCCLGUARD_INTERVAL_MS, _HEARTBEAT_TIMEOUT_S, _LAG_WARN_S, _LAG_ABORT_S from the environment.
 * Blocks (poll); returns 0, or -1 with err filled. Implemented in channel.c. */
int ncg_coord_serve(const char *listen_host, int port, const char *token_or_null,
                    volatile int *stop, char *err, size_t errlen);

/* The 64-bit token for a NCCLGUARD_TOKEN string (FNV-1a; never 0). Pure. */
uint64_t ncg_token_hash(const char *s);

#endif
