/* A verdict rendered for people (the stderr diagnostic) and for tools (JSON report v1, see
 * docs/report-format.md), and who prints the full block: pure, the agent writes what it returns
 * (agent/diag.c writes the report, agent/action.c prints). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "buf.h"
#include "ncclguard/shm.h"
#include "site.h"
#include "vrender.h"

struct out {
    char *b;
    size_t cap, len; /* len may exceed cap: the size needed */
    size_t *split;   /* non-NULL: the report's words left out, their place written here */
};

__attribute__((format(printf, 2, 3))) static void outf(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t left = o->len < o->cap ? o->cap - o->len : 0;
    int n = vsnprintf(left ? o->b + o->len : NULL, left, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

static void members_text(const struct ncg_verdict *v, const struct ncg_diag_ctx *x, char *buf,
                         size_t cap)
{
    int ident = 1, known = 0;
    for (uint32_t i = 0; i < v->nranks; i++) {
        ident &= v->members[i] == (int32_t)i;
        known |= v->members[i] >= 0;
    }
    if (!known && x->global_rank >= 0) { /* the relay tree's gather found none in time */
        snprintf(buf, cap,
                 "global ranks unknown: the relay tree's gather did not reach them "
                 "(this process: %d)",
                 x->global_rank);
        return;
    }
    if (!known) {
        snprintf(buf, cap,
                 "global ranks unknown (none of RANK, OMPI_COMM_WORLD_RANK, PMIX_RANK, "
                 "PMI_RANK, SLURM_PROCID is set)");
        return;
    }
    if (ident) {
        snprintf(buf, cap, "global ranks 0-%u (same as comm ranks)", v->nranks - 1);
        return;
    }
    size_t len = (size_t)snprintf(buf, cap, "global ranks by comm rank [");
    for (uint32_t i = 0; i < v->nranks && len < cap; i++) {
        if (len + 16 > cap) {
            snprintf(buf + len, cap - len, "...");
            return;
        }
        if (v->members[i] < 0) /* a member whose RANK the checker did not hear */
            len += (size_t)snprintf(buf + len, cap - len, "%s?", i ? "," : "");
        else
            len += (size_t)snprintf(buf + len, cap - len, "%s%d", i ? "," : "", v->members[i]);
    }
    int unknown = 0;
    for (uint32_t i = 0; i < v->nranks; i++)
        unknown |= v->members[i] < 0;
    if (len < cap)
        snprintf(buf + len, cap - len, "]%s", unknown ? " (?: not gathered)" : "");
}

static void this_process(struct out *o, const struct ncg_diag_ctx *x)
{
    const char *P = "ncclguard: ";
    char who[96];
    const char *var = x->rank_var ? x->rank_var : "";
    if (x->global_rank >= 0 && var[0] && strcmp(var, "RANK"))
        snprintf(who, sizeof who, "comm rank %d, global rank %d (%s)", x->rank, x->global_rank,
                 var);
    else if (x->global_rank >= 0)
        snprintf(who, sizeof who, "comm rank %d, global rank %d", x->rank, x->global_rank);
    else
        snprintf(who, sizeof who, "comm rank %d", x->rank);
    char site[NCG_SITE_FULL]; /* the report keeps the whole name; a line shortens its detail */
    ncg_site_fit(site, sizeof site, x->my_site, NCG_SITE_WIDTH);
    outf(o, "%s  this process (%s, pid %u on %s): %s%s%s\n", P, who, x->pid, x->host,
         x->my_call[0] ? x->my_call : "no call recorded", site[0] ? " called from " : "", site);
}

static void action_line(struct out *o, const struct ncg_diag_ctx *x, const char *more)
{
    const char *P = "ncclguard: ";
    if (x->exit_status >= 0)
        outf(o, "%s  action: %s (exit status %d)", P, x->action, x->exit_status);
    else
        outf(o, "%s  action: %s", P, x->action);
    if (o->split) { /* the report is not written yet: its words go here when it is */
        *o->split = o->len;
        outf(o, "%s\n", more);
    } else if (x->report_path[0])
        outf(o, "; report: %s%s\n", x->report_path, more);
    else
        outf(o, "; no report written%s\n", more);
}

static size_t finish(struct out *o, char *buf, size_t cap)
{
    if (o->len >= cap && cap) { /* truncated: still end with a newline */
        buf[cap - 2 < cap ? cap - 2 : 0] = '\n';
        buf[cap - 1] = 0;
        return cap - 1;
    }
    return o->len;
}

/* The two or three lines of a rank that does not print the full block. */
static size_t render_short(struct out *o, const struct ncg_verdict *v, const struct ncg_diag_ctx *x,
                           const char *full_on, char *buf, size_t cap)
{
    char more[400];
    if (x->rank >= 0)
        this_process(o, x);
    char named[NCG_WIRE_STR + 64];
    if (full_on[0])
        snprintf(more, sizeof more,
                 "; full diagnostic on %s (set NCCLGUARD_DIAG=full for every rank)",
                 ncg_ranks_named(v, full_on, named, sizeof named));
    else
        snprintf(more, sizeof more, "; the full diagnostic is in the report");
    action_line(o, x, more);
    return finish(o, buf, cap);
}

int ncg_diag_full_for(const struct ncg_verdict *v, const struct ncg_diag_ctx *x, int32_t rank,
                      char *on, size_t cap)
{
    return ncg_full_block(v, x->diag_mode, x->hosts_checker, x->alone, rank, on, cap);
}

/* The Python frames of the stuck thread, beside its native stack. */
static void ncg_diag_render_py(struct out *o, const struct ncg_pystack *py)
{
    const char *P = "ncclguard: ";
    if (!py || py->n <= 0)
        return;
    outf(o, "%s  python stack of thread %u (Python thread 0x%lx), innermost first:\n", P, py->tid,
         py->thread);
    for (int i = 0; i < py->n; i++) {
        outf(o, "%s    %s:%d in %s\n", P, py->f[i].file, py->f[i].line, py->f[i].func);
        if (py->f[i].src[0])
            outf(o, "%s        %s\n", P, py->f[i].src);
    }
    if (py->more)
        outf(o, "%s    ... %d more\n", P, py->more);
}

/* ncg_diag_render into o (o->split set: without the report's words). */
static size_t render(struct out o, const struct ncg_verdict *v, const struct ncg_diag_ctx *x,
                     char *buf, size_t cap)
{
    char line[1024], call[192], tmp[1024];
    const char *P = "ncclguard: ";
    char full_on[256] = "";
    int full = ncg_diag_full_for(v, x, x->rank, full_on, sizeof full_on);
    int warn_other = !full && v->severity == NCG_SEV_WARN && x->diag_mode != NCG_DIAG_SHORT;
    if (warn_other && x->diag_mode == NCG_DIAG_QUIET) {
        if (cap)
            buf[0] = 0;
        return 0; /* a warning: nothing on the ranks it does not name */
    }
    outf(&o, "%s%s %s\n", P, v->severity == NCG_SEV_WARN ? "WARNING:" : "VERDICT:",
         ncg_verdict_summary(v, line, sizeof line));
    if (warn_other) /* its headline alone: the named ranks and the checker's process say more */
        return finish(&o, buf, cap);
    if (!full)
        return render_short(&o, v, x, full_on, buf, cap);
    members_text(v, x, tmp, sizeof tmp);
    outf(&o, "%s  communicator %016" PRIx64 ", %u ranks, %s\n", P, v->comm_id, v->nranks, tmp);
    if (v->kind == NCG_V_MISMATCH) {
        outf(&o, "%s  slot %" PRId64 " (0-based) differs:\n", P, v->slot);
        for (uint32_t i = 0; i < v->ncalls; i++)
            outf(&o, "%s    %-48s on %s %s%s%s\n", P,
                 ncg_call_format(&v->calls[i].call, call, sizeof call),
                 strpbrk(v->calls[i].ranks, ",-") ? "ranks" : "rank", v->calls[i].ranks,
                 v->calls[i].site[0] ? "  from " : "", v->calls[i].site);
    } else if (v->kind == NCG_V_P2P_MISMATCH) {
        outf(&o, "%s  %s, sizes differ:\n", P, v->detail);
        for (uint32_t i = 0; i < v->ncalls; i++)
            outf(&o, "%s    %-48s on rank %s (#%" PRIu64 " of the pair)%s%s\n", P,
                 ncg_call_format(&v->calls[i].call, call, sizeof call), v->calls[i].ranks,
                 v->calls[i].call.seq, v->calls[i].site[0] ? "  from " : "", v->calls[i].site);
    } else if (v->detail[0] && v->kind != NCG_V_DEADLOCK && v->kind != NCG_V_STUCK) {
        outf(&o, "%s  %s\n", P, v->detail);
        for (uint32_t i = 0; v->kind == NCG_V_RANK_EXITED && i < v->ncalls; i++)
            outf(&o, "%s    waiting: %-48s on rank %s%s%s\n", P,
                 ncg_call_format(&v->calls[i].call, call, sizeof call), v->calls[i].ranks,
                 v->calls[i].site[0] ? "  from " : "", v->calls[i].site);
    }
    for (const char *l = v->notes; l && *l;) { /* STUCK / DEADLOCK: one line each */
        const char *e = strchr(l, '\n');
        int n = e ? (int)(e - l) : (int)strlen(l);
        outf(&o, "%s  %.*s\n", P, n, l);
        l = e ? e + 1 : l + n;
    }
    if (v->kind != NCG_V_P2P_MISMATCH) {
        if (v->last_agreed >= 0)
            outf(&o, "%s  last slot all ranks agreed on: %" PRId64 "\n", P, v->last_agreed);
        else
            outf(&o, "%s  last slot all ranks agreed on: none verified yet\n", P);
        outf(&o, "%s  collective calls issued per rank: %s", P,
             ncg_verdict_coarse(v) /* past the runs' bound: ranges ("1230-1235 on 0-4095") */
                 ? ncg_figruns_counts_text(v->figs, v->nfigs, v->nranks, tmp, sizeof tmp)
                 : ncg_counts_compact(v->counts, v->nranks, tmp, sizeof tmp));
        if (x->rank >= 0)
            outf(&o, " (rank %d: its own count now; the others: as last reported)", x->rank);
        outf(&o, "\n");
    }
    if (x->rank >= 0) {
        this_process(&o, x);
        if (x->stack_tid && x->nstack > 0) {
            outf(&o, "%s  stack of thread %u (issued %s), innermost first:\n", P, x->stack_tid,
                 x->stack_what);
            for (int i = 0; i < x->nstack; i++)
                outf(&o, "%s    #%d %s\n", P, i, x->stack[i]);
        } else if (x->stack_tid && x->stack_why) {
            outf(&o, "%s  stack of thread %u (issued %s): not captured: %s\n", P, x->stack_tid,
                 x->stack_what, x->stack_why);
        }
        ncg_diag_render_py(&o, x->py);
    }
    action_line(&o, x, "");
    return finish(&o, buf, cap);
}

static void json_str(struct out *o, const char *s)
{
    char tmp[8];
    outf(o, "\"");
    for (; *s; s++) {
        const char *e = ncg_esc_byte((unsigned char)*s, NCG_ESC_JSON, tmp);
        outf(o, e ? "%s" : "%.1s", e ? e : s);
    }
    outf(o, "\"");
}

static const char *ranks_global(const struct ncg_verdict *v, const char *ranks, char *buf,
                                size_t cap)
{
    /* Map a compact comm-rank list to global ranks; "" when any is unknown or it was cut. */
    int32_t *g = malloc(sizeof *g * (v->nranks ? v->nranks : 1));
    size_t n = 0;
    buf[0] = 0;
    if (!g || strstr(ranks, "...")) {
        free(g);
        return buf;
    }
    for (const char *p = ranks; *p;) {
        char *e;
        long a = strtol(p, &e, 10), b = a;
        if (e == p)
            break;
        if (*e == '-')
            b = strtol(e + 1, &e, 10);
        for (long r = a; r <= b && n < v->nranks; r++) {
            if (r < 0 || r >= (long)v->nranks || v->members[r] < 0) {
                free(g);
                return buf;
            }
            g[n++] = v->members[r];
        }
        p = *e == ',' ? e + 1 : e;
        if (e == p)
            break;
    }
    ncg_ranks_compact(g, n, buf, cap);
    free(g);
    return buf;
}

size_t ncg_diag_json_pyframe(const struct ncg_pyframe *f, char *buf, size_t cap)
{
    struct out o = {buf, cap, 0, NULL};
    outf(&o, "{\"file\":");
    json_str(&o, f->file);
    outf(&o, ",\"line\":%d,\"function\":", f->line);
    json_str(&o, f->func);
    outf(&o, ",\"source\":");
    json_str(&o, f->src);
    outf(&o, "}");
    return o.len;
}

/* "python_stack": the stuck thread's Python frames (docs/report-format.md), or null. */
static void ncg_diag_json_py(struct out *o, const struct ncg_pystack *py)
{
    if (!py || py->n <= 0) {
        outf(o, ",\"python_stack\":null");
        return;
    }
    outf(o, ",\"python_stack\":{\"tid\":%u,\"thread\":\"0x%lx\",\"frames\":[", py->tid, py->thread);
    for (int i = 0; i < py->n; i++) {
        char fr[NCG_PYFRAME_JSON_MAX];
        ncg_diag_json_pyframe(&py->f[i], fr, sizeof fr);
        outf(o, "%s%s", i ? "," : "", fr);
    }
    outf(o, "],\"more\":%d}", py->more);
}

size_t ncg_diag_json(const struct ncg_verdict *v, const struct ncg_diag_ctx *x, char *buf,
                     size_t cap)
{
    struct out o = {buf, cap, 0, NULL};
    char tmp[1024];
    outf(&o,
         "{\"format\":\"ncclguard-report\",\"version\":1,\"verdict\":\"%s\",\"severity\":\"%s\","
         "\"action\":",
         ncg_verdict_key(v->kind), v->severity == NCG_SEV_WARN ? "warning" : "error");
    json_str(&o, x->action);
    if (x->exit_status >= 0)
        outf(&o, ",\"exit_status\":%d", x->exit_status);
    else
        outf(&o, ",\"exit_status\":null");
    outf(&o, ",\"summary\":");
    json_str(&o, ncg_verdict_summary(v, tmp, sizeof tmp));
    outf(&o, ",\"time_unix\":%ld.%06ld,\"host\":", x->time_sec, x->time_usec);
    json_str(&o, x->host);
    outf(&o, ",\"rank_var\":");
    json_str(&o, x->rank_var ? x->rank_var : "");
    outf(&o,
         ",\"pid\":%u,\"global_rank\":%d,\"comm\":{\"id\":\"%016" PRIx64
         "\",\"size\":%u,\"members\":[",
         x->pid, x->global_rank, v->comm_id, v->nranks);
    for (uint32_t i = 0; i < v->nranks; i++)
        outf(&o, "%s%d", i ? "," : "", v->members[i]);
    outf(&o, "]},\"rank\":%d,\"ranks\":[", x->rank);
    if (x->nheld > 0)
        for (int i = 0; i < x->nheld; i++)
            outf(&o, "%s%d", i ? "," : "", x->held[i]);
    else if (x->rank >= 0)
        outf(&o, "%d", x->rank);
    outf(&o, "],\"slot\":%" PRId64 ",\"last_agreed_slot\":%" PRId64 ",\"counts\":[", v->slot,
         v->last_agreed);
    for (uint32_t i = 0; i < v->nranks; i++)
        outf(&o, "%s%" PRId64, i ? "," : "", v->counts[i]);
    outf(&o, "],\"calls\":[");
    for (uint32_t i = 0; i < v->ncalls; i++) {
        const struct ncg_vcall *c = &v->calls[i];
        outf(&o, "%s{\"func\":\"%s\",\"count\":%" PRIu64 ",\"dtype\":\"%s\",\"op\":", i ? "," : "",
             ncg_v_func_name(c->call.func), c->call.count, ncg_v_dtype_name(c->call.dtype));
        if (c->call.redop == NCG_REDOP_NONE)
            outf(&o, "null");
        else
            outf(&o, "\"%s\"", ncg_v_redop_name(c->call.redop));
        if (c->call.root >= 0)
            outf(&o, ",\"root\":%d", c->call.root);
        else
            outf(&o, ",\"root\":null");
        outf(&o, ",\"seq\":%" PRIu64 ",\"ranks\":", c->call.seq);
        json_str(&o, c->ranks);
        outf(&o, ",\"global_ranks\":");
        json_str(&o, ranks_global(v, c->ranks, tmp, sizeof tmp));
        outf(&o, ",\"call_site\":");
        json_str(&o, c->site);
        outf(&o, "}");
    }
    outf(&o, "],\"subject_ranks\":");
    json_str(&o, v->subject);
    outf(&o, ",\"call_site\":");
    json_str(&o, x->my_site);
    if (x->call_time_unix >= 0)
        outf(&o, ",\"call_time_unix\":%.6f", x->call_time_unix);
    else
        outf(&o, ",\"call_time_unix\":null");
    if (x->stack_tid && x->nstack > 0)
        outf(&o, ",\"stack_tid\":%u,\"stack\":[", x->stack_tid);
    else
        outf(&o, ",\"stack_tid\":null,\"stack\":[");
    for (int i = 0; x->stack_tid && i < x->nstack; i++) {
        outf(&o, "%s", i ? "," : "");
        json_str(&o, x->stack[i]);
    }
    outf(&o, "]");
    ncg_diag_json_py(&o, x->py);
    struct ncg_vslow sl;
    if (v->kind == NCG_V_SLOW && ncg_diag_slow_figs(v, &sl) == 0) {
        outf(&o, ",\"slow\":{\"rank\":%d,\"global_rank\":%d,\"host\":", sl.rank, sl.global_rank);
        json_str(&o, sl.host);
        outf(&o, ",\"pid\":%u,\"share\":%.3f,\"since_s\":%.0f,\"side\":\"%s\"}", sl.pid, sl.share,
             sl.since_s, sl.device ? "gpu" : "host");
    }
    outf(&o, ",\"detail\":");
    json_str(&o, v->detail);
    outf(&o, "}\n");
    return o.len;
}

size_t ncg_diag_render(const struct ncg_verdict *v, const struct ncg_diag_ctx *x, char *buf,
                       size_t cap)
{
    return render((struct out){buf, cap, 0, NULL}, v, x, buf, cap);
}

size_t ncg_diag_render_split(const struct ncg_verdict *v, const struct ncg_diag_ctx *x, char *buf,
                             size_t cap, size_t *split)
{
    *split = NCG_DIAG_NO_SPLIT;
    return render((struct out){buf, cap, 0, split}, v, x, buf, cap);
}

void ncg_diag_report_path(const char *dir, const char *host, uint32_t pid, char *path, size_t cap)
{
    snprintf(path, cap, "%s/ncclguard-report.%s.%u.json", dir && dir[0] ? dir : ".",
             host[0] ? host : "host", pid);
}
