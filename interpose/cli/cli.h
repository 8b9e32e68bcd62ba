/* Private header of the `ncclguard` command: the snapshot of every segment on this host (seg.c),
 * the per-communicator analysis (view.c, pure), output helpers (out.c) and the subcommands.
 * The CLI only ever reads segments (except `clean`), never writes into them, and needs nothing
 * from the job: it works while every thread of the job is stuck. */
#ifndef NCG_CLI_H
#define NCG_CLI_H

#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "clock.h"
#include "ncclguard/shm.h"

#define NCG_CLI_TAIL 8 /* newest collective records kept per member for outside comparison */
#define NCG_STATUS_FORMAT_VERSION 1
#define NCG_ALERT_FORMAT_VERSION 1
#define NCG_REPORT_MERGE_FORMAT_VERSION 1

/* Exit statuses shared by the subcommands (documented in docs/cli.md). */
#define NCG_CLI_OK 0
#define NCG_CLI_ALERT 1 /* watch: at least one alert; report: a verdict was found */
#define NCG_CLI_USAGE 2
#define NCG_CLI_ERROR 3 /* could not do the work (unreadable directory, bind failure...) */

/* What became of the process that owns a segment. */
enum ncg_live {
    NCG_LIVE_ALIVE = 0,   /* pid present with the recorded start time */
    NCG_LIVE_EXITED = 1,  /* the shim marked a clean exit */
    NCG_LIVE_DEAD = 2,    /* pid gone, zombie, or reused (start time differs) while not EXITED */
    NCG_LIVE_VERDICT = 3, /* alive, and a verdict is recorded in the segment */
};

/* One communicator slot of one segment, copied out (records read with the seqlock protocol). */
struct ncg_cli_member {
    int proc;        /* index into ncg_snap.procs */
    uint32_t slot;   /* comm slot index within the segment */
    uint32_t state;  /* enum ncg_comm_state */
    uint32_t origin; /* enum ncg_comm_origin */
    uint64_t comm_id, parent_id;
    int32_t rank, nranks;
    uint64_t coll_seq, p2p_seq, last_ns, created_ns;
    uint64_t coll_done, p2p_done;             /* completed (layout 2) */
    uint64_t tail_first;                      /* slot number of tail[0] */
    uint32_t ntail;                           /* tail[0..ntail) cover slots tail_first.. */
    uint8_t tail_ok[NCG_CLI_TAIL];            /* 0: torn or overwritten, not usable */
    struct ncg_shm_record tail[NCG_CLI_TAIL]; /* collective records, oldest first */
    int p2p_ok;
    struct ncg_shm_record last_p2p; /* newest p2p record when p2p_ok */
    /* The latest SLOW warning this member received (layout 4, ncclguard/shm.h's slow_*);
     * slow_gen 0: none, or torn on every try */
    uint32_t slow_gen;
    uint64_t slow_since_ns;
    int32_t slow_rank, slow_grank;
    uint32_t slow_pid;
    uint16_t slow_share_bp;
    uint8_t slow_side;
};

/* One readable segment (one guarded process). */
struct ncg_cli_proc {
    char path[PATH_MAX];
    uid_t owner;
    int32_t pid;
    uint32_t state; /* enum ncg_proc_state as read */
    uint64_t start_ticks;
    int32_t global_rank, local_rank, world_size;
    uint32_t ncomms, comms_dropped, verdict_kind;
    uint64_t heartbeat_ns, verdict_comm;
    char hostname[64], cmdline[192], verdict_text[256], report_path[256];
    char bus_id[32];                 /* its CUDA device's PCI bus id (layout 3), "" unknown */
    int gpu_ok;                      /* set by ncg_nvml_fill: the fields below are valid */
    unsigned gpu_util;               /* percent */
    double gpu_power_w, gpu_limit_w; /* board power, enforced limit (0 unknown) */
    enum ncg_live live;
    const char *live_why;       /* static text: "pid gone", "pid reused", "zombie", "" (alive),
                                   NCG_LIVE_STOPPED (alive, stopped) */
    uint64_t activity_ns;       /* newest of created/heartbeat/last call times (CLOCK_MONOTONIC) */
    int first_member, nmembers; /* range in ncg_snap.members */
};

