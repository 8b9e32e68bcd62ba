/* A synthetic writer of ncclguard segments for the CLI tests: one child process per "rank",
 * each creating its own segment exactly as include/ncclguard/shm.h lays it out (header, one
 * communicator, seqlock-stamped records), without the shim or any NCCL. Ranks can be made
 * dead (exit without a clean exit), exited, torn (a record left half-written), stale, or
 * carrying a verdict (with --dead too: ended by the verdict, as an aborted rank), or holding a
 * SLOW warning (--slow; --slow-next: another one, naming another rank, later). Prints "fakeseg:
 * ready <pid of rank 0> <pid of rank 1> ..." and holds the live ranks until stdin closes or
 * SIGTERM; then kills them and removes their segments. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ncclguard/shm.h"

#define MAXR 64

static const char usage[] =
    "usage: fakeseg --dir DIR [--ranks N] [--counts C0,C1,..] [--comm HEXID] [--age SECS]\n"
    "               [--last R:FUNC:COUNT:DTYPE] [--dead R] [--exited R] [--torn R]\n"
    "               [--verdict R] [--p2p R:N] [--junk] [--tag TEXT] [--grank-base G]\n"
    "               [--bus-base HEX] [--completed 1]\n";

struct opts {
    const char *dir;
    int nranks;
    uint64_t counts[MAXR];
    uint64_t comm;
    double age;
    int last_func[MAXR], last_dtype[MAXR];
    uint64_t last_count[MAXR];
    int dead[MAXR], exited[MAXR], torn[MAXR], verdict[MAXR];
    uint64_t p2p[MAXR];
    int junk;
    int grank_base; /* global rank of comm rank r: grank_base + r */
    int bus_base;   /* > 0: rank r's CUDA device is on PCI bus bus_base + r ("0000:BB:00.0") */
    int completed;  /* --completed 1: every issued slot also completed (layout 2) */
    const char *tag;
    int slow_rank, slow_pct, slow_gpu; /* --slow: every rank holds a SLOW naming slow_rank - 1 */
    int next_rank, next_secs;          /* --slow-next: after next_secs, naming next_rank - 1 */
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t start_ticks_self(void)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    int field = 2;
    for (char *t = strtok(p + 1, " "); t; t = strtok(NULL, " "))
        if (++field == 22)
            return strtoull(t, NULL, 10);
    return 0;
}

static void put(struct ncg_shm_record *ring, uint32_t size, uint64_t idx,
                const struct ncg_shm_record *r, int leave_torn)
{
    struct ncg_shm_record *slot = &ring[idx & (size - 1)];
    __atomic_store_n(&slot->stamp, 2 * idx + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE); /* odd stamp before the fields */
    struct ncg_shm_record tmp = *r;
    tmp.stamp = 2 * idx + 1;
    memcpy(slot, &tmp, sizeof(tmp));
    if (leave_torn)
        return; /* a writer that died mid-record */
    __atomic_store_n(&slot->stamp, 2 * idx + 2, __ATOMIC_RELEASE); /* fields before even stamp */
}

static int func_code(const char *s)
{
    static const char *n[] = {"none",      "AllReduce",     "Broadcast", "Reduce",
                              "AllGather", "ReduceScatter", "AlltoAll",  "Gather",
                              "Scatter",   "Send",          "Recv"};
    for (int i = 0; i < 11; i++)
        if (strcmp(s, n[i]) == 0)
            return i;
    return atoi(s);
}

static struct ncg_shm_comm *my_comm; /* this rank's comm (write_rank) */

/* The comm's SLOW warning naming comm rank `named` (shm.h's seqlock), its episode begun 5 s ago. */
static void put_slow(struct ncg_shm_comm *c, const struct opts *o, int named)
{
    uint32_t g = __atomic_load_n(&c->slow_gen, __ATOMIC_RELAXED);
    __atomic_store_n(&c->slow_gen, g + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE); /* odd generation before the fields */
    c->slow_since_ns = mono_ns() - 5000000000ull;
    c->slow_rank = named;
    c->slow_grank = o->grank_base + named;
    c->slow_pid = 0; /* unknown: the reader finds it among the members here */
    c->slow_share_bp = (uint16_t)(o->slow_pct * 100);
    c->slow_side = o->slow_gpu ? NCG_SLOW_DEVICE : NCG_SLOW_HOST;
    __atomic_store_n(&c->slow_gen, g + 2, __ATOMIC_RELEASE); /* fields before the even one */
}

