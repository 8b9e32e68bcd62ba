/* Names and formatting shared by the subcommands: NCCL function/datatype/op names as users know
 * them, one-line call descriptions, compact rank lists, JSON string escaping, usage errors. */
#include <ctype.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "buf.h"
#include "cli.h"
#include "ncclguard/nccl_abi.h"
#include "verdict.h"

/* The checker's names (verdict.c), with the CLI's words for "none" and out-of-range values. */
const char *ncg_cli_func_name(unsigned f)
{
    return f == NCG_F_NONE ? "none" : f < NCG_F_COUNT_ ? ncg_v_func_name(f) : "unknown";
}

const char *ncg_cli_dtype_name(unsigned d)
{
    return d < ncclNumTypes ? ncg_v_dtype_name(d) : "unknown";
}

const char *ncg_cli_redop_name(unsigned r)
{
    if (r == NCG_REDOP_NONE)
        return "none";
    return r < ncclNumOps || r == NCG_REDOP_USER ? ncg_v_redop_name(r) : "unknown";
}

const char *ncg_cli_verdict_name(unsigned k)
{
    /* the segment's verdict_kind is enum ncg_verdict_kind */
    return k == 0 ? "none" : k < NCG_V_KIND_MAX_ ? ncg_verdict_name(k) : "UNKNOWN";
}

/* names[v], or "unknown" for a value with no name. */
static const char *name_in(const char *const *names, size_t n, unsigned v)
{
    return v < n && names[v] ? names[v] : "unknown";
}

const char *ncg_cli_live_name(enum ncg_live l)
{
    static const char *const names[] = {[NCG_LIVE_ALIVE] = "alive",
                                        [NCG_LIVE_EXITED] = "exited",
                                        [NCG_LIVE_DEAD] = "dead",
                                        [NCG_LIVE_VERDICT] = "verdict"};
    return name_in(names, sizeof names / sizeof *names, (unsigned)l);
}

const char *ncg_cli_comm_state_name(unsigned st)
{
    static const char *const names[] = {[NCG_COMM_ACTIVE] = "active",
                                        [NCG_COMM_DESTROYED] = "destroyed",
                                        [NCG_COMM_FAILED] = "failed"};
    return name_in(names, sizeof names / sizeof *names, st);
}

const char *ncg_cli_origin_name(unsigned o)
{
    static const char *const names[] = {[NCG_ORIGIN_ROOT] = "root",
                                        [NCG_ORIGIN_SPLIT] = "split",
                                        [NCG_ORIGIN_SHRINK] = "shrink",
                                        [NCG_ORIGIN_INITALL] = "initall",
                                        [NCG_ORIGIN_GROW] = "grow"};
    return name_in(names, sizeof names / sizeof *names, o);
}

void ncg_cli_fmt_call(char *buf, size_t len, const struct ncg_shm_record *r)
{
    struct ncg_call c = {.seq = r->seq,
                         .count = r->count,
                         .root = r->root_or_peer,
                         .func = r->func,
                         .dtype = r->dtype,
                         .redop = r->redop};
    ncg_call_format(&c, buf, len);
}

void ncg_cli_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    ncg_esc_fput(f, s, NCG_ESC_JSON);
    fputc('"', f);
}

void ncg_cli_fmt_slow(char *buf, size_t len, const struct ncg_snap_slow *w)
{
    char who[160] = "";
    size_t o = 0;
    if (w->global_rank >= 0)
        o += (size_t)snprintf(who + o, sizeof who - o, "global rank %d", (int)w->global_rank);
    if (w->pid && o < sizeof who)
        o += (size_t)snprintf(who + o, sizeof who - o, "%spid %u", o ? ", " : "", w->pid);
    if (w->host[0] && o < sizeof who)
        snprintf(who + o, sizeof who - o, "%son %s", o ? " " : "", w->host);
    snprintf(buf, len,
             "rank %d%s%s%s is the one the others wait for: they lose %.1f%% of the step, for %.0f "
             "s, late on its %s",
             (int)w->rank, who[0] ? " (" : "", who, who[0] ? ")" : "", w->share * 100, w->since_s,
             w->device ? "GPU" : "host");
}

