/* `ncclguard status`: one snapshot (or a refreshing view) of every guarded process and
 * communicator on this host, as a table or as a versioned JSON document (docs/cli.md). Reads
 * shared memory only, so it works while the job is hung. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "json.h"

static const char usage[] =
    "usage: ncclguard status [--json] [--watch [SECS]] [--all] [--dir DIR] [--match TEXT]\n"
    "                        [--no-clean] [-v]\n"
    "       ncclguard status --job URL|FILE [--token T] [--json] [--watch [SECS]] [--all]\n"
    "  --job URL|FILE  the whole job through its checker's status endpoint (http://HOST:PORT,\n"
    "                  or the job file ncclguard-job.<host>.<pid>.json it wrote)\n"
    "  --token T       the endpoint's bearer token (default: $NCCLGUARD_TOKEN, the job file's)\n"
    "  --json          print a JSON document (format ncclguard-status, version 1)\n"
    "  --all           one row per rank (default: with more than 8 ranks here, identical rows\n"
    "                  are folded into one \"ranks ...: same as rank R\" line)\n"
    "  --watch [SECS]  refresh every SECS seconds (default 2) until interrupted\n"
    "  --dir DIR       where the segments are (default /dev/shm)\n"
    "  --match TEXT    only processes whose command line contains TEXT\n"
    "  --no-clean      do not remove segments of processes gone for over an hour\n"
    "  -v, --verbose   say why the GPU columns (NVML: utilization, board power) are missing\n"
    "exit status: 0 shown, 2 usage error, 3 segment directory unreadable, or (--job) the\n"
    "endpoint unreachable, 401, or an answer that is not its /status\n";

static double age_s(const struct ncg_snap *s, uint64_t t_ns)
{
    if (!t_ns || t_ns > s->now_ns)
        return 0;
    return (double)(s->now_ns - t_ns) / 1e9;
}

static void fmt_age(char *buf, size_t len, double a)
{
    if (a < 100)
        snprintf(buf, len, "%.1fs", a);
    else if (a < 6000)
        snprintf(buf, len, "%dm%02ds", (int)a / 60 % 1000, (int)a % 60);
    else
        snprintf(buf, len, "%.1fh", a / 3600);
}

static const char *member_state(const struct ncg_snap *s, const struct ncg_cli_member *m, int json)
{
    const struct ncg_cli_proc *p = &s->procs[m->proc];
    if (ncg_cli_ended_by_verdict(p))
        return json ? "dead" : "ended (verdict)"; /* JSON: "ended_by_verdict" says it */
    if (p->live == NCG_LIVE_DEAD || p->live == NCG_LIVE_EXITED)
        return ncg_cli_live_name(p->live);
    if (m->state != NCG_COMM_ACTIVE)
        return ncg_cli_comm_state_name(m->state);
    return ncg_cli_live_name(p->live);
}

/* Comm ranks of the members listed in idx. */
static void ranks_of(const struct ncg_snap *s, const int *idx, int n, char *buf, size_t len)
{
    int r[64];
    int k = n < 64 ? n : 64;
    for (int i = 0; i < k; i++)
        r[i] = s->members[idx[i]].rank;
    ncg_cli_sort_ints(r, k);
    ncg_cli_fmt_ranks(buf, len, r, k);
    if (n > k && strlen(buf) + 5 < len)
        strcat(buf, ",...");
}

static void behind_list(const struct ncg_snap *s, const struct ncg_view_comm *c, char *buf,
                        size_t len)
{
    int idx[64], n = 0;
    for (int i = 0; i < c->nmembers && n < 64; i++)
        if (ncg_view_is_behind(s, c, c->members[i]))
            idx[n++] = c->members[i];
    ranks_of(s, idx, n, buf, len);
}

