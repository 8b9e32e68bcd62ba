/* NCCLGUARD_* environment parsing (implements config.h). Pure: values come from a lookup
 * callback and warnings go to a sink, so tests/shim/config_test.c covers every variable. An
 * empty value counts as unset; every other bad value keeps the default and warns once. */
#include "config.h"
#include "hostport.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The defaults, once: the initial value of ncg_cfg and the start of every parse. */
#define NCG_CONFIG_DEFAULTS                                                                        \
    {                                                                                              \
        .enabled = 1, .check = 1, .action = NCG_ACTION_ABORT, .coord = "", .interval_ms = 100,     \
        .heartbeat_timeout_s = 10.0, .lag_warn_s = 60.0, .lag_abort_s = 0.0, .report_dir = ".",    \
        .shm = 1, .verbose = 0, .stacks = 1, .stuck_warn_s = 60.0, .stuck_abort_s = 0.0,           \
        .completion = NCG_COMPL_AUTO, .tree = NCG_TREE_AUTO, .fanout = 16, .exit_wait_s = 5.0,     \
        .slow = 1, .slow_sample = 16, .slow_window = 16, .slow_share_pct = 5.0,                    \
        .slow_hold_s = 5.0, .host_stay_s = 0.0,                                                    \
    }

struct ncg_config ncg_cfg = NCG_CONFIG_DEFAULTS;

void ncg_config_defaults(struct ncg_config *cfg)
{
    *cfg = (struct ncg_config)NCG_CONFIG_DEFAULTS;
}

struct ncg_parse {
    ncg_getenv_fn get;
    ncg_warn_fn warn;
    void *arg;
};

/* "ncclguard: NAME="value": why; using used" (value shown printable, truncated at 64 bytes). */
static void ncg_bad(const struct ncg_parse *p, const char *name, const char *val, const char *why,
                    const char *used)
{
    char shown[72];
    size_t i = 0;
    for (; val[i] && i < 64; i++)
        shown[i] = (val[i] >= 0x20 && val[i] < 0x7f && val[i] != '"') ? val[i] : '?';
    shown[i] = 0;
    char line[384];
    snprintf(line, sizeof line, "ncclguard: %s=\"%s%s\": %s; using %s", name, shown,
             val[i] ? "..." : "", why, used);
    if (p->warn)
        p->warn(line, p->arg);
}

static const char *ncg_val(const struct ncg_parse *p, const char *name)
{
    const char *v = p->get ? p->get(name, p->arg) : NULL;
    return (v && *v) ? v : NULL;
}

/* Boolean: 0/1, also off/on, false/true, no/yes. */
static void ncg_parse_bool(const struct ncg_parse *p, const char *name, int *out)
{
    const char *v = ncg_val(p, name);
    if (!v)
        return;
    static const char *const yes[] = {"1", "on", "true", "yes"}, *const no[] = {"0", "off", "false",
                                                                                "no"};
    for (unsigned i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i])) {
            *out = 1;
            return;
        }
        if (!strcasecmp(v, no[i])) {
            *out = 0;
            return;
        }
    }
    ncg_bad(p, name, v, "expected 0 or 1", *out ? "1" : "0");
}

/* A number: whole (digits only, within lo..hi) or seconds (finite, above lo, or at least lo
 * unless lo_open, and at most hi: a week). A bad value is said and leaves *out as it was. */
static void ncg_parse_num(const struct ncg_parse *p, const char *name, int whole, double lo,
                          int lo_open, double hi, double *out)
{
    const char *v = ncg_val(p, name);
    if (!v)
        return;
    char *end;
    errno = 0;
    double x = whole ? (double)strtoull(v, &end, 10) : strtod(v, &end);
    char used[32], why[96];
    snprintf(used, sizeof used, whole ? "%.0f" : "%g", *out);
    if (errno || end == v || *end || (whole ? *v == '-' || *v == '+' : !isfinite(x))) {
        ncg_bad(p, name, v,
                whole               ? "not a whole number"
                : hi == 7 * 86400.0 ? "not a number of seconds"
                                    : "not a number",
                used);
        return;
    }
    if (whole)
        snprintf(why, sizeof why, "out of range %.0f..%.0f", lo, hi);
    else if (x > hi && hi == 7 * 86400.0)
        snprintf(why, sizeof why, "longer than a week");
    else if (x > hi)
        snprintf(why, sizeof why, "more than %g", hi);
    else
        snprintf(why, sizeof why, "must be %s %g", lo_open ? ">" : ">=", lo);
    if ((lo_open ? x <= lo : x < lo) || x > hi)
        ncg_bad(p, name, v, why, used);
    else
        *out = x;
}

