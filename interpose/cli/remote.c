/* The job seen through its checker's status endpoint (`status --job`, `watch --job`): where the
 * endpoint is (a URL, or the job file the checker wrote), a minimal HTTP/1.1 GET client
 * (blocking socket with deadlines, bounded response), and /status turned into the same
 * snapshot the segments give (cli.h), so that one renderer and one set of alerts serve both. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "json.h"

#define JOB_FILE_MAX 65536

/* "http://HOST[:PORT][/...]" into j->host, j->port. 0 or -1. */
static int parse_url(const char *url, struct ncg_job_src *j)
{
    if (strncmp(url, "http://", 7) != 0)
        return -1;
    const char *h = url + 7, *end = h + strcspn(h, "/?#");
    const char *colon = NULL;
    if (*h == '[') { /* [v6]:port */
        const char *rb = memchr(h, ']', (size_t)(end - h));
        if (!rb)
            return -1;
        snprintf(j->host, sizeof j->host, "%.*s", (int)(rb - h - 1), h + 1);
        colon = rb[1] == ':' ? rb + 1 : NULL;
    } else {
        colon = memchr(h, ':', (size_t)(end - h));
        const char *he = colon ? colon : end;
        snprintf(j->host, sizeof j->host, "%.*s", (int)(he - h), h);
    }
    if (!j->host[0])
        return -1;
    snprintf(j->port, sizeof j->port, "80");
    if (colon) {
        size_t n = (size_t)(end - colon - 1);
        if (n == 0 || n >= sizeof j->port || strspn(colon + 1, "0123456789") < n)
            return -1;
        snprintf(j->port, sizeof j->port, "%.*s", (int)n, colon + 1);
    }
    snprintf(j->url, sizeof j->url, "http://%.*s", (int)(end - h), h);
    return 0;
}

int ncg_job_open(const char *spec, const char *token, struct ncg_job_src *j, char *err,
                 size_t errlen)
{
    memset(j, 0, sizeof *j);
    const char *file_token = NULL;
    struct ncg_json *doc = NULL;
    if (strncmp(spec, "http://", 7) == 0) {
        if (parse_url(spec, j) != 0) {
            snprintf(err, errlen, "--job %s: not a URL of the form http://HOST:PORT", spec);
            return -EINVAL;
        }
    } else {
        FILE *f = fopen(spec, "r");
        if (!f) {
            snprintf(err, errlen, "--job %s: %s (a job file or http://HOST:PORT)", spec,
                     strerror(errno));
            return -ENOENT;
        }
        char *buf = malloc(JOB_FILE_MAX);
        size_t n = buf ? fread(buf, 1, JOB_FILE_MAX, f) : 0;
        fclose(f);
        doc = buf ? ncg_cli_json_parse(buf, n, NULL) : NULL;
        free(buf);
        const char *url = ncg_cli_json_s(doc, "url", NULL);
        if (!doc || strcmp(ncg_cli_json_s(doc, "format", ""), "ncclguard-job") != 0 || !url ||
            parse_url(url, j) != 0) {
            snprintf(err, errlen, "--job %s: not a job file (ncclguard-job.<host>.<pid>.json)",
                     spec);
            ncg_cli_json_free(doc);
            return -EINVAL;
        }
        file_token = ncg_cli_json_s(doc, "token", NULL);
    }
    if (!token || !*token)
        token = getenv("NCCLGUARD_TOKEN");
    if (!token || !*token)
        token = file_token;
    snprintf(j->token, sizeof j->token, "%s", token ? token : "");
    ncg_cli_json_free(doc);
    if (strpbrk(j->token, "\r\n")) {
        snprintf(err, errlen, "--job %s: the token holds a line break", spec);
        return -EINVAL;
    }
    return 0;
}

static uint64_t deadline_left_ms(uint64_t deadline_ns)
{
    uint64_t now = ncg_now_ns();
    return now >= deadline_ns ? 0 : (deadline_ns - now) / 1000000 + 1;
}

