/* Verdicts as plain data, and the pure logic around them: comparing calls, grouping the
 * members' calls at a slot into distinct calls, compact rank lists ("0-2,4-15"), and the
 * one-line summary. No I/O, no threads: unit-tested directly (tests/checker/t_unit.sh). */
#ifndef NCG_VERDICT_H
#define NCG_VERDICT_H

#include <stddef.h>
#include <stdint.h>
#include "figruns.h"
#include "wire.h"

/* Verdict codes: also the segment header's verdict_kind and the report's "verdict". */
enum ncg_verdict_kind {
    NCG_V_NONE = 0,
    NCG_V_MISMATCH = 1,
    NCG_V_P2P_MISMATCH = 2,
    NCG_V_RANK_DIED = 3,
    NCG_V_RANK_EXITED = 4,
    NCG_V_LAG = 5,
    NCG_V_STUCK = 6,        /* every member issued slot k identically, it completes nowhere */
    NCG_V_DEADLOCK = 7,     /* a cycle of ranks waiting on each other across communicators */
    NCG_V_CHECKER_LOST = 8, /* local only: a standalone checker unreachable, comms stalled */
    NCG_V_SLOW = 9,         /* a straggler: the rank the others wait for (always a warning) */
    NCG_V_KIND_MAX_
};

enum ncg_severity { NCG_SEV_WARN = 0, NCG_SEV_ERROR = 1 };

struct ncg_vcall {
    struct ncg_call call;
    char ranks[NCG_WIRE_STR]; /* compact comm ranks that issued it */
    char site[NCG_WIRE_SITE]; /* one issuing rank's symbolized call site, or "" */
};

/* SLOW's figures as data (a straggler, kind NCG_V_SLOW only; zeroed for other kinds): what
 * ncg_v_slow (judge/verdicts.c) renders its words from, and what the report, the segment slot
 * and the dump read. On the wire with SLOW verdicts only (v11). */
#define NCG_VSLOW_HOST 64u /* bound of the host name, NUL included */
struct ncg_vslow {
    int32_t rank;        /* comm rank the others wait for, < nranks (the comm's size) */
    int32_t global_rank; /* -1 unknown */
    uint32_t pid;        /* 0 unknown */
    uint8_t device;      /* 1: late on its GPU (its stream starts the collective late), 0: host */
    double share;        /* of the step the others lose waiting for it, 0..1 */
    double since_s;      /* how long it had held them up when the checker warned, >= 0 */
    uint8_t ended;       /* 1: the episode is over, rank no longer holds the others up (v12;
                            since_s: how long it lasted): not printed, it clears the members'
                            status; ncg_v_slow_end */
    char host[NCG_VSLOW_HOST]; /* "" unknown */
};

struct ncg_verdict {
    uint8_t kind;     /* enum ncg_verdict_kind */
    uint8_t severity; /* enum ncg_severity: WARN => print only, whatever NCCLGUARD_ACTION says */
    uint64_t comm_id;
    uint32_t nranks;
    int64_t slot;        /* -1 when not applicable */
    int64_t last_agreed; /* highest slot proven equal everywhere, -1 when none */
    uint32_t ncalls;
    struct ncg_vcall calls[NCG_WIRE_MAX_CALLS];
    char subject[NCG_WIRE_STR]; /* compact comm ranks the verdict is about */
    char detail[NCG_WIRE_STR];
    int64_t *counts;  /* [nranks]: collective calls issued per comm rank, -1 unknown */
    int32_t *members; /* [nranks]: global rank of each comm rank, -1 unknown */
    uint32_t narr;    /* how many entries counts and members hold (a struct copy whose nranks is
                         changed keeps it: readers index below it only) */
    char *notes;      /* NULL or up to NCG_WIRE_NOTES-1 chars of extra lines ('\n'-separated,
                         STUCK / DEADLOCK: the members' states, the cycle); owned (malloc) */
    /* The per-rank figures as runs (figruns.h), owned (malloc), NULL when none: the relay
     * tree's verdicts (nranks 0: no arrays, the root's gather filled these), and a decoded
     * verdict whose runs were coarsened (its arrays then say -1 where only a range is known) */
    struct ncg_figrun *figs;
    uint32_t nfigs;
    struct ncg_vslow slow; /* kind NCG_V_SLOW: its figures (subject and detail are their words) */
};

