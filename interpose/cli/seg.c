/* Reading the segments of every guarded process on this host, from outside the job: validate
 * the header against the layout we were built with, copy what status/watch need, read ring
 * records with the seqlock protocol of include/ncclguard/shm.h, and tell from /proc whether the
 * owner is still the process that created the segment. Read-only mappings only. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"

#define READ_TRIES 16

int ncg_cli_read_record(const struct ncg_shm_record *ring, uint32_t ring_size, uint64_t idx,
                        struct ncg_shm_record *out)
{
    const struct ncg_shm_record *r = &ring[idx & (ring_size - 1)];
    const uint64_t want = 2 * idx + 2;
    for (int i = 0; i < READ_TRIES; i++) {
        /* acquire: the fields we copy next were stored before this (even) stamp was released */
        uint64_t s1 = __atomic_load_n(&r->stamp, __ATOMIC_ACQUIRE);
        if (s1 > want + 1)
            return -ENOENT; /* the ring wrapped: a newer index lives here */
        if (s1 != want) {
            if (s1 < want - 1)
                return -ENOENT; /* not written yet (or the writer died before stamping) */
            continue;           /* odd: being written right now */
        }
        memcpy(out, (const void *)r, sizeof(*out));
        /* acquire fence: the copy above is ordered before the re-read of the stamp */
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        uint64_t s2 = __atomic_load_n(&r->stamp, __ATOMIC_RELAXED);
        if (s2 == s1) {
            out->stamp = s1;
            return 0;
        }
    }
    return -EAGAIN;
}

/* starttime (field 22) and state (field 3) of /proc/<pid>/stat. */
static int read_proc_stat(int32_t pid, char *state, uint64_t *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n;
    do
        n = read(fd, buf, sizeof(buf) - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0)
        return -EIO;
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may contain spaces and parentheses */
    if (!p)
        return -EIO;
    p++;
    int field = 2;
    char *tok, *save = NULL;
    for (tok = strtok_r(p, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        field++;
        if (field == 3)
            *state = tok[0];
        if (field == 22) {
            *start = strtoull(tok, NULL, 10);
            return 0;
        }
    }
    return -EIO;
}

enum ncg_live ncg_cli_pid_live(int32_t pid, uint64_t start_ticks, const char **why)
{
    char st = '?';
    uint64_t start = 0;
    *why = "";
    if (pid <= 0) {
        *why = "no pid";
        return NCG_LIVE_DEAD;
    }
    if (read_proc_stat(pid, &st, &start) < 0) {
        *why = "pid gone";
        return NCG_LIVE_DEAD;
    }
    if (st == 'Z' || st == 'X') {
        *why = "zombie";
        return NCG_LIVE_DEAD;
    }
    if (start_ticks && start != start_ticks) {
        *why = "pid reused";
        return NCG_LIVE_DEAD;
    }
    if (st == 'T' || st == 't')
        *why = NCG_LIVE_STOPPED; /* alive, but it runs nothing until SIGCONT or the debugger */
    return NCG_LIVE_ALIVE;
}

/* 1 when a process holds a lock on the segment file. The shim keeps a shared flock on its
 * segment for its whole life and the kernel drops it when the process ends, whichever pid
 * namespace either side is in: a segment whose pid /proc does not show (another pid namespace,
 * a sidecar without a shared one) but is held belongs to a live process. Our test lock, if we
 * get it, goes with the close. Only asked for processes /proc calls dead. */
static int segment_held(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return 0;
    int held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}

static int push(void **arr, int *n, int *cap, size_t elem)
{
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        void *p = realloc(*arr, (size_t)nc * elem);
        if (!p)
            return -ENOMEM;
        *arr = p;
        *cap = nc;
    }
    memset((char *)*arr + (size_t)*n * elem, 0, elem);
    (*n)++;
    return 0;
}

struct caps {
    int procs, members, skips;
};

static void add_skip(struct ncg_snap *s, struct caps *c, const char *path, int32_t pid,
                     const char *why)
{
    if (push((void **)&s->skips, &s->nskips, &c->skips, sizeof(*s->skips)) < 0)
        return;
    struct ncg_cli_skip *k = &s->skips[s->nskips - 1];
    snprintf(k->path, sizeof(k->path), "%s", path);
    snprintf(k->why, sizeof(k->why), "%s", why);
    k->pid = pid;
}

static void copy_str(char *dst, const char *src, size_t n)
{
    memcpy(dst, src, n);
    dst[n - 1] = 0;
}

/* Copies one communicator slot; returns 0, or 1 when the slot is not published yet. */
/* The comm's latest SLOW warning (ncclguard/shm.h's seqlock; zero in a segment older than
 * layout 4: none). m->slow_gen 0 when there is none, its episode ended, or it kept being
 * rewritten. */
