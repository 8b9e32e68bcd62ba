/* The shared-memory segment of one guarded process: the public, versioned contract between
 * the shim (writer, in the job), its checker thread and the `ncclguard` CLI (readers, any
 * process). Fixed-width fields only, no pointers, little-endian host order (segments never
 * leave the host). Change anything here => bump NCG_SHM_LAYOUT_VERSION. */
#ifndef NCG_SHM_H
#define NCG_SHM_H

#include <stdint.h>
#include <stddef.h>

/* /dev/shm/ncclguard.<uid>.<pid>: created at the first communicator, unlinked at clean exit. */
#define NCG_SHM_PREFIX "ncclguard."
#define NCG_SHM_MAGIC 0x314452415547434eull /* "NCGUARD1" little-endian */
#define NCG_SHM_LAYOUT_VERSION                                                                     \
    4u /* 2: completion counters in the comm header; 3: cuda_bus_id;                               \
        4: the comm's latest SLOW warning (slow_*) */
/* The oldest layout a reader still takes: 3 and 4 only add fields in zeroed reserved space ("",
 * no SLOW in an older segment). */
#define NCG_SHM_LAYOUT_OLDEST 2u

/* Communicators tracked per process (more are counted, not recorded), and the records kept per
 * communicator in its collective and send/recv rings (powers of two). */
#define NCG_SHM_MAX_COMMS 64u
#define NCG_COLL_RING 1024u
#define NCG_P2P_RING 256u

/* Process state (ncg_shm_header.state). */
enum ncg_proc_state {
    NCG_PROC_ALIVE = 1,
    NCG_PROC_EXITED = 2,  /* clean exit: atexit ran */
    NCG_PROC_VERDICT = 3, /* a verdict was reached; verdict_* fields are valid */
};

/* Function codes (ncg_shm_record.func). Stable: part of the layout and of the wire. */
enum ncg_func {
    NCG_F_NONE = 0,
    NCG_F_ALLREDUCE = 1,
    NCG_F_BROADCAST = 2, /* ncclBcast is recorded as BROADCAST */
    NCG_F_REDUCE = 3,
    NCG_F_ALLGATHER = 4,
    NCG_F_REDUCESCATTER = 5,
    NCG_F_ALLTOALL = 6,
    NCG_F_GATHER = 7,
    NCG_F_SCATTER = 8,
    NCG_F_SEND = 9,
    NCG_F_RECV = 10,
    NCG_F_COMMSPLIT = 11, /* ncclCommSplit: every member calls it in order, so it takes a slot */
    NCG_F_COUNT_
};

/* Reduction op class (ncg_shm_record.redop): built-in ops keep NCCL's value 0..4. */
#define NCG_REDOP_NONE 0xffu /* the call takes no reduction op */
#define NCG_REDOP_USER 0xfeu /* a user op (PreMulSum...): per-rank handles, compared as a class */

/* Record flags. */
#define NCG_REC_IN_GROUP 0x1u /* issued between ncclGroupStart/End */
#define NCG_REC_GRAPH 0x2u    /* run by a cudaGraphLaunch (captured earlier; pc: the capture's) */

/* One call. Seqlock-stamped: the writer stores stamp = 2*idx+1, the fields, then
 * stamp = 2*idx+2 (release). A reader copies the record and accepts it only if it read the
 * same even stamp before and after (acquire) and the stamp names the index it wanted. */
struct ncg_shm_record {
    uint64_t stamp;
    uint64_t seq;         /* collective slot on this comm (coll ring) or pair sequence (p2p ring) */
    uint64_t count;       /* elements (recvcount for ReduceScatter, sendcount for AllGather) */
    uint64_t digest;      /* coll ring: chained digest of fingerprints of slots 0..seq */
    uint64_t caller_pc;   /* return address of the application's call */
    uint64_t t_ns;        /* CLOCK_MONOTONIC_COARSE when the call was issued (tick resolution) */
    uint32_t tid;         /* issuing thread */
    int32_t root_or_peer; /* root (rooted collectives), peer (send/recv), -1 otherwise */
    uint8_t func;         /* enum ncg_func */
    uint8_t dtype;        /* ncclDataType_t */
    uint8_t redop;        /* 0..4 or NCG_REDOP_NONE / NCG_REDOP_USER */
    uint8_t flags;        /* NCG_REC_* */
    uint32_t reserved;    /* stream index (top 8 bits) | the issuing thread's launch order (24) */
};
_Static_assert(sizeof(struct ncg_shm_record) == 64, "record layout");
_Static_assert(offsetof(struct ncg_shm_record, func) == 56, "record layout");

