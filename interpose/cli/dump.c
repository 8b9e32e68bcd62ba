/* `ncclguard dump [--dir DIR] [--match STR] [--timeout S]`: asks every live guarded process on
 * this host (segments under /dev/shm) to write a dump into DIR, through the request word of its
 * segment header (no signal: the process's checker thread serves it within one interval, also
 * while the application is stuck in NCCL), and waits for the answers. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"

static const char usage[] =
    "usage: ncclguard dump [--dir DIR] [--match STR] [--timeout S]\n"
    "  every live guarded process on this host writes DIR/ncclguard-dump.<host>.<pid>.json:\n"
    "  native and Python stacks of its threads, its communicators with counts and last records\n"
    "  --dir DIR      where the dumps go (default: the current directory; at most 127 bytes "
    "once absolute)\n"
    "  --match STR    only processes whose command line contains STR\n"
    "  --timeout S    how long to wait for the answers (default 2)\n"
    "  then: ncclguard report DIR groups them\n"
    "exit status: 0 every process answered, 1 some did not, 2 usage error, 3 error\n";

static double now_s(void)
{
    return (double)ncg_now_ns() / 1e9;
}

int ncg_cmd_dump(int argc, char **argv)
{
    const char *dir = ".", *match = NULL;
    double timeout = 2;
    for (int i = 1; i < argc; i++) {
        if (ncg_cli_help(argv[i], usage))
            return NCG_CLI_OK;
        if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
            dir = argv[++i];
        } else if (!strcmp(argv[i], "--match") && i + 1 < argc) {
            match = argv[++i];
        } else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
            char *e;
            timeout = strtod(argv[++i], &e);
            if (*e || timeout <= 0 || timeout > 3600)
                return ncg_cli_usage_error(usage, "dump: bad --timeout '%s'", argv[i]);
        } else {
            return ncg_cli_usage_error(usage, "dump: unexpected argument '%s'", argv[i]);
        }
    }
    char abs[PATH_MAX];
    if (!realpath(dir, abs)) {
        fprintf(stderr, "ncclguard: dump: %s: %s\n", dir, strerror(errno));
        return NCG_CLI_ERROR;
    }
    if (strlen(abs) >= sizeof(((struct ncg_shm_header *)0)->dump_dir)) {
        fprintf(stderr, "ncclguard: dump: %s: path longer than 127 bytes\n", abs);
        return NCG_CLI_ERROR;
    }
    struct ncg_snap s;
    struct ncg_scan_opts o = {NULL, match};
    if (ncg_snap_take(&s, &o) != 0) {
        fprintf(stderr, "ncclguard: dump: cannot read the segments\n");
        return NCG_CLI_ERROR;
    }
    int *fds = calloc((size_t)s.nprocs + 1, sizeof *fds);
    uint32_t *want = calloc((size_t)s.nprocs + 1, sizeof *want);
    int asked = 0;
    for (int i = 0; i < s.nprocs; i++) {
        struct ncg_cli_proc *p = &s.procs[i];
        fds[i] = -1;
        if (p->live != NCG_LIVE_ALIVE && p->live != NCG_LIVE_VERDICT)
            continue;
        int fd = open(p->path, O_RDWR | O_CLOEXEC);
        uint32_t req = 0;
        if (fd < 0 ||
            pread(fd, &req, sizeof req, offsetof(struct ncg_shm_header, dump_req)) != sizeof req) {
            fprintf(stderr, "ncclguard: dump: pid %d: %s\n", p->pid, strerror(errno));
            if (fd >= 0)
                close(fd);
            continue;
        }
        want[i] = req + 1 ? req + 1 : 1;
        char d[sizeof(((struct ncg_shm_header *)0)->dump_dir)] = {0};
        snprintf(d, sizeof d, "%s", abs);
        /* The directory first, then the request word the checker thread polls. */
        if (pwrite(fd, d, sizeof d, offsetof(struct ncg_shm_header, dump_dir)) != sizeof d ||
            pwrite(fd, &want[i], sizeof want[i], offsetof(struct ncg_shm_header, dump_req)) !=
                sizeof want[i]) {
            fprintf(stderr, "ncclguard: dump: pid %d: %s\n", p->pid, strerror(errno));
            close(fd);
            continue;
        }
        fds[i] = fd;
        asked++;
    }
    double t0 = now_s();
    int answered = 0;
    while (answered < asked && now_s() - t0 < timeout) {
        answered = 0;
        for (int i = 0; i < s.nprocs; i++) {
            uint32_t done = 0;
            if (fds[i] >= 0 &&
                pread(fds[i], &done, sizeof done, offsetof(struct ncg_shm_header, dump_done)) ==
                    sizeof done &&
                done == want[i])
                answered++;
        }
        if (answered < asked)
            usleep(20000);
    }
    for (int i = 0; i < s.nprocs; i++) {
        uint32_t done = 0;
        if (fds[i] < 0)
            continue;
        if (pread(fds[i], &done, sizeof done, offsetof(struct ncg_shm_header, dump_done)) !=
                sizeof done ||
            done != want[i]) {
            printf("ncclguard: dump: pid %d (rank %d) did not answer within %.1f s (no checker "
                   "thread: NCCLGUARD_COORD=off, or an older ncclguard)\n",
                   s.procs[i].pid, s.procs[i].global_rank, timeout);
        } else {
            char f[PATH_MAX + 300];
            snprintf(f, sizeof f, "%s/ncclguard-dump.%s.%d.json", abs,
                     s.procs[i].hostname[0] ? s.procs[i].hostname : "host", s.procs[i].pid);
            if (access(f, F_OK) != 0) {
                printf("ncclguard: dump: pid %d (rank %d) could not write its dump (see its "
                       "stderr)\n",
                       s.procs[i].pid, s.procs[i].global_rank);
                answered--;
            }
        }
        close(fds[i]);
    }
    printf("ncclguard: dump: %d of %d guarded process%s wrote a dump into %s in %.2f s\n", answered,
           asked, asked == 1 ? "" : "es", abs, now_s() - t0);
    free(fds);
    free(want);
    ncg_snap_free(&s);
    return answered == asked ? NCG_CLI_OK : NCG_CLI_ALERT;
}