static void ncg_parse_uint(const struct ncg_parse *p, const char *name, uint32_t lo, uint32_t hi,
                           uint32_t *out)
{
    double x = *out; /* exact: a uint32_t, and any whole number read within lo..hi */
    ncg_parse_num(p, name, 1, lo, 0, hi, &x);
    *out = (uint32_t)x;
}

static void ncg_parse_secs(const struct ncg_parse *p, const char *name, double lo, int lo_open,
                           double *out)
{
    ncg_parse_num(p, name, 0, lo, lo_open, 7 * 86400.0, out);
}

/* The timeouts against what works: a heartbeat timeout shorter than a few report intervals, or
 * than two of the checker's pings (NCG_PING_PERIOD_S), is read by both ends as "we were
 * suspended" on every loop, which turns liveness off; a LAG threshold below a few intervals
 * fires between two reports of a healthy job. A bad value falls back to its default (raised to
 * the minimum when a long NCCLGUARD_INTERVAL_MS needs it). */
static double ncg_dmax(double a, double b)
{
    return a > b ? a : b; /* no libm for the CLI's static link */
}

/* A period *x below min goes up to def, or to min when that is higher, said on name (why) when
 * name is set. 1 when it was raised. */
static int ncg_raise(const struct ncg_parse *p, const char *name, const char *why, double min,
                     double def, double *x)
{
    if (*x >= min)
        return 0;
    *x = ncg_dmax(def, min);
    char used[64];
    snprintf(used, sizeof used, "%g", *x);
    const char *v = ncg_val(p, name);
    if (v)
        ncg_bad(p, name, v, why, used);
    return 1;
}

static void ncg_check_periods(const struct ncg_parse *p, struct ncg_config *cfg)
{
    const struct ncg_config def = NCG_CONFIG_DEFAULTS;
    double iv = cfg->interval_ms / 1000.0;
    double hb_min = ncg_dmax(NCG_MIN_INTERVALS * iv, 2 * NCG_PING_PERIOD_S);
    double lag_min = NCG_MIN_INTERVALS * iv;
    char why[160], used[64];
    const char *v;
    snprintf(why, sizeof why, "must be at least %g (%d report intervals and 1 s)", hb_min,
             NCG_MIN_INTERVALS);
    /* an unset timeout made too short by the interval: said on the interval */
    if (ncg_raise(p, "NCCLGUARD_HEARTBEAT_TIMEOUT_S", why, hb_min, def.heartbeat_timeout_s,
                  &cfg->heartbeat_timeout_s) &&
        !ncg_val(p, "NCCLGUARD_HEARTBEAT_TIMEOUT_S") && (v = ncg_val(p, "NCCLGUARD_INTERVAL_MS"))) {
        snprintf(why, sizeof why, "the heartbeat timeout must be at least %d intervals",
                 NCG_MIN_INTERVALS);
        snprintf(used, sizeof used, "NCCLGUARD_HEARTBEAT_TIMEOUT_S=%g", cfg->heartbeat_timeout_s);
        ncg_bad(p, "NCCLGUARD_INTERVAL_MS", v, why, used);
    }
    snprintf(why, sizeof why, "must be at least %g (%d report intervals)", lag_min,
             NCG_MIN_INTERVALS);
    ncg_raise(p, "NCCLGUARD_LAG_WARN_S", why, lag_min, def.lag_warn_s, &cfg->lag_warn_s);
    if (cfg->lag_abort_s > 0 && cfg->lag_abort_s < lag_min) {
        snprintf(why, sizeof why, "must be 0 (never) or at least %g (%d report intervals)", lag_min,
                 NCG_MIN_INTERVALS);
        if ((v = ncg_val(p, "NCCLGUARD_LAG_ABORT_S")))
            ncg_bad(p, "NCCLGUARD_LAG_ABORT_S", v, why, "0");
        cfg->lag_abort_s = 0;
    }
}

/* host:port or [v6addr]:port with 1 <= port <= 65535; "off" disables the side channel. */
static int ncg_coord_ok(const char *v, const char **why)
{
    struct ncg_hostport hp;
    int rc = ncg_hostport_parse(v, NCG_HP_BARE_V6, &hp);
    if (rc != 0)
        *why = rc == NCG_HP_ENOCOLON   ? "expected host:port or off"
               : rc == NCG_HP_EBRACKET ? "expected [ipv6]:port"
                                       : "port must be 1..65535";
    return rc == 0;
}

