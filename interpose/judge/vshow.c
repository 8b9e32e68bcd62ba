/* Who is shown what of a verdict, decided from the verdict alone (and a process's few flags):
 * which comm ranks print the full block, whether the stuck thread's stack is shown, SLOW's
 * figures as data. Pure: the agent gathers its facts by these answers (agent/apply.c), the
 * machine renders by them (machine/vrender.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "config.h"
#include "vshow.h"

/* Parses a compact rank list ("0-2,4-15") into mark[0..n). -1 when it is not one (text, a
 * truncated list, a rank out of range). */
static int parse_ranks(const char *s, uint8_t *mark, uint32_t n)
{
    if (!*s)
        return -1;
    for (const char *p = s; *p;) {
        char *e;
        if (*p < '0' || *p > '9')
            return -1;
        long a = strtol(p, &e, 10), b = a;
        if (*e == '-') {
            if (e[1] < '0' || e[1] > '9')
                return -1;
            b = strtol(e + 1, &e, 10);
        }
        if (a < 0 || b < a || b >= (long)n)
            return -1;
        for (long r = a; r <= b; r++)
            mark[r] = 1;
        if (*e == ',')
            e++;
        else if (*e)
            return -1;
        p = e;
    }
    return 0;
}

int ncg_diag_full_here(const struct ncg_verdict *v, int32_t rank, char *on, size_t cap)
{
    uint8_t *mark = calloc(v->nranks ? v->nranks : 1, 1);
    int32_t *list = malloc(sizeof *list * (v->nranks ? v->nranks : 1));
    int full = 1;
    if (cap)
        on[0] = 0;
    if (!mark || !list || parse_ranks(v->subject, mark, v->nranks) != 0) {
        snprintf(on, cap, "every rank");
        goto out;
    }
    for (uint32_t r = 0; r < v->nranks; r++)
        if (!mark[r]) {
            mark[r] = 1; /* one member outside the subject: the lowest */
            break;
        }
    size_t n = 0;
    for (uint32_t r = 0; r < v->nranks; r++)
        if (mark[r])
            list[n++] = (int32_t)r;
    ncg_ranks_compact(list, n, on, cap);
    full = rank < 0 || (uint32_t)rank >= v->nranks || mark[rank];
out:
    free(mark);
    free(list);
    return full;
}

/* A warning's ranks that print its full block (ncg_full_block): 1 when rank is one of them. */
static int warn_full(const struct ncg_verdict *v, int32_t rank, char *on, size_t cap)
{
    int cut = 0;
    long n = ncg_ranks_walk(v->subject, NULL, 0, &cut);
    int32_t *r = n > 0 ? malloc(sizeof *r * (size_t)n) : NULL;
    if (cap)
        on[0] = 0;
    if (!r)
        return 0; /* no rank list (or no memory): the checker's process alone */
    ncg_ranks_walk(v->subject, r, (size_t)n, NULL);
    if (cut || n > NCG_DIAG_WARN_NAMED || (v->nranks && (uint64_t)n >= v->nranks))
        n = 1; /* the lowest named: a list is written ascending */
    int in = 0;
    for (long i = 0; i < n; i++)
        in |= r[i] == rank;
    ncg_ranks_compact(r, (size_t)n, on, cap);
    free(r);
    return in;
}

int ncg_full_block(const struct ncg_verdict *v, int diag_mode, int hosts_checker, int alone,
                   int32_t rank, char *on, size_t cap)
{
    if (cap)
        on[0] = 0;
    if (diag_mode == NCG_DIAG_FULL)
        return 1;
    if (diag_mode == NCG_DIAG_SHORT)
        return 0;
    if (v->severity == NCG_SEV_WARN)
        return warn_full(v, rank, on, cap) || hosts_checker;
    return ncg_diag_full_here(v, rank, on, cap) || alone;
}

int ncg_diag_in_subject(const struct ncg_verdict *v, int32_t rank)
{
    if (rank < 0 || (uint32_t)rank >= v->nranks)
        return 0;
    uint8_t *mark = calloc(v->nranks, 1);
    int in = mark && parse_ranks(v->subject, mark, v->nranks) == 0 && mark[rank];
    free(mark);
    return in;
}

int ncg_diag_slow_figs(const struct ncg_verdict *v, struct ncg_vslow *f)
{
    if (v->kind != NCG_V_SLOW)
        return -EINVAL;
    *f = v->slow;
    if (f->global_rank < 0 && f->rank >= 0 && (uint32_t)f->rank < v->nranks && v->members)
        f->global_rank = v->members[f->rank];
    return 0;
}

int ncg_verdict_shows_stack(const struct ncg_verdict *v, int action)
{
    if (v->severity != NCG_SEV_ERROR)
        return 0;
    if (v->kind == NCG_V_LAG) /* a job that lives on is not interrupted for a LAG */
        return action == NCG_ACTION_ABORT;
    return v->kind == NCG_V_MISMATCH || v->kind == NCG_V_P2P_MISMATCH ||
           v->kind == NCG_V_RANK_DIED || v->kind == NCG_V_RANK_EXITED || v->kind == NCG_V_STUCK ||
           v->kind == NCG_V_DEADLOCK || v->kind == NCG_V_CHECKER_LOST;
}