/* A file that looks like a segment but could not be used. */
struct ncg_cli_skip {
    char path[PATH_MAX];
    char why[96];
    int32_t pid; /* from the file name, or 0 */
};

/* A communicator whose members a relay tree's endpoint lists only in part (members_partial):
 * the aggregates it gives over every rank. */
struct ncg_snap_agg {
    uint64_t comm_id;
    int32_t nranks, nrows, active; /* its size; the members listed; ranks active */
    uint64_t issued_min, issued_max, done_min, done_max;
    char slowest[96]; /* "5,9" or "" */
};

/* A communicator's rank that a SLOW warning names: remote, /status's "slow" (while the episode
 * lasts); here, the latest SLOW warning the members on this host received (its end is not sent
 * to them: it stays until the next one). */
struct ncg_snap_slow {
    uint64_t comm_id;
    int32_t rank, global_rank;
    uint32_t pid;          /* 0 unknown */
    char host[64];         /* "" unknown (here: the named rank is not on this host) */
    double share, since_s; /* of the step the others lose; since the episode started */
    int device;            /* 1: late on its GPU, 0: on its host */
    int member;            /* here: a member holding the warning (index into members); -1 */
};

struct ncg_snap {
    uint64_t now_ns; /* CLOCK_MONOTONIC at the scan (same clock as the segments) */
    double now_unix;
    char dir[PATH_MAX];
    struct ncg_cli_proc *procs;
    int nprocs;
    struct ncg_cli_member *members;
    int nmembers;
    struct ncg_cli_skip *skips;
    int nskips;
    int remote; /* 1: the whole job through its checker's /status (remote.c), not this host */
    struct ncg_snap_agg *aggs; /* remote, from a relay tree's endpoint */
    int naggs;
    struct ncg_snap_slow *slows; /* remote: the ranks SLOW names, one per comm at most */
    int nslows;
    int gpus; /* 1: ncg_nvml_fill ran and NVML answered: show the GPU columns */
};

/* Filters applied while scanning. */
struct ncg_scan_opts {
    const char *dir;   /* default /dev/shm */
    const char *match; /* keep only processes whose cmdline contains this, or NULL */
};

/* Reads every ncclguard segment under opts->dir into *s. Any thread; blocks on file I/O only;
 * allocates (free with ncg_snap_free). Returns 0, or -errno when the directory is unreadable. */
int ncg_snap_take(struct ncg_snap *s, const struct ncg_scan_opts *opts);
/* ncg_snap_take for a subcommand: when the directory is unreadable, also says so on stderr
 * ("ncclguard: cannot read DIR: why"). Same threads, blocking and allocation. */
int ncg_cli_snap_take(struct ncg_snap *s, const struct ncg_scan_opts *opts);
void ncg_snap_free(struct ncg_snap *s);

/* Reads record `idx` of a ring with the seqlock protocol (retries a few times). Returns 0, or
 * -EAGAIN (kept being rewritten) / -ENOENT (overwritten by a newer index or never written).
 * Any thread, no allocation; `ring` points into a mapped segment. */
int ncg_cli_read_record(const struct ncg_shm_record *ring, uint32_t ring_size, uint64_t idx,
                        struct ncg_shm_record *out);

/* Process liveness from /proc: pid present, not a zombie, start time equal (when known).
 * Sets *why to a static string (for an alive process "", or NCG_LIVE_STOPPED when it is
 * stopped by a signal or a debugger). Any thread, no allocation. */
#define NCG_LIVE_STOPPED "stopped (SIGSTOP or a debugger)"
enum ncg_live ncg_cli_pid_live(int32_t pid, uint64_t start_ticks, const char **why);

/* ---- per-communicator analysis (view.c): pure, plain data in and out ---- */

