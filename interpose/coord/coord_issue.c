/* The coordinator's verdicts on their way out (coord_int.h's state): the per-rank arrays they
 * carry, stale counts noted, one copy per live process, then the exit release (release.h):
 * RELEASE once every process the error verdict reached said DONE or closed, or at the
 * deadline. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coord_int.h"

/* A verdict's per-rank arrays: each member's count (-1 unknown) and global rank. */
static void co_ranks(const void *arg, struct ncg_verdict *v)
{
    const struct ccomm *c = arg;
    for (uint32_t i = 0; i < c->nranks; i++) {
        v->counts[i] = c->m[i].state == M_UNKNOWN ? -1 : (int64_t)c->m[i].count;
        v->members[i] = c->m[i].grank;
    }
}

struct ncg_vcomm ncg_co_vcomm(const struct ccomm *c)
{
    return (struct ncg_vcomm){c->id, c->nranks, (int64_t)c->vc - 1, co_ranks, c};
}

/* Appends to v->detail which members' counts are older than five report intervals and 1 s (a
 * member that stopped reporting: its count is its last word, not its state now). */
static void note_stale_counts(const struct ncg_coord *co, const struct ccomm *c,
                              struct ncg_verdict *v)
{
    uint64_t now = co->last_tick_ns, limit = 5ull * co->p.interval_ms * 1000000ull, oldest = 0;
    if (limit < 1000000000ull)
        limit = 1000000000ull;
    int32_t *r = malloc(sizeof *r * (c->nranks ? c->nranks : 1));
    size_t n = 0;
    if (!r)
        return;
    for (uint32_t i = 0; i < c->nranks; i++)
        if (c->m[i].state != M_UNKNOWN && c->m[i].report_ns && now > c->m[i].report_ns &&
            now - c->m[i].report_ns > limit) {
            r[n++] = (int32_t)i;
            if (now - c->m[i].report_ns > oldest)
                oldest = now - c->m[i].report_ns;
        }
    ncg_v_note_stale(v, r, n, oldest);
    free(r);
}

/* Sends v to every live member of c (once per process) and takes ownership of v. */
void ncg_co_verdict_issue(struct ncg_coord *co, struct ccomm *c, struct ncg_verdict *v)
{
    struct ncg_msg m = {.type = NCG_MSG_VERDICT};
    note_stale_counts(co, c, v);
    if (co->ops.event && ncg_v_counted(v)) {
        char sum[512];
        ncg_co_event(co, "%s %s", v->severity == NCG_SEV_WARN ? "warning:" : "verdict:",
                     ncg_verdict_summary(v, sum, sizeof sum));
    }
    m.u.verdict = v;
    if (co->nomem) { /* judged from incomplete state: the server stops the checker instead */
        ncg_verdict_free(v);
        return;
    }
    int error = v->severity == NCG_SEV_ERROR;
    if (error)
        ncg_release_begin(&c->rel, co->now_ns + (uint64_t)(co->p.exit_wait_s * 1e9));
    for (uint32_t i = 0; i < c->nranks; i++) {
        int cn = c->m[i].conn;
        if (cn < 0 || (c->m[i].state != M_ACTIVE && c->m[i].state != M_GONE) ||
            !ncg_co_conn_get(co, cn))
            continue;
        uint32_t j;
        for (j = 0; j < i; j++) /* a process holding several ranks gets it once */
            if (c->m[j].conn == cn && (c->m[j].state == M_ACTIVE || c->m[j].state == M_GONE))
                break;
        if (j < i)
            continue;
        co->ops.send(co->ops.arg, cn, &m);
        if (error && ncg_release_add(&c->rel, cn) < 0)
            ncg_co_nomem(co);
    }
    if (ncg_v_counted(v)) {
        co->st.verdicts++;
        co->st.by_kind[v->kind < NCG_V_KIND_MAX_ ? v->kind : 0]++;
    }
    if (v->severity == NCG_SEV_ERROR) {
        c->done = 1;
        c->q_active = 0;
        ncg_verdict_free(c->last);
        c->last = v;
        return;
    }
    ncg_verdict_free(v);
}

void ncg_co_release_check(struct ncg_coord *co, struct ccomm *c)
{
    if (!ncg_release_due(&c->rel, co->now_ns))
        return;
    int first;
    uint32_t left = ncg_release_pending(&c->rel, &first);
    struct ncg_msg m = {.type = NCG_MSG_RELEASE, .u.exit.comm_id = c->id};
    for (uint32_t i = 0; i < c->rel.n; i++)
        if (ncg_co_conn_get(co, c->rel.conn[i]))
            co->ops.send(co->ops.arg, c->rel.conn[i], &m);
    c->rel.state = NCG_REL_RELEASED;
    if (left) {
        char who[128];
        struct cconn *cc = ncg_co_conn_get(co, first);
        ncg_co_event(co,
                     "exit release of comm %016" PRIx64 " after %.1f s without the DONE of %u "
                     "process%s (%s)",
                     c->id, co->p.exit_wait_s, left, left > 1 ? "es" : "",
                     cc ? ncg_co_conn_who(cc, who, sizeof who) : "?");
    }
}

void ncg_co_release_late(struct ncg_coord *co, struct ccomm *c, int conn)
{
    if (c->rel.state == NCG_REL_RELEASED) {
        struct ncg_msg m = {.type = NCG_MSG_RELEASE, .u.exit.comm_id = c->id};
        co->ops.send(co->ops.arg, conn, &m);
    } else if (c->rel.state == NCG_REL_WAITING && ncg_release_add(&c->rel, conn) < 0) {
        ncg_co_nomem(co);
    }
}

void ncg_co_release_mark(struct ncg_coord *co, int conn, uint64_t comm_id, int gone)
{
    for (size_t ci = 0; ci < co->ncomm; ci++)
        if (ncg_release_note(&co->comm[ci]->rel, co->comm[ci]->id, conn, comm_id, gone, 0))
            ncg_co_release_check(co, co->comm[ci]);
}

int ncg_coord_releases_waiting(const struct ncg_coord *co)
{
    int n = 0;
    for (size_t ci = 0; ci < co->ncomm; ci++)
        n += co->comm[ci]->rel.state == NCG_REL_WAITING;
    return n;
}
