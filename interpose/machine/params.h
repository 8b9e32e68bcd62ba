/* The agent's timings and thresholds, built once from the configuration (ncg_agent_params_of,
 * called by the checker thread with ncg_cfg) and passed down to its state machines: no machine
 * reads the global configuration. One section per machine; each machine's header says what its
 * fields mean to it. All times in nanoseconds. */
#ifndef NCG_MACHINE_PARAMS_H
#define NCG_MACHINE_PARAMS_H

#include <stdint.h>

struct ncg_config;

struct ncg_agent_params {
    uint64_t interval_ns;  /* the report interval (NCCLGUARD_INTERVAL_MS) */
    uint64_t heartbeat_ns; /* a checker silent this long is lost (0: never) */
    /* the exit (exit_sm.h) */
    struct {
        int wait_release;        /* NCCLGUARD_EXIT_WAIT_S > 0: an abort waits for RELEASE */
        uint64_t release_bound;  /* the longest wait on a release: EXIT_WAIT_S + 2 s */
        uint64_t host_stay;      /* NCCLGUARD_HOST_STAY_S (0: no bound) */
        uint64_t clean_deadline; /* a clean exit gives up waiting for its links (0.6 s) */
        uint64_t bye_margin;     /* its GOODBYEs go at the latest this before it (0.2 s) */
        uint64_t register_wait;  /* ... or this long for a link that must register us (5 s) */
        uint64_t stay_say;       /* the host's stay says its line after this (1 s) */
        uint64_t stay_self;      /* ... and waits this long for its own goodbye (1 s) */
        uint64_t abort_flush;    /* a host's abort flushes its clients this long (1 s) */
        uint64_t abort_past;     /* ... and exits this long past it regardless (0.3 s) */
        uint64_t sd_read;        /* a deferred SHUTDOWN gets this long to be read (0.2 s) */
    } exit;
    /* the link (link_sm.h) */
    struct {
        uint64_t connect_timeout; /* a connect not done in this is lost (10 s) */
        uint64_t retry;           /* a lost standalone checker is retried this often (1 s) */
        uint64_t relay_retry;     /* a node relay's name: retried this often (0.1 s) */
        uint64_t relay_retry_new; /* ... in a link's first second (10 ms) */
        uint64_t relay_elect;     /* only LOCAL_RANK 0 becomes the node relay this long (1 s) */
        uint64_t tree_say;        /* an unreachable node relay is said after this (5 s) */
    } link;
};

/* The parameters of a configuration (pure: reads only *cfg). */
struct ncg_agent_params ncg_agent_params_of(const struct ncg_config *cfg);

#endif