/* Communicator state (ncg_shm_comm.state). */
enum ncg_comm_state {
    NCG_COMM_FREE = 0,
    NCG_COMM_ACTIVE = 1,
    NCG_COMM_DESTROYED = 2, /* destroyed/finalized/aborted by the application */
    NCG_COMM_FAILED = 3,    /* failed by a verdict (soft action) */
};

/* Comm origin (ncg_shm_comm.origin). */
enum ncg_comm_origin {
    NCG_ORIGIN_ROOT = 1,
    NCG_ORIGIN_SPLIT = 2,
    NCG_ORIGIN_SHRINK = 3,
    NCG_ORIGIN_INITALL = 4,
    NCG_ORIGIN_GROW = 5 /* ncclCommGrow (2.30): the parent's members and new ranks */
};

/* Where a SLOW rank is late (ncg_shm_comm.slow_side). */
enum ncg_slow_side {
    NCG_SLOW_NONE = 0,
    NCG_SLOW_HOST = 1,   /* its host issues the collective late */
    NCG_SLOW_DEVICE = 2, /* its stream starts the collective late (its GPU) */
};

/* One communicator. Header fields are written once at creation (before state is published
 * with a release store) except the counters, which the issuing thread updates. */
struct ncg_shm_comm {
    uint32_t state;     /* enum ncg_comm_state; FREE until the fields below are valid */
    uint32_t origin;    /* enum ncg_comm_origin */
    uint64_t comm_id;   /* identity, equal on every member (DESIGN.md rules) */
    uint64_t parent_id; /* 0 for root comms */
    int32_t rank;
    int32_t nranks;
    uint64_t coll_seq;   /* collective slots issued so far (next slot number) */
    uint64_t p2p_seq;    /* p2p records written so far (index into p2p ring) */
    uint64_t last_ns;    /* CLOCK_MONOTONIC_COARSE of the latest call on this comm */
    uint64_t created_ns; /* CLOCK_MONOTONIC at creation */
    /* Completion (layout 2). Written by the issuing thread when a call completes (synchronous
     * NCCL: when the call returns; in a group: at the outermost ncclGroupEnd's return), or by
     * the checker thread polling CUDA events (asynchronous NCCL, interpose/shim/completion.c). */
    uint64_t coll_done;   /* collective slots completed: slots < coll_done are finished */
    uint64_t p2p_done;    /* p2p records completed (index into the p2p ring, like p2p_seq) */
    uint64_t coll_held;   /* 0, or 1 + the first slot issued inside a group whose ncclGroupEnd
                             has not been entered yet (issued, not launched: nobody waits on it) */
    uint64_t p2p_held;    /* the same for p2p records */
    uint32_t creator_tid; /* thread that created the comm (its driver before any call) */
    /* Layout 4: the latest SLOW warning (a straggler) the checker sent this member about the
     * comm, written by the checker thread when it arrives (all zero: none since creation). The
     * checker warns when a rank is named or another one is, and tells the members when the
     * episode ends: then slow_side is NCG_SLOW_NONE (nobody named now; since_ns and the rest
     * still say whom the last episode named). Seqlock: the writer makes slow_gen odd,
     * writes the fields, makes it even (release); a reader copies them and takes the copy only
     * when it read the same even slow_gen before and after (acquire), slow_gen > 0. */
    uint32_t slow_gen;      /* 2 x the warnings written (odd while one is written) */
    uint64_t slow_since_ns; /* CLOCK_MONOTONIC (this host) when the named rank's episode began */
    int32_t slow_rank;      /* comm rank the others wait for */
    int32_t slow_grank;     /* its global rank, -1 unknown */
    uint32_t slow_pid;      /* its pid on its host, 0 unknown */
    uint16_t slow_share_bp; /* of the step the others lose waiting for it, 1/10000 */
    uint8_t slow_side;      /* enum ncg_slow_side */
    uint8_t slow_reserved;
    struct ncg_shm_record coll[NCG_COLL_RING];
    struct ncg_shm_record p2p[NCG_P2P_RING];
};
_Static_assert(offsetof(struct ncg_shm_comm, coll_done) == 64, "comm layout");
_Static_assert(offsetof(struct ncg_shm_comm, creator_tid) == 96, "comm layout");
_Static_assert(offsetof(struct ncg_shm_comm, slow_gen) == 100, "SLOW in the old reserved2");
_Static_assert(offsetof(struct ncg_shm_comm, slow_since_ns) == 104, "comm layout");
_Static_assert(offsetof(struct ncg_shm_comm, slow_side) == 126, "comm layout");
_Static_assert(offsetof(struct ncg_shm_comm, coll) == 128, "comm layout");

