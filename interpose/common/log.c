/* Rate-limited "ncclguard: " lines on stderr (see log.h). The limiter is a per-second window of
 * NCG_LOG_BURST lines; lines over it are counted and reported by the next line that passes. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"

static uint64_t ncg_log_window;  /* second of the current window */
static unsigned ncg_log_used;    /* lines printed in it */
static unsigned ncg_log_dropped; /* lines suppressed since the last printed one */

static void ncg_write_all(const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(2, s, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return; /* stderr closed: nothing sensible to do */
        }
        s += w;
        n -= (size_t)w;
    }
}

/* Returns how many earlier lines were suppressed (to mention), or -1 to drop this one. */
static long ncg_log_admit(void)
{
    uint64_t sec = ncg_coarse_ns() / 1000000000ull;
    uint64_t win = __atomic_load_n(&ncg_log_window, __ATOMIC_RELAXED);
    if (win != sec && __atomic_compare_exchange_n(&ncg_log_window, &win, sec, 0, __ATOMIC_RELAXED,
                                                  __ATOMIC_RELAXED))
        __atomic_store_n(&ncg_log_used, 0, __ATOMIC_RELAXED);
    if (__atomic_add_fetch(&ncg_log_used, 1, __ATOMIC_RELAXED) > NCG_LOG_BURST) {
        __atomic_add_fetch(&ncg_log_dropped, 1, __ATOMIC_RELAXED);
        return -1;
    }
    return (long)__atomic_exchange_n(&ncg_log_dropped, 0, __ATOMIC_RELAXED);
}

static void ncg_emit(const char *body, int prefixed)
{
    long dropped = ncg_log_admit();
    if (dropped < 0)
        return;
    char buf[1024];
    int n = 0;
    if (dropped > 0)
        n = snprintf(buf, sizeof buf, "ncclguard: (%ld lines suppressed)\n", dropped);
    n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%s", prefixed ? "" : "ncclguard: ", body);
    if (n >= (int)sizeof buf - 1)
        n = (int)sizeof buf - 2;
    if (n == 0 || buf[n - 1] != '\n')
        buf[n++] = '\n';
    ncg_write_all(buf, (size_t)n);
}

void ncg_log_line(const char *line)
{
    ncg_emit(line, 1);
}

static void ncg_vlog(const char *fmt, va_list ap)
{
    char body[900];
    vsnprintf(body, sizeof body, fmt, ap);
    ncg_emit(body, 0);
}

void ncg_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ncg_vlog(fmt, ap);
    va_end(ap);
}

void ncg_debug(int level, const char *fmt, ...)
{
    if (ncg_cfg.verbose < level)
        return;
    va_list ap;
    va_start(ap, fmt);
    ncg_vlog(fmt, ap);
    va_end(ap);
}