/* A member's row from SLOTS on, without its AGE: rows with equal text are "the same". */
static void row_text(const struct ncg_snap *s, const struct ncg_view_comm *c, int mi, char *buf,
                     size_t len, double *age)
{
    const struct ncg_cli_member *m = &s->members[mi];
    const struct ncg_cli_proc *p = &s->procs[m->proc];
    int is_p2p;
    const struct ncg_shm_record *r = ncg_cli_member_last(m, &is_p2p);
    char call[128] = "-";
    *age = -1;
    if (r) {
        ncg_cli_fmt_call(call, sizeof(call), r);
        *age = age_s(s, r->t_ns);
    } else if ((m->coll_seq || m->p2p_seq) && !s->remote) { /* remote: not blocked, unknown */
        snprintf(call, sizeof(call), "(record being written)");
    }
    char slots[48]; /* issued/completed */
    snprintf(slots, sizeof(slots), "%llu/%llu", (unsigned long long)m->coll_seq,
             (unsigned long long)m->coll_done);
    size_t o = (size_t)snprintf(buf, len, "%13s %6llu  %-46s", slots,
                                (unsigned long long)m->p2p_seq, call);
    char gpu[48] = "";
    if (s->gpus) { /* "<GPU POWER padded> " before the state */
        ncg_cli_fmt_gpu(gpu, sizeof gpu - 1, p);
        snprintf(gpu + strlen(gpu), sizeof gpu - strlen(gpu), "%*s", 17 - (int)strlen(gpu), "");
    }
    o += (size_t)snprintf(buf + (o < len ? o : len), o < len ? len - o : 0, "\t%s%s", gpu,
                          member_state(s, m, 0));
    if (((p->live == NCG_LIVE_DEAD && !ncg_cli_ended_by_verdict(p)) ||
         (p->live == NCG_LIVE_ALIVE && p->live_why && p->live_why[0])) &&
        o < len)
        o += (size_t)snprintf(buf + o, len - o, " (%s)", p->live_why);
    if (ncg_view_is_behind(s, c, mi) && o < len)
        o += (size_t)snprintf(buf + o, len - o, "  <- behind");
    if (ncg_view_is_odd(c, mi) && o < len)
        snprintf(buf + o, len - o, "  <- odd call (MISMATCH)");
}

#define NCG_GROUP_ABOVE 8 /* communicators with more members here get grouped rows */

/* One row per member; with more than NCG_GROUP_ABOVE members (and not --all), members whose
 * row equals an earlier one are folded into one line under it: "ranks 1-2,4-15: same". */
static void print_rows(FILE *f, const struct ncg_snap *s, const struct ncg_view_comm *c,
                       int all_rows)
{
    int n = c->nmembers, group = !all_rows && n > NCG_GROUP_ABOVE;
    char(*txt)[256] = calloc((size_t)n, sizeof(*txt));
    double *age = calloc((size_t)n, sizeof(*age));
    int *lead = calloc((size_t)n, sizeof(int)), *idx = calloc((size_t)n, sizeof(int));
    if (!txt || !age || !lead || !idx)
        group = 0;
    for (int i = 0; i < n && txt; i++) {
        row_text(s, c, c->members[i], txt[i], sizeof(txt[i]), &age[i]);
        lead[i] = -1;
    }
    for (int i = 0; group && i < n; i++) {
        if (lead[i] >= 0)
            continue;
        int k = 0;
        for (int j = i + 1; j < n; j++)
            if (lead[j] < 0 && !strcmp(txt[i], txt[j]))
                idx[k++] = j;
        if (k >= 2) /* fold only when it saves lines */
            for (int q = 0; q < k; q++)
                lead[idx[q]] = i;
    }
    for (int i = 0; i < n; i++) {
        const struct ncg_cli_member *m = &s->members[c->members[i]];
        const struct ncg_cli_proc *p = &s->procs[m->proc];
        if (lead && lead[i] >= 0)
            continue;
        char line[256] = "", agebuf[32] = "-", *tab;
        if (txt)
            snprintf(line, sizeof(line), "%s", txt[i]);
        else
            row_text(s, c, c->members[i], line, sizeof(line), &age[0]);
        tab = strchr(line, '\t');
        if (tab)
            *tab = 0;
        if ((txt ? age[i] : age[0]) >= 0)
            fmt_age(agebuf, sizeof(agebuf), txt ? age[i] : age[0]);
        fprintf(f, "  %5d %5d %5d %8d %s %7s  %s\n", (int)m->rank, (int)p->global_rank,
                (int)p->local_rank, (int)p->pid, line, agebuf, tab ? tab + 1 : "");
        if (!group)
            continue;
        int k = 0;
        for (int j = i + 1; j < n; j++)
            if (lead[j] == i)
                idx[k++] = c->members[j];
        if (k) {
            char rk[256];
            ranks_of(s, idx, k, rk, sizeof(rk));
            fprintf(f, "  ranks %s: same as rank %d (%d processes)\n", rk, (int)m->rank, k);
        }
    }
    free(txt);
    free(age);
    free(lead);
    free(idx);
}