/* Waits for fd to become ready for ev before the deadline: 0, or -ETIMEDOUT. */
static int wait_fd(int fd, short ev, uint64_t deadline_ns)
{
    for (;;) {
        uint64_t ms = deadline_left_ms(deadline_ns);
        if (!ms)
            return -ETIMEDOUT;
        struct pollfd p = {fd, ev, 0};
        int r = poll(&p, 1, ms > 60000 ? 60000 : (int)ms);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -errno;
    }
}

static int connect_to(const struct ncg_job_src *j, uint64_t deadline_ns, char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(j->host, j->port, &hints, &res);
    if (g != 0) {
        snprintf(err, errlen, "%s: cannot resolve %s: %s", j->url, j->host, gai_strerror(g));
        return -EHOSTUNREACH;
    }
    int rc = -ECONNREFUSED;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            rc = -errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
            freeaddrinfo(res);
            return fd;
        }
        rc = -errno;
        if (errno == EINPROGRESS) {
            rc = wait_fd(fd, POLLOUT, deadline_ns);
            int so = 0;
            socklen_t sl = sizeof so;
            if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) == 0 && so == 0) {
                freeaddrinfo(res);
                return fd;
            }
            if (rc == 0)
                rc = -(so ? so : ECONNREFUSED);
        }
        close(fd);
    }
    freeaddrinfo(res);
    if (rc == -ETIMEDOUT)
        snprintf(err, errlen, "%s: no answer (connect timed out)", j->url);
    else if (rc == -ECONNREFUSED)
        snprintf(err, errlen, "%s: connection refused (the job ended, or nothing listens there)",
                 j->url);
    else
        snprintf(err, errlen, "%s: cannot connect: %s", j->url, strerror(-rc));
    return rc;
}

int ncg_http_get(const struct ncg_job_src *j, const char *path, double timeout_s, size_t max_body,
                 struct ncg_http_resp *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    uint64_t deadline = ncg_now_ns() + (uint64_t)(timeout_s * 1e9);
    int fd = connect_to(j, deadline, err, errlen);
    if (fd < 0)
        return fd;
    char req[1024];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: ncclguard\r\n"
                     "Accept: application/json\r\nConnection: close\r\n%s%s%s\r\n",
                     path, j->host, j->port, j->token[0] ? "Authorization: Bearer " : "", j->token,
                     j->token[0] ? "\r\n" : "");
    int rc = 0;
    if (n < 0 || (size_t)n >= sizeof req) {
        snprintf(err, errlen, "%s: request too long (token?)", j->url);
        rc = -EINVAL;
        goto out;
    }
    for (int off = 0; off < n && rc == 0;) {
        ssize_t w = send(fd, req + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w > 0)
            off += (int)w;
        else if (w < 0 && errno == EINTR)
            continue;
        else if (w < 0 && errno == EAGAIN)
            rc = wait_fd(fd, POLLOUT, deadline);
        else
            rc = -(errno ? errno : EPIPE);
    }
    if (rc != 0) {
        snprintf(err, errlen, "%s: sending the request: %s", j->url, strerror(-rc));
        goto out;
    }
    size_t cap = max_body + 16384, len = 0; /* the head is bounded too */
    char *buf = malloc(cap + 1);
    if (!buf) {
        rc = -ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (;;) {
        if (len == cap) {
            free(buf);
            snprintf(err, errlen, "%s%s: the answer is larger than %zu bytes", j->url, path,
                     max_body);
            rc = -EFBIG;
            goto out;
        }
        ssize_t got = recv(fd, buf + len, cap - len, 0);
        if (got > 0) {
            len += (size_t)got;
        } else if (got == 0) {
            break;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN) {
            if ((rc = wait_fd(fd, POLLIN, deadline)) != 0) {
                free(buf);
                snprintf(err, errlen, "%s%s: no complete answer within %gs", j->url, path,
                         timeout_s);
                goto out;
            }
        } else {
            rc = -errno;
            free(buf);
            snprintf(err, errlen, "%s%s: reading the answer: %s", j->url, path, strerror(-rc));
            goto out;
        }
    }
    buf[len] = 0;
    char *eoh = strstr(buf, "\r\n\r\n");
    int status = 0;
    if (!eoh || sscanf(buf, "HTTP/1.%*[01] %d", &status) != 1 || status < 100 || status > 599) {
        free(buf);
        snprintf(err, errlen, "%s%s: not an HTTP answer", j->url, path);
        rc = -EBADMSG;
        goto out;
    }
    size_t body = (size_t)(eoh + 4 - buf);
    if (len - body > max_body) {
        free(buf);
        snprintf(err, errlen, "%s%s: the answer is larger than %zu bytes", j->url, path, max_body);
        rc = -EFBIG;
        goto out;
    }
    memmove(buf, buf + body, len - body + 1);
    r->status = status;
    r->body = buf;
    r->len = len - body;
out:
    close(fd);
    return rc;
}

