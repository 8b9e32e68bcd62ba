/* One-sided signals in the checker (sigmatch.h). */
#include "sigmatch.h"

void ncg_sig_wait_span(const struct ncg_p2p_rec *r, uint64_t *lo, uint64_t *hi)
{
    *lo = *hi = 0;
    if (r->func != NCG_F_RECV || !ncg_sig_is(r->seq) || r->count < 2)
        return;
    uint64_t k = ncg_sig_k(r->seq), n = r->count - 1;
    if (n > k)
        n = k; /* the channel's first signals */
    if (n > NCG_SIG_DROP_MAX)
        n = NCG_SIG_DROP_MAX;
    *hi = r->seq;
    *lo = r->seq - n; /* same channel: k - n >= 0, no borrow from the channel bits */
}