/* The one table of both views: this host's segments, or (s->remote) the whole job through
 * its checker, whose snapshot remote.c builds from /status; `where` names which. */
static void print_table(FILE *f, const struct ncg_snap *s, const struct ncg_view *v,
                        const struct ncg_vgroup *g, int ng, int all_rows, const char *where)
{
    time_t t = (time_t)s->now_unix;
    struct tm tm;
    char when[32];
    gmtime_r(&t, &tm);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
    fprintf(f, "ncclguard: %s, %d guarded process%s, %d communicator%s, %s\n", where, s->nprocs,
            s->nprocs == 1 ? "" : "es", v->ncomms, v->ncomms == 1 ? "" : "s", when);
    for (int k = 0; k < v->ncomms; k++) {
        const struct ncg_view_comm *c = &v->comms[k];
        const struct ncg_cli_member *m0 = &s->members[c->members[0]];
        fprintf(f, "\ncomm %016llx  %s  size %d  here %d (active %d)",
                (unsigned long long)c->comm_id, ncg_cli_origin_name(m0->origin), (int)c->nranks,
                c->nmembers, c->nactive);
        if (m0->parent_id)
            fprintf(f, "  parent %016llx", (unsigned long long)m0->parent_id);
        if (c->nactive)
            fprintf(f, "  slots %llu..%llu", (unsigned long long)c->min_seq,
                    (unsigned long long)c->max_seq);
        if (c->nbehind) {
            char b[256];
            behind_list(s, c, b, sizeof(b));
            fprintf(f, "  behind: rank %s", b);
        }
        fprintf(f, "\n  %5s %5s %5s %8s %13s %6s  %-46s %7s  %s%s\n", "RANK", "GRANK", "LRANK",
                "PID", "SLOTS/DONE", "P2P", "LAST CALL", "AGE", s->gpus ? "GPU POWER        " : "",
                "STATE");
        print_rows(f, s, c, all_rows);
        if (c->mismatch) {
            fprintf(f, "  MISMATCH at slot %llu%s:\n", (unsigned long long)c->mismatch_slot,
                    c->mismatch == 2 ? " (chained digests differ: the calls diverged earlier)"
                                     : "");
            for (int j = 0; j < c->ncalls; j++) {
                char call[128], rk[256];
                ncg_cli_fmt_call(call, sizeof(call), &c->calls[j].rec);
                ranks_of(s, c->calls[j].members, c->calls[j].nmembers, rk, sizeof(rk));
                fprintf(f, "    %-46s on rank%s %s\n", call, c->calls[j].nmembers > 1 ? "s" : "",
                        rk);
            }
        }
    }
    /* A relay tree's endpoint lists some ranks only: one line per such comm, its aggregates */
    for (int k = 0; k < s->naggs; k++) {
        const struct ncg_snap_agg *a = &s->aggs[k];
        fprintf(f,
                "%sncclguard: comm %016llx: members partial (%d of %d ranks listed here); every "
                "rank: issued %llu..%llu, completed %llu..%llu%s%s\n",
                k ? "" : "\n", (unsigned long long)a->comm_id, (int)a->nrows, (int)a->nranks,
                (unsigned long long)a->issued_min, (unsigned long long)a->issued_max,
                (unsigned long long)a->done_min, (unsigned long long)a->done_max,
                a->slowest[0] ? ", slowest ranks " : "", a->slowest);
    }
    /* The rank each comm waits for (SLOW: the endpoint's, or the latest warning here) */
    for (int k = 0; k < s->nslows; k++) {
        char line[512];
        ncg_cli_fmt_slow(line, sizeof line, &s->slows[k]);
        fprintf(f, "%sncclguard: SLOW on comm %016llx: %s%s\n", k ? "" : "\n",
                (unsigned long long)s->slows[k].comm_id, line,
                s->remote ? "" : " (the latest SLOW warning here)");
    }
    /* One line per verdict, however many processes here recorded it. */
    for (int k = 0; k < ng; k++) {
        char line[1600];
        ncg_vgroup_fmt(line, sizeof(line), s, &g[k]);
        fprintf(f, "%sncclguard: %s\n", k ? "" : "\n", line);
    }
    for (int i = 0; i < s->nprocs; i++) {
        const struct ncg_cli_proc *p = &s->procs[i];
        if (p->nmembers == 0)
            fprintf(f, "\nncclguard: pid %d (%s): no communicator recorded yet\n", (int)p->pid,
                    ncg_cli_live_name(p->live));
        if (p->comms_dropped)
            fprintf(f,
                    "ncclguard: pid %d: %u communicators not recorded nor checked (more than %u "
                    "live at once, or /dev/shm full)\n",
                    (int)p->pid, p->comms_dropped, NCG_SHM_MAX_COMMS);
    }
    for (int i = 0; i < s->nskips; i++)
        fprintf(f, "ncclguard: skipped %s: %s\n", s->skips[i].path, s->skips[i].why);
    if (s->nprocs == 0 && s->nskips == 0 && s->remote)
        fprintf(f, "ncclguard: no process registered with the checker yet (%s)\n", s->dir);
    else if (s->nprocs == 0 && s->nskips == 0)
        fprintf(f, "ncclguard: no guarded process on this host (looked in %s)\n", s->dir);
}

