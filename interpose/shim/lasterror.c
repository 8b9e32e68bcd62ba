/* ncclGetLastError / ncclGetErrorString hooks (lasterror.h). Entries are written once by the
 * checker thread and published by a release store of their handle; the hooks (application
 * threads) read them with acquire loads. The composed string lives in one of a few rotating
 * static buffers: valid until that many further calls, as NCCL's own is until the next error. */
#include <stdio.h>
#include <string.h>
#include "lasterror.h"
#include "resolve.h"
#include "shim.h"

#define NCG_LE_MAX 16
#define NCG_LE_BUFS 8

static struct {
    ncclComm_t handle; /* published last */
    char line[640];
} E[NCG_LE_MAX];
static int nE;                 /* checker thread only */
static const char *first_line; /* the first verdict's line, for process-wide strings */
static char bufs[NCG_LE_BUFS][1024];
static unsigned next_buf;

void ncg_lasterror_set(ncclComm_t handle, const char *line)
{
    int i = nE < NCG_LE_MAX ? nE++ : NCG_LE_MAX - 1;
    if (i == NCG_LE_MAX - 1 && __atomic_load_n(&E[i].handle, __ATOMIC_ACQUIRE))
        return; /* full: the entry already published stays as it is */
    snprintf(E[i].line, sizeof E[i].line, "%s", line);
    /* The line before the handle: a reader that finds the handle reads the whole line. */
    __atomic_store_n(&E[i].handle, handle, __ATOMIC_RELEASE);
    const char *none = NULL;
    __atomic_compare_exchange_n(&first_line, &none, E[i].line, 0, __ATOMIC_RELEASE,
                                __ATOMIC_RELAXED);
}

static const char *line_for(ncclComm_t comm)
{
    if (!comm)
        return __atomic_load_n(&first_line, __ATOMIC_ACQUIRE);
    for (int i = 0; i < NCG_LE_MAX; i++) {
        ncclComm_t h = __atomic_load_n(&E[i].handle, __ATOMIC_ACQUIRE);
        if (!h)
            break;
        if (h == comm)
            return E[i].line;
    }
    return NULL;
}

static const char *compose(const char *line, const char *real, const char *sep)
{
    char *b = bufs[__atomic_fetch_add(&next_buf, 1, __ATOMIC_RELAXED) % NCG_LE_BUFS];
    if (real && *real)
        snprintf(b, sizeof bufs[0], "%s%s%s", line, sep, real);
    else
        snprintf(b, sizeof bufs[0], "%s", line);
    return b;
}

const char *ncg_hook_ncclGetLastError(ncclComm_t comm)
{
    const char *real = NCG_REAL(ncclGetLastError)(comm);
    const char *line = line_for(comm);
    return line ? compose(line, real, "; NCCL's last error: ") : real;
}

const char *ncg_hook_ncclGetErrorString(ncclResult_t result)
{
    const char *real = NCG_REAL(ncclGetErrorString)(result);
    const char *line = result == ncclRemoteError ? line_for(NULL) : NULL;
    if (!line)
        return real;
    char *b = bufs[__atomic_fetch_add(&next_buf, 1, __ATOMIC_RELAXED) % NCG_LE_BUFS];
    snprintf(b, sizeof bufs[0], "%s (%s)", real ? real : "remote error", line);
    return b;
}
