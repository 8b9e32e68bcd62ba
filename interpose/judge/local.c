/* The verdicts a process decides on its own (local.h): their subject and detail lines. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "local.h"

/* A new error verdict of kind on s's communicator, with what this side knows: its own rank's
 * global rank and (with_count) its count. */
static struct ncg_verdict *local_new(const struct ncg_local_self *s, int kind, int with_count)
{
    struct ncg_verdict *v = ncg_verdict_new(s->nranks);
    if (!v)
        return NULL;
    v->kind = kind;
    v->severity = NCG_SEV_ERROR;
    v->comm_id = s->comm_id;
    if (s->rank >= 0 && (uint32_t)s->rank < s->nranks) {
        v->members[s->rank] = s->global_rank;
        if (with_count)
            v->counts[s->rank] = (int64_t)s->count;
    }
    return v;
}

struct ncg_verdict *ncg_local_rank_died(const struct ncg_local_self *s,
                                        const struct ncg_local_holder *h)
{
    struct ncg_verdict *v = local_new(s, NCG_V_RANK_DIED, 1);
    if (!v)
        return NULL;
    int32_t rg = h->rootlost || (h->relay && h->node == h->root_node) ? h->root_grank : -2;
    if (rg >= 0) /* the root's process: it holds the checker, as under the flat one */
        snprintf(v->subject, sizeof v->subject, "holding the checker (global rank %d)", rg);
    else if (rg == -1)
        snprintf(v->subject, sizeof v->subject, "holding the checker (the relay tree's root at %s)",
                 h->root_addr);
    else if (h->relay && h->grank >= 0)
        snprintf(v->subject, sizeof v->subject, "holding the relay of node %u (global rank %d)",
                 h->node, h->grank);
    else if (h->relay)
        snprintf(v->subject, sizeof v->subject, "holding the relay of node %u", h->node);
    else if (h->grank >= 0)
        snprintf(v->subject, sizeof v->subject, "holding the checker (global rank %d)", h->grank);
    else
        snprintf(v->subject, sizeof v->subject, "holding the checker");
    if (h->rootlost)
        snprintf(v->detail, sizeof v->detail,
                 "this node's relay (pid %u on %s) lost it: its process died or is "
                 "unreachable",
                 h->pid, h->host);
    else
        snprintf(v->detail, sizeof v->detail, "pid %u on %s, %s", h->pid, h->host, h->why);
    return v;
}

struct ncg_verdict *ncg_local_checker_lost(const struct ncg_local_self *s, int tree,
                                           const char *name, double unreachable_s, const char *why,
                                           double heartbeat_s)
{
    struct ncg_verdict *v = local_new(s, NCG_V_CHECKER_LOST, 1);
    if (!v)
        return NULL;
    if (tree) /* fell back from a lost node relay to the tree's root */
        snprintf(v->subject, sizeof v->subject, "%s", name);
    else
        snprintf(v->subject, sizeof v->subject, "the standalone checker at %s", name);
    snprintf(v->detail, sizeof v->detail,
             "unreachable for %.1f s (%s), and this process issued no call on this "
             "communicator for %g s (%" PRIu64 " so far)",
             unreachable_s, why, heartbeat_s, s->count);
    return v;
}

struct ncg_verdict *ncg_local_exited_wait(const struct ncg_local_self *s, uint64_t done,
                                          double idle_s, uint64_t peer_final, int peer_verdict,
                                          int32_t holder_grank)
{
    if (peer_final == UINT64_MAX || done >= s->count || done >= peer_final)
        return NULL;
    struct ncg_verdict *v = local_new(s, NCG_V_RANK_EXITED, 0);
    if (!v)
        return NULL;
    v->slot = (int64_t)done;
    snprintf(v->subject, sizeof v->subject, "holding the checker (global rank %d)", holder_grank);
    snprintf(v->detail, sizeof v->detail,
             "%s after %" PRIu64 " calls without completing slot %" PRIu64
             "; this rank waits in it (no progress for %.1f s)",
             peer_verdict ? NCG_EXITED_VERDICT : "left", peer_final, done, idle_s);
    return v;
}

/* RANK EXITED naming the ranks that left, as the SHUTDOWN named them: those whose count is below
 * this rank's; NULL when the SHUTDOWN named none of them. */