int ncg_job_fetch(const struct ncg_job_src *j, double timeout_s, struct ncg_json **doc, char **raw,
                  char *err, size_t errlen)
{
    struct ncg_http_resp r;
    *doc = NULL;
    int rc = ncg_http_get(j, "/status", timeout_s, NCG_JOB_MAX_BODY, &r, err, errlen);
    if (rc != 0)
        return rc;
    if (r.status == 401) {
        snprintf(err, errlen,
                 "%s/status: 401 Unauthorized: %s token (give it with --token, NCCLGUARD_TOKEN "
                 "or the job file)",
                 j->url, j->token[0] ? "wrong" : "missing");
        rc = -EACCES;
    } else if (r.status != 200) {
        snprintf(err, errlen, "%s/status: HTTP %d", j->url, r.status);
        rc = -EPROTO;
    } else {
        size_t at = 0;
        *doc = ncg_cli_json_parse(r.body, r.len, &at);
        if (!*doc) {
            snprintf(err, errlen, "%s/status: malformed JSON near byte %zu", j->url, at);
            rc = -EBADMSG;
        } else if (strcmp(ncg_cli_json_s(*doc, "format", ""), "ncclguard-job-status") != 0 ||
                   (int)ncg_cli_json_n(*doc, "version", 0) != NCG_JOB_STATUS_READ_VERSION) {
            snprintf(err, errlen, "%s/status: not format ncclguard-job-status version %d", j->url,
                     NCG_JOB_STATUS_READ_VERSION);
            ncg_cli_json_free(*doc);
            *doc = NULL;
            rc = -EBADMSG;
        }
    }
    if (raw && rc == 0)
        *raw = r.body;
    else
        free(r.body);
    return rc;
}

/* ---------- /status -> snapshot ---------- */

static unsigned code_of(const char *name, const char *(*namef)(unsigned), unsigned max)
{
    for (unsigned i = 0; i < max; i++)
        if (!strcmp(namef(i), name))
            return i;
    return 0;
}

/* A /status call object into a record; t_ns from the member's last-call age. */
static void call_rec(const struct ncg_json *c, struct ncg_shm_record *r, uint64_t t_ns)
{
    memset(r, 0, sizeof *r);
    r->func = (uint8_t)code_of(ncg_cli_json_s(c, "func", ""), ncg_cli_func_name, 64);
    r->dtype = (uint8_t)code_of(ncg_cli_json_s(c, "dtype", ""), ncg_cli_dtype_name, 32);
    const char *op = ncg_cli_json_s(c, "redop", "");
    r->redop = *op ? (uint8_t)code_of(op, ncg_cli_redop_name, 32) : 0;
    r->count = (uint64_t)ncg_cli_json_n(c, "count", 0);
    r->root_or_peer = (int32_t)ncg_cli_json_n(c, "root_or_peer", -1);
    r->seq = (uint64_t)ncg_cli_json_n(c, "seq", 0);
    r->t_ns = t_ns;
}

