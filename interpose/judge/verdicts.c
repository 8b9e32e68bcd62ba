/* The checker's verdicts from plain figures (verdicts.h), for the relay tree's root. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "verdicts.h"
#include "wire.h"
#include "ncclguard/signal.h"

/* A verdict of kind on c, error severity, with c's per-rank arrays when it has them. */
static struct ncg_verdict *v_new(const struct ncg_vcomm *c, uint8_t kind)
{
    struct ncg_verdict *v = ncg_verdict_new(c->ranks ? c->nranks : 0);
    if (!v)
        return NULL;
    v->kind = kind;
    v->severity = NCG_SEV_ERROR;
    v->comm_id = c->id;
    v->last_agreed = c->last_agreed;
    if (c->ranks)
        c->ranks(c->arg, v);
    return v;
}

char *ncg_v_silent(char *buf, size_t cap, uint64_t silent_ns)
{
    snprintf(buf, cap, "silent for %.1f s (frozen or unreachable)", (double)silent_ns / 1e9);
    return buf;
}

void ncg_v_note_stale(struct ncg_verdict *v, int32_t *ranks, size_t n, uint64_t oldest_ns)
{
    ncg_v_note_stale_buf(v->detail, sizeof v->detail, ranks, n, oldest_ns);
}

void ncg_v_note_stale_buf(char *buf, size_t cap, int32_t *ranks, size_t n, uint64_t oldest_ns)
{
    if (!n)
        return;
    char list[NCG_WIRE_STR];
    size_t len = strlen(buf);
    if (len >= cap)
        return;
    ncg_ranks_compact(ranks, n, list, sizeof list);
    if (snprintf(buf + len, cap - len, "%scount%s of rank%s %s as last reported, up to %.1f s ago",
                 len ? "; " : "", n > 1 ? "s" : "", n > 1 ? "s" : "", list,
                 (double)oldest_ns / 1e9) < 0)
        buf[len] = 0;
}

struct ncg_verdict *ncg_v_mismatch(const struct ncg_vcomm *c, uint64_t slot,
                                   void (*calls)(void *arg, struct ncg_verdict *v), void *arg,
                                   int more)
{
    struct ncg_verdict *v = v_new(c, NCG_V_MISMATCH);
    if (!v)
        return NULL;
    v->slot = (int64_t)slot;
    calls(arg, v);
    if (more)
        snprintf(v->detail, sizeof v->detail,
                 "more than %u distinct calls at this slot: the others are not shown",
                 NCG_RELAY_GROUPS);
    else if (v->ncalls < 2)
        snprintf(v->detail, sizeof v->detail,
                 "the calls at slot %" PRIu64
                 " look alike: the first difference lies in slots no longer kept",
                 slot);
    return v;
}

struct ncg_verdict *ncg_v_p2p(const struct ncg_vcomm *c, const struct ncg_p2pm_rec pair[2])
{
    struct ncg_verdict *v = v_new(c, NCG_V_P2P_MISMATCH);
    if (v)
        ncg_p2pm_verdict(v, pair);
    return v;
}

struct ncg_verdict *ncg_v_rank_died(const struct ncg_vcomm *c, int32_t *ranks, size_t n,
                                    const char *detail)
{
    struct ncg_verdict *v = v_new(c, NCG_V_RANK_DIED);
    if (!v)
        return NULL;
    ncg_ranks_compact(ranks, n, v->subject, sizeof v->subject);
    if (detail)
        snprintf(v->detail, sizeof v->detail, "%s", detail);
    return v;
}

struct ncg_verdict *ncg_v_exited(const struct ncg_vcomm *c, int32_t *who, size_t n, uint64_t fin,
                                 uint64_t mx, int how)
{
    struct ncg_verdict *v = v_new(c, NCG_V_RANK_EXITED);
    if (!v)
        return NULL;
    ncg_ranks_compact(who, n, v->subject, sizeof v->subject);
    v->slot = (int64_t)fin;
    /* The detail's first words name how (ncg_verdict_summary's headline uses them). */
    snprintf(v->detail, sizeof v->detail,
             "%s after %" PRIu64 " calls; others issued up to %" PRIu64,
             how == NCG_BYE_ABORT     ? NCG_EXITED_ABORT
             : how == NCG_BYE_VERDICT ? NCG_EXITED_VERDICT
                                      : "left",
             fin, mx);
    return v;
}