static void json_call(FILE *f, const struct ncg_snap *s, const struct ncg_shm_record *r, int p2p)
{
    fprintf(f,
            "{\"kind\":\"%s\",\"func\":\"%s\",\"count\":%llu,\"dtype\":\"%s\",\"redop\":\"%s\","
            "\"root_or_peer\":%d,\"seq\":%llu,\"in_group\":%s,\"caller_pc\":\"0x%llx\","
            "\"tid\":%u,\"age_s\":%.3f}",
            p2p ? "p2p" : "coll", ncg_cli_func_name(r->func), (unsigned long long)r->count,
            ncg_cli_dtype_name(r->dtype), ncg_cli_redop_name(r->redop), (int)r->root_or_peer,
            (unsigned long long)r->seq, (r->flags & NCG_REC_IN_GROUP) ? "true" : "false",
            (unsigned long long)r->caller_pc, r->tid, age_s(s, r->t_ns));
}

/* JSON array of ints. */
static void json_ints(FILE *f, const int *v, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? "," : "", v[i]);
    fputc(']', f);
}

static void json_vgroups(FILE *f, const struct ncg_snap *s, const struct ncg_vgroup *g, int ng)
{
    fputs(",\"verdicts\":[", f);
    for (int k = 0; k < ng; k++) {
        const struct ncg_cli_proc *p0 = &s->procs[g[k].procs[0]];
        int *r = calloc((size_t)g[k].nprocs + 1, sizeof(int));
        fprintf(f, "%s{\"kind\":%u,\"name\":\"%s\",\"comm\":\"%016llx\",\"text\":", k ? "," : "",
                g[k].kind, ncg_cli_verdict_name(g[k].kind), (unsigned long long)g[k].comm);
        ncg_cli_json_str(f, p0->verdict_text);
        fprintf(f, ",\"processes\":%d,\"ended\":%d,\"ranks\":", g[k].nprocs, g[k].nended);
        json_ints(f, r, r ? ncg_vgroup_ranks(s, &g[k], 0, r) : 0);
        fputs(",\"comm_ranks\":", f);
        json_ints(f, r, r ? ncg_vgroup_ranks(s, &g[k], 1, r) : 0);
        fputs(",\"pids\":[", f);
        for (int i = 0; i < g[k].nprocs; i++)
            fprintf(f, "%s%d", i ? "," : "", (int)s->procs[g[k].procs[i]].pid);
        fputs("],\"reports\":", f);
        char where[512];
        ncg_vgroup_reports(s, &g[k], where, sizeof(where));
        ncg_cli_json_str(f, where);
        fputc('}', f);
        free(r);
    }
    fputc(']', f);
}