static uint64_t ago(const struct ncg_snap *s, double age_s)
{
    if (age_s < 0)
        return 0;
    uint64_t d = (uint64_t)(age_s * 1e9);
    return d < s->now_ns ? s->now_ns - d : 1;
}

/* The process (host, pid) of the snapshot, added when new; a row without its process (pid 0:
 * the tree's root lists the ranks beyond its own node from the figures gather) stands for a
 * process of its own, keyed by its global rank. -1 when out of memory. */
static int proc_for(struct ncg_snap *s, int *cap, const char *host, int32_t pid, int32_t grank)
{
    for (int i = 0; i < s->nprocs; i++)
        if (s->procs[i].pid == pid && !strcmp(s->procs[i].hostname, host) &&
            (pid != 0 || s->procs[i].global_rank == grank))
            return i;
    if (s->nprocs == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        struct ncg_cli_proc *p = realloc(s->procs, sizeof *p * (size_t)nc);
        if (!p)
            return -1;
        s->procs = p;
        *cap = nc;
    }
    struct ncg_cli_proc *p = &s->procs[s->nprocs];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->global_rank = grank;
    p->local_rank = -1;
    p->world_size = -1;
    p->state = NCG_PROC_ALIVE;
    p->live = NCG_LIVE_ALIVE;
    p->live_why = "";
    snprintf(p->hostname, sizeof p->hostname, "%s", host);
    snprintf(p->path, sizeof p->path, "%s:%d", host, (int)pid);
    return s->nprocs++;
}

/* Members contiguous per process, as the segments give them (first_member, nmembers). */
static int group_by_proc(struct ncg_snap *s)
{
    struct ncg_cli_member *m = malloc(sizeof *m * (size_t)(s->nmembers + 1));
    if (!m)
        return -1;
    int o = 0;
    for (int p = 0; p < s->nprocs; p++) {
        s->procs[p].first_member = o;
        for (int i = 0; i < s->nmembers; i++)
            if (s->members[i].proc == p)
                m[o++] = s->members[i];
    }
    free(s->members);
    s->members = m;
    return 0;
}

/* A relay tree's communicator whose members are listed in part: its aggregates (0, or -1 out
 * of memory). */
static int snap_agg(struct ncg_snap *s, const struct ncg_json *c, uint64_t id,
                    const struct ncg_json *ms)
{
    struct ncg_snap_agg *a = realloc(s->aggs, sizeof *a * (size_t)(s->naggs + 1));
    if (!a)
        return -1;
    s->aggs = a;
    a = &s->aggs[s->naggs++];
    memset(a, 0, sizeof *a);
    a->comm_id = id;
    a->nranks = (int32_t)ncg_cli_json_n(c, "size", 0);
    a->active = (int32_t)ncg_cli_json_n(c, "active", 0);
    a->nrows = ms && ms->type == NCG_JSON_ARRAY ? (int32_t)ms->n : 0;
    a->issued_min = (uint64_t)ncg_cli_json_n(c, "min_slots", 0);
    a->issued_max = (uint64_t)ncg_cli_json_n(c, "max_slots", 0);
    a->done_min = (uint64_t)ncg_cli_json_n(c, "completed_min", 0);
    a->done_max = (uint64_t)ncg_cli_json_n(c, "completed_max", 0);
    const struct ncg_json *sl = ncg_cli_json_get(c, "slowest_ranks");
    size_t o = 0;
    for (size_t i = 0; sl && sl->type == NCG_JSON_ARRAY && i < sl->n && o < sizeof a->slowest - 16;
         i++)
        o += (size_t)snprintf(a->slowest + o, sizeof a->slowest - o, "%s%d", i ? "," : "",
                              (int)sl->kids[i]->num);
    const struct ncg_json *more = ncg_cli_json_get(c, "slowest_more");
    if (more && more->num && o < sizeof a->slowest - 5)
        snprintf(a->slowest + o, sizeof a->slowest - o, ",...");
    return 0;
}

