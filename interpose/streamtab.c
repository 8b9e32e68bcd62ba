/* The process-wide stream table (streamtab.h). */
#include "streamtab.h"

#include <ck_pr.h>

/* Stream handles + 1 (0: free). A handle is never removed: a destroyed stream's index is reused
 * only by a stream at the same address, whose calls come after the old one's. */
static void *g_streams[NCG_STREAMS];

uint8_t ncg_stream_index_slow(void *stream)
{
    uintptr_t key = (uintptr_t)stream + 1;
    uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 56);
    for (uint32_t n = 0; n < NCG_STREAMS - 1; n++) {
        uint32_t i = 1 + (h + n) % (NCG_STREAMS - 1); /* index 0 stays "unknown" */
        uintptr_t cur = (uintptr_t)ck_pr_load_ptr(&g_streams[i]);
        if (cur == key)
            return (uint8_t)i;
        if (!cur && ck_pr_cas_ptr(&g_streams[i], NULL, (void *)key))
            return (uint8_t)i;
        if ((uintptr_t)ck_pr_load_ptr(&g_streams[i]) == key)
            return (uint8_t)i; /* another thread took it for the same stream */
    }
    return 0;
}
