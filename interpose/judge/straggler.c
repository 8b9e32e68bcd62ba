/* Stragglers (straggler.h): per sampled slot the ranks' durations merged as min / argmin / sum /
 * count, and per communicator the window rule: a rank is named when it is the minimum of at
 * least `dominance` of the window's slots AND the others lose at least `share_min` of the step
 * to it (one slot that holds more loss than all the others is a stall and left out of that
 * share), and that has held at every slot fed for `hold_ns` (a window of fast calls spans a
 * fraction of a second: one descheduled process is not a straggler); the episode ends when the
 * rule has not held for it for a whole window. */
#include "straggler.h"

#include <string.h>

void ncg_sg_slot_init(struct ncg_sg_slot *a, uint64_t slot)
{
    memset(a, 0, sizeof *a);
    a->slot = slot;
    a->argmin = -1;
}

void ncg_sg_slot_add(struct ncg_sg_slot *a, int32_t rank, uint64_t dur_ns, uint64_t step_ns,
                     uint8_t side)
{
    struct ncg_sg_slot b;
    ncg_sg_slot_init(&b, a->slot);
    b.n = 1;
    b.argmin = rank;
    b.side = side;
    b.min_ns = b.sum_ns = dur_ns;
    b.step_ns = step_ns;
    ncg_sg_slot_merge(a, &b);
}

int ncg_sg_slot_merge(struct ncg_sg_slot *a, const struct ncg_sg_slot *b)
{
    int took = 0;
    if (!b->n)
        return 0;
    if (!a->n || b->min_ns < a->min_ns) {
        a->min_ns = b->min_ns;
        a->argmin = b->argmin;
        a->side = b->side;
        took = 1;
    } else if (b->min_ns == a->min_ns) {
        a->argmin = -1; /* a tie names nobody */
    }
    a->n += b->n;
    a->sum_ns += b->sum_ns;
    a->step_ns += b->step_ns;
    return took;
}

void ncg_sg_init(struct ncg_sg *s, const struct ncg_sg_cfg *cfg)
{
    static const struct ncg_sg_cfg def = NCG_SG_CFG_DEFAULT;
    memset(s, 0, sizeof *s);
    s->cfg = cfg ? *cfg : def;
    if (s->cfg.window < 1)
        s->cfg.window = 1;
    if (s->cfg.window > NCG_SG_WIN_MAX)
        s->cfg.window = NCG_SG_WIN_MAX;
    if (!(s->cfg.dominance > 0.5)) /* a majority at least: one rank per window */
        s->cfg.dominance = 0.5;
    if (s->cfg.dominance > 1)
        s->cfg.dominance = 1;
    if (!(s->cfg.share_min >= 0))
        s->cfg.share_min = 0;
    s->named = s->ended = s->cand = -1;
}

/* The window's entry i feeds back (0: the newest). */
static struct ncg_sg_ent *back(const struct ncg_sg *s, uint32_t i)
{
    return (struct ncg_sg_ent *)&s->win[(s->head + NCG_SG_WIN_MAX - 1 - i) % NCG_SG_WIN_MAX];
}

/* The rank the window's rule names now, with its share and side, or -1. */
static int32_t decide(const struct ncg_sg *s, double *share, uint8_t *side, uint64_t *since)
{
    uint32_t w = s->cfg.window;
    if (s->n < w)
        return -1;
    /* the most frequent minimum (Boyer-Moore majority vote, then counted: dominance > 0.5) */
    int32_t cand = -1;
    uint32_t votes = 0;
    for (uint32_t i = 0; i < w; i++) {
        const struct ncg_sg_ent *e = back(s, i);
        if (votes == 0) {
            cand = e->who;
            votes = 1;
        } else {
            votes += e->who == cand ? 1 : (uint32_t)-1;
        }
    }
    if (cand < 0)
        return -1;
    /* A stall, not a tax: one slot whose loss exceeds all the others' together (the whole job
     * paused while some ranks were inside it: SIGSTOP, a paused VM; or one hiccup) counts in
     * neither the loss nor the step, or it alone would make any rank that is the minimum by a
     * hair the straggler for a window. */
    uint64_t all = 0, top = 0;
    uint32_t topi = w;
    for (uint32_t i = 0; i < w; i++) {
        const struct ncg_sg_ent *e = back(s, i);
        all += e->loss_ns;
        if (e->loss_ns > top) {
            top = e->loss_ns;
            topi = i;
        }
    }
    if (w < 4 || top <= all - top)
        topi = w; /* none stands out (or too few to tell) */
    uint32_t count = 0, dev = 0;
    uint64_t loss = 0, step = 0, first = 0;
    for (uint32_t i = 0; i < w; i++) {
        const struct ncg_sg_ent *e = back(s, i);
        if (i != topi)
            step += e->step_ns;
        if (e->who != cand)
            continue;
        count++;
        dev += e->side == NCG_SG_DEVICE;
        loss += i != topi ? e->loss_ns : 0;
        first = e->t_ns; /* walking back: ends at the oldest */
    }
    if ((double)count < s->cfg.dominance * w || !step)
        return -1;
    *share = (double)loss / (double)step;
    if (*share < s->cfg.share_min)
        return -1;
    *side = 2 * dev > count ? NCG_SG_DEVICE : NCG_SG_HOST;
    *since = first;
    return cand;
}