#define NCG_VIEW_MAX_CALLS 4 /* distinct calls reported for one mismatching slot */

struct ncg_view_call {
    struct ncg_shm_record rec; /* the fingerprint fields of one distinct call */
    int nmembers;
    int members[64]; /* indices into the snapshot's members, first 64 */
};

struct ncg_view_comm {
    uint64_t comm_id;
    int32_t nranks;
    int *members; /* indices into snap->members, sorted by comm rank */
    int nmembers;
    int nactive;               /* members whose process is alive and comm is ACTIVE */
    uint64_t min_seq, max_seq; /* over active members; 0/0 when none */
    uint64_t last_ns;          /* newest call time among active members */
    int nbehind;               /* active members at min_seq while another is ahead */
    /* Divergence visible from this host: two members issued different calls at one slot. */
    int mismatch; /* 1: fields differ at mismatch_slot; 2: chained digests differ */
    uint64_t mismatch_slot;
    int ncalls;
    struct ncg_view_call calls[NCG_VIEW_MAX_CALLS];
};

struct ncg_view {
    struct ncg_view_comm *comms;
    int ncomms;
};

/* Groups the snapshot's members by communicator and computes who is behind and any mismatch.
 * Pure apart from allocation (free with ncg_view_free). Returns 0 or -ENOMEM. */
int ncg_view_build(const struct ncg_snap *s, struct ncg_view *v);
void ncg_view_free(struct ncg_view *v);
/* 1 when the member's process is alive (or alive with a verdict) and its comm is ACTIVE. */
int ncg_view_member_active(const struct ncg_snap *s, int m);
/* 1 when member m is behind in c (at min_seq while another active member is ahead). */
int ncg_view_is_behind(const struct ncg_snap *s, const struct ncg_view_comm *c, int m);
/* 1 when member m issued a minority call at c's mismatching slot (the culprit's side: not the
 * call most members issued; with a tie, every call is a minority). Pure. */
int ncg_view_is_odd(const struct ncg_view_comm *c, int m);

/* 1 when process p recorded a verdict and its pid is gone: ended by ncclguard's action (abort,
 * exit status 86), or killed later when the action let it go on; not a crash. Pure. */
static inline int ncg_cli_ended_by_verdict(const struct ncg_cli_proc *p)
{
    return p->state == NCG_PROC_VERDICT && p->live == NCG_LIVE_DEAD;
}

/* The processes of a snapshot that recorded one verdict (view.c). */
struct ncg_vgroup {
    uint64_t comm; /* verdict_comm */
    uint32_t kind; /* verdict_kind */
    int *procs;    /* indices into snap->procs: lowest global rank first (then comm rank, pid) */
    int nprocs;
    int nended; /* of those, ended by the verdict (ncg_cli_ended_by_verdict) */
};

/* Groups the processes in VERDICT state by (verdict_comm, verdict_kind), and by verdict_text
 * too with by_text; groups in order of their first process. Pure apart from allocation: sets
 * *out (free with ncg_vgroups_free) and returns the number of groups, or -ENOMEM. */
int ncg_vgroups_build(const struct ncg_snap *s, int by_text, struct ncg_vgroup **out);
void ncg_vgroups_free(struct ncg_vgroup *g, int n);
/* Comm rank of process pi in communicator comm, or -1 when it has no record of it. Pure. */
int ncg_cli_proc_comm_rank(const struct ncg_snap *s, int pi, uint64_t comm);
/* The known ranks of g's processes, sorted, into out[g->nprocs]: global ranks, or with comm
 * set their ranks in the verdict's communicator. Returns how many are known. Pure. */
int ncg_vgroup_ranks(const struct ncg_snap *s, const struct ncg_vgroup *g, int comm, int *out);
/* Where g's reports are: the one report's path for a single process, else the directories of
 * the report paths ("DIR" or "DIR1, DIR2"); "" when none was written. Pure. */
void ncg_vgroup_reports(const struct ncg_snap *s, const struct ncg_vgroup *g, char *buf,
                        size_t len);
