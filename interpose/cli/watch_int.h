/* Private header of `ncclguard watch` (watch*.c): the alert, the state one run carries from
 * scan to scan, and what the files share. watch.c the loop, watch_args.c the options,
 * watch_alert.c how an alert leaves (line, JSON, --exec hook), watch_scan.c the snapshot's own
 * alerts (died, mismatch, stall, stuck), watch_verdict.c the verdicts and the mismatches held
 * for them, watch_job.c --job (rate, unreachable), watch_slow.c SLOW's rank, watch_power.c the
 * power signature. Every
 * function here: main thread only. */
#ifndef NCG_WATCH_INT_H
#define NCG_WATCH_INT_H

#include "cli.h"

#define NCG_ALERT_MAXR 256 /* ranks listed in one alert's JSON arrays */
#define NCG_SETTLE_S 0.2   /* time between scans while a verdict alert waits */

/* One alert, as the line, the JSON object and the hook's variables carry it. */
struct ncg_alert {
    const char *kind;
    int32_t pid, rank, comm_rank;
    int have_comm;
    uint64_t comm;
    long long slot; /* -1 when not about one slot */
    char segment[PATH_MAX];
    char detail[2048];
    char ranks_txt[256]; /* compact global ranks ("0-15"), "" when unknown */
    int group;           /* 1: a verdict alert for several processes (the fields below) */
    int nprocs, nranks, ncomm_ranks;
    int ranks[NCG_ALERT_MAXR], comm_ranks[NCG_ALERT_MAXR], pids[NCG_ALERT_MAXR];
    char reports[512];
};

/* A verdict seen but not raised yet: it waits until no more processes record it. */
struct ncg_pending {
    char key[64];
    int nprocs; /* processes that recorded it at the last scan */
    int scans;
    int present; /* seen in the current scan */
    struct ncg_alert a;
    int have_culprit; /* a local mismatch on the comm named its odd rank: the alert's subject */
    int32_t cpid, crank, ccomm_rank;
    char csegment[PATH_MAX];
};

/* A local mismatch held back for a moment: the checker's verdict on the same communicator
 * usually follows within a fraction of a second, and the incident then gets one alert (the
 * verdict, naming the mismatch's odd rank). Raised alone when no verdict comes. */
struct ncg_held {
    char key[128];
    uint64_t comm;
    int scans;
    struct ncg_alert a;
};

/* The job's throughput (--job): samples of its call total, newest last, over the window. */
#define NCG_RATE_SAMPLES 4096
struct ncg_rate {
    double floor; /* --min-rate; 0: off */
    double t[NCG_RATE_SAMPLES];
    double calls[NCG_RATE_SAMPLES];
    int n;
    int alerted;      /* raised for the current incident: re-armed once the rate is back */
    double fail_t0;   /* first failed poll of the current run of failures, 0: none */
    int fail_alerted; /* an unreachable alert was raised for that run */
    int finished;     /* the last answer had no active member */
};

/* The SLOW episode alerted last on a communicator (watch_slow.c). */
struct ncg_slow_seen {
    uint64_t comm;
    int32_t rank;     /* the comm rank named */
    double alerted_s; /* when its alert was raised, CLOCK_MONOTONIC seconds */
    int present;      /* named in the current scan */
};

/* The state one run of watch carries from scan to scan: the options it alerts by, the alerts
 * raised, and those waiting. */
struct ncg_watch {
    double stall_s;
    int json;
    const char *exec;
    char host[64];
    char **seen; /* alert keys already raised */
    int nseen, capseen;
    int alerts;
    int hooks_running;
    struct ncg_pending *pending;
    int npending, cappending;
    struct ncg_held *held;
    int nheld, capheld;
    struct ncg_rate rate;
    const char *url;         /* --job */
    double pw_util, pw_idle; /* the power signature's thresholds: percent, fraction of limit */
    int pw_alerted;          /* raised for the current incident; re-armed once none shows it */
    struct ncg_slow_seen *slow;
    int nslow, capslow;
};