/* ,"slow": the comm's latest SLOW warning here (the /status object's fields), or null. */
static void json_slow(FILE *f, const struct ncg_snap *s, uint64_t comm)
{
    for (int k = 0; k < s->nslows; k++) {
        const struct ncg_snap_slow *w = &s->slows[k];
        if (w->comm_id != comm)
            continue;
        fprintf(f, ",\"slow\":{\"rank\":%d,\"global_rank\":%d,\"host\":", (int)w->rank,
                (int)w->global_rank);
        ncg_cli_json_str(f, w->host);
        fprintf(f, ",\"pid\":%u,\"share\":%.4f,\"since_s\":%.1f,\"side\":\"%s\"}", w->pid, w->share,
                w->since_s, w->device ? "gpu" : "host");
        return;
    }
    fputs(",\"slow\":null", f);
}

/* One process of the snapshot, as /status's "processes" entry. */
static void json_process(FILE *f, const struct ncg_snap *s, const struct ncg_cli_proc *p)
{
    fputs("{\"segment\":", f);
    ncg_cli_json_str(f, p->path);
    fprintf(f, ",\"pid\":%d,\"uid\":%u,\"state\":\"%s\",\"state_detail\":", (int)p->pid,
            (unsigned)p->owner, ncg_cli_live_name(p->live));
    ncg_cli_json_str(f, p->live_why ? p->live_why : "");
    fprintf(f, ",\"ended_by_verdict\":%s", ncg_cli_ended_by_verdict(p) ? "true" : "false");
    fprintf(f,
            ",\"start_ticks\":%llu,\"global_rank\":%d,\"local_rank\":%d,\"world_size\":%d,"
            "\"hostname\":",
            (unsigned long long)p->start_ticks, (int)p->global_rank, (int)p->local_rank,
            (int)p->world_size);
    ncg_cli_json_str(f, p->hostname);
    fputs(",\"cmdline\":", f);
    ncg_cli_json_str(f, p->cmdline);
    if (p->heartbeat_ns)
        fprintf(f, ",\"heartbeat_age_s\":%.3f", age_s(s, p->heartbeat_ns));
    else
        fputs(",\"heartbeat_age_s\":null", f);
    fputs(",\"bus_id\":", f);
    ncg_cli_json_str(f, p->bus_id);
    if (p->gpu_ok)
        fprintf(f, ",\"gpu\":{\"util_pct\":%u,\"power_w\":%.1f,\"power_limit_w\":%.1f}",
                p->gpu_util, p->gpu_power_w, p->gpu_limit_w);
    else
        fputs(",\"gpu\":null", f);
    fprintf(f, ",\"activity_age_s\":%.3f,\"comms\":%d,\"comms_dropped\":%u,\"verdict\":",
            age_s(s, p->activity_ns), p->nmembers, p->comms_dropped);
    if (p->state == NCG_PROC_VERDICT) {
        fprintf(f, "{\"kind\":%u,\"name\":\"%s\",\"comm\":\"%016llx\",\"text\":", p->verdict_kind,
                ncg_cli_verdict_name(p->verdict_kind), (unsigned long long)p->verdict_comm);
        ncg_cli_json_str(f, p->verdict_text);
        fputs(",\"report\":", f);
        ncg_cli_json_str(f, p->report_path);
        fputc('}', f);
    } else {
        fputs("null", f);
    }
    fputc('}', f);
}

