/* On-demand dumps (dump.h): every thread's native stack (stack.c's capture) and Python frames
 * (pyframes.c), every communicator slot of the segment with its counts and last 32 records of
 * each ring, rendered as one JSON line and written atomically (tmp + rename). */
#define _GNU_SOURCE
#include "dump.h"

#include <ck_pr.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "diag.h"
#include "log.h"
#include "ncclguard/shm.h"
#include "pyframes.h"
#include "ring.h"
#include "shm.h"
#include "stack.h"
#include "symbol.h"
#include "verdict.h"

#define NCG_DUMP_RECORDS 32u
#define NCG_DUMP_THREADS 256

static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    ncg_esc_fput(f, s, NCG_ESC_JSON);
    fputc('"', f);
}

static void jpy(FILE *f, const struct ncg_pystack *py)
{
    fputc('[', f);
    for (int i = 0; i < py->n; i++) {
        char fr[NCG_PYFRAME_JSON_MAX];
        ncg_diag_json_pyframe(&py->f[i], fr, sizeof fr);
        fprintf(f, "%s%s", i ? "," : "", fr);
    }
    fputc(']', f);
}

/* Python frames as "file:line in fn" strings, or the native frames when there are none. */
struct tinfo {
    uint32_t tid;
    char name[32];
    int nnative;
    char native[16][200];
    struct ncg_pystack py;
};

static int read_threads(struct tinfo *t, int max)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d)) && n < max;) {
        uint32_t tid = (uint32_t)strtoul(e->d_name, NULL, 10);
        if (!tid)
            continue;
        memset(&t[n], 0, sizeof t[n]);
        t[n].tid = tid;
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t k = read(fd, t[n].name, sizeof t[n].name - 1);
            close(fd);
            if (k > 0)
                t[n].name[strcspn(t[n].name, "\n")] = 0;
        }
        n++;
    }
    closedir(d);
    return n;
}

static void where_of(const struct tinfo *t, FILE *f)
{
    fputc('[', f);
    int k = 0;
    char buf[400];
    if (t && t->py.n) {
        for (int i = 0; i < t->py.n; i++, k++) {
            snprintf(buf, sizeof buf, "%s:%d in %s", t->py.f[i].file, t->py.f[i].line,
                     t->py.f[i].func);
            fputs(k ? "," : "", f);
            jstr(f, buf);
        }
    } else if (t) {
        for (int i = 0; i < t->nnative; i++, k++) {
            fputs(k ? "," : "", f);
            jstr(f, t->native[i]);
        }
    }
    fputc(']', f);
}

static void jrecord(FILE *f, const char *ring, const struct ncg_shm_record *r, uint64_t now)
{
    char call[192], site[256];
    struct ncg_call c = {r->seq, r->count, r->root_or_peer, r->func, r->dtype, r->redop};
    fprintf(f, "{\"ring\":\"%s\",\"seq\":%" PRIu64 ",\"call\":", ring, r->seq);
    jstr(f, ncg_call_format(&c, call, sizeof call));
    fprintf(f, ",\"tid\":%u,\"age_s\":%.3f,\"site\":", r->tid,
            now > r->t_ns ? (double)(now - r->t_ns) / 1e9 : 0.0);
    jstr(f, ncg_symbolize(r->caller_pc, site, sizeof site));
    fputc('}', f);
}