static void read_slow(const struct ncg_shm_comm *c, struct ncg_cli_member *m)
{
    m->slow_gen = 0;
    for (int tries = 0; tries < 8; tries++) {
        uint32_t g = __atomic_load_n(&c->slow_gen, __ATOMIC_ACQUIRE);
        if (!g)
            return;
        if (g & 1u)
            continue;
        m->slow_since_ns = __atomic_load_n(&c->slow_since_ns, __ATOMIC_RELAXED);
        m->slow_rank = __atomic_load_n(&c->slow_rank, __ATOMIC_RELAXED);
        m->slow_grank = __atomic_load_n(&c->slow_grank, __ATOMIC_RELAXED);
        m->slow_pid = __atomic_load_n(&c->slow_pid, __ATOMIC_RELAXED);
        m->slow_share_bp = __atomic_load_n(&c->slow_share_bp, __ATOMIC_RELAXED);
        m->slow_side = __atomic_load_n(&c->slow_side, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the fields before the second read */
        if (__atomic_load_n(&c->slow_gen, __ATOMIC_RELAXED) == g) {
            /* side NONE: the episode ended, nobody is named now (ncclguard/shm.h) */
            m->slow_gen = m->slow_side == NCG_SLOW_NONE ? 0 : g;
            return;
        }
    }
}

static int read_comm(const struct ncg_shm_comm *c, uint32_t coll_ring, uint32_t p2p_ring,
                     struct ncg_cli_member *m)
{
    /* acquire: pairs with the writer's release store of state after filling the header */
    m->state = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
    if (m->state == NCG_COMM_FREE)
        return 1;
    m->origin = c->origin;
    m->comm_id = c->comm_id;
    m->parent_id = c->parent_id;
    m->rank = c->rank;
    m->nranks = c->nranks;
    m->created_ns = c->created_ns;
    m->coll_seq = __atomic_load_n(&c->coll_seq, __ATOMIC_ACQUIRE);
    m->p2p_seq = __atomic_load_n(&c->p2p_seq, __ATOMIC_ACQUIRE);
    m->last_ns = __atomic_load_n(&c->last_ns, __ATOMIC_RELAXED);
    m->coll_done = __atomic_load_n(&c->coll_done, __ATOMIC_RELAXED);
    m->p2p_done = __atomic_load_n(&c->p2p_done, __ATOMIC_RELAXED);
    uint64_t n = m->coll_seq;
    m->tail_first = n > NCG_CLI_TAIL ? n - NCG_CLI_TAIL : 0;
    m->ntail = (uint32_t)(n - m->tail_first);
    for (uint32_t i = 0; i < m->ntail; i++)
        m->tail_ok[i] =
            ncg_cli_read_record(c->coll, coll_ring, m->tail_first + i, &m->tail[i]) == 0;
    m->p2p_ok =
        m->p2p_seq > 0 && ncg_cli_read_record(c->p2p, p2p_ring, m->p2p_seq - 1, &m->last_p2p) == 0;
    read_slow(c, m);
    return 0;
}

/* Why a mapped segment of size bytes cannot be read (into why, "" when it can). */
static void header_problem(const struct ncg_shm_header *h, size_t size, char *why, size_t wlen)
{
    uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
    if (magic == 0)
        snprintf(why, wlen, "not initialised yet");
    else if (magic != NCG_SHM_MAGIC)
        snprintf(why, wlen, "foreign file (bad magic)");
    else if (h->layout_version < NCG_SHM_LAYOUT_OLDEST ||
             h->layout_version > NCG_SHM_LAYOUT_VERSION)
        snprintf(why, wlen, "layout version %u, this ncclguard reads %u..%u", h->layout_version,
                 NCG_SHM_LAYOUT_OLDEST, NCG_SHM_LAYOUT_VERSION);
    else if (h->header_size != NCG_SHM_HEADER_SIZE || h->comm_size != sizeof(struct ncg_shm_comm) ||
             h->coll_ring != NCG_COLL_RING || h->p2p_ring != NCG_P2P_RING || h->max_comms == 0 ||
             h->max_comms > 65536)
        snprintf(why, wlen, "unexpected sizes in header");
    else if (size < (size_t)h->header_size + (size_t)h->max_comms * h->comm_size)
        snprintf(why, wlen, "truncated (%zu bytes)", size);
}

/* p's liveness and verdict from its header h and whether its process is still there. */
static void proc_state(struct ncg_cli_proc *p, const struct ncg_shm_header *h, const char *path)
{
    if (p->state != NCG_PROC_EXITED) {
        p->live = ncg_cli_pid_live(p->pid, p->start_ticks, &p->live_why);
        /* A process that recorded a verdict (abort) or its clean exit and ended between our
         * read of the state and the pid check is not a crash: read the state again. */
        if (p->live == NCG_LIVE_DEAD)
            p->state = __atomic_load_n(&h->state, __ATOMIC_ACQUIRE);
        if (p->live == NCG_LIVE_DEAD && p->state != NCG_PROC_EXITED && segment_held(path)) {
            p->live = NCG_LIVE_ALIVE;
            p->live_why = "holds its segment (pid not visible here)";
        }
        if (p->live == NCG_LIVE_ALIVE && p->state == NCG_PROC_VERDICT)
            p->live = NCG_LIVE_VERDICT;
    }
    if (p->state == NCG_PROC_EXITED) {
        p->live = NCG_LIVE_EXITED;
        p->live_why = "clean exit";
    }
    if (p->state == NCG_PROC_VERDICT) {
        p->verdict_kind = h->verdict_kind;
        p->verdict_comm = h->verdict_comm;
        copy_str(p->verdict_text, h->verdict_text, sizeof(p->verdict_text));
        copy_str(p->report_path, h->report_path, sizeof(p->report_path));
    }
}

static void read_segment(struct ncg_snap *s, struct caps *cp, const struct ncg_scan_opts *o,
                         const char *path, int32_t name_pid)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        char why[96];
        snprintf(why, sizeof(why), "cannot open: %s", strerror(errno));
        add_skip(s, cp, path, name_pid, why);
        return;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        add_skip(s, cp, path, name_pid, "not a regular file");
        return;
    }
    if ((size_t)st.st_size < NCG_SHM_HEADER_SIZE) {
        close(fd);
        add_skip(s, cp, path, name_pid, st.st_size ? "too small" : "empty (being created?)");
        return;
    }
    size_t size = (size_t)st.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        add_skip(s, cp, path, name_pid, "cannot map");
        return;
    }
    const struct ncg_shm_header *h = map;
    char why[96] = "";
    header_problem(h, size, why, sizeof why);
    if (why[0]) {
        munmap(map, size);
        add_skip(s, cp, path, name_pid, why);
        return;
    }
    if (o->match && !strstr(h->cmdline, o->match)) {
        munmap(map, size);
        return;
    }
    if (push((void **)&s->procs, &s->nprocs, &cp->procs, sizeof(*s->procs)) < 0) {
        munmap(map, size);
        return;
    }
    struct ncg_cli_proc *p = &s->procs[s->nprocs - 1];
    snprintf(p->path, sizeof(p->path), "%s", path);
    p->owner = st.st_uid;
    /* acquire: verdict_* are written before state becomes VERDICT */
    p->state = __atomic_load_n(&h->state, __ATOMIC_ACQUIRE);
    p->pid = h->pid;
    p->start_ticks = h->start_ticks;
    p->global_rank = h->global_rank;
    p->local_rank = h->local_rank;
    p->world_size = h->world_size;
    p->ncomms = __atomic_load_n(&h->ncomms, __ATOMIC_ACQUIRE);
    p->comms_dropped = h->comms_dropped;
    p->heartbeat_ns = __atomic_load_n(&h->heartbeat_ns, __ATOMIC_RELAXED);
    copy_str(p->hostname, h->hostname, sizeof(p->hostname));
    if (h->layout_version >= 3)
        copy_str(p->bus_id, h->cuda_bus_id, sizeof(p->bus_id));
    else
        p->bus_id[0] = 0; /* a layout-2 segment records no device */
    copy_str(p->cmdline, h->cmdline, sizeof(p->cmdline));
    if (p->ncomms > h->max_comms)
        p->ncomms = h->max_comms;
    proc_state(p, h, path);
    p->activity_ns = p->heartbeat_ns;
    p->first_member = s->nmembers;
    int pi = s->nprocs - 1;
    for (uint32_t i = 0; i < p->ncomms; i++) {
        const struct ncg_shm_comm *c = ncg_shm_comm_at((struct ncg_shm_header *)h, i);
        if (push((void **)&s->members, &s->nmembers, &cp->members, sizeof(*s->members)) < 0)
            break;
        struct ncg_cli_member *m = &s->members[s->nmembers - 1];
        if (read_comm(c, h->coll_ring, h->p2p_ring, m) != 0) {
            s->nmembers--;
            continue;
        }
        m->proc = pi;
        m->slot = i;
        struct ncg_cli_proc *pp = &s->procs[pi];
        if (m->last_ns > pp->activity_ns)
            pp->activity_ns = m->last_ns;
        if (m->created_ns > pp->activity_ns)
            pp->activity_ns = m->created_ns;
    }
    s->procs[pi].nmembers = s->nmembers - s->procs[pi].first_member;
    munmap(map, size);
}