/* One line for g: "verdict on ranks 0-15 (16 processes on this host): <verdict text>; reports
 * in DIR" ("ranks 8-15 (comm ranks 0-7; 8 processes ...)" when they differ). Pure. */
void ncg_vgroup_fmt(char *buf, size_t len, const struct ncg_snap *s, const struct ncg_vgroup *g);

/* ---- names and formatting (out.c): pure; any thread, never block, no allocation (the
 * FILE writers block only on their stream) ---- */
const char *ncg_cli_func_name(unsigned f);
const char *ncg_cli_dtype_name(unsigned d);
const char *ncg_cli_redop_name(unsigned r);
const char *ncg_cli_live_name(enum ncg_live l);
const char *ncg_cli_verdict_name(unsigned kind);
const char *ncg_cli_comm_state_name(unsigned st);
const char *ncg_cli_origin_name(unsigned o);
/* "AllReduce(count=1, float32, sum)" into buf. */
void ncg_cli_fmt_call(char *buf, size_t len, const struct ncg_shm_record *r);
/* Writes s as a JSON string literal (quotes included). */
void ncg_cli_json_str(FILE *f, const char *s);
/* "rank 5 (global rank 5, pid 123 on node1) is the one the others wait for: they lose 14.5% of
 * the step, for 12 s, late on its host" into buf (the unknown parts left out). */
void ncg_cli_fmt_slow(char *buf, size_t len, const struct ncg_snap_slow *w);
/* Compact list "0-2,4-15" of sorted ints into buf. */
void ncg_cli_fmt_ranks(char *buf, size_t len, const int *v, int n);
/* Sorts v[0..n) ascending, in place (for ncg_cli_fmt_ranks). */
void ncg_cli_sort_ints(int *v, int n);
/* Parses a non-negative number of seconds ("2", "0.5"); returns 0 or -1. */
int ncg_cli_parse_secs(const char *s, double *out);
/* The newest record of member m (collective or p2p), or NULL. */
const struct ncg_shm_record *ncg_cli_member_last(const struct ncg_cli_member *m, int *is_p2p);

/* ---- the job through its checker's status endpoint (remote.c) ---- */

#define NCG_JOB_MAX_BODY (64u << 20)  /* largest /status accepted (1,024 ranks: ~1 MiB) */
#define NCG_JOB_STATUS_READ_VERSION 1 /* the /status version this CLI reads */
#define NCG_JOB_TIMEOUT_S 5.0         /* connect + answer */

struct ncg_job_src {
    char url[512]; /* "http://HOST:PORT" */
    char host[256], port[16];
    char token[256]; /* bearer, "" for none */
};
struct ncg_http_resp {
    int status;
    char *body; /* NUL-terminated, malloc'ed */
    size_t len;
};
struct ncg_json;

/* spec is "http://HOST:PORT" or a job file (ncclguard-job.<host>.<pid>.json); the token is
 * token, else $NCCLGUARD_TOKEN, else the job file's. 0 or -errno with err filled. Caller
 * thread; reads the file. */
int ncg_job_open(const char *spec, const char *token, struct ncg_job_src *j, char *err,
                 size_t errlen);
/* GET path with the bearer token; the whole exchange within timeout_s, the body at most
 * max_body bytes (-EFBIG). 0 with r filled (free r->body), or -errno with err filled
 * (-ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH, -EBADMSG...). Blocks; allocates. */
int ncg_http_get(const struct ncg_job_src *j, const char *path, double timeout_s, size_t max_body,
                 struct ncg_http_resp *r, char *err, size_t errlen);
/* GET /status and parse it: 0 with *doc set (ncg_cli_json_free) and, when raw is not NULL,
 * *raw the body as received (free), or -errno with err filled: -EACCES for 401, -EBADMSG for
 * malformed JSON or another format. Blocks; allocates. */
int ncg_job_fetch(const struct ncg_job_src *j, double timeout_s, struct ncg_json **doc, char **raw,
                  char *err, size_t errlen);
