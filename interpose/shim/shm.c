/* Segment lifecycle for the writer side (see shm.h): shm_open (never over another live
 * process's segment; liveness = a held flock) + fallocate + mmap at the first communicator,
 * header fields of the process (host, cmdline, ranks from the launcher's env, start time), slot
 * allocation, EXITED + unlink at exit. */
#define _GNU_SOURCE
#include "shm.h"
#include "shim.h"
#include "completion.h"

#include <ck_pr.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"

struct ncg_shm_header *ncg_seg;
static int ncg_seg_shared;  /* named under /dev/shm (vs private mapping) */
static pid_t ncg_seg_owner; /* the process that created it: only it unlinks */
static char ncg_seg_name[64];

/* Reads a small /proc file into buf (NUL-terminated); returns the length or -1. */
static ssize_t ncg_read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    return (ssize_t)n;
}

/* Field 22 of /proc/self/stat (after the parenthesised comm, which may hold spaces). */
static uint64_t ncg_start_ticks(void)
{
    char buf[1024];
    if (ncg_read_small("/proc/self/stat", buf, sizeof buf) <= 0)
        return 0;
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    p++;
    for (int field = 3; field < 22 && *p; field++) { /* p is before field 3; skip fields 3..21 */
        while (*p == ' ')
            p++;
        while (*p && *p != ' ')
            p++;
    }
    return strtoull(p, NULL, 10);
}

static void ncg_fill_header(struct ncg_shm_header *h, uint64_t ticks)
{
    h->layout_version = NCG_SHM_LAYOUT_VERSION;
    h->header_size = NCG_SHM_HEADER_SIZE;
    h->comm_size = sizeof(struct ncg_shm_comm);
    h->max_comms = NCG_SHM_MAX_COMMS;
    h->coll_ring = NCG_COLL_RING;
    h->p2p_ring = NCG_P2P_RING;
    h->pid = getpid();
    h->state = NCG_PROC_ALIVE;
    h->start_ticks = ticks;
    struct ncg_launch_ranks lr;
    ncg_launch_ranks_parse(&lr, ncg_env_process, NULL);
    h->global_rank = lr.global;
    h->local_rank = lr.local;
    h->world_size = lr.world;
    h->heartbeat_ns = ncg_now_ns();
    gethostname(h->hostname, sizeof h->hostname - 1);
    char cmd[sizeof h->cmdline];
    ssize_t n = ncg_read_small("/proc/self/cmdline", cmd, sizeof cmd);
    for (ssize_t i = 0; i < n; i++)
        if (cmd[i] == 0)
            cmd[i] = ' ';
    while (n > 0 && cmd[n - 1] == ' ')
        cmd[--n] = 0;
    memcpy(h->cmdline, cmd, sizeof h->cmdline - 1);
    ncg_cuda_bus_id(h->cuda_bus_id, sizeof h->cuda_bus_id);
    /* Every field before the magic: a reader that sees the magic sees a complete header. */
    ck_pr_fence_store();
    ck_pr_store_64(&h->magic, NCG_SHM_MAGIC);
}

/* Liveness of a segment is a shared flock(2) on it, held by its process for as long as it lives
 * (the descriptor stays open, close-on-exec): the kernel drops it when the process dies or
 * execs, across pid namespaces too. An existing segment under our name that nobody holds is
 * stale (a crashed process whose pid we reuse, or our own image before an exec) and replaced;
 * one that is held belongs to a live process with our pid in another pid namespace sharing
 * /dev/shm, and is never touched. A reader can test liveness the same way (LOCK_EX|LOCK_NB). */
static int ncg_seg_fd = -1;