/* Per communicator, the latest SLOW warning its members here received (the newest episode
 * start: after a change of rank, the new one's), with the named rank's pid and host when it is
 * one of them. Only from live processes: a dead or exited one's is not the job's state now.
 * Out of memory: fewer lines. */
static void host_slows(struct ncg_snap *s)
{
    for (int i = 0; i < s->nmembers; i++) {
        const struct ncg_cli_member *m = &s->members[i];
        enum ncg_live lv = s->procs[m->proc].live;
        if (!m->slow_gen || lv == NCG_LIVE_DEAD || lv == NCG_LIVE_EXITED)
            continue;
        int k = 0;
        while (k < s->nslows && s->slows[k].comm_id != m->comm_id)
            k++;
        if (k == s->nslows) {
            struct ncg_snap_slow *a = realloc(s->slows, sizeof *a * (size_t)(s->nslows + 1));
            if (!a)
                return;
            s->slows = a;
            s->nslows++;
        } else if (m->slow_since_ns <= s->members[s->slows[k].member].slow_since_ns) {
            continue;
        }
        s->slows[k] = (struct ncg_snap_slow){
            .comm_id = m->comm_id,
            .rank = m->slow_rank,
            .global_rank = m->slow_grank,
            .pid = m->slow_pid,
            .share = m->slow_share_bp / 10000.0,
            .since_s = s->now_ns > m->slow_since_ns ? (s->now_ns - m->slow_since_ns) / 1e9 : 0,
            .device = m->slow_side == NCG_SLOW_DEVICE,
            .member = i};
    }
    for (int k = 0; k < s->nslows; k++) { /* the named rank on this host: its host name */
        struct ncg_snap_slow *w = &s->slows[k];
        for (int i = 0; i < s->nmembers; i++) {
            const struct ncg_cli_member *m = &s->members[i];
            const struct ncg_cli_proc *p = &s->procs[m->proc];
            if (m->comm_id == w->comm_id && m->rank == w->rank &&
                (!w->pid || (uint32_t)p->pid == w->pid)) {
                w->pid = (uint32_t)p->pid;
                snprintf(w->host, sizeof w->host, "%s", p->hostname);
                break;
            }
        }
    }
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const struct ncg_cli_proc *)a)->path, ((const struct ncg_cli_proc *)b)->path);
}