/* Whether v counts among the job's verdicts and warnings (/metrics, /status, the event log's
 * "warning:" lines) and is printed: all but the end of a SLOW episode (ncg_v_slow_end). Pure. */
static inline int ncg_v_counted(const struct ncg_verdict *v)
{
    return !(v->kind == NCG_V_SLOW && v->slow.ended);
}

/* Sets v->notes to a copy of text (truncated to the bound). 0 or -ENOMEM. Allocates. */
int ncg_verdict_set_notes(struct ncg_verdict *v, const char *text);

/* Allocates a zeroed verdict with counts/members arrays for nranks (counts and members set to
 * -1). Returns NULL when out of memory or nranks > NCG_WIRE_MAX_RANKS. Any thread; allocates. */
struct ncg_verdict *ncg_verdict_new(uint32_t nranks);
void ncg_verdict_free(struct ncg_verdict *v);
/* A copy of v's fields (SLOW's figures too), notes and runs with nranks per-rank slots of its own
 * (nranks > 0 and v has runs: the arrays filled from them; else unknown: counts -1, members -1, as
 * ncg_verdict_new leaves them); NULL when out of memory. Allocates. */
struct ncg_verdict *ncg_verdict_copy(const struct ncg_verdict *v, uint32_t nranks);

/* Names for printing and for the report. Pure, never NULL. */
const char *ncg_verdict_name(unsigned kind);  /* "MISMATCH", "P2P MISMATCH", ... */
const char *ncg_verdict_key(unsigned kind);   /* "MISMATCH", "P2P_MISMATCH", ... (JSON) */
const char *ncg_v_func_name(unsigned func);   /* "AllReduce", ... "?" */
const char *ncg_v_dtype_name(unsigned dtype); /* "float32", ... "?" */
const char *ncg_v_redop_name(unsigned redop); /* "sum", ..., "user", "" for none */

/* 1 when two calls would match in NCCL: same function, count, datatype, op class, root/peer.
 * Pure; any thread; no allocation. */
int ncg_call_same(const struct ncg_call *a, const struct ncg_call *b);

/* "AllReduce(count=1, float32, sum)", "Broadcast(count=8, int8, root=0)". Returns buf.
 * Pure; any thread; no allocation. */
char *ncg_call_format(const struct ncg_call *c, char *buf, size_t cap);

/* Appends printf output to the NUL-terminated text in b (cap bytes in all), truncating.
 * Pure; any thread; no allocation. */