/* NCCLGUARD_HTTP: "PORT", ":PORT", "HOST:PORT" or "[V6]:PORT" into out as "HOST:PORT",
 * loopback when no host is given. One meaning per spelling: "0" and "off" turn the endpoint off
 * (as 0 does for every NCCLGUARD_* switch), so a bare PORT is 1..65535 and a free port is asked
 * for with a colon, ":0" or "HOST:0". 0 + why if bad. */
static int ncg_http_spec(const char *v, char *out, size_t cap, const char **why)
{
    *why = "expected [host:]port (:0 picks a free port), or 0 or off";
    if (!strcasecmp(v, "off") || !strcmp(v, "0"))
        return 1;
    struct ncg_hostport hp; /* a bare IPv6 address needs brackets */
    if (ncg_hostport_parse(v, NCG_HP_PORT_ONLY | NCG_HP_PORT_ZERO, &hp) != 0)
        return 0;
    if (!hp.port && !strchr(v, ':'))
        return 1; /* "00": a bare 0 however written */
    int hl = (int)hp.rawlen;
    if (snprintf(out, cap, "%.*s:%u", hl ? hl : 9, hl ? v : "127.0.0.1", hp.port) >= (int)cap) {
        *why = "longer than 255 characters";
        out[0] = 0;
        return 0;
    }
    return 1;
}

/* A setting that names one of n choices (case-insensitive; alias[i], when given, is a second
 * spelling of names[i], exact): *out = its index. Otherwise one line, and *out (the default)
 * stays. */
static void ncg_parse_choice(const struct ncg_parse *p, const char *name, const char *const *names,
                             const char *const *alias, int n, const char *expected, int *out)
{
    const char *v = ncg_val(p, name);
    if (!v)
        return;
    for (int i = 0; i < n; i++)
        if (!strcasecmp(v, names[i]) || (alias && alias[i] && !strcmp(v, alias[i]))) {
            *out = i;
            return;
        }
    ncg_bad(p, name, v, expected, names[*out]);
}

const char *ncg_env_process(const char *name, void *arg)
{
    (void)arg;
    return getenv(name);
}

void ncg_config_parse(struct ncg_config *cfg, ncg_getenv_fn get, ncg_warn_fn warn, void *arg)
{
    const struct ncg_parse p = {get, warn, arg};
    const char *v;
    ncg_config_defaults(cfg);

    ncg_parse_bool(&p, "NCCLGUARD", &cfg->enabled);
    if ((v = ncg_val(&p, "NCCLGUARD_COORD"))) {
        const char *why = NULL;
        if (!strcasecmp(v, "off"))
            cfg->check = 0;
        else if (strlen(v) >= sizeof cfg->coord)
            ncg_bad(&p, "NCCLGUARD_COORD", v, "longer than 255 characters", "the id's coordinates");
        else if (!ncg_coord_ok(v, &why))
            ncg_bad(&p, "NCCLGUARD_COORD", v, why, "the id's coordinates");
        else
            strcpy(cfg->coord, v);
    }
    static const char *const actions[] = {"abort", "warn", "fail"}; /* enum ncg_action */
    int action = (int)cfg->action;
    ncg_parse_choice(&p, "NCCLGUARD_ACTION", actions, NULL, 3, "expected abort, warn or fail",
                     &action);
    cfg->action = (enum ncg_action)action;
    ncg_parse_uint(&p, "NCCLGUARD_INTERVAL_MS", 1, 60000, &cfg->interval_ms);
    ncg_parse_bool(&p, "NCCLGUARD_SLOW", &cfg->slow);
    ncg_parse_uint(&p, "NCCLGUARD_SLOW_SAMPLE", 1, 65536, &cfg->slow_sample);
    ncg_parse_uint(&p, "NCCLGUARD_SLOW_WINDOW", 4, 64, &cfg->slow_window);
    ncg_parse_num(&p, "NCCLGUARD_SLOW_SHARE_PCT", 0, 0, 1, 100, &cfg->slow_share_pct);
    ncg_parse_secs(&p, "NCCLGUARD_SLOW_HOLD_S", 0.0, 0, &cfg->slow_hold_s);
    ncg_parse_secs(&p, "NCCLGUARD_HEARTBEAT_TIMEOUT_S", 0.0, 1, &cfg->heartbeat_timeout_s);
    ncg_parse_secs(&p, "NCCLGUARD_LAG_WARN_S", 0.0, 1, &cfg->lag_warn_s);
    ncg_parse_secs(&p, "NCCLGUARD_LAG_ABORT_S", 0.0, 0, &cfg->lag_abort_s);
    ncg_check_periods(&p, cfg);
    if ((v = ncg_val(&p, "NCCLGUARD_REPORT_DIR"))) {
        if (strlen(v) >= sizeof cfg->report_dir)
            ncg_bad(&p, "NCCLGUARD_REPORT_DIR", v, "longer than 255 characters", ".");
        else
            strcpy(cfg->report_dir, v);
    }
    ncg_parse_bool(&p, "NCCLGUARD_SHM", &cfg->shm);
    uint32_t verbose = (uint32_t)cfg->verbose;
    ncg_parse_uint(&p, "NCCLGUARD_VERBOSE", 0, 2, &verbose);
    cfg->verbose = (int)verbose;
    ncg_parse_bool(&p, "NCCLGUARD_STACKS", &cfg->stacks);
    if ((v = ncg_val(&p, "NCCLGUARD_HTTP"))) {
        const char *why;
        if (!ncg_http_spec(v, cfg->http, sizeof cfg->http, &why))
            ncg_bad(&p, "NCCLGUARD_HTTP", v, why, "off");
    }

    /* hangs that are not desyncs: STUCK thresholds, how completion is learned */
    ncg_parse_secs(&p, "NCCLGUARD_STUCK_WARN_S", 0.0, 0, &cfg->stuck_warn_s);
    ncg_parse_secs(&p, "NCCLGUARD_STUCK_ABORT_S", 0.0, 0, &cfg->stuck_abort_s);
    static const char *const completions[] = {"auto", "return", "events"}; /* ncg_completion_cfg */
    ncg_parse_choice(&p, "NCCLGUARD_COMPLETION", completions, NULL, 3,
                     "expected auto, return or events", &cfg->completion);
    static const char *const diags[] = {"auto", "full", "short", "quiet"}; /* ncg_diag_mode */
    ncg_parse_choice(&p, "NCCLGUARD_DIAG", diags, NULL, 4, "expected auto, full, short or quiet",
                     &cfg->diag);
    static const char *const trees[] = {"auto", "on", "off"}, *const trees01[] = {NULL, "1", "0"};
    ncg_parse_choice(&p, "NCCLGUARD_TREE", trees, trees01, 3, "expected auto, on or off",
                     &cfg->tree);
    ncg_parse_uint(&p, "NCCLGUARD_TREE_FANOUT", 2, 64, &cfg->fanout);
    ncg_parse_secs(&p, "NCCLGUARD_EXIT_WAIT_S", 0.0, 0, &cfg->exit_wait_s);
    ncg_parse_secs(&p, "NCCLGUARD_HOST_STAY_S", 0.0, 0, &cfg->host_stay_s);
}