static void jcomm(FILE *f, struct ncg_shm_comm *c, const struct tinfo *t, int nt, uint64_t now)
{
    static const char *const st[] = {"free", "active", "destroyed", "failed"};
    uint32_t s = ck_pr_load_32(&c->state);
    uint64_t cs = ck_pr_load_64(&c->coll_seq), ps = ck_pr_load_64(&c->p2p_seq);
    fprintf(f, "{\"id\":\"%016" PRIx64 "\",\"rank\":%d,\"nranks\":%d,\"state\":\"%s\"", c->comm_id,
            c->rank, c->nranks, s < 4 ? st[s] : "?");
    fprintf(f, ",\"calls_issued\":%" PRIu64 ",\"p2p_issued\":%" PRIu64, cs, ps);
    /* The latest call (collective or p2p, whichever is newer) and where its thread is now. */
    struct ncg_shm_record rc, rp, *last = NULL;
    int hc = cs && ncg_ring_read(c, NCG_RING_COLL, cs - 1, &rc) == 0;
    int hp = ps && ncg_ring_read(c, NCG_RING_P2P, ps - 1, &rp) == 0;
    if (hp && (!hc || rp.t_ns > rc.t_ns))
        last = &rp;
    else if (hc)
        last = &rc;
    if (last) {
        const struct tinfo *th = NULL;
        for (int i = 0; i < nt; i++)
            if (t[i].tid == last->tid)
                th = &t[i];
        fprintf(f, ",\"latest\":");
        jrecord(f, last == &rp ? "p2p" : "coll", last, now);
        fseek(f, -1, SEEK_CUR); /* reopen the record object */
        fprintf(f, ",\"where\":");
        where_of(th, f);
        fputc('}', f);
    } else {
        fprintf(f, ",\"latest\":null");
    }
    /* The comm's latest SLOW warning (the checker thread wrote it: this thread, no seqlock). */
    if (ck_pr_load_32(&c->slow_gen) && c->slow_side != NCG_SLOW_NONE) /* NONE: it ended */
        fprintf(f,
                ",\"slow\":{\"rank\":%d,\"global_rank\":%d,\"pid\":%u,\"share\":%.4f,"
                "\"since_s\":%.1f,\"side\":\"%s\"}",
                c->slow_rank, c->slow_grank, c->slow_pid, c->slow_share_bp / 10000.0,
                now > c->slow_since_ns ? (double)(now - c->slow_since_ns) / 1e9 : 0.0,
                c->slow_side == NCG_SLOW_DEVICE ? "gpu" : "host");
    else
        fprintf(f, ",\"slow\":null");
    fprintf(f, ",\"records\":[");
    int k = 0;
    for (int ring = 0; ring < 2; ring++) {
        uint64_t n = ring ? ps : cs;
        for (uint64_t i = n > NCG_DUMP_RECORDS ? n - NCG_DUMP_RECORDS : 0; i < n; i++) {
            struct ncg_shm_record r;
            if (ncg_ring_read(c, ring, i, &r) != 0)
                continue;
            fputs(k++ ? "," : "", f);
            jrecord(f, ring ? "p2p" : "coll", &r, now);
        }
    }
    fprintf(f, "]}");
}

#define NCG_DUMP_TEXT (256 * 1024)

static int render_into(FILE *f, const char *reason, struct tinfo *t, char *text)
{
    struct ncg_shm_header *h = ncg_seg_get();
    uint32_t self = (uint32_t)syscall(SYS_gettid);
    int nt = read_threads(t, NCG_DUMP_THREADS);
    long pylen = ncg_py_dump_text(text, NCG_DUMP_TEXT);
    for (int i = 0; i < nt; i++) {
        if (t[i].tid == self)
            continue;
        if (ncg_cfg.stacks) {
            uint64_t pcs[NCG_STACK_MAX];
            int n = ncg_stack_capture(t[i].tid, pcs, 16);
            for (int k = 0; k < n && k < 16; k++)
                ncg_symbolize(pcs[k], t[i].native[k], sizeof t[i].native[k]);
            t[i].nnative = n > 0 ? (n < 16 ? n : 16) : 0;
        }
        unsigned long th = ncg_py_thread_of(t[i].tid);
        if (pylen > 0 && th)
            ncg_py_parse(text, th, &t[i].py);
    }
    struct timeval tv;
    gettimeofday(&tv, NULL);
    uint64_t now = ncg_now_ns();
    fprintf(f, "{\"format\":\"ncclguard-dump\",\"version\":1,\"reason\":");
    jstr(f, reason);
    fprintf(f, ",\"time_unix\":%ld.%06ld,\"host\":", (long)tv.tv_sec, (long)tv.tv_usec);
    jstr(f, h ? h->hostname : "");
    fprintf(f, ",\"pid\":%d,\"global_rank\":%d,\"cmdline\":", (int)getpid(),
            h ? h->global_rank : -1);
    jstr(f, h ? h->cmdline : "");
    fprintf(f, ",\"python\":%s,\"threads\":[", pylen >= 0 ? "true" : "false");
    int k = 0;
    for (int i = 0; i < nt; i++) {
        if (t[i].tid == self)
            continue;
        fprintf(f, "%s{\"tid\":%u,\"name\":", k++ ? "," : "", t[i].tid);
        jstr(f, t[i].name);
        fprintf(f, ",\"native\":[");
        for (int j = 0; j < t[i].nnative; j++) {
            fputs(j ? "," : "", f);
            jstr(f, t[i].native[j]);
        }
        fprintf(f, "],\"python\":");
        jpy(f, &t[i].py);
        fputc('}', f);
    }
    fprintf(f, "],\"python_text\":");
    jstr(f, pylen > 0 ? text : "");
    fprintf(f, ",\"comms\":[");
    k = 0;
    for (uint32_t i = 0; h && i < ck_pr_load_32(&h->ncomms) && i < NCG_SHM_MAX_COMMS; i++) {
        struct ncg_shm_comm *c = ncg_shm_comm_at(h, i);
        if (ck_pr_load_32(&c->state) == NCG_COMM_FREE)
            continue;
        fputs(k++ ? "," : "", f);
        jcomm(f, c, t, nt, now);
    }
    fprintf(f, "]}\n");
    return ferror(f) ? -EIO : 0;
}

