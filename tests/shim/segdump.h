/* Test helper: map a process's ncclguard segment read-only and dump it as text, one line per
 * communicator and per record (via ncg_ring_read, as the CLI reads it). Header-only; used by
 * calls.c (dumping its own segment before exit) and shmread.c (another process). */
#ifndef NCG_SEGDUMP_H
#define NCG_SEGDUMP_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ncclguard/shm.h"
#include "ring.h"

/* Map /dev/shm/ncclguard.<uid>.<pid> read-only; NULL when absent. */
static inline struct ncg_shm_header *segdump_map(int pid)
{
    char path[128];
    snprintf(path, sizeof path, "/dev/shm/%s%u.%d", NCG_SHM_PREFIX, (unsigned)getuid(), pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    void *p = mmap(NULL, NCG_SHM_SIZE, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

static inline void segdump(FILE *f, struct ncg_shm_header *h)
{
    fprintf(f,
            "proc magic=%d version=%u pid=%d state=%u ncomms=%u dropped=%u rank=%d local=%d "
            "world=%d host=%s ticks=%llu cmd=%s\n",
            h->magic == NCG_SHM_MAGIC, h->layout_version, h->pid, h->state, h->ncomms,
            h->comms_dropped, h->global_rank, h->local_rank, h->world_size, h->hostname,
            (unsigned long long)h->start_ticks, h->cmdline);
    for (uint32_t i = 0; i < h->ncomms && i < NCG_SHM_MAX_COMMS; i++) {
        const struct ncg_shm_comm *c = ncg_shm_comm_at(h, i);
        if (c->state == NCG_COMM_FREE)
            continue;
        uint64_t n = c->coll_seq, np = c->p2p_seq;
        fprintf(f,
                "comm slot=%u id=%016llx parent=%016llx origin=%u rank=%d nranks=%d state=%u "
                "coll_seq=%llu p2p_seq=%llu\n",
                i, (unsigned long long)c->comm_id, (unsigned long long)c->parent_id, c->origin,
                c->rank, c->nranks, c->state, (unsigned long long)n, (unsigned long long)np);
        for (uint64_t k = n > NCG_COLL_RING ? n - NCG_COLL_RING : 0; k < n; k++) {
            struct ncg_shm_record r;
            int rc = ncg_ring_read(c, NCG_RING_COLL, k, &r);
            if (rc)
                fprintf(f, "coll id=%016llx idx=%llu err=%d\n", (unsigned long long)c->comm_id,
                        (unsigned long long)k, rc);
            else
                fprintf(f,
                        "coll id=%016llx seq=%llu func=%u count=%llu dtype=%u redop=%u root=%d "
                        "flags=%u digest=%016llx tid=%u pc=%d\n",
                        (unsigned long long)c->comm_id, (unsigned long long)r.seq, r.func,
                        (unsigned long long)r.count, r.dtype, r.redop, r.root_or_peer, r.flags,
                        (unsigned long long)r.digest, r.tid, r.caller_pc != 0);
        }
        for (uint64_t k = np > NCG_P2P_RING ? np - NCG_P2P_RING : 0; k < np; k++) {
            struct ncg_shm_record r;
            int rc = ncg_ring_read(c, NCG_RING_P2P, k, &r);
            if (rc)
                fprintf(f, "p2p id=%016llx idx=%llu err=%d\n", (unsigned long long)c->comm_id,
                        (unsigned long long)k, rc);
            else
                fprintf(f,
                        "p2p id=%016llx idx=%llu seq=%llu func=%u count=%llu dtype=%u peer=%d "
                        "flags=%u\n",
                        (unsigned long long)c->comm_id, (unsigned long long)k,
                        (unsigned long long)r.seq, r.func, (unsigned long long)r.count, r.dtype,
                        r.root_or_peer, r.flags);
        }
    }
}

/* Dump this process's own segment to path; returns 0, or -1 when there is none. */
static inline int segdump_self(const char *path)
{
    struct ncg_shm_header *h = segdump_map(getpid());
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    if (!h) {
        fprintf(f, "noseg\n");
        fclose(f);
        return -1;
    }
    segdump(f, h);
    fclose(f);
    munmap(h, NCG_SHM_SIZE);
    return 0;
}

#endif