struct ncg_verdict *ncg_v_exited_wait(const struct ncg_vcomm *c, int32_t who, uint64_t fin, int how,
                                      const struct ncg_wait_ent *e)
{
    struct ncg_verdict *v = ncg_v_exited(c, &who, 1, fin, fin, how);
    if (!v)
        return NULL;
    char call[160];
    struct ncg_vcall *vc = &v->calls[v->ncalls++];
    vc->call = e->call;
    snprintf(vc->ranks, sizeof vc->ranks, "%u", e->rank);
    snprintf(vc->site, sizeof vc->site, "%s", e->site);
    ncg_call_format(&e->call, call, sizeof call);
    /* The first words name how, as ncg_v_exited's (the headline reads them). */
    const char *left = how == NCG_BYE_ABORT     ? NCG_EXITED_ABORT
                       : how == NCG_BYE_VERDICT ? NCG_EXITED_VERDICT
                                                : "left";
    if (e->p2p)
        snprintf(v->detail, sizeof v->detail,
                 "%s after %" PRIu64 " collective calls; rank %u waits in its %s #%" PRIu64
                 " %s it, which it never %s",
                 left, fin, e->rank, e->call.func == NCG_F_SEND ? "send" : "receive",
                 ncg_p2p_nth(e->call.seq), e->call.func == NCG_F_SEND ? "to" : "from",
                 e->call.func == NCG_F_SEND ? "received" : "sent");
    else
        snprintf(v->detail, sizeof v->detail,
                 "%s after %" PRIu64 " calls without completing slot %" PRIu64
                 " (%.96s); rank %u waits in it",
                 left, fin, e->call.seq, call, e->rank);
    return v;
}

struct ncg_verdict *ncg_v_lag(const struct ncg_vcomm *c, int32_t *who, size_t n, int more, int act,
                              uint64_t mn, uint64_t mx, double idle)
{
    struct ncg_verdict *v = v_new(c, NCG_V_LAG);
    if (!v)
        return NULL;
    ncg_ranks_compact(who, n, v->subject, sizeof v->subject);
    if (more)
        ncg_addf(v->subject, sizeof v->subject, ",...");
    v->severity = act ? NCG_SEV_ERROR : NCG_SEV_WARN;
    v->slot = (int64_t)mn;
    snprintf(v->detail, sizeof v->detail, "for %.1f s (slot counts %" PRIu64 "..%" PRIu64 ")", idle,
             mn, mx);
    return v;
}

/* SLOW's words from its figures (v->slow); nohost: the host is not known where the warning is
 * decided (the relay tree's root), which the words say. */
static void slow_words(struct ncg_verdict *v, int nohost)
{
    const struct ncg_vslow *f = &v->slow;
    char who[160] = "";
    if (f->global_rank >= 0)
        ncg_addf(who, sizeof who, "global rank %d", f->global_rank);
    if (f->pid)
        ncg_addf(who, sizeof who, "%spid %u", who[0] ? ", " : "", f->pid);
    if (f->host[0] || nohost)
        ncg_addf(who, sizeof who, "%son %s", who[0] ? " " : "",
                 f->host[0] ? f->host : "an unknown host");
    snprintf(v->subject, sizeof v->subject, "%d", f->rank);
    if (f->ended) {
        snprintf(v->detail, sizeof v->detail,
                 "no longer holds the others up (it did for %.0f s)%s%s%s", f->since_s,
                 who[0] ? " (" : "", who, who[0] ? ")" : "");
        return;
    }
    snprintf(v->detail, sizeof v->detail,
             "they lose %.1f%% of the step waiting for it, for %.0f s; late %s%s%s%s",
             f->share * 100, f->since_s,
             f->device ? "on its GPU (its stream starts the collective late)"
                       : "on its host (it issues the collective late)",
             who[0] ? " (" : "", who, who[0] ? ")" : "");
}