/* The dump's working memory (2.5 MB) is mapped only while a dump is written, never reserved
 * in every process that preloads the shim. Checker thread. */
static int render(FILE *f, const char *reason)
{
    size_t len = sizeof(struct tinfo) * NCG_DUMP_THREADS + NCG_DUMP_TEXT;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -ENOMEM;
    int rc = render_into(f, reason, m, (char *)m + sizeof(struct tinfo) * NCG_DUMP_THREADS);
    munmap(m, len);
    return rc;
}

int ncg_dump_write(const char *dir, const char *reason)
{
    struct ncg_shm_header *h = ncg_seg_get();
    char path[512], tmp[600];
    snprintf(path, sizeof path, "%s/ncclguard-dump.%s.%d.json", dir && dir[0] ? dir : ".",
             h && h->hostname[0] ? h->hostname : "host", (int)getpid());
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    FILE *f = fdopen(fd, "w+");
    if (!f) {
        close(fd);
        unlink(tmp);
        return -ENOMEM;
    }
    int rc = render(f, reason);
    return ncg_diag_tmp_done(rc, fclose(f), tmp, path);
}

void ncg_dump_poll(void)
{
    static uint32_t served;
    struct ncg_shm_header *h = ncg_seg_get();
    if (!h)
        return;
    uint32_t req = ck_pr_load_32(&h->dump_req);
    if (req == served || req == ck_pr_load_32(&h->dump_done))
        return;
    /* The directory before the request word (the CLI's order). */
    ck_pr_fence_load();
    char dir[sizeof h->dump_dir];
    memcpy(dir, h->dump_dir, sizeof dir);
    dir[sizeof dir - 1] = 0;
    int rc = ncg_dump_write(dir, "request");
    if (rc != 0)
        ncg_log("cannot write the requested dump into %s: %s", dir, strerror(-rc));
    served = req;
    ck_pr_store_32(&h->dump_done, req);
}

void ncg_dump_on_warning(uint64_t comm_id)
{
    static int on = -1;
    static uint64_t done[16];
    if (on < 0) {
        const char *e = getenv("NCCLGUARD_DUMP_ON_WARN");
        on = e && (!strcmp(e, "1") || !strcmp(e, "yes") || !strcmp(e, "on") || !strcmp(e, "true"));
    }
    if (!on)
        return;
    for (int i = 0; i < 16; i++) {
        if (done[i] == comm_id)
            return;
        if (!done[i]) {
            done[i] = comm_id;
            break;
        }
    }
    int rc = ncg_dump_write(ncg_cfg.report_dir, "lag warning");
    if (rc != 0)
        ncg_log("cannot write the dump into %s: %s", ncg_cfg.report_dir, strerror(-rc));
}