/* Member mi of comm c, as a "members" entry. */
static void json_member(FILE *f, const struct ncg_snap *s, const struct ncg_view_comm *c, int mi)
{
    const struct ncg_cli_member *m = &s->members[mi];
    const struct ncg_cli_proc *p = &s->procs[m->proc];
    fprintf(f, "{\"rank\":%d,\"global_rank\":%d,\"local_rank\":%d,\"pid\":%d,\"segment\":",
            (int)m->rank, (int)p->global_rank, (int)p->local_rank, (int)p->pid);
    ncg_cli_json_str(f, p->path);
    fprintf(f,
            ",\"comm_state\":\"%s\",\"state\":\"%s\",\"slots\":%llu,\"completed\":%llu,"
            "\"p2p\":%llu,\"p2p_completed\":%llu,\"behind\":%s",
            ncg_cli_comm_state_name(m->state), member_state(s, m, 1),
            (unsigned long long)m->coll_seq, (unsigned long long)m->coll_done,
            (unsigned long long)m->p2p_seq, (unsigned long long)m->p2p_done,
            ncg_view_is_behind(s, c, mi) ? "true" : "false");
    fprintf(f, ",\"odd_call\":%s,\"ended_by_verdict\":%s,\"last_call\":",
            ncg_view_is_odd(c, mi) ? "true" : "false",
            ncg_cli_ended_by_verdict(p) ? "true" : "false");
    int is_p2p;
    const struct ncg_shm_record *r = ncg_cli_member_last(m, &is_p2p);
    if (r)
        json_call(f, s, r, is_p2p);
    else
        fputs("null", f);
    fputc('}', f);
}

/* One communicator of the view, as a "communicators" entry. */
static void json_comm(FILE *f, const struct ncg_snap *s, const struct ncg_view_comm *c)
{
    const struct ncg_cli_member *m0 = &s->members[c->members[0]];
    fprintf(f, "{\"id\":\"%016llx\",\"parent\":", (unsigned long long)c->comm_id);
    if (m0->parent_id)
        fprintf(f, "\"%016llx\"", (unsigned long long)m0->parent_id);
    else
        fputs("null", f);
    fprintf(f, ",\"origin\":\"%s\",\"size\":%d,\"members_here\":%d,\"active_here\":%d,",
            ncg_cli_origin_name(m0->origin), (int)c->nranks, c->nmembers, c->nactive);
    fprintf(f, "\"min_slots\":%llu,\"max_slots\":%llu,\"last_call_age_s\":",
            (unsigned long long)c->min_seq, (unsigned long long)c->max_seq);
    if (c->last_ns)
        fprintf(f, "%.3f", age_s(s, c->last_ns));
    else
        fputs("null", f);
    fputs(",\"behind\":[", f);
    int nb = 0;
    for (int i = 0; i < c->nmembers; i++)
        if (ncg_view_is_behind(s, c, c->members[i]))
            fprintf(f, "%s%d", nb++ ? "," : "", (int)s->members[c->members[i]].rank);
    fputs("],\"mismatch\":", f);
    if (c->mismatch) {
        fprintf(f, "{\"slot\":%llu,\"by\":\"%s\",\"calls\":[", (unsigned long long)c->mismatch_slot,
                c->mismatch == 1 ? "fields" : "digest");
        for (int j = 0; j < c->ncalls; j++) {
            fprintf(f, "%s{\"call\":", j ? "," : "");
            json_call(f, s, &c->calls[j].rec, 0);
            fputs(",\"ranks\":[", f);
            for (int q = 0; q < c->calls[j].nmembers && q < 64; q++)
                fprintf(f, "%s%d", q ? "," : "", (int)s->members[c->calls[j].members[q]].rank);
            fputs("]}", f);
        }
        fputs("]}", f);
    } else {
        fputs("null", f);
    }
    json_slow(f, s, c->comm_id);
    fputs(",\"members\":[", f);
    for (int i = 0; i < c->nmembers; i++) {
        if (i)
            fputc(',', f);
        json_member(f, s, c, c->members[i]);
    }
    fputs("]}", f);
}

