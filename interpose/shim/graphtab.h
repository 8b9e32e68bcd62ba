/* CUDA graphs' NCCL calls as plain data (issue 16): the calls a stream capture recorded, in
 * capture order (ncg_glist, immutable once the capture ended, shared by reference between a graph
 * and the executables instantiated from it), and an open-addressing map from a pointer-sized key
 * (a capture id, a cudaGraph_t, a cudaGraphExec_t) to a list. No locks, no CUDA: graph.c owns the
 * locking and the runtime. */
#ifndef NCG_GRAPHTAB_H
#define NCG_GRAPHTAB_H

#include <stddef.h>
#include <stdint.h>

/* One captured NCCL call: what ncg_record_coll / ncg_record_p2p need to replay it. */
struct ncg_gcall {
    void *comm;           /* the ncclComm_t it was issued on */
    void *pc;             /* its call site at capture (the diagnostic's "from") */
    uint64_t count;       /* elements */
    int32_t root_or_peer; /* root (rooted collectives), peer (send/recv), -1 otherwise */
    int32_t op;           /* ncclRedOp_t (collectives), NCG_NO_OP otherwise */
    uint32_t func;        /* enum ncg_func */
    int32_t dtype;        /* ncclDataType_t */
    uint8_t p2p;          /* 1: ncclSend / ncclRecv */
    uint8_t in_group;     /* issued between ncclGroupStart/End during the capture */
};

/* Reference-counted list; refs and n change only through the functions below. */
struct ncg_glist {
    uint32_t refs;
    uint32_t n, cap;
    struct ncg_gcall call[];
};

/* Append c to *l (a list with one reference, or NULL for a new one; it may move). Any thread (the
 * caller serializes use of *l); allocates. 0, or -ENOMEM with *l unchanged. */
int ncg_glist_append(struct ncg_glist **l, const struct ncg_gcall *c);
/* A new list (one reference) holding a's calls then b's (either may be NULL). Allocates.
 * NULL when both are empty, or on allocation failure (*oom set to 1). */
struct ncg_glist *ncg_glist_concat(const struct ncg_glist *a, const struct ncg_glist *b, int *oom);
/* Take / drop a reference (atomic; any thread). unref frees the list with its last reference.
 * Both accept NULL. */
struct ncg_glist *ncg_glist_ref(struct ncg_glist *l);
void ncg_glist_unref(struct ncg_glist *l);

/* Key -> list map (linear probing, tombstones). Key 0 is never stored. Not thread-safe. */
struct ncg_pmap {
    uintptr_t *keys; /* 0 empty, NCG_PMAP_TOMB deleted */
    struct ncg_glist **vals;
    uint32_t cap;  /* a power of two, or 0 before the first put */
    uint32_t n;    /* live entries */
    uint32_t used; /* live + tombstones */
};
#define NCG_PMAP_TOMB ((uintptr_t)1)

/* The list stored under key, or NULL. No allocation. */
struct ncg_glist *ncg_pmap_get(const struct ncg_pmap *m, uintptr_t key);
/* Store v under key (the map takes over v's reference); the previous value, if any, is
 * returned in *old (its reference handed back to the caller). Allocates when it grows.
 * 0, -EINVAL (key 0 or 1), or -ENOMEM (nothing changed). */
int ncg_pmap_put(struct ncg_pmap *m, uintptr_t key, struct ncg_glist *v, struct ncg_glist **old);
/* Where key's value is stored (to update it in place), or NULL when absent. No allocation. */
struct ncg_glist **ncg_pmap_slot(struct ncg_pmap *m, uintptr_t key);
/* Remove key; returns its value (with the map's reference), or NULL. No allocation. */
struct ncg_glist *ncg_pmap_del(struct ncg_pmap *m, uintptr_t key);
/* Free the map's arrays (the values' references are the caller's to drop first). */
void ncg_pmap_free(struct ncg_pmap *m);

#endif