static struct ncg_verdict *exited_named(const struct ncg_local_self *s, uint64_t peer_final,
                                        int peer_verdict, int32_t holder_grank,
                                        const struct ncg_local_gone *g)
{
    if (!g || s->nranks == 0)
        return NULL;
    int32_t *who = malloc(sizeof *who * (g->n + 1));
    struct ncg_verdict *v = who ? local_new(s, NCG_V_RANK_EXITED, 1) : NULL;
    size_t n = 0;
    uint64_t low = UINT64_MAX;
    int host = 0;
    if (!v) {
        free(who);
        return NULL;
    }
    if (g->holder_rank >= 0 && (uint32_t)g->holder_rank < s->nranks && peer_final < s->count) {
        who[n++] = g->holder_rank;
        v->counts[g->holder_rank] = (int64_t)peer_final;
        v->members[g->holder_rank] = holder_grank;
        low = peer_final;
        host = 1;
    }
    for (size_t k = 0; k < g->n; k++) {
        int32_t r = g->rank[k];
        if (r < 0 || (uint32_t)r >= s->nranks || r == s->rank || g->count[k] >= s->count)
            continue;
        who[n++] = r;
        v->counts[r] = (int64_t)g->count[k];
        low = g->count[k] < low ? g->count[k] : low;
    }
    if (!n) {
        free(who);
        ncg_verdict_free(v);
        return NULL;
    }
    ncg_ranks_compact(who, n, v->subject, sizeof v->subject);
    free(who);
    v->slot = (int64_t)low;
    snprintf(v->detail, sizeof v->detail, "%s after %" PRIu64 " calls; this rank issued %" PRIu64,
             host && peer_verdict && low == peer_final ? NCG_EXITED_VERDICT : "left", low,
             s->count);
    return v;
}

struct ncg_verdict *ncg_local_rank_exited(const struct ncg_local_self *s, uint64_t peer_final,
                                          uint64_t peer_left, int peer_verdict,
                                          int32_t holder_grank, const struct ncg_local_gone *gone)
{
    uint64_t cnt = s->count, low = peer_left < peer_final ? peer_left : peer_final;
    if (cnt <= low)
        return NULL; /* this rank waits for nobody who left */
    struct ncg_verdict *v = exited_named(s, peer_final, peer_verdict, holder_grank, gone);
    if (v)
        return v;
    v = local_new(s, NCG_V_RANK_EXITED, 1);
    if (!v)
        return NULL;
    /* the checker's process, or members that left before it did (its SHUTDOWN named their
     * lowest count, not who they were) */
    int host = cnt > peer_final, others = cnt > peer_left;
    v->slot = (int64_t)low;
    if (host && others)
        snprintf(v->subject, sizeof v->subject,
                 "holding the checker (global rank %d) and the ranks that left before it",
                 holder_grank);
    else if (host)
        snprintf(v->subject, sizeof v->subject, "holding the checker (global rank %d)",
                 holder_grank);
    else
        snprintf(v->subject, sizeof v->subject,
                 "that left before the checker's process (global rank %d)", holder_grank);
    snprintf(v->detail, sizeof v->detail, "%s after %" PRIu64 " calls; this rank issued %" PRIu64,
             host && peer_verdict && peer_final <= peer_left ? NCG_EXITED_VERDICT : "left", low,
             cnt);
    return v;
}

void ncg_sd_facts_reset(struct ncg_sd_facts *f)
{
    f->final = f->left = UINT64_MAX;
    f->rank = -1;
    f->verdict = 0;
    f->ngone = 0;
}

int ncg_sd_facts_take(struct ncg_sd_facts *f, const struct ncg_msg_goodbye *g, uint64_t comm_id)
{
    int first = 1;
    for (uint32_t k = 0; k < g->n; k++) {
        if (g->comm_id[k] != comm_id)
            continue;
        uint32_t rk = g->rank[k];
        int32_t rank = rk == NCG_BYE_ANYRANK || rk > INT32_MAX ? -1 : (int32_t)rk;
        if (first) {
            f->final = g->count[k];
            f->verdict = !!(g->flags & NCG_BYE_VERDICT);
            f->rank = rank;
            f->ngone = 0;
        } else {
            if (g->count[k] < f->left)
                f->left = g->count[k];
            if (rank >= 0 && f->ngone < sizeof f->gone_rank / sizeof *f->gone_rank) {
                f->gone_rank[f->ngone] = rank;
                f->gone_count[f->ngone++] = g->count[k];
            }
        }
        first = 0;
    }
    return !first;
}
