/* The process-wide stream table (streamtab.h): open addressing on the handle, indices handed
 * out in order of first sight (1, 2, ...: what a diagnostic shows as "stream N"). */
#include "streamtab.h"

#include <ck_pr.h>

#include "completion.h"

/* Stream handles + 1 (NULL: free slot) and their indices. A handle is never removed: a
 * destroyed stream's index is reused only by a stream at the same address, whose calls come
 * after the old one's. */
static void *g_keys[NCG_STREAMS];
static uint32_t g_index[NCG_STREAMS];
static uint32_t g_next;

uint8_t ncg_stream_index_slow(void *stream)
{
    void *key = (void *)((uintptr_t)stream + 1);
    uint32_t h = (uint32_t)(((uintptr_t)key * 0x9e3779b97f4a7c15ull) >> 56);
    for (uint32_t n = 0; n < NCG_STREAMS; n++) {
        uint32_t i = (h + n) % NCG_STREAMS;
        void *cur = ck_pr_load_ptr(&g_keys[i]);
        if (!cur && ck_pr_cas_ptr(&g_keys[i], NULL, key)) {
            uint32_t x = ck_pr_faa_32(&g_next, 1) + 1; /* at most NCG_STREAMS keys: <= 256 */
            ck_pr_store_32(&g_index[i], x < NCG_STREAMS ? x : 0);
            return (uint8_t)(x < NCG_STREAMS ? x : 0);
        }
        if (ck_pr_load_ptr(&g_keys[i]) != key)
            continue;
        /* The inserting thread stores the index right after its compare-and-swap. */
        uint32_t x;
        while (!(x = ck_pr_load_32(&g_index[i])) && ck_pr_load_32(&g_next) < NCG_STREAMS)
            ck_pr_stall();
        return (uint8_t)x;
    }
    return 0; /* full: unknown */
}

uint8_t ncg_stream_index_special(void *stream)
{
    /* Real stream handles are heap addresses: these keys, below 4096, never collide. */
    uintptr_t dev = (uintptr_t)ncg_cuda_device_now() & 1023u;
    return ncg_stream_index_slow((void *)(dev * 3 + (uintptr_t)stream + 3));
}