/* Segment header; the comms follow at offset NCG_SHM_HEADER_SIZE. */
#define NCG_SHM_HEADER_SIZE 1024u
struct ncg_shm_header {
    uint64_t magic;
    uint32_t layout_version;
    uint32_t header_size; /* NCG_SHM_HEADER_SIZE */
    uint32_t comm_size;   /* sizeof(struct ncg_shm_comm) */
    uint32_t max_comms;   /* NCG_SHM_MAX_COMMS */
    uint32_t coll_ring;   /* NCG_COLL_RING */
    uint32_t p2p_ring;    /* NCG_P2P_RING */
    int32_t pid;
    uint32_t state;         /* enum ncg_proc_state */
    uint64_t start_ticks;   /* /proc/<pid>/stat starttime: tells a reused pid apart */
    int32_t global_rank;    /* $RANK, or -1 */
    int32_t local_rank;     /* $LOCAL_RANK, or -1 */
    int32_t world_size;     /* $WORLD_SIZE, or -1 */
    uint32_t ncomms;        /* comm slots in use (published with release) */
    uint32_t comms_dropped; /* communicators beyond max_comms, not recorded */
    uint32_t verdict_kind;  /* 0 or a verdict code (interpose/proto/verdict.h), valid in VERDICT
                               state */
    uint64_t heartbeat_ns;  /* CLOCK_MONOTONIC, bumped by the checker thread */
    uint64_t verdict_comm;  /* comm_id the verdict is about */
    char hostname[64];
    char cmdline[192];      /* argv joined by spaces, truncated */
    char verdict_text[256]; /* one-line summary of the verdict */
    char report_path[256];  /* the JSON report, when written */
    /* On-demand dump (`ncclguard dump`), added in the header's reserved tail (zero in older
     * segments: no request). The CLI writes dump_dir, then bumps dump_req; the checker thread
     * polls dump_req every interval, writes the dump into dump_dir, then sets dump_done to the
     * request it served. */
    uint32_t dump_req;
    uint32_t dump_done;
    char dump_dir[128]; /* absolute directory, NUL-terminated */
    /* Layout 3: PCI bus id of the CUDA device current when the segment was created (the
     * thread creating the first communicator), as cudaDeviceGetPCIBusId writes it
     * ("0000:3b:00.0"); "" without a CUDA runtime in the process. Written before the magic. */
    char cuda_bus_id[32];
};
_Static_assert(offsetof(struct ncg_shm_header, dump_req) == 856, "dump fields at the old end");
_Static_assert(offsetof(struct ncg_shm_header, cuda_bus_id) == 992, "bus id after the dump");
_Static_assert(sizeof(struct ncg_shm_header) <= NCG_SHM_HEADER_SIZE, "header fits");

#define NCG_SHM_SIZE                                                                               \
    ((size_t)NCG_SHM_HEADER_SIZE + (size_t)NCG_SHM_MAX_COMMS * sizeof(struct ncg_shm_comm))

static inline struct ncg_shm_comm *ncg_shm_comm_at(struct ncg_shm_header *h, uint32_t i)
{
    return (struct ncg_shm_comm *)((char *)h + h->header_size + (size_t)i * h->comm_size);
}

#endif /* NCG_SHM_H */