static void write_rank(const struct opts *o, int r)
{
    char path[4096];
    pid_t pid = getpid();
    snprintf(path, sizeof(path), "%s/%s%u.%d", o->dir, NCG_SHM_PREFIX, (unsigned)getuid(),
             (int)pid);
    int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)NCG_SHM_SIZE) < 0) {
        perror("fakeseg: segment");
        _exit(1);
    }
    struct ncg_shm_header *h = mmap(NULL, NCG_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (h == MAP_FAILED) {
        perror("fakeseg: mmap");
        _exit(1);
    }
    h->layout_version = NCG_SHM_LAYOUT_VERSION;
    h->header_size = NCG_SHM_HEADER_SIZE;
    h->comm_size = sizeof(struct ncg_shm_comm);
    h->max_comms = NCG_SHM_MAX_COMMS;
    h->coll_ring = NCG_COLL_RING;
    h->p2p_ring = NCG_P2P_RING;
    h->pid = pid;
    h->state = NCG_PROC_ALIVE;
    h->start_ticks = start_ticks_self();
    h->global_rank = o->grank_base + r;
    h->local_rank = r;
    h->world_size = o->nranks;
    gethostname(h->hostname, sizeof(h->hostname) - 1);
    if (o->bus_base > 0)
        snprintf(h->cuda_bus_id, sizeof(h->cuda_bus_id), "0000:%02x:00.0", o->bus_base + r);
    snprintf(h->cmdline, sizeof(h->cmdline), "fakeseg rank %d %s", r, o->tag ? o->tag : "");
    uint64_t now = mono_ns();
    uint64_t t = now - (uint64_t)(o->age * 1e9);
    h->heartbeat_ns = t;

    struct ncg_shm_comm *c = ncg_shm_comm_at(h, 0);
    my_comm = c;
    c->origin = NCG_ORIGIN_ROOT;
    c->comm_id = o->comm;
    c->parent_id = 0;
    c->rank = r;
    c->nranks = o->nranks;
    c->created_ns = t;
    uint64_t digest = 1469598103934665603ull;
    uint64_t n = o->counts[r];
    for (uint64_t i = 0; i < n; i++) {
        struct ncg_shm_record rec;
        memset(&rec, 0, sizeof(rec));
        rec.seq = i;
        rec.func = 1;
        rec.count = 1024;
        rec.dtype = 7;
        rec.redop = 0;
        rec.root_or_peer = -1;
        if (i == n - 1 && o->last_func[r]) {
            rec.func = (uint8_t)o->last_func[r];
            rec.count = o->last_count[r];
            rec.dtype = (uint8_t)o->last_dtype[r];
            if (rec.func == 4 || rec.func == 2 || rec.func == 6)
                rec.redop = NCG_REDOP_NONE;
        }
        uint64_t fp =
            rec.func | rec.count << 8 | (uint64_t)rec.dtype << 48 | (uint64_t)rec.redop << 56;
        digest = (digest ^ fp) * 1099511628211ull;
        rec.digest = digest;
        rec.caller_pc = 0x401000 + i;
        rec.t_ns = t;
        rec.tid = (uint32_t)pid;
        put(c->coll, NCG_COLL_RING, i, &rec, o->torn[r] && i == n - 1);
    }
    for (uint64_t i = 0; i < o->p2p[r]; i++) {
        struct ncg_shm_record rec;
        memset(&rec, 0, sizeof(rec));
        rec.seq = i;
        rec.func = (r % 2) ? 10 : 9;
        rec.count = 64;
        rec.dtype = 7;
        rec.redop = NCG_REDOP_NONE;
        rec.root_or_peer = (r + 1) % o->nranks;
        rec.t_ns = t - 1;
        put(c->p2p, NCG_P2P_RING, i, &rec, 0);
    }
    if (o->completed)
        c->coll_done = n;
    __atomic_store_n(&c->coll_seq, n, __ATOMIC_RELEASE);
    __atomic_store_n(&c->p2p_seq, o->p2p[r], __ATOMIC_RELEASE);
    c->last_ns = t;
    __atomic_store_n(&c->state, NCG_COMM_ACTIVE, __ATOMIC_RELEASE); /* publish the comm */
    __atomic_store_n(&h->ncomms, 1, __ATOMIC_RELEASE);
    if (o->slow_rank) {
        put_slow(c, o, o->slow_rank - 1);
        if (!o->verdict[r]) {    /* the header's first warning, as the shim's action.c marks it */
            h->verdict_kind = 9; /* SLOW */
            h->verdict_comm = o->comm;
            snprintf(h->verdict_text, sizeof(h->verdict_text),
                     "SLOW on comm %016llx: rank %d is the one the others wait for: synthetic",
                     (unsigned long long)o->comm, o->slow_rank - 1);
            __atomic_store_n(&h->state, NCG_PROC_VERDICT, __ATOMIC_RELEASE);
        }
    }
    if (o->verdict[r]) {
        h->verdict_kind = 1;
        h->verdict_comm = o->comm;
        snprintf(h->verdict_text, sizeof(h->verdict_text),
                 "MISMATCH on comm %016llx: synthetic verdict", (unsigned long long)o->comm);
        snprintf(h->report_path, sizeof(h->report_path), "/tmp/ncclguard-report.fake.%d.json",
                 (int)pid);
        __atomic_store_n(&h->state, NCG_PROC_VERDICT, __ATOMIC_RELEASE);
    }
    if (o->exited[r])
        __atomic_store_n(&h->state, NCG_PROC_EXITED, __ATOMIC_RELEASE);
    /* magic last: a reader never sees a half-filled header as valid */
    __atomic_store_n(&h->magic, NCG_SHM_MAGIC, __ATOMIC_RELEASE);
}