int ncg_snap_take(struct ncg_snap *s, const struct ncg_scan_opts *o)
{
    memset(s, 0, sizeof(*s));
    struct caps cp = {0, 0, 0};
    const char *dir = o->dir ? o->dir : "/dev/shm";
    snprintf(s->dir, sizeof(s->dir), "%s", dir);
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    s->now_unix = (double)rt.tv_sec + rt.tv_nsec / 1e9;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t pl = strlen(NCG_SHM_PREFIX);
        if (strncmp(e->d_name, NCG_SHM_PREFIX, pl) != 0)
            continue;
        unsigned uid;
        int pid = 0, used = 0;
        if (sscanf(e->d_name + pl, "%u.%d%n", &uid, &pid, &used) != 2 ||
            e->d_name[pl + (size_t)used] != 0)
            pid = 0; /* not ours by name: still read it, the magic decides */
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        read_segment(s, &cp, o, path, pid);
    }
    closedir(d);
    /* Sort processes by path for stable output; member proc indices are remapped below. */
    if (s->nprocs > 1) {
        int *order = malloc(sizeof(int) * (size_t)s->nprocs);
        struct ncg_cli_proc *copy = malloc(sizeof(*copy) * (size_t)s->nprocs);
        if (order && copy) {
            memcpy(copy, s->procs, sizeof(*copy) * (size_t)s->nprocs);
            for (int i = 0; i < s->nprocs; i++)
                copy[i].first_member = i; /* remember the old index */
            qsort(copy, (size_t)s->nprocs, sizeof(*copy), by_path);
            for (int i = 0; i < s->nprocs; i++)
                order[copy[i].first_member] = i;
            for (int i = 0; i < s->nprocs; i++)
                copy[i].first_member = s->procs[copy[i].first_member].first_member;
            memcpy(s->procs, copy, sizeof(*copy) * (size_t)s->nprocs);
            for (int i = 0; i < s->nmembers; i++)
                s->members[i].proc = order[s->members[i].proc];
        }
        free(order);
        free(copy);
    }
    s->now_ns = ncg_now_ns();
    host_slows(s);
    return 0;
}

int ncg_cli_snap_take(struct ncg_snap *s, const struct ncg_scan_opts *o)
{
    int rc = ncg_snap_take(s, o);
    if (rc < 0)
        fprintf(stderr, "ncclguard: cannot read %s: %s\n", o->dir ? o->dir : "/dev/shm",
                strerror(-rc));
    return rc;
}

void ncg_snap_free(struct ncg_snap *s)
{
    free(s->procs);
    free(s->members);
    free(s->skips);
    free(s->aggs);
    free(s->slows);
    memset(s, 0, sizeof(*s));
}