/* The comm's "slow" object (a SLOW warning outstanding), kept for its line (-1: out of
 * memory; 0 also when there is none). */
static int snap_slow(struct ncg_snap *s, const struct ncg_json *c, uint64_t id)
{
    const struct ncg_json *w = ncg_cli_json_get(c, "slow");
    if (!w || w->type != NCG_JSON_OBJECT)
        return 0;
    struct ncg_snap_slow *a = realloc(s->slows, sizeof *a * (size_t)(s->nslows + 1));
    if (!a)
        return -1;
    s->slows = a;
    a = &s->slows[s->nslows++];
    *a = (struct ncg_snap_slow){.comm_id = id,
                                .rank = (int32_t)ncg_cli_json_n(w, "rank", -1),
                                .global_rank = (int32_t)ncg_cli_json_n(w, "global_rank", -1),
                                .pid = (uint32_t)ncg_cli_json_n(w, "pid", 0),
                                .share = ncg_cli_json_n(w, "share", 0),
                                .since_s = ncg_cli_json_n(w, "since_s", 0),
                                .device = !strcmp(ncg_cli_json_s(w, "side", ""), "gpu"),
                                .member = -1};
    snprintf(a->host, sizeof a->host, "%s", ncg_cli_json_s(w, "host", ""));
    return 0;
}