/* The /status document as a snapshot (remote = 1): a process per registered member, its
 * last call (when blocked) as its one tail record, verdicts on every member's process.
 * Pure apart from allocation (ncg_snap_free); 0 or -ENOMEM. */
int ncg_job_snap(const struct ncg_json *doc, const char *url, struct ncg_snap *s);

/* ---- GPUs (nvml.c): NVML loaded at run time, never linked ---- */

/* Fills gpu_* of every process whose bus id NVML knows. Returns 1 when NVML is usable, else 0
 * with why filled (absent, no bus ids). Main thread; loads NVML once; blocks in NVML. */
int ncg_nvml_fill(struct ncg_snap *s, char *why, size_t len);
/* "100% 62/700W", "-" when unknown. Pure. */
void ncg_cli_fmt_gpu(char *buf, size_t len, const struct ncg_cli_proc *p);

/* ---- subcommands: main thread only; they block (sleep, file I/O, poll), allocate, and
 * return the process exit status ---- */
int ncg_cmd_status(int argc, char **argv);
int ncg_cmd_watch(int argc, char **argv);
int ncg_cmd_clean(int argc, char **argv);
int ncg_cmd_coord(int argc, char **argv);
int ncg_cmd_report(int argc, char **argv);
int ncg_cmd_dump(int argc, char **argv); /* dump.c */
/* report.c's text output, continued (dumpview.c): the dumps of DIR grouped, and the Python
 * frames of the verdict reports grouped. Returns the number of dumps. Allocates. */
int ncg_report_dumps(const char *dir);

/* Removes the segments of processes that are gone. `grace_s`: keep those active within that
 * many seconds; `implicit`: also keep any whose communicator still has a live member here
 * (its record explains a hang). Prints one line per removal unless quiet. Returns the number
 * removed (or would remove, with dry_run). Caller thread; blocks on file I/O. */
int ncg_cli_clean_dead(const struct ncg_snap *s, double grace_s, int dry_run, int implicit,
                       int quiet);

/* Matches argv[*i] against --name VALUE or --name=VALUE: returns 1 and sets *val (advancing *i
 * past a separate value), 0 when argv[*i] is something else, -1 when the value is missing. */
int ncg_cli_opt(int argc, char **argv, int *i, const char *name, const char **val);
/* The last of status', watch's and clean's options: the scan filters they share (--dir,
 * --match), else an unexpected argument. Returns 0 when argv[*i] was a filter (o updated), else
 * the exit status after printing the usage error (a filter's missing value, or the unexpected
 * argument). Caller thread; no allocation. */
int ncg_cli_scan_last(int argc, char **argv, int *i, struct ncg_scan_opts *o, const char *cmd,
                      const char *usage);
/* After status' and watch's options: --job (job, not NULL) reads no segments, so neither --dir
 * nor --match of o; then opens it into *src (ncg_job_open). Returns 0, or the exit status after
 * saying why on stderr (usage error, job file unreadable). Caller thread; reads the file. */
int ncg_cli_job_open(const char *job, const char *token, const struct ncg_scan_opts *o,
                     const char *cmd, const char *usage, struct ncg_job_src *src);
/* Set by SIGINT and SIGTERM once ncg_cli_catch_stop ran: the subcommand's loop ends. */
extern volatile sig_atomic_t ncg_cli_stop;
/* Catches SIGINT and SIGTERM into ncg_cli_stop (no SA_RESTART: a sleep or poll is cut short).
 * Main thread; no allocation. */
void ncg_cli_catch_stop(void);
/* 1 when argv[i] is -h or --help. */
int ncg_cli_is_help(const char *a);
/* The first arm of a subcommand's option loop: when a is -h or --help, prints usage on stdout
 * and returns 1 (the subcommand then exits 0); else 0. Caller thread; no allocation. */
int ncg_cli_help(const char *a, const char *usage);

/* Usage error: prints "ncclguard: <msg>" and the usage text on stderr; returns NCG_CLI_USAGE. */
int ncg_cli_usage_error(const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
