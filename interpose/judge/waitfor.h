/* The wait-for graph behind the DEADLOCK verdict, as pure logic (no sockets, threads or
 * clocks; unit-tested in tests/checker/waitfor_test.c). Nodes are application threads
 * (process, thread id). A thread blocked in a launched, incomplete call x on communicator C
 * waits for every member m of C that has not completed x's slot (collective), or for x's peer
 * (p2p). m runs its calls on C in order on its driver thread (the issuer of m's latest call on
 * C; a stream on a GPU); if that thread's oldest incomplete call y is another call, m cannot
 * take part in x's slot until y completes: an edge thread(x) -> thread(y). Under synchronous
 * semantics m has then not even issued the slot; under asynchronous ones (a GPU stream) it may
 * have, queued behind y. Every thread of a cycle waits on the next one forever (AND model: a
 * thread blocked in a group waits on all its calls), which is a deadlock. */
#ifndef NCG_WAITFOR_H
#define NCG_WAITFOR_H

#include <stddef.h>
#include <stdint.h>

/* One call a thread is blocked in. */
struct ncg_wf_wait {
    uint32_t proc; /* the process (any stable id: the coordinator's connection) */
    uint32_t tid;  /* the blocked thread */
    uint32_t comm; /* index into the comms array */
    uint32_t rank; /* the blocked thread's comm rank in that comm */
    uint8_t p2p;   /* 0: collective at slot seq; 1: send/recv with comm rank peer */
    uint64_t seq;
    int32_t peer;
    /* p2p: NCG_WF_SEND or NCG_WF_RECV (0: unknown, any p2p with peer counts as its other half).
     * The other half of the k-th send from a to b is b's k-th recv from a: a receive against a
     * receive (or a send against a send) is no pair, and waits like any other call. */
    uint8_t dir;
};
#define NCG_WF_SEND 1u
#define NCG_WF_RECV 2u

/* What is known of member m of a communicator. */
struct ncg_wf_member {
    uint8_t known; /* 0: never reported (no edge is ever drawn to it) */
    uint32_t proc; /* its process */
    uint32_t tid;  /* the thread driving the comm there */
    uint64_t done; /* collective slots it has completed on the comm */
};

struct ncg_wf_comm {
    uint32_t nranks;
    const struct ncg_wf_member *m; /* [nranks] */
};

/* One step of a cycle: wait w[wait] waits for comm rank `target` of its comm, whose driver
 * thread is blocked in wait w[next] (the next step's wait). */
struct ncg_wf_step {
    size_t wait;
    uint32_t target;
};

/* Finds one cycle in the graph of the nw waits. Writes up to cap steps (in order; the last
 * step's thread waits on the first's) and returns the cycle's length, 0 when there is none,
 * or -1 when out of memory. Pure; any thread; allocates temporary arrays. */
long ncg_wf_find_cycle(const struct ncg_wf_wait *w, size_t nw, const struct ncg_wf_comm *comms,
                       size_t ncomms, struct ncg_wf_step *steps, size_t cap);

/* ---- DEADLOCK under asynchronous NCCL: the order of calls on streams ----
 * An asynchronous call returns once enqueued, so no thread blocks in it; what orders calls is
 * the stream. On each process, the calls one thread enqueued on one stream run in that order,
 * and an NCCL call on a stream does not finish before every member of its communicator runs
 * it. So "x before y on a stream of some member" means y cannot complete before x: an edge
 * x -> y between calls (a call is one node for all its members: the same slot of a comm, the
 * same k-th send/recv of a pair). A cycle is a deadlock whatever the timing: none of its calls
 * can ever complete. The input is each process's first calls not known complete; a call that
 * already completed can never be part of a cycle, so a sampled (late) completion adds nothing
 * false. Calls of one group share a launch and run together: no edge between them. */
#define NCG_SD_ORDER_MASK 0xffffffu /* launch orders wrap at 24 bits */
struct ncg_sd_call {
    uint32_t proc;  /* the process */
    uint32_t tid;   /* the thread that enqueued it */
    uint8_t stream; /* the process's stream index (0: unknown, orders nothing) */
    uint32_t order; /* the thread's launch order (wrapping; equal: one group) */
    uint32_t comm;  /* the communicator (any index equal on every member) */
    uint8_t p2p;    /* 0: collective slot seq; 1: the seq-th send src -> dst */
    uint64_t seq;
    uint32_t src, dst; /* p2p: sending and receiving comm ranks (0 for collectives) */
    uint32_t rank;     /* the comm rank that reported it (p2p: src or dst; host waits need it) */
};

/* One step of a cycle. host SIZE_MAX: c[before] precedes c[after] on one stream of one thread.
 * Else through a host thread: member `rank` of c[before]'s comm has not issued that call yet,
 * and the thread driving the comm there is hosts[host], waiting for its stream, where c[after]
 * has not completed. Either way c[after] is the same call (on another member) as the next
 * step's c[before]. */
struct ncg_sd_step {
    size_t before, after;
    size_t host;
    uint32_t rank;
};

/* Finds one cycle among the n calls. Writes up to cap steps and returns the cycle's length, 0
 * when there is none, -1 when out of memory. Pure; one thread at a time (qsort's context is
 * static); allocates temporary arrays. */
long ncg_sd_find_cycle(const struct ncg_sd_call *c, size_t n, struct ncg_sd_step *steps,
                       size_t cap);

/* Host threads waiting for their streams (WAIT v14: a synchronization or a polling loop): such
 * a thread issues nothing until the calls it waits for complete. So a call that a member has
 * not issued yet, when the thread driving that comm there is such a host, waits for every call
 * that host waits for: edges call -> host -> calls, beside the streams' ones. Under asynchronous
 * NCCL this closes the cycles that run through a host (rank 0 enqueues AllReduce then Send to
 * rank 1; rank 1 enqueues Recv from 0 and synchronizes before its AllReduce). */
#define NCG_SD_ALL_STREAMS 255u
struct ncg_sd_host {
    uint32_t proc, tid;
    uint8_t stream;   /* the stream index it waits for, NCG_SD_ALL_STREAMS: every one */
    uint32_t rec_tid; /* 0: every call on it; else only the calls rec_tid launched up to order */
    uint32_t order;
};
/* What is known of a member of a call's comm (comms[] indexed like ncg_sd_call.comm). */
struct ncg_sd_member {
    uint8_t known;
    uint32_t proc, tid; /* its process, the thread driving the comm there */
    uint64_t count;     /* collective slots it issued */
};
struct ncg_sd_comm {
    uint32_t nranks;
    const struct ncg_sd_member *m;
    /* 1 when the side of the seq-th send/recv src -> dst that comm rank `missing` issues is
     * known not to have been issued (the checker holds the other side's record unmatched);
     * NULL: never known, so no send/recv waits for a host */
    int (*p2p_open)(const void *arg, uint32_t src, uint32_t dst, uint64_t seq, uint32_t missing);
    const void *arg;
};
/* ncg_sd_find_cycle with nh host waits and the members of ncomms comms. A member has not
 * issued a collective when its count is at most the slot, a send/recv when none of the calls
 * given is its side of the pair and p2p_open says so (a completed side is no call given
 * either: absence alone proves nothing). Same contract. */
long ncg_sd_find_cycle_hosts(const struct ncg_sd_call *c, size_t n, const struct ncg_sd_host *h,
                             size_t nh, const struct ncg_sd_comm *comms, size_t ncomms,
                             struct ncg_sd_step *steps, size_t cap);

#endif