static void print_json(FILE *f, const struct ncg_snap *s, const struct ncg_view *v,
                       const struct ncg_vgroup *g, int ng)
{
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    fprintf(f, "{\"format\":\"ncclguard-status\",\"version\":%d,\"layout_version\":%u,\"host\":",
            NCG_STATUS_FORMAT_VERSION, NCG_SHM_LAYOUT_VERSION);
    ncg_cli_json_str(f, host);
    fputs(",\"dir\":", f);
    ncg_cli_json_str(f, s->dir);
    fprintf(f, ",\"time_unix\":%.3f,\"processes\":[", s->now_unix);
    for (int i = 0; i < s->nprocs; i++) {
        if (i)
            fputc(',', f);
        json_process(f, s, &s->procs[i]);
    }
    fputs("],\"communicators\":[", f);
    for (int k = 0; k < v->ncomms; k++) {
        if (k)
            fputc(',', f);
        json_comm(f, s, &v->comms[k]);
    }
    fputc(']', f);
    json_vgroups(f, s, g, ng);
    fputs(",\"skipped\":[", f);
    for (int i = 0; i < s->nskips; i++) {
        fprintf(f, "%s{\"segment\":", i ? "," : "");
        ncg_cli_json_str(f, s->skips[i].path);
        fputs(",\"reason\":", f);
        ncg_cli_json_str(f, s->skips[i].why);
        fputc('}', f);
    }
    fputs("]}\n", f);
}

/* One /status fetched into a snapshot; `where` says whose. NCG_CLI_OK, or NCG_CLI_ERROR after
 * printing why (unreachable, 401, not a /status). */
static int job_snap(const struct ncg_job_src *j, char **raw, struct ncg_snap *s, char *where,
                    size_t wlen)
{
    struct ncg_json *doc;
    char err[1024];
    if (ncg_job_fetch(j, NCG_JOB_TIMEOUT_S, &doc, raw, err, sizeof err) != 0) {
        fprintf(stderr, "ncclguard: %s\n", err);
        return NCG_CLI_ERROR;
    }
    const struct ncg_json *ck = ncg_cli_json_get(doc, "checker");
    const struct ncg_json *hosts = ncg_cli_json_get(doc, "hosts");
    snprintf(where, wlen, "job %s (checker on %s, pid %d; %zu host%s)", j->url,
             ncg_cli_json_s(ck, "host", "?"), (int)ncg_cli_json_n(ck, "pid", 0),
             hosts ? hosts->n : 0, hosts && hosts->n == 1 ? "" : "s");
    int rc = ncg_job_snap(doc, j->url, s);
    ncg_cli_json_free(doc);
    if (rc != 0) {
        if (raw)
            free(*raw);
        fprintf(stderr, "ncclguard: out of memory\n");
        return NCG_CLI_ERROR;
    }
    return NCG_CLI_OK;
}

