/* Per-rank figures of a communicator without a per-rank array on the wire: "figure runs",
 * maximal runs of consecutive comm ranks with equal issued count, completed count and state
 * whose global ranks form an arithmetic progression. Built from arrays or from pieces (a
 * relay's clients, its children's answers), merged, bounded (past the bound adjacent runs are
 * coarsened into one with a count RANGE, flagged: never silently wrong), and coded. Ranks that
 * no run covers are unknown. Pure: no I/O, no threads (tests/checker/figruns_test.c). */
#ifndef NCG_FIGRUNS_H
#define NCG_FIGRUNS_H

#include <stddef.h>
#include <stdint.h>

#define NCG_FIG_MAX_RUNS 512u       /* runs per RFIGA frame (a subtree's answer) */
#define NCG_FIG_VERDICT_RUNS 16384u /* runs per verdict payload (about 40 B each, within 1 MiB) */

/* Bytes a relay frame may take on a peer's channel (net/channel.c reserves 16 KiB for each
 * relay frame but RANSWER): an RFIGA's runs, and an RVERDICT's, are fitted to it. */
#define NCG_FIG_FRAME_BYTES 16384u

enum ncg_fig_state { NCG_FIG_UNKNOWN = 0, NCG_FIG_ACTIVE = 1, NCG_FIG_GONE = 2, NCG_FIG_DEAD = 3 };
#define NCG_FIG_COARSE 1u  /* merged past the bound: count..count_hi bound each rank's count */
#define NCG_FIG_PARTIAL 2u /* coarse over a gap: some of its ranks' figures are unknown */

struct ncg_figrun {
    uint32_t lo, n;   /* comm ranks lo..lo+n-1 (n >= 1) */
    int64_t count;    /* collective calls issued (coarse: the least), -1 unknown */
    int64_t count_hi; /* = count when exact; coarse: the most */
    int64_t done;     /* completed (coarse: the least), -1 unknown */
    int32_t glo;      /* global rank of comm rank lo, -1 unknown */
    int32_t gstride;  /* comm rank lo+i has global rank glo + i*gstride */
    uint8_t state;    /* enum ncg_fig_state (coarse, mixed: NCG_FIG_UNKNOWN) */
    uint8_t flags;    /* NCG_FIG_* */
};

/* A growable set of runs (r owned, malloc). Zero-initialised is empty. */
struct ncg_figset {
    struct ncg_figrun *r;
    uint32_t n, cap;
};

/* All below: any thread; pure. Those that may grow a set allocate and return 0 / -ENOMEM. */
void ncg_figset_free(struct ncg_figset *s);
/* Appends a run, coalescing it into the last one when adjacent and equal. */
int ncg_figset_add(struct ncg_figset *s, const struct ncg_figrun *x);
/* One rank's figures as a run (count -1 unknown, grank -1 unknown). */
int ncg_figset_add_rank(struct ncg_figset *s, uint32_t rank, int64_t count, int64_t done,
                        int32_t grank, uint8_t state);
/* Appends every run of src (then normalize). */
int ncg_figset_append(struct ncg_figset *s, const struct ncg_figrun *src, uint32_t n);
/* Sorted by first rank, overlaps trimmed (at equal first rank a known state wins, else the
 * earlier run), adjacent equal runs coalesced. No allocation (sorts in place). */
void ncg_figset_normalize(struct ncg_figset *s);
/* Keeps only ranks lo..hi (runs cut at the edges). No allocation. */
void ncg_figset_clip(struct ncg_figset *s, uint32_t lo, uint32_t hi);
/* Normalized s at most max runs (max >= 1): adjacent runs merge, the closest counts first,
 * into NCG_FIG_COARSE runs whose range holds each rank's count. No allocation. */
void ncg_figset_coarsen(struct ncg_figset *s, uint32_t max);
/* Bytes ncg_figruns_put writes for these runs. No allocation. */
size_t ncg_figruns_size(const struct ncg_figrun *r, uint32_t n);
/* Normalized s coarsened to at most max runs and, halving that bound as needed, to an encoding
 * of at most bytes (at least one run always fits: bytes >= 64). No allocation. */
void ncg_figset_fit(struct ncg_figset *s, uint32_t max, size_t bytes);
/* Runs from per-rank arrays (counts -1 / members -1: unknown; a rank with both unknown is
 * left out); s is emptied first. members may be NULL. */
int ncg_figset_from_arrays(struct ncg_figset *s, const int64_t *counts, const int32_t *members,
                           uint32_t nranks);
/* Fills counts/members[nranks] (either may be NULL) from runs: exact runs give each rank its
 * count, coarse ones -1; ranks no run covers -1. No allocation. Returns 1 if a run is coarse. */
int ncg_figruns_to_arrays(const struct ncg_figrun *r, uint32_t n, int64_t *counts, int32_t *members,
                          uint32_t nranks);
/* Global rank of comm rank lo + i of run x, -1 unknown. */
int32_t ncg_figrun_grank(const struct ncg_figrun *x, uint32_t i);
/* The counts as text, grouped like ncg_counts_compact: "101 on 0-14; 100 on 15", a coarse run
 * "1230-1235 on 0-4095", unknown ranks "? on 16-31" (nranks: the comm's size). Returns buf. */
char *ncg_figruns_counts_text(const struct ncg_figrun *r, uint32_t n, uint32_t nranks, char *buf,
                              size_t cap);

struct ncg_wbuf;
struct ncg_rbuf;
/* Encodes n runs (LEB128 fields, a count first). Decodes at most max runs, each within nranks
 * ranks, sorted and disjoint, into s (emptied first); -1 on a bad encoding (r->err set) or
 * -ENOMEM. */
void ncg_figruns_put(struct ncg_wbuf *w, const struct ncg_figrun *r, uint32_t n);
int ncg_figruns_get(struct ncg_rbuf *rb, struct ncg_figset *s, uint32_t max, uint32_t nranks);

#endif