/* What the options set beyond the watch state. */
struct ncg_watch_opts {
    struct ncg_scan_opts scan; /* --dir, --match */
    double interval;
    int once, exit_on_alert, clean;
    const char *job;        /* --job, NULL: the segments of this host */
    struct ncg_job_src src; /* --job opened (w->url points into it) */
};

/* ---- watch_args.c ---- */
/* Parses watch's arguments into w (zeroed first, then the defaults and the options) and o, and
 * opens --job. Returns -1 when watch is to run, else its exit status (--help printed, usage
 * error, job file unreadable). Reads the job file; no allocation. */
int ncg_watch_args(int argc, char **argv, struct ncg_watch *w, struct ncg_watch_opts *o);

/* ---- watch_alert.c ---- */
/* 1 when key was raised already. Pure. */
int ncg_watch_was_seen(const struct ncg_watch *w, const char *key);
/* Returns 1 the first time key is seen (and records it). Allocates. */
int ncg_watch_first_time(struct ncg_watch *w, const char *key);
/* An alert of that kind about process p (its pid, global rank, segment), its rank comm_rank in
 * the alert's communicator (-1: none) and slot (-1: not about one slot). Pure. */
void ncg_watch_subject(struct ncg_alert *a, const char *kind, const struct ncg_cli_proc *p,
                       int32_t comm_rank, long long slot);
/* Raises a: the line or JSON object on stdout, the --exec hook started (forks). Allocates. */
void ncg_watch_emit(struct ncg_watch *w, struct ncg_alert *a);
/* Reaps the finished hooks; block: waits for all of them. */
void ncg_watch_reap_hooks(struct ncg_watch *w, int block);

/* ---- watch_scan.c: raise (or hold) alerts; allocate (the seen keys) ---- */
void ncg_watch_scan_procs(struct ncg_watch *w, const struct ncg_snap *s);
void ncg_watch_scan_comms(struct ncg_watch *w, const struct ncg_snap *s, const struct ncg_view *v);

/* ---- watch_verdict.c: allocate ---- */
/* Holds the mismatch alert a (under key) for the verdict on its comm, or gives it to the verdict
 * pending or raised on it; raised alone when it cannot be held. */
void ncg_watch_hold_mismatch(struct ncg_watch *w, const char *key, const struct ncg_alert *a);
/* Held mismatches whose verdict did not come: raised alone. all: every one (watch ends). */
void ncg_watch_flush_held(struct ncg_watch *w, int all);
/* Raises pending verdict i and drops it from the pending ones. */
void ncg_watch_raise_pending(struct ncg_watch *w, int i);
/* Notes the verdicts of s; raises those settled (or no longer seen). */
void ncg_watch_scan_verdicts(struct ncg_watch *w, const struct ncg_snap *s);

/* ---- watch_job.c ---- */
/* One poll of --job: 0 with *s filled, 1 after a failure (handled) or on the first answer after
 * failures (not judged), -1 to stop with an error printed, -2 to stop: the job ended. Blocks
 * (NCG_JOB_TIMEOUT_S at most); allocates. */
int ncg_watch_job_poll(struct ncg_watch *w, const struct ncg_job_src *j, int first,
                       struct ncg_snap *s);
/* Samples the job's call total in s for the throughput floor; may raise the rate alert. */
void ncg_watch_job_rate(struct ncg_watch *w, const struct ncg_snap *s, const struct ncg_view *v);

/* ---- watch_slow.c ---- */
/* The slow alerts of s (its slows): once per episode, again when the named rank changes.
 * Allocates. */
void ncg_watch_scan_slow(struct ncg_watch *w, const struct ncg_snap *s);

/* ---- watch_power.c ---- */
/* The power signature (NVML figures in s): one alert for all the ranks showing it. */
void ncg_watch_scan_power(struct ncg_watch *w, const struct ncg_snap *s);

#endif