int ncg_cmd_status(int argc, char **argv)
{
    struct ncg_scan_opts o = {NULL, NULL};
    int json = 0, watch = 0, clean = 1, all_rows = 0, verbose = 0;
    const char *job = NULL, *token = NULL;
    double every = 2;
    int err = 0;
    for (int i = 1; i < argc; i++) {
        int r;
        if (ncg_cli_help(argv[i], usage))
            return NCG_CLI_OK;
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--no-clean") == 0) {
            clean = 0;
        } else if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0) {
            verbose = 1;
        } else if (strcmp(argv[i], "--all") == 0) {
            all_rows = 1;
        } else if (strcmp(argv[i], "--watch") == 0) {
            watch = 1;
            if (i + 1 < argc && ncg_cli_parse_secs(argv[i + 1], &every) == 0)
                i++;
        } else if (strncmp(argv[i], "--watch=", 8) == 0) {
            watch = 1;
            if (ncg_cli_parse_secs(argv[i] + 8, &every) < 0)
                return ncg_cli_usage_error(usage, "status: bad --watch value '%s'", argv[i] + 8);
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--job", &job)) != 0) {
            if (r < 0 || !*job)
                return ncg_cli_usage_error(usage, "status: --job needs a URL or a job file");
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--token", &token)) != 0) {
            if (r < 0)
                return ncg_cli_usage_error(usage, "status: --token needs a value");
        } else if ((err = ncg_cli_scan_last(argc, argv, &i, &o, "status", usage)) != 0) {
            return err;
        }
    }
    if (token && !job)
        return ncg_cli_usage_error(usage, "status: --token goes with --job");
    struct ncg_job_src src;
    if ((err = ncg_cli_job_open(job, token, &o, "status", usage, &src)) != 0)
        return err;
    if (watch && every < 0.1)
        every = 0.1;
    if (watch)
        ncg_cli_catch_stop();
    int tty = isatty(STDOUT_FILENO);
    do {
        struct ncg_snap s;
        struct ncg_view v;
        char where[600] = "host ";
        if (job) {
            char *raw = NULL;
            int rc = job_snap(&src, json ? &raw : NULL, &s, where, sizeof where);
            if (rc != NCG_CLI_OK)
                return rc;
            if (json) { /* the checker's own document, as it came */
                fputs(raw, stdout);
                free(raw);
                ncg_snap_free(&s);
                fflush(stdout);
                goto next;
            }
        } else {
            if (ncg_cli_snap_take(&s, &o) < 0)
                return NCG_CLI_ERROR;
            gethostname(where + 5, sizeof(where) - 6);
            char why[200];
            s.gpus = ncg_nvml_fill(&s, why, sizeof why);
            if (!s.gpus && verbose && !json)
                printf("ncclguard: no GPU columns: %s\n", why);
        }
        if (ncg_view_build(&s, &v) < 0) {
            ncg_snap_free(&s);
            fprintf(stderr, "ncclguard: out of memory\n");
            return NCG_CLI_ERROR;
        }
        if (watch && tty && !json)
            fputs("\033[H\033[2J", stdout); /* refresh in place on a terminal */
        else if (watch && !json)
            fputs("\n", stdout);
        struct ncg_vgroup *g;
        int ng = ncg_vgroups_build(&s, 1, &g);
        if (ng < 0) {
            ncg_view_free(&v);
            ncg_snap_free(&s);
            fprintf(stderr, "ncclguard: out of memory\n");
            return NCG_CLI_ERROR;
        }
        if (json)
            print_json(stdout, &s, &v, g, ng);
        else
            print_table(stdout, &s, &v, g, ng, all_rows, where);
        ncg_vgroups_free(g, ng);
        fflush(stdout);
        if (clean && !job)
            ncg_cli_clean_dead(&s, 3600, 0, 1, 1);
        ncg_view_free(&v);
        ncg_snap_free(&s);
    next:
        if (watch && !ncg_cli_stop) {
            struct timespec ts = {(time_t)every, (long)((every - (double)(time_t)every) * 1e9)};
            nanosleep(&ts, NULL); /* a signal cuts it short; the loop then ends */
        }
    } while (watch && !ncg_cli_stop);
    return NCG_CLI_OK;
}