void ncg_cli_fmt_ranks(char *buf, size_t len, const int *v, int n)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < n && o < len;) {
        int j = i;
        while (j + 1 < n && v[j + 1] == v[j] + 1)
            j++;
        int w;
        if (j > i)
            w = snprintf(buf + o, len - o, "%s%d-%d", o ? "," : "", v[i], v[j]);
        else
            w = snprintf(buf + o, len - o, "%s%d", o ? "," : "", v[i]);
        if (w < 0)
            break;
        o += (size_t)w;
        i = j + 1;
    }
}

void ncg_cli_sort_ints(int *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: rank lists, short */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

int ncg_cli_parse_secs(const char *s, double *out)
{
    if (!s || !*s || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
        return -1;
    char *end;
    double d = strtod(s, &end);
    if (*end || d < 0 || d > 1e9)
        return -1;
    *out = d;
    return 0;
}

const struct ncg_shm_record *ncg_cli_member_last(const struct ncg_cli_member *m, int *is_p2p)
{
    const struct ncg_shm_record *c = NULL;
    if (m->ntail && m->tail_ok[m->ntail - 1])
        c = &m->tail[m->ntail - 1];
    *is_p2p = 0;
    if (m->p2p_ok && (!c || m->last_p2p.t_ns > c->t_ns)) {
        *is_p2p = 1;
        return &m->last_p2p;
    }
    return c;
}

int ncg_cli_usage_error(const char *usage, const char *fmt, ...)
{
    va_list ap;
    fputs("ncclguard: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fputs(usage, stderr);
    return NCG_CLI_USAGE;
}

int ncg_cli_opt(int argc, char **argv, int *i, const char *name, const char **val)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (a[n] != 0)
        return 0;
    if (*i + 1 >= argc)
        return -1;
    *val = argv[++*i];
    return 1;
}

/* 1 when argv[*i] is --dir or --match (o updated, or *err the usage error for a missing
 * value), 0 otherwise. */
static int scan_opt(int argc, char **argv, int *i, struct ncg_scan_opts *o, const char *cmd,
                    const char *usage, int *err)
{
    const char *val;
    int r;
    if ((r = ncg_cli_opt(argc, argv, i, "--dir", &val)) != 0) {
        if (r < 0)
            *err = ncg_cli_usage_error(usage, "%s: --dir needs a value", cmd);
        else
            o->dir = val;
        return 1;
    }
    if ((r = ncg_cli_opt(argc, argv, i, "--match", &val)) != 0) {
        if (r < 0)
            *err = ncg_cli_usage_error(usage, "%s: --match needs a value", cmd);
        else
            o->match = val;
        return 1;
    }
    return 0;
}

int ncg_cli_scan_last(int argc, char **argv, int *i, struct ncg_scan_opts *o, const char *cmd,
                      const char *usage)
{
    int err = 0;
    if (scan_opt(argc, argv, i, o, cmd, usage, &err))
        return err;
    return ncg_cli_usage_error(usage, "%s: unexpected argument '%s'", cmd, argv[*i]);
}

int ncg_cli_job_open(const char *job, const char *token, const struct ncg_scan_opts *o,
                     const char *cmd, const char *usage, struct ncg_job_src *src)
{
    if (job && (o->dir || o->match))
        return ncg_cli_usage_error(usage, "%s: --job reads no segments (--dir, --match)", cmd);
    char jerr[1024];
    if (job && ncg_job_open(job, token, src, jerr, sizeof jerr) != 0) {
        fprintf(stderr, "ncclguard: %s\n", jerr);
        return NCG_CLI_ERROR;
    }
    return 0;
}

volatile sig_atomic_t ncg_cli_stop;

static void on_stop(int sig)
{
    (void)sig;
    ncg_cli_stop = 1;
}

void ncg_cli_catch_stop(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int ncg_cli_is_help(const char *a)
{
    return strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0;
}

int ncg_cli_help(const char *a, const char *usage)
{
    if (!ncg_cli_is_help(a))
        return 0;
    fputs(usage, stdout);
    return 1;
}