struct ncg_verdict *ncg_v_slow(const struct ncg_vcomm *c, int32_t rank, int32_t grank, uint32_t pid,
                               const char *host, double share, double since_s, int device)
{
    struct ncg_verdict *v = v_new(c, NCG_V_SLOW);
    if (!v)
        return NULL;
    v->severity =
        NCG_SEV_WARN; /* never acted upon: a straggler taxes the job, it does not end it */
    v->slot = -1;
    v->slow = (struct ncg_vslow){.rank = rank,
                                 .global_rank = grank >= 0 ? grank : -1,
                                 .pid = pid,
                                 .device = device ? 1 : 0,
                                 .share = share >= 0 && share <= 1 ? share
                                          : share > 1              ? 1
                                                                   : 0,
                                 .since_s = since_s >= 0 ? since_s : 0};
    snprintf(v->slow.host, sizeof v->slow.host, "%s", host ? host : "");
    slow_words(v, !host);
    return v;
}

struct ncg_verdict *ncg_v_slow_end(const struct ncg_vcomm *c, int32_t rank, int32_t grank,
                                   uint32_t pid, const char *host, double since_s)
{
    struct ncg_verdict *v = ncg_v_slow(c, rank, grank, pid, host, 0, since_s, 0);
    if (v) {
        v->slow.ended = 1;
        slow_words(v, 0);
    }
    return v;
}

int ncg_v_due(double idle, double warn_s, double abort_s, int warned)
{
    if (abort_s > 0 && idle >= abort_s)
        return 2;
    return warn_s > 0 && idle >= warn_s && !warned;
}

int ncg_v_lag_due(uint64_t mn, uint64_t mx, double idle, double warn_s, double abort_s,
                  uint8_t *warned)
{
    if (mn == UINT64_MAX || mn == mx) {
        *warned = 0;
        return 0;
    }
    return ncg_v_due(idle, warn_s, abort_s, *warned);
}

struct ncg_verdict *ncg_v_stuck(const struct ncg_vcomm *c, const struct ncg_stuck_fig *s)
{
    struct ncg_verdict *v = v_new(c, NCG_V_STUCK);
    char *notes = malloc(NCG_WIRE_NOTES);
    if (!v || !notes) {
        ncg_verdict_free(v);
        free(notes);
        return NULL;
    }
    if (s->whole) { /* every rank: named whole, however many the lists held */
        snprintf(v->subject, sizeof v->subject, c->nranks > 1 ? "0-%u" : "0", c->nranks - 1);
    } else {
        ncg_ranks_compact(s->who, s->n, v->subject, sizeof v->subject);
        if (s->nstalled > s->n) /* more than listed */
            ncg_addf(v->subject, sizeof v->subject, ",...");
    }
    if (s->call) {
        v->ncalls = 1;
        v->calls[0].call = *s->call;
        snprintf(v->calls[0].site, sizeof v->calls[0].site, "%s", s->site ? s->site : "");
    }
    v->severity = s->act ? NCG_SEV_ERROR : NCG_SEV_WARN;
    v->slot = (int64_t)s->k;
    ncg_stuck_words(v, s->k, s->khi, s->idle, s->nstalled >= c->nranks, s->nstalled > 1, notes,
                    NCG_WIRE_NOTES);
    if (s->tail)
        ncg_addf(notes, NCG_WIRE_NOTES, "%s", s->tail);
    ncg_verdict_set_notes(v, notes); /* on failure v->notes stays NULL: the caller's to say */
    free(notes);
    return v;
}

struct ncg_verdict *ncg_v_deadlock(const struct ncg_vcomm *c, const struct ncg_dl_cycle *f,
                                   const struct ncg_dl_comm *dc, size_t ci, const char *notes)
{
    struct ncg_verdict *v = v_new(c, NCG_V_DEADLOCK);
    if (!v)
        return NULL;
    v->slot = ncg_dl_verdict(f, dc, ci, v->subject, sizeof v->subject, v->detail, sizeof v->detail);
    ncg_verdict_set_notes(v, notes);
    return v;
}
