/* Fault injection for the out-of-memory tests (LD_PRELOAD, with the shim after it): once
 * $FAILALLOC_AFTER_MS have passed since load, malloc/calloc/realloc fail with ENOMEM in the
 * threads named $FAILALLOC_THREAD (default "ncclguard", the checker thread) of the process whose
 * $RANK is $FAILALLOC_RANK (default 0). Other threads and processes allocate as usual. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t m);
void *__libc_realloc(void *p, size_t n);

static int armed = -1; /* -1 not decided yet, 0 never in this process, 1 this process */
static double start_s, after_s;
static char want[16] = "ncclguard";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((constructor)) static void fa_init(void)
{
    const char *a = getenv("FAILALLOC_AFTER_MS"), *t = getenv("FAILALLOC_THREAD");
    if (t && *t)
        strncpy(want, t, sizeof want - 1);
    start_s = now_s();
    after_s = a ? atof(a) / 1000.0 : 1.0;
}

static int fail_now(void)
{
    if (armed == 0 || now_s() - start_s < after_s)
        return 0;
    if (armed < 0) { /* decided late: RANK may be set after the constructor (fork, no exec) */
        const char *r = getenv("RANK"), *w = getenv("FAILALLOC_RANK");
        armed = r && !strcmp(r, w && *w ? w : "0");
        if (!armed)
            return 0;
    }
    char name[17] = "";
    prctl(PR_GET_NAME, name);
    int f = !strcmp(name, want);
    if (f && getenv("FAILALLOC_DEBUG"))
        write(2, "failalloc: failing\n", 20);
    return f;
}

__attribute__((visibility("default"))) void *malloc(size_t n)
{
    if (fail_now()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(n);
}

__attribute__((visibility("default"))) void *calloc(size_t n, size_t m)
{
    if (fail_now()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(n, m);
}

__attribute__((visibility("default"))) void *realloc(void *p, size_t n)
{
    if (n && fail_now()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, n);
}
