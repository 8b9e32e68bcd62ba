/* ncg_test: rank/world from the launcher's environment and the unique-id exchange through
 * $NCG_ID_FILE (see ncg_test.h). Plain files only: works across network namespaces. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ncg_test.h"

static int env_int(const char *name, int dflt)
{
    const char *s = getenv(name);
    return s && *s ? atoi(s) : dflt;
}

int ncg_test_rank(void)
{
    return env_int("RANK", 0);
}
int ncg_test_world(void)
{
    return env_int("NCG_TEST_WORLD", env_int("WORLD_SIZE", 1));
}

void ncg_test_fail(const char *what, ncclResult_t r, const char *file, int line)
{
    fprintf(stderr, "%s:%d: rank %d: %s failed: %d (%s)\n", file, line, ncg_test_rank(), what,
            (int)r, ncclGetErrorString(r));
    exit(1);
}

/* ---- streams (asynchronous mode) ---- */

static struct {
    int (*stream_create)(cudaStream_t *, unsigned int);
    int (*stream_sync)(cudaStream_t);
    const char *(*error_string)(int);
    int on;
} g_cuda;
static pthread_once_t g_cuda_once = PTHREAD_ONCE_INIT;
#define NCG_TEST_STREAMS 4
static __thread cudaStream_t t_stream[NCG_TEST_STREAMS];
static __thread int t_streams_made; /* t_stream[0..t_streams_made) exist */

/* name as a program linked with the runtime calls it: through the global scope, where a
 * preloaded interposer (libncclguard.so's host waits) comes first; else the runtime's own. */
static void *cuda_sym(void *h, const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    return p ? p : dlsym(h, name);
}

static void cuda_load(void)
{
    const char *a = getenv("FAKENCCL_ASYNC");
    if (!a || strcmp(a, "1") != 0)
        return;
    void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL);
    if (h) {
        g_cuda.stream_create =
            (int (*)(cudaStream_t *, unsigned int))cuda_sym(h, "cudaStreamCreateWithFlags");
        g_cuda.stream_sync = (int (*)(cudaStream_t))cuda_sym(h, "cudaStreamSynchronize");
        g_cuda.error_string = (const char *(*)(int))cuda_sym(h, "cudaGetErrorString");
    }
    if (!g_cuda.stream_create || !g_cuda.stream_sync || !g_cuda.error_string) {
        fprintf(stderr,
                "ncg_test: FAKENCCL_ASYNC=1 but libcudart.so.13 cannot be loaded (%s): "
                "synchronous\n",
                h ? "symbols missing" : dlerror());
        return;
    }
    g_cuda.on = 1;
}

int ncg_test_async(void)
{
    pthread_once(&g_cuda_once, cuda_load);
    return g_cuda.on;
}

cudaStream_t ncg_test_stream_n(int i)
{
    if (!ncg_test_async())
        return NULL;
    if (i < 0 || i >= NCG_TEST_STREAMS) {
        fprintf(stderr, "ncg_test: stream %d: at most %d\n", i, NCG_TEST_STREAMS);
        exit(1);
    }
    while (t_streams_made <= i) {
        int e = g_cuda.stream_create(&t_stream[t_streams_made], 0x01 /* cudaStreamNonBlocking */);
        if (e != 0) {
            fprintf(stderr, "ncg_test: rank %d: cudaStreamCreateWithFlags: %s\n", ncg_test_rank(),
                    g_cuda.error_string(e));
            exit(1);
        }
        t_streams_made++;
    }
    return t_stream[i];
}

cudaStream_t ncg_test_stream(void)
{
    return ncg_test_stream_n(0);
}

ncclResult_t ncg_test_sync(ncclComm_t comm)
{
    if (ncg_test_async()) {
        int e = 0;
        ncg_test_stream();
        for (int i = 0; i < t_streams_made && !e; i++)
            e = g_cuda.stream_sync(t_stream[i]);
        if (e != 0) {
            fprintf(stderr, "ncg_test: rank %d: cudaStreamSynchronize: %s\n", ncg_test_rank(),
                    g_cuda.error_string(e));
            return ncclUnhandledCudaError;
        }
    }
    ncclResult_t ae = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(comm, &ae);
    return r != ncclSuccess ? r : ae;
}

int ncg_test_share_id_named(ncclUniqueId *id, const char *suffix)
{
    const char *base = getenv("NCG_ID_FILE");
    char path[4096], tmp[4200];
    if (!base || !*base) {
        if (ncg_test_world() == 1)
            return ncclGetUniqueId(id) == ncclSuccess ? 0 : -1;
        fprintf(stderr, "ncg_test: NCG_ID_FILE is not set (run under ncg-launch)\n");
        return -1;
    }
    snprintf(path, sizeof path, "%s%s%s", base, suffix ? "." : "", suffix ? suffix : "");
    if (ncg_test_rank() == 0) {
        if (ncclGetUniqueId(id) != ncclSuccess) {
            fprintf(stderr, "ncg_test: ncclGetUniqueId failed\n");
            return -1;
        }
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || write(fd, id, sizeof *id) != (ssize_t)sizeof *id || close(fd) != 0 ||
            rename(tmp, path) != 0) {
            fprintf(stderr, "ncg_test: cannot publish id to %s: %s\n", path, strerror(errno));
            return -1;
        }
        return 0;
    }
    int limit_ms = env_int("NCG_ID_TIMEOUT_S", 60) * 1000;
    struct timespec ts = {0, 10 * 1000 * 1000};
    for (int waited = 0; waited <= limit_ms; waited += 10) {
        int fd = open(path, O_RDONLY);
        if (fd >= 0) {
            ssize_t n = read(fd, id, sizeof *id);
            close(fd);
            if (n == (ssize_t)sizeof *id)
                return 0;
        }
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "ncg_test: rank %d: no id in %s after %d s\n", ncg_test_rank(), path,
            limit_ms / 1000);
    return -1;
}

int ncg_test_share_id(ncclUniqueId *id)
{
    return ncg_test_share_id_named(id, NULL);
}