/* --slow-next in this rank's segment. */
static void write_slow_next(const struct opts *o)
{
    if (my_comm)
        put_slow(my_comm, o, o->next_rank - 1);
}

static int parse_rspec(const char *s, int *r, const char **rest)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 0 || v >= MAXR)
        return -1;
    *r = (int)v;
    *rest = *end == ':' ? end + 1 : end;
    return 0;
}

int main(int argc, char **argv)
{
    static struct opts o;
    o.nranks = 4;
    o.comm = 0x1234abcd5678ef01ull;
    int have_counts = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL, *rest;
        int r;
        if (strcmp(a, "--junk") == 0) {
            o.junk = 1;
            continue;
        }
        if (!v) {
            fputs(usage, stderr);
            return 2;
        }
        i++;
        if (strcmp(a, "--dir") == 0)
            o.dir = v;
        else if (strcmp(a, "--ranks") == 0)
            o.nranks = atoi(v);
        else if (strcmp(a, "--comm") == 0)
            o.comm = strtoull(v, NULL, 16);
        else if (strcmp(a, "--age") == 0)
            o.age = atof(v);
        else if (strcmp(a, "--tag") == 0)
            o.tag = v;
        else if (strcmp(a, "--grank-base") == 0)
            o.grank_base = atoi(v);
        else if (strcmp(a, "--bus-base") == 0)
            o.bus_base = (int)strtol(v, NULL, 16);
        else if (strcmp(a, "--completed") == 0)
            o.completed = atoi(v);
        else if (strcmp(a, "--slow") == 0 && parse_rspec(v, &r, &rest) == 0) {
            o.slow_rank = r + 1;
            o.slow_pct = atoi(rest);
            o.slow_gpu = strstr(rest, ":gpu") != NULL;
        } else if (strcmp(a, "--slow-next") == 0 && parse_rspec(v, &r, &rest) == 0) {
            o.next_rank = r + 1;
            o.next_secs = atoi(rest);
        } else if (strcmp(a, "--counts") == 0) {
            char *dup = strdup(v), *save = NULL;
            int k = 0;
            for (char *t = strtok_r(dup, ",", &save); t && k < MAXR; t = strtok_r(NULL, ",", &save))
                o.counts[k++] = strtoull(t, NULL, 10);
            free(dup);
            have_counts = k;
        } else if (parse_rspec(v, &r, &rest) < 0) {
            fputs(usage, stderr);
            return 2;
        } else if (strcmp(a, "--dead") == 0)
            o.dead[r] = 1;
        else if (strcmp(a, "--exited") == 0)
            o.exited[r] = 1;
        else if (strcmp(a, "--torn") == 0)
            o.torn[r] = 1;
        else if (strcmp(a, "--verdict") == 0)
            o.verdict[r] = 1;
        else if (strcmp(a, "--p2p") == 0)
            o.p2p[r] = strtoull(rest, NULL, 10);
        else if (strcmp(a, "--last") == 0) {
            char f[32], d[8];
            unsigned long long cnt;
            if (sscanf(rest, "%31[^:]:%llu:%7s", f, &cnt, d) != 3) {
                fputs(usage, stderr);
                return 2;
            }
            o.last_func[r] = func_code(f);
            o.last_count[r] = cnt;
            o.last_dtype[r] = atoi(d);
        } else {
            fputs(usage, stderr);
            return 2;
        }
    }
    if (!o.dir || o.nranks < 1 || o.nranks > MAXR) {
        fputs(usage, stderr);
        return 2;
    }
    for (int r = have_counts; r < o.nranks; r++)
        o.counts[r] = have_counts ? o.counts[have_counts - 1] : 10;
    if (o.junk) { /* a foreign file and a segment of a future layout, both of dead pids */
        char p[4096];
        snprintf(p, sizeof(p), "%s/%s%u.%d", o.dir, NCG_SHM_PREFIX, (unsigned)getuid(), 999999999);
        FILE *f = fopen(p, "w");
        if (f) {
            fputs("not a segment, but long enough to be read as one..................", f);
            for (int i = 0; i < 1100; i++)
                fputc('x', f);
            fclose(f);
        }
    }
    pid_t pids[MAXR];
    int ready[2];
    if (pipe(ready) < 0)
        return 1;
    for (int r = 0; r < o.nranks; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            close(ready[0]);
            write_rank(&o, r);
            char b = 'r';
            if (write(ready[1], &b, 1) != 1)
                _exit(1);
            if (o.dead[r] || o.exited[r])
                _exit(0); /* segment stays behind, as after SIGKILL */
            if (o.next_rank) {
                sleep((unsigned)o.next_secs);
                write_slow_next(&o);
            }
            for (;;)
                pause();
        }
    }
    close(ready[1]);
    for (int r = 0; r < o.nranks; r++) {
        char b;
        if (read(ready[0], &b, 1) != 1) {
            fprintf(stderr, "fakeseg: a rank failed\n");
            return 1;
        }
    }
    for (int r = 0; r < o.nranks; r++)
        if (o.dead[r] || o.exited[r])
            waitpid(pids[r], NULL, 0); /* reaped: the pid is gone */
    printf("fakeseg: ready");
    for (int r = 0; r < o.nranks; r++)
        printf(" %d", (int)pids[r]);
    printf("\n");
    fflush(stdout);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    /* Hold until stdin closes or SIGTERM/SIGINT. */
    pid_t reader = fork();
    if (reader == 0) {
        char b[64];
        while (read(0, b, sizeof(b)) > 0)
            ;
        _exit(0);
    }
    int sig = 0;
    siginfo_t si;
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    for (;;) {
        sig = sigwaitinfo(&set, &si);
        if (sig == SIGCHLD && waitpid(reader, NULL, WNOHANG) != reader)
            continue;
        break;
    }
    kill(reader, SIGKILL);
    for (int r = 0; r < o.nranks; r++) {
        if (o.dead[r] || o.exited[r])
            continue;
        kill(pids[r], SIGKILL);
        waitpid(pids[r], NULL, 0);
        char p[4096];
        snprintf(p, sizeof(p), "%s/%s%u.%d", o.dir, NCG_SHM_PREFIX, (unsigned)getuid(),
                 (int)pids[r]);
        unlink(p);
    }
    return 0;
}
