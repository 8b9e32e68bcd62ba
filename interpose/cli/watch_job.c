/* `ncclguard watch --job`: the whole job through its checker's status endpoint. Polls it, and
 * alerts on the job's throughput (--min-rate over the last --stall seconds) and on an endpoint
 * that stopped answering; a refused connection means the job ended. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include "json.h"
#include "watch_int.h"

/* The job's call total: per communicator its fastest member's count (slots the communicator
 * went through), summed (a relay tree's comm listed in part: its aggregate). 1 in *alive when
 * some member is still active. */
static double job_calls(const struct ncg_snap *s, const struct ncg_view *v, int *alive)
{
    double total = 0;
    *alive = 0;
    for (int k = 0; k < s->naggs; k++) {
        total += (double)s->aggs[k].issued_max;
        *alive |= s->aggs[k].active > 0;
    }
    for (int k = 0; k < v->ncomms; k++) {
        int agg = 0;
        for (int a = 0; a < s->naggs; a++)
            agg |= s->aggs[a].comm_id == v->comms[k].comm_id;
        if (agg)
            continue;
        uint64_t mx = 0;
        for (int i = 0; i < v->comms[k].nmembers; i++) {
            const struct ncg_cli_member *m = &s->members[v->comms[k].members[i]];
            mx = m->coll_seq > mx ? m->coll_seq : mx;
            *alive |= m->state == NCG_COMM_ACTIVE;
        }
        total += (double)mx;
    }
    return total;
}

static double now_s(void)
{
    return (double)ncg_now_ns() / 1e9;
}

/* An alert about the whole job (--job): no process, rank or slot; the endpoint's URL. */
static void job_alert(struct ncg_watch *w, const char *kind, const char *detail)
{
    struct ncg_alert a;
    memset(&a, 0, sizeof(a));
    a.kind = kind;
    a.pid = -1;
    a.rank = -1;
    a.comm_rank = -1;
    a.slot = -1;
    snprintf(a.segment, sizeof(a.segment), "%s", w->url);
    snprintf(a.detail, sizeof(a.detail), "%s", detail);
    ncg_watch_emit(w, &a);
}

/* One sample (a failed poll repeats the last total: no progress seen). Raises the throughput
 * alert once when, over a full --stall window, the job made fewer than --min-rate calls per
 * second while alive; the rate back above the floor re-arms it. */
static void rate_sample(struct ncg_watch *w, double total, int alive, const char *why)
{
    struct ncg_rate *r = &w->rate;
    double t = now_s();
    if (r->n == NCG_RATE_SAMPLES) {
        memmove(r->t, r->t + 1, sizeof(r->t[0]) * (NCG_RATE_SAMPLES - 1));
        memmove(r->calls, r->calls + 1, sizeof(r->calls[0]) * (NCG_RATE_SAMPLES - 1));
        r->n--;
    }
    if (total < 0) /* failed poll */
        total = r->n ? r->calls[r->n - 1] : 0;
    r->t[r->n] = t;
    r->calls[r->n] = total;
    r->n++;
    int i = 0; /* oldest sample still inside the window (keep one at or before its start) */
    while (i + 1 < r->n && r->t[i + 1] <= t - w->stall_s)
        i++;
    if (i) {
        memmove(r->t, r->t + i, sizeof(r->t[0]) * (size_t)(r->n - i));
        memmove(r->calls, r->calls + i, sizeof(r->calls[0]) * (size_t)(r->n - i));
        r->n -= i;
    }
    if (r->floor <= 0 || !alive)
        return;
    double span = t - r->t[0];
    if (span < w->stall_s)
        return; /* not watched for a full window yet */
    double rate = (total - r->calls[0]) / span;
    if (rate >= r->floor) {
        r->alerted = 0;
        return;
    }
    if (r->alerted)
        return;
    r->alerted = 1;
    char d[sizeof(((struct ncg_alert *)0)->detail)];
    snprintf(d, sizeof(d),
             "the job made %.2f calls/s over the last %.0fs, below the floor of %g calls/s%s%s",
             rate, span, r->floor, why ? "; " : "", why ? why : "");
    job_alert(w, "rate", d);
}

/* A failed poll of the endpoint (the first poll failing ends watch before this). Refused:
 * nothing listens any more, the checker's process exited (the job ended, or rank 0 did):
 * watch ends. Else (no answer, a timeout: a frozen job, or its checker) the silence feeds the
 * throughput floor; without one, one "unreachable" alert per run of failures that lasts
 * --stall seconds. Returns -1 to end watch. */
static int poll_failed(struct ncg_watch *w, int rc, const char *err)
{
    struct ncg_rate *r = &w->rate;
    double t = now_s();
    if (!r->fail_t0)
        r->fail_t0 = t;
    if (rc == -ECONNREFUSED) {
        fprintf(stderr, "ncclguard: the job ended%s: %s\n",
                r->finished ? " (every rank had left)" : " (or its checker's process did)", err);
        return -1;
    }
    rate_sample(w, -1, 1, err);
    if (r->fail_alerted || r->alerted || t - r->fail_t0 < w->stall_s)
        return 0;
    r->fail_alerted = 1;
    char d[sizeof(((struct ncg_alert *)0)->detail)];
    snprintf(d, sizeof(d), "the status endpoint did not answer for %.0fs: %s", t - r->fail_t0, err);
    job_alert(w, "unreachable", d);
    return 0;
}

/* A poll of --job: 0 with the snapshot, 1 after a failure (handled) or on the first answer after
 * failures (not judged), -1 to stop with an error
 * printed (first poll, 401, not a /status), -2 to stop: the job ended. */
int ncg_watch_job_poll(struct ncg_watch *w, const struct ncg_job_src *j, int first,
                       struct ncg_snap *s)
{
    struct ncg_json *doc;
    char err[1024];
    int rc = ncg_job_fetch(j, NCG_JOB_TIMEOUT_S, &doc, NULL, err, sizeof err);
    if (rc != 0 && (first || rc == -EACCES || rc == -EBADMSG)) {
        fprintf(stderr, "ncclguard: %s\n", err);
        return -1;
    }
    if (rc != 0)
        return poll_failed(w, rc, err) < 0 ? -2 : 1;
    if (first) {
        snprintf(w->host, sizeof(w->host), "%s",
                 ncg_cli_json_s(ncg_cli_json_get(doc, "checker"), "host", w->host));
    }
    rc = ncg_job_snap(doc, j->url, s);
    ncg_cli_json_free(doc);
    if (rc != 0) {
        fprintf(stderr, "ncclguard: out of memory\n");
        return -1;
    }
    int recovered = w->rate.fail_t0 != 0;
    w->rate.fail_t0 = 0;
    w->rate.fail_alerted = 0;
    /* The first answer after the checker was unreachable (its process stopped, like the rest
     * of the job) describes the job as it was when it froze, ages grown since: judged, it
     * would read as a stall of every call in flight. The next poll judges fresh counts. */
    if (recovered) {
        ncg_snap_free(s);
        return 1;
    }
    return 0;
}

void ncg_watch_job_rate(struct ncg_watch *w, const struct ncg_snap *s, const struct ncg_view *v)
{
    int alive;
    double total = job_calls(s, v, &alive);
    w->rate.finished = !alive;
    rate_sample(w, total, alive, NULL);
}