/* A launcher's rank variable: a whole number 0..INT32_MAX, else -1. */
static int32_t ncg_rank_value(const char *v)
{
    if (!v || *v < '0' || *v > '9')
        return -1;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    return (errno || *end || x > INT32_MAX) ? -1 : (int32_t)x;
}

static int32_t ncg_first_rank(const char *const *names, ncg_getenv_fn get, void *arg,
                              const char **from)
{
    *from = "";
    for (; *names; names++) {
        int32_t x = ncg_rank_value(get ? get(*names, arg) : NULL);
        if (x >= 0) {
            *from = *names;
            return x;
        }
    }
    return -1;
}

void ncg_launch_ranks_parse(struct ncg_launch_ranks *r, ncg_getenv_fn get, void *arg)
{
    static const char *const global[] = {"RANK",     "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                         "PMI_RANK", "SLURM_PROCID",         NULL},
                             *const local[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                               "MPI_LOCALRANKID", "SLURM_LOCALID", NULL},
                             *const world[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                               "SLURM_NTASKS", NULL},
                             *const local_world[] = {"LOCAL_WORLD_SIZE",
                                                     "OMPI_COMM_WORLD_LOCAL_SIZE",
                                                     "MPI_LOCALNRANKS", NULL};
    const char *w;
    r->global = ncg_first_rank(global, get, arg, &r->global_var);
    r->local = ncg_first_rank(local, get, arg, &r->local_var);
    r->world = ncg_first_rank(world, get, arg, &w);
    r->local_world = ncg_first_rank(local_world, get, arg, &w);
}

int ncg_tree_node(const struct ncg_launch_ranks *r, uint32_t *node, uint32_t *nnodes)
{
    if (r->global < 0 || r->local < 0 || r->world <= 0 || r->local_world <= 0 ||
        r->local >= r->local_world || r->local > r->global || r->global >= r->world ||
        (r->global - r->local) % r->local_world != 0)
        return -1;
    *node = (uint32_t)((r->global - r->local) / r->local_world);
    *nnodes = (uint32_t)((r->world + (int64_t)r->local_world - 1) / r->local_world);
    return 0;
}