static void *ncg_map_shared(int *busy)
{
    snprintf(ncg_seg_name, sizeof ncg_seg_name, "/%s%u.%d", NCG_SHM_PREFIX, (unsigned)getuid(),
             (int)getpid());
    int fd = shm_open(ncg_seg_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) {
        int old = shm_open(ncg_seg_name, O_RDONLY | O_CLOEXEC, 0);
        int stale = old >= 0 && flock(old, LOCK_EX | LOCK_NB) == 0;
        if (stale)
            shm_unlink(ncg_seg_name); /* while we hold it: no live process can be using it */
        if (old >= 0)
            close(old);
        if (!stale) {
            *busy = 1;
            errno = EEXIST;
            return NULL;
        }
        fd = shm_open(ncg_seg_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    }
    if (fd < 0)
        return NULL;
    flock(fd, LOCK_SH); /* alive: first thing, so a concurrent opener sees it held */
    /* Sized in full but sparse; pages are reserved (fallocate) before anything writes them: the
     * header now, each communicator's slot when it is handed out. A sparse tmpfs page that
     * cannot be allocated on first write would SIGBUS the writing application thread. */
    int err = ftruncate(fd, (off_t)NCG_SHM_SIZE) == 0 ? 0 : errno;
    if (err == 0)
        err = posix_fallocate(fd, 0, (off_t)NCG_SHM_HEADER_SIZE);
    void *p = MAP_FAILED;
    if (err == 0)
        p = mmap(NULL, NCG_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    else
        errno = err;
    if (p == MAP_FAILED) {
        int saved = errno;
        shm_unlink(ncg_seg_name);
        close(fd);
        errno = saved;
        return NULL;
    }
    ncg_seg_fd = fd;
    return p;
}

int ncg_shm_create(void)
{
    if (ncg_seg)
        return 0;
    void *p = NULL;
    int shared = 0, busy = 0;
    uint64_t ticks = ncg_start_ticks();
    if (ncg_cfg.shm) {
        p = ncg_map_shared(&busy);
        if (p)
            shared = 1;
        else if (busy)
            ncg_log(
                "/dev/shm%s belongs to a live process with the same pid in another pid namespace; "
                "recording privately: `ncclguard status` will not see this process",
                ncg_seg_name);
        else
            ncg_log("cannot create /dev/shm%s (%s); recording privately: `ncclguard status` will "
                    "not see this process",
                    ncg_seg_name, strerror(errno));
    }
    if (!p) {
        p = mmap(NULL, NCG_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return -errno;
    }
    ncg_fill_header(p, ticks);
    ncg_seg_shared = shared;
    ncg_seg_owner = getpid();
    /* Published complete (release): the checker thread, running since ncclGetUniqueId, reads
     * the header (global_rank) as soon as it sees the pointer (ncg_seg_get). */
    __atomic_store_n(&ncg_seg, (struct ncg_shm_header *)p, __ATOMIC_RELEASE);
    if (shared)
        ncg_debug(1, "recording to /dev/shm%s", ncg_seg_name);
    return 0;
}

struct ncg_shm_comm *ncg_shm_comm_alloc(void)
{
    struct ncg_shm_header *h = ncg_seg;
    if (!h)
        return NULL;
    uint32_t n = ck_pr_load_32(&h->ncomms);
    if (n < NCG_SHM_MAX_COMMS) {
        struct ncg_shm_comm *s = ncg_shm_comm_at(h, n);
        /* First use of this slot: reserve its pages (see ncg_map_shared). A full /dev/shm costs
         * this communicator its record, never a SIGBUS in the application. */
        if (ncg_seg_shared && ncg_seg_fd >= 0) {
            int err = posix_fallocate(ncg_seg_fd, (off_t)((char *)s - (char *)h), sizeof *s);
            if (err) {
                ck_pr_inc_32(&h->comms_dropped);
                NCG_LOG_ONCE("cannot reserve %zu KiB in /dev/shm%s for a communicator (%s); it "
                             "and any later one that does not fit run unrecorded and unchecked",
                             sizeof *s / 1024, ncg_seg_name, strerror(err));
                return NULL;
            }
        }
        /* The slot is FREE (zero) until published; ncomms only bounds what readers scan. */
        ck_pr_store_32(&h->ncomms, n + 1);
        return s;
    }
    /* All used: recycle the destroyed slot whose comm is oldest. */
    struct ncg_shm_comm *best = NULL;
    for (uint32_t i = 0; i < NCG_SHM_MAX_COMMS; i++) {
        struct ncg_shm_comm *s = ncg_shm_comm_at(h, i);
        if (ck_pr_load_32(&s->state) == NCG_COMM_DESTROYED &&
            (!best || s->created_ns < best->created_ns))
            best = s;
    }
    if (!best) {
        ck_pr_inc_32(&h->comms_dropped);
        NCG_LOG_ONCE("more than %u communicators live in this process; later ones run unrecorded "
                     "and unchecked",
                     NCG_SHM_MAX_COMMS);
        return NULL;
    }
    ck_pr_store_32(&best->state, NCG_COMM_FREE);
    /* FREE before clearing: readers skip the slot instead of reading half-cleared rings. */
    ck_pr_fence_store();
    memset((char *)best + sizeof best->state, 0, sizeof *best - sizeof best->state);
    return best;
}

void ncg_shm_comm_publish(struct ncg_shm_comm *s, uint64_t comm_id, uint64_t parent_id,
                          uint32_t origin, int32_t rank, int32_t nranks)
{
    s->origin = origin;
    s->comm_id = comm_id;
    s->parent_id = parent_id;
    s->rank = rank;
    s->nranks = nranks;
    s->created_ns = ncg_now_ns();
    s->last_ns = s->created_ns;
    s->creator_tid = ncg_tid();
    /* Identity fields before ACTIVE: a reader that sees ACTIVE sees them. */
    ck_pr_fence_store();
    ck_pr_store_32(&s->state, NCG_COMM_ACTIVE);
}

void ncg_shm_comm_retire(struct ncg_shm_comm *s)
{
    /* Records written before the retirement stay readable; release orders them first. */
    ck_pr_fence_store();
    ck_pr_store_32(&s->state, NCG_COMM_DESTROYED);
}

void ncg_shm_exit(void)
{
    struct ncg_shm_header *h = ncg_seg_get();
    if (!h || ncg_seg_owner != getpid())
        return; /* dormant, or an inherited handler in a forked child: not ours to touch */
    ck_pr_fence_store();
    if (ck_pr_load_32(&h->state) == NCG_PROC_ALIVE)
        ck_pr_store_32(&h->state, NCG_PROC_EXITED);
    if (ncg_seg_shared)
        shm_unlink(ncg_seg_name);
}

void ncg_shm_fork_child(void)
{
    struct ncg_shm_header *h = ncg_seg;
    __atomic_store_n(&ncg_seg, NULL, __ATOMIC_RELAXED); /* the child's only thread */
    ncg_seg_shared = 0;
    /* The parent's MAP_SHARED pages: a write from the child would corrupt the parent's rings. */
    if (h)
        munmap(h, NCG_SHM_SIZE);
    /* Our copy of the parent's descriptor: the parent alone keeps its segment alive. */
    if (ncg_seg_fd >= 0)
        close(ncg_seg_fd);
    ncg_seg_fd = -1;
}

void ncg_shm_comm_slow_set(struct ncg_shm_comm *s, const struct ncg_shm_slow *w)
{
    uint32_t g = ck_pr_load_32(&s->slow_gen);
    ck_pr_store_32(&s->slow_gen, (g | 1u) == g ? g : g + 1); /* odd: being written */
    ck_pr_fence_store(); /* the odd generation before the fields */
    ck_pr_store_64(&s->slow_since_ns, w->since_ns);
    ck_pr_store_32((uint32_t *)&s->slow_rank, (uint32_t)w->rank);
    ck_pr_store_32((uint32_t *)&s->slow_grank, (uint32_t)w->grank);
    ck_pr_store_32(&s->slow_pid, w->pid);
    ck_pr_store_16(&s->slow_share_bp, w->share_bp);
    ck_pr_store_8(&s->slow_side, w->side);
    ck_pr_fence_store(); /* the fields before the even generation */
    ck_pr_store_32(&s->slow_gen, (g | 1u) + 1u);
}
