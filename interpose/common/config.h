/* Run-time configuration from NCCLGUARD_* environment variables (contract; config.c parses).
 * Parsing is pure: ncg_config_parse() takes a getenv-like lookup and a warning sink, so unit
 * tests cover every variable without touching the process environment. */
#ifndef NCG_CONFIG_H
#define NCG_CONFIG_H

#include <stdint.h>

enum ncg_action {
    NCG_ACTION_ABORT = 0, /* diagnostic, report, then _exit(NCG_EXIT_VERDICT) on every member */
    NCG_ACTION_WARN = 1,  /* diagnostic and report only (staging / diagnostic mode) */
    NCG_ACTION_FAIL = 2,  /* soft: fail the communicator so the framework raises its own error */
};

/* Exit status of a process ended by ncclguard's abort action (documented in README). */
#define NCG_EXIT_VERDICT 86

struct ncg_config {
    int enabled;                /* NCCLGUARD (default 1; 0 = pure pass-through) */
    int check;                  /* 0 when NCCLGUARD_COORD=off: record only, no side channel */
    enum ncg_action action;     /* NCCLGUARD_ACTION=abort|warn|fail */
    char coord[256];            /* NCCLGUARD_COORD=host:port ("" = zero-config from the id) */
    uint32_t interval_ms;       /* NCCLGUARD_INTERVAL_MS: check/report period (default 100) */
    double heartbeat_timeout_s; /* NCCLGUARD_HEARTBEAT_TIMEOUT_S (default 10) */
    double lag_warn_s;          /* NCCLGUARD_LAG_WARN_S (default 60) */
    double lag_abort_s;         /* NCCLGUARD_LAG_ABORT_S (default 0 = never act on lag) */
    char report_dir[256];       /* NCCLGUARD_REPORT_DIR (default "." ) */
    int shm;     /* NCCLGUARD_SHM=0: private mapping, invisible to the CLI (default 1) */
    int verbose; /* NCCLGUARD_VERBOSE=0|1|2 */
    int stacks;  /* NCCLGUARD_STACKS=0: no stack of the stuck thread in diagnostics (default 1) */
    char http[256]; /* NCCLGUARD_HTTP: status endpoint "host:port" (port 0: any), "" = off */
    /* hangs that are not desyncs (issue 10) */
    double stuck_warn_s;  /* NCCLGUARD_STUCK_WARN_S (default 60; 0 = no STUCK warning) */
    double stuck_abort_s; /* NCCLGUARD_STUCK_ABORT_S (default 0 = never an error) */
    int completion;       /* NCCLGUARD_COMPLETION: enum ncg_completion_cfg (default auto) */
    int diag; /* NCCLGUARD_DIAG=auto|full|short|quiet (enum ncg_diag_mode, default auto) */
    /* the relay tree (issue 11, docs/checker.md) */
    int tree;        /* NCCLGUARD_TREE: enum ncg_tree_cfg (default auto) */
    uint32_t fanout; /* NCCLGUARD_TREE_FANOUT: child relays per relay, 2..64 (default 16) */
    /* NCCLGUARD_EXIT_WAIT_S (default 5; 0 = exit at once): after an error verdict, how long
     * the checker holds every affected rank's exit for the slowest of them to print its part
     * and write its report (a launcher kills the rest at the first exit) */
    double exit_wait_s;
    /* NCCLGUARD_HOST_STAY_S (default 0 = no bound): how long at most the process hosting the
     * checker stays, at its clean exit, for the other processes it checks to leave (exit.c) */
    double host_stay_s;
    /* stragglers (SLOW, docs/checker.md "Stragglers") */
    int slow;              /* NCCLGUARD_SLOW=0: no samples, no SLOW warning (default 1) */
    uint32_t slow_sample;  /* NCCLGUARD_SLOW_SAMPLE: slots between samples on average (16) */
    uint32_t slow_window;  /* NCCLGUARD_SLOW_WINDOW: samples one decision covers (16) */
    double slow_share_pct; /* NCCLGUARD_SLOW_SHARE_PCT: step share lost to name a rank (5) */
    double slow_hold_s;    /* NCCLGUARD_SLOW_HOLD_S: how long the rule holds first (5) */
};