void ncg_addf(char *b, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Writes the sorted, deduplicated ranks in compact form ("0-2,4-15"); ends with ",..." when
 * it does not fit. ranks is reordered (sorted in place). Returns buf. Pure, no allocation. */
char *ncg_ranks_compact(int32_t *ranks, size_t n, char *buf, size_t cap);

/* One group of equal counts: the ranks j >= i not marked in done whose count is counts[i],
 * written to idx and marked; returns how many (0 when i is marked already). Pure, no
 * allocation. */
uint32_t ncg_counts_take(const int64_t *counts, uint32_t n, uint32_t i, uint8_t *done,
                         int32_t *idx);

/* Walks a compact rank list ("0-2,4-15", possibly cut short: ending ",..."): the number of
 * ranks it names (out[0..cap) filled with the first of them, ascending as written), or -1 when
 * list is not one (text such as "holding the checker"). *cut (may be NULL): it ended ",...".
 * Pure; no allocation. */
long ncg_ranks_walk(const char *list, int32_t *out, size_t cap, int *cut);

/* 1 when comm rank r is in the compact list (0 for text). Pure; no allocation. */
int ncg_ranks_has(const char *list, int32_t r);

/* The global (launcher) rank of v's comm rank r, from v->members or else v->figs, -1 unknown.
 * Pure; no allocation. */
int32_t ncg_verdict_grank(const struct ncg_verdict *v, uint32_t r);

/* The one way a headline names a set of v's comm ranks, given as a compact list: "rank 3",
 * "ranks 0-2,4-15" when each named rank's global rank is its comm rank (or none is known); else
 * the global ranks with the comm ranks beside them, "global rank 2 (comm rank 1)", "global ranks
 * 5,7,? (comm ranks 0-2)" ("?": one whose global rank is unknown). Text that is no rank list
 * reads "rank <text>". Returns buf. Pure; allocates a temporary array (without it: the comm
 * ranks alone). */
char *ncg_ranks_named(const struct ncg_verdict *v, const char *list, char *buf, size_t cap);

/* Per-rank counts grouped: "1235 on 0-2,4-15; 1234 on 3" (-1 printed as "?"). Allocates a
 * temporary index array; returns buf. */
char *ncg_counts_compact(const int64_t *counts, uint32_t n, char *buf, size_t cap);

/* Groups n members' calls (valid[i] == 0: no call known for rank i) into v->calls, largest
 * group first, and sets v->subject to the ranks outside the largest group. sites[i] may be
 * NULL. Returns the number of distinct calls. Allocates a temporary array. */
uint32_t ncg_group_calls(struct ncg_verdict *v, const struct ncg_call *calls, const uint8_t *valid,
                         const char *const *sites, uint32_t n);

/* The one-line summary (no "ncclguard:" prefix), e.g. "MISMATCH on comm 0123..: slot 1234:
 * AllReduce(...) on rank 3 vs ReduceScatter(...) on ranks 0-2,4-15"; every rank set in it is
 * named by ncg_ranks_named. Returns buf. Pure; any thread; allocates temporary arrays. */
char *ncg_verdict_summary(const struct ncg_verdict *v, char *buf, size_t cap);

/* STUCK's words: with v->subject (the
 * ranks that have not completed slot k) set, writes v->detail (none_done: no rank completed it;
 * khi > k: completion sampled, the stalled slot in k..khi; idle seconds) and the first lines of
 * the notes into notes (cap bytes, NUL-terminated; the caller appends its own). Pure. */
void ncg_stuck_words(struct ncg_verdict *v, uint64_t k, uint64_t khi, double idle, int none_done,
                     int plural, char *notes, size_t cap);

/* Sets v->figs to a copy of n runs (n 0: none). 0 or -ENOMEM. Allocates. */
int ncg_verdict_set_figs(struct ncg_verdict *v, const struct ncg_figrun *r, uint32_t n);
/* 1 when v's runs hold a coarsened run (counts known only as ranges). Pure. */
int ncg_verdict_coarse(const struct ncg_verdict *v);

/* Verdict codec helpers used by wire.c: an upper bound of the payload size, and encode/decode
 * of the payload (-ENOSPC / -ENOMEM / NULL on error). The per-rank figures go as runs
 * (figruns.h; v9): arrays are encoded as runs (coarsened past NCG_FIG_VERDICT_RUNS), decoded
 * back into arrays (keeping the runs when coarsened); a verdict without arrays (nranks 0)
 * carries its runs as they are. A SLOW verdict ends with its figures (v11), which decoding
 * checks (rank below nranks, or NCG_WIRE_MAX_RANKS without arrays; share in [0,1]; since_s
 * finite, >= 0; host bounded, no NUL inside) and encoding refuses (-EINVAL) when out of bounds.
 * Any thread; both allocate. */
size_t ncg_verdict_wire_size(const struct ncg_verdict *v);
long ncg_verdict_encode(const struct ncg_verdict *v, uint8_t *p, size_t cap);
struct ncg_verdict *ncg_verdict_decode(const uint8_t *p, size_t len);

/* 1 when s holds figures a SLOW verdict of a comm of nranks ranks may carry (nranks 0: the
 * relay tree's, no arrays: below NCG_WIRE_MAX_RANKS). Pure. */
int ncg_vslow_ok(const struct ncg_vslow *s, uint32_t nranks);

/* RANK EXITED: a detail that starts with one of these names how the rank left, and the
 * headline says so instead of "exited". */
#define NCG_EXITED_ABORT "called ncclCommAbort"
#define NCG_EXITED_VERDICT                                                                         \
    "was ended by ncclguard's abort (an error verdict on another communicator)"

#endif