enum ncg_sg_event ncg_sg_feed(struct ncg_sg *s, const struct ncg_sg_slot *a, uint64_t now_ns)
{
    if (a->n < 2 || (s->have_last && (int64_t)(a->slot - s->last_slot) <= 0))
        return NCG_SG_NONE;
    s->have_last = 1;
    s->last_slot = a->slot;
    uint64_t mean = a->sum_ns / a->n;
    struct ncg_sg_ent *e = &s->win[s->head];
    *e = (struct ncg_sg_ent){.slot = a->slot,
                             .who = a->argmin,
                             .side = a->side,
                             .loss_ns = mean > a->min_ns ? mean - a->min_ns : 0,
                             .step_ns = a->step_ns / a->n,
                             .t_ns = now_ns};
    s->head = (s->head + 1) % NCG_SG_WIN_MAX;
    if (s->n < NCG_SG_WIN_MAX)
        s->n++;
    double share = 0;
    uint8_t side = 0;
    uint64_t since = 0;
    int32_t who = decide(s, &share, &side, &since);
    if (who != s->cand) { /* a new run of decisions (or none): it holds from its oldest slot */
        s->cand = who;
        s->cand_ns = since;
    }
    if (who >= 0 && who != s->named && now_ns - s->cand_ns < s->cfg.hold_ns)
        who = -1; /* not held long enough to be named: for the named one, the rule fails */
    if (who < 0) {
        if (s->named >= 0 && ++s->quiet >= s->cfg.window) {
            s->quiet = 0;
            s->ended = s->named;
            s->named = -1;
            return NCG_SG_END;
        }
        return NCG_SG_NONE;
    }
    s->quiet = 0;
    s->share = share;
    if (who == s->named && side == s->side)
        return NCG_SG_NONE;
    enum ncg_sg_event ev = s->named >= 0 ? NCG_SG_CHANGE : NCG_SG_START;
    if (who != s->named)
        s->since_ns = s->cand_ns;
    s->named = who;
    s->side = side;
    return ev;
}

double ncg_sg_wait_share(const struct ncg_sg *s, int32_t rank)
{
    if (!s || !s->n)
        return -1;
    uint32_t w = s->n < s->cfg.window ? s->n : s->cfg.window;
    uint64_t loss = 0, step = 0;
    for (uint32_t i = 0; i < w; i++) {
        const struct ncg_sg_ent *e = &s->win[(s->head + NCG_SG_WIN_MAX - 1 - i) % NCG_SG_WIN_MAX];
        step += e->step_ns;
        if (e->who == rank)
            loss += e->loss_ns;
    }
    return step ? (double)loss / (double)step : -1;
}

enum ncg_sg_event ncg_sg_forget(struct ncg_sg *s, int32_t rank)
{
    for (uint32_t i = 0; i < s->n; i++) {
        struct ncg_sg_ent *e = back(s, i);
        if (e->who == rank)
            e->who = -1;
    }
    if (s->cand == rank)
        s->cand = -1;
    if (s->named != rank || rank < 0)
        return NCG_SG_NONE;
    s->quiet = 0;
    s->ended = rank;
    s->named = -1;
    return NCG_SG_END;
}

size_t ncg_sg_thin(const uint64_t *slots, size_t n, size_t max, size_t *idx)
{
    for (unsigned l = 0; l < 64; l++) {
        uint64_t m = (1ull << l) - 1;
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            k += (slots[i] & m) == 0;
        if (k > max)
            continue;
        k = 0;
        for (size_t i = 0; i < n; i++)
            if ((slots[i] & m) == 0)
                idx[k++] = i;
        return k;
    }
    return 0;
}

int ncg_sg_pend_take(struct ncg_sg_pend *p, uint64_t *last, const struct ncg_sg_slot *b,
                     const struct ncg_sg_who *who, uint64_t now_ns)
{
    if (*last && b->slot + 1 <= *last)
        return 0; /* not after its previous one */
    *last = b->slot + 1;
    if (!b->n)
        return 0;
    uint32_t i;
    for (i = 0; i < p->n && p->s[i].slot != b->slot; i++)
        ;
    if (i == p->n) {
        if (p->n == NCG_SG_PEND) /* the oldest goes: someone skipped it */
            ncg_sg_pend_pop(p, ncg_sg_pend_lowest(p), NULL, NULL);
        i = p->n++;
        ncg_sg_slot_init(&p->s[i], b->slot);
        p->who[i] = (struct ncg_sg_who){.grank = -1};
        p->t_ns[i] = now_ns;
    }
    if (ncg_sg_slot_merge(&p->s[i], b))
        p->who[i] = who ? *who : (struct ncg_sg_who){.grank = -1};
    return 1;
}

int ncg_sg_pend_lowest(const struct ncg_sg_pend *p)
{
    int lo = -1;
    for (uint32_t i = 0; i < p->n; i++)
        if (lo < 0 || (int64_t)(p->s[i].slot - p->s[lo].slot) < 0)
            lo = (int)i;
    return lo;
}

void ncg_sg_pend_pop(struct ncg_sg_pend *p, int i, struct ncg_sg_slot *out, struct ncg_sg_who *who)
{
    if (out)
        *out = p->s[i];
    if (who)
        *who = p->who[i];
    p->n--;
    p->s[i] = p->s[p->n];
    p->who[i] = p->who[p->n];
    p->t_ns[i] = p->t_ns[p->n];
}

enum ncg_sg_fate ncg_sg_fate(const struct ncg_sg_slot *a, uint32_t want, int passed)
{
    if (want >= 2 && a->n >= want)
        return NCG_SG_FEED;
    return passed ? NCG_SG_DROP : NCG_SG_HOLD;
}