/* NCCLGUARD_TREE values: auto = the relay tree from NCG_TREE_AUTO_RANKS ranks on, when the
 * launcher names each process's node (LOCAL_RANK and LOCAL_WORLD_SIZE); on = whenever it does. */
enum ncg_tree_cfg { NCG_TREE_AUTO = 0, NCG_TREE_ON = 1, NCG_TREE_OFF = 2 };
#define NCG_TREE_AUTO_RANKS 1024

/* Which ranks print the full diagnostic block (calls, stacks); under an error verdict the others
 * print its headline, their own call and the report path; under a warning its headline alone
 * (agent/diag.c, docs/configuration.md). */
enum ncg_diag_mode {
    NCG_DIAG_AUTO = 0,  /* errors: the ranks the verdict is about, and one other member;
                           warnings: the ranks they name and the checker's process */
    NCG_DIAG_FULL = 1,  /* every rank */
    NCG_DIAG_SHORT = 2, /* no rank (the report holds everything): three lines on each */
    NCG_DIAG_QUIET = 3, /* as auto, but a warning prints nothing on the other ranks */
};

/* NCCLGUARD_COMPLETION values: how a call's completion is learned (interpose/shim/completion.h). */
enum ncg_completion_cfg { NCG_COMPL_AUTO = 0, NCG_COMPL_RETURN = 1, NCG_COMPL_EVENTS = 2 };

/* Lower bounds of the timeouts, in report intervals (NCCLGUARD_INTERVAL_MS), and the
 * checker's fixed ping period (relay.c): the heartbeat timeout must cover two pings. */
#define NCG_MIN_INTERVALS 5
#define NCG_PING_PERIOD_S 0.5

/* Looks a variable up; returns NULL when unset. */
typedef const char *(*ncg_getenv_fn)(const char *name, void *arg);
/* The ncg_getenv_fn of this process's environment: getenv(name), arg unused. Any thread that
 * getenv suits (no setenv meanwhile); no allocation. */
const char *ncg_env_process(const char *name, void *arg);
/* Receives one complete warning line (already prefixed "ncclguard: "). */
typedef void (*ncg_warn_fn)(const char *line, void *arg);

/* Fill cfg from the lookup; every bad value gives one warning naming the variable, the bad
 * value and the value used instead. Pure: any thread, no allocation, no I/O of its own. */
void ncg_config_parse(struct ncg_config *cfg, ncg_getenv_fn get, ncg_warn_fn warn, void *arg);

/* The defaults, what ncg_config_parse starts from (the one place they are written). Pure: any
 * thread, no allocation. */
void ncg_config_defaults(struct ncg_config *cfg);

/* The process-wide configuration, parsed once at the first NCCL call (shim init). */
extern struct ncg_config ncg_cfg;

/* This process's ranks as its launcher announced them. Each field takes the first variable of
 * its list that holds a whole number 0..INT32_MAX (others are passed over), in this order:
 *   global: RANK, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID
 *   local:  LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID
 *   world:  WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS
 * (torchrun's RANK first: under srun, SLURM_PROCID numbers the torchrun agents, not workers). */
struct ncg_launch_ranks {
    int32_t global, local, world; /* -1 when no variable of the list is set */
    /* local_world: LOCAL_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS */
    int32_t local_world;
    const char *global_var; /* the variable global came from (static string), or "" */
    const char *local_var;
};

/* Fills r from the lookup. Pure: any thread, no allocation, no I/O. */
void ncg_launch_ranks_parse(struct ncg_launch_ranks *r, ncg_getenv_fn get, void *arg);

/* This process's node in the relay tree: nodes are blocks of local_world consecutive global
 * ranks (torchrun's and mpirun's block placement), node = (global - local) / local_world, of
 * ceil(world / local_world). 0, or -1 when the launcher does not say (or the figures disagree:
 * local >= local_world, global - local not a multiple of it, global >= world). Pure. */
int ncg_tree_node(const struct ncg_launch_ranks *r, uint32_t *node, uint32_t *nnodes);

#endif
