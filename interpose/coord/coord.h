/* The coordinator: the state machine that compares the members' call streams per
 * communicator and issues verdicts. Pure-ish: it is fed decoded messages, connection events
 * and the time, and emits messages through callbacks; no sockets, no threads, no clock of its
 * own (unit-tested in tests/checker/t_unit.sh). channel.c runs it behind a TCP listener. */
#ifndef NCG_COORD_H
#define NCG_COORD_H

#include <stddef.h>
#include <stdint.h>
#include "verdict.h"
#include "wire.h"

struct ncg_coord_params {
    uint64_t token; /* 0: no token required (explicit NCCLGUARD_COORD without NCCLGUARD_TOKEN) */
    uint32_t interval_ms; /* clients' report period; paces pings and queries */
    double heartbeat_timeout_s;
    double lag_warn_s;
    double lag_abort_s;   /* 0: LAG stays a warning */
    double stuck_warn_s;  /* STUCK warning after this long (0: none) */
    double stuck_abort_s; /* STUCK becomes an error (0: never) */
    double exit_wait_s;   /* the exit release's bound (release.h; 0: released at once) */
    /* SLOW (straggler.h): all zero = NCCLGUARD_SLOW, _SLOW_WINDOW, _SLOW_SHARE_PCT,
     * _SLOW_HOLD_S (config.h) */
    uint8_t slow_off;
    uint32_t slow_window;
    double slow_share;  /* 0..1 */
    double slow_hold_s; /* how long the rule holds before a rank is named (0: at once) */
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
    /* Optional (NULL: silent): one line per event (a process joined or left, a verdict, a
     * refused connection), without prefix or newline; the standalone coordinator logs them. */
    void (*event)(void *arg, const char *line);
};

struct ncg_coord_stats {
    uint64_t verdicts; /* verdicts issued (each comm counts once per verdict) */
    uint64_t queries;  /* QUERY rounds started */
    uint64_t dropped;  /* connections dropped for bad token, protocol misuse or silence */
    uint64_t by_kind[NCG_V_KIND_MAX_]; /* verdicts issued per enum ncg_verdict_kind (warnings
                                          included) */
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
/* Communicators whose exit release (release.h) still waits for DONEs: the process hosting the
 * coordinator holds its own exit until none is left (or their deadlines passed). */
int ncg_coord_releases_waiting(const struct ncg_coord *co);
/* The coordinator's process exits cleanly: tell every client (SHUTDOWN). */
void ncg_coord_shutdown(struct ncg_coord *co);
/* For the SHUTDOWN of an embedded coordinator's process: the communicators without an error
 * verdict where a member left (GOODBYE), each with the lowest count a member left at; at most
 * cap. Returns how many were filled. Does not allocate. */
size_t ncg_coord_left(const struct ncg_coord *co, uint64_t *ids, uint64_t *counts, size_t cap);
void ncg_coord_get_stats(const struct ncg_coord *co, struct ncg_coord_stats *st);

/* ---- read-only view, for the status endpoint (http.c, metrics.c) ---- */

/* A client connection (one process) as the coordinator knows it. */
struct ncg_coord_conn_view {
    int conn;
    uint8_t authed, bye; /* said HELLO / said the process GOODBYE */
    uint32_t pid;
    int32_t global_rank;
    const char *host;
    double heartbeat_age_s; /* since its last frame (REPORTs are the heartbeat) */
    double connected_s;     /* since it connected */
};

/* One member (comm rank) of a communicator. */
struct ncg_coord_member_view {
    uint8_t state; /* 0 not registered yet, 1 active, 2 left (goodbye), 3 dead */
    int32_t global_rank;
    int conn;               /* -1 when none */
    uint64_t count;         /* collective calls issued, as last reported */
    double progress_age_s;  /* since its count last grew (-1: never seen) */
    double heartbeat_age_s; /* of its connection (-1: no connection) */
    double calls_per_s;     /* over the last window of at least 1 s (0 before the first) */
    uint32_t pid;
    const char *host;    /* "" when unknown */
    uint64_t done;       /* collective calls completed, as last reported (wire v2) */
    double report_age_s; /* since its counts were last reported (-1: never) */
    /* The collective (else p2p) call its process reported it blocked in (latest WAIT), or
     * NULL: the rank's last call while it hangs. Valid during the view callback only. */
    const struct ncg_wait_ent *wait;
    /* SLOW: the share of the step the other members lose waiting for this one over the latest
     * window of sampled slots (coord_slow.c); -1: no sample yet */
    double wait_share;
};

/* SLOW: the rank a communicator's members wait for (a SLOW warning is outstanding). */
struct ncg_coord_slow_view {
    int32_t rank; /* comm rank; -1: none named */
    int32_t global_rank;
    uint32_t pid;
    const char *host; /* "" when unknown; valid during the view callback only */
    double share;     /* of the step the others lose waiting for it */
    double since_s;   /* since its episode started */
    uint8_t device;   /* 1: its GPU is late (stream busy at issue), 0: its host */
};

struct ncg_coord_comm_view {
    uint64_t id;
    uint32_t nranks;
    uint64_t verified;                     /* slots proven equal on every member */
    uint8_t done;                          /* an error verdict ended its checking */
    uint8_t lag_warned;                    /* a LAG warning is outstanding */
    double progress_age_s;                 /* since any member's count last grew */
    const struct ncg_verdict *verdict;     /* its error verdict, or NULL */
    const struct ncg_coord_member_view *m; /* [nranks] */
    struct ncg_coord_slow_view slow;
};

struct ncg_coord_view_ops {
    void (*conn)(void *arg, const struct ncg_coord_conn_view *c);
    void (*comm)(void *arg, const struct ncg_coord_comm_view *c);
    void *arg;
};

/* Calls ops->conn for every connection, then ops->comm for every communicator (the views
 * live only during the call). Also advances each member's calls-per-second window. Same
 * thread as the other calls; never blocks; allocates a scratch array. */
void ncg_coord_view(struct ncg_coord *co, uint64_t now_ns, const struct ncg_coord_view_ops *ops);
const struct ncg_coord_params *ncg_coord_get_params(const struct ncg_coord *co);

/* Runs a standalone coordinator in the calling thread (for `ncclguard coord`) until *stop
 * becomes nonzero: listens on listen_host:port (NULL or "" = all interfaces; port 0 =
 * ephemeral, printed), token_or_null as NCCLGUARD_TOKEN (hashed; NULL = no token). Reads
 * NCCLGUARD_INTERVAL_MS, _HEARTBEAT_TIMEOUT_S, _LAG_WARN_S, _LAG_ABORT_S, _STUCK_WARN_S,
 * _STUCK_ABORT_S from the environment.
 * Blocks (poll); returns 0, or -1 with err filled. Implemented in channel.c. */
int ncg_coord_serve(const char *listen_host, int port, const char *token_or_null,
                    volatile int *stop, char *err, size_t errlen);
/* The same, also serving the status endpoint on http_spec ("[HOST:]PORT"; NULL = none). */
int ncg_coord_serve_http(const char *listen_host, int port, const char *token_or_null,
                         const char *http_spec, volatile int *stop, char *err, size_t errlen);

/* The 64-bit token for a NCCLGUARD_TOKEN string (FNV-1a; never 0). Pure. */
uint64_t ncg_token_hash(const char *s);

#endif