int ncg_job_snap(const struct ncg_json *doc, const char *url, struct ncg_snap *s)
{
    memset(s, 0, sizeof *s);
    s->now_ns = ncg_now_ns();
    s->now_unix = ncg_cli_json_n(doc, "time_unix", 0);
    s->remote = 1;
    snprintf(s->dir, sizeof s->dir, "%s", url);
    int capp = 0, capm = 0;
    const struct ncg_json *procs = ncg_cli_json_get(doc, "processes");
    for (size_t i = 0; procs && procs->type == NCG_JSON_ARRAY && i < procs->n; i++) {
        const struct ncg_json *p = procs->kids[i];
        int k =
            proc_for(s, &capp, ncg_cli_json_s(p, "host", ""), (int32_t)ncg_cli_json_n(p, "pid", 0),
                     (int32_t)ncg_cli_json_n(p, "global_rank", -1));
        if (k < 0)
            goto oom;
        struct ncg_cli_proc *q = &s->procs[k];
        q->heartbeat_ns = ago(s, ncg_cli_json_n(p, "heartbeat_age_s", -1));
        q->activity_ns = q->heartbeat_ns;
        if (ncg_cli_json_get(p, "goodbye") && ncg_cli_json_get(p, "goodbye")->num) {
            q->state = NCG_PROC_EXITED;
            q->live = NCG_LIVE_EXITED;
        }
    }
    const struct ncg_json *comms = ncg_cli_json_get(doc, "communicators");
    for (size_t ci = 0; comms && comms->type == NCG_JSON_ARRAY && ci < comms->n; ci++) {
        const struct ncg_json *c = comms->kids[ci];
        uint64_t id = strtoull(ncg_cli_json_s(c, "id", "0"), NULL, 16);
        const struct ncg_json *v = ncg_cli_json_get(c, "verdict");
        if (v && v->type != NCG_JSON_OBJECT)
            v = NULL;
        const struct ncg_json *ms = ncg_cli_json_get(c, "members");
        const struct ncg_json *part = ncg_cli_json_get(c, "members_partial");
        if ((part && part->num && snap_agg(s, c, id, ms) != 0) || snap_slow(s, c, id) != 0)
            goto oom;
        for (size_t mi = 0; ms && ms->type == NCG_JSON_ARRAY && mi < ms->n; mi++) {
            const struct ncg_json *m = ms->kids[mi];
            const char *st = ncg_cli_json_s(m, "state", "");
            if (!strcmp(st, "unregistered"))
                continue; /* not known yet: no process to show */
            int k = proc_for(s, &capp, ncg_cli_json_s(m, "host", ""),
                             (int32_t)ncg_cli_json_n(m, "pid", 0),
                             (int32_t)ncg_cli_json_n(m, "global_rank", -1));
            if (k < 0)
                goto oom;
            struct ncg_cli_proc *p = &s->procs[k];
            int listed = 0;
            for (size_t i = 0; procs && i < procs->n; i++)
                listed |= (int32_t)ncg_cli_json_n(procs->kids[i], "pid", 0) == p->pid &&
                          !strcmp(ncg_cli_json_s(procs->kids[i], "host", ""), p->hostname);
            if (!listed && !strcmp(st, "dead") && p->live != NCG_LIVE_DEAD) {
                p->live = NCG_LIVE_DEAD;
                p->live_why = "the checker lost it";
            } else if (!listed && !strcmp(st, "left") && p->live == NCG_LIVE_ALIVE) {
                p->state = NCG_PROC_EXITED;
                p->live = NCG_LIVE_EXITED;
            }
            if (v && !strcmp(ncg_cli_json_s(v, "severity", ""), "error") &&
                p->state != NCG_PROC_VERDICT) {
                p->state = NCG_PROC_VERDICT;
                p->verdict_kind = (uint32_t)ncg_cli_json_n(v, "kind", 0);
                p->verdict_comm = id;
                snprintf(p->verdict_text, sizeof p->verdict_text, "%s",
                         ncg_cli_json_s(v, "text", ""));
                if (p->live == NCG_LIVE_ALIVE)
                    p->live = NCG_LIVE_VERDICT;
            }
            if (s->nmembers == capm) {
                int nc = capm ? capm * 2 : 64;
                struct ncg_cli_member *nm = realloc(s->members, sizeof *nm * (size_t)nc);
                if (!nm)
                    goto oom;
                s->members = nm;
                capm = nc;
            }
            struct ncg_cli_member *x = &s->members[s->nmembers];
            memset(x, 0, sizeof *x);
            x->proc = k;
            x->state = !strcmp(st, "active") ? NCG_COMM_ACTIVE : NCG_COMM_DESTROYED;
            x->comm_id = id;
            x->rank = (int32_t)ncg_cli_json_n(m, "rank", -1);
            x->nranks = (int32_t)ncg_cli_json_n(c, "size", 0);
            x->coll_seq = (uint64_t)ncg_cli_json_n(m, "slots", 0);
            x->coll_done = (uint64_t)ncg_cli_json_n(m, "completed", 0);
            x->last_ns = ago(s, ncg_cli_json_n(m, "last_call_age_s", -1));
            const struct ncg_json *lc = ncg_cli_json_get(m, "last_call");
            if (lc && lc->type == NCG_JSON_OBJECT) {
                int p2p = !strcmp(ncg_cli_json_s(lc, "kind", ""), "p2p");
                struct ncg_shm_record *r = p2p ? &x->last_p2p : &x->tail[0];
                call_rec(lc, r, x->last_ns);
                if (p2p) {
                    x->p2p_ok = 1;
                } else {
                    x->ntail = 1;
                    x->tail_ok[0] = 1;
                    x->tail_first = r->seq;
                }
            }
            if (x->last_ns > p->activity_ns)
                p->activity_ns = x->last_ns;
            if (p->nmembers++ == 0)
                p->first_member = s->nmembers;
            s->nmembers++;
        }
    }
    return group_by_proc(s) ? -ENOMEM : 0;
oom:
    ncg_snap_free(s);
    return -ENOMEM;
}
