/* User-visible output of the shim: every line starts with "ncclguard: ", goes to stderr with one
 * write(2), and is rate-limited so a misbehaving job cannot be flooded by us. Never on the
 * steady-state hot path. */
#ifndef NCG_LOG_H
#define NCG_LOG_H

#define NCG_LOG_BURST 20 /* lines per second before suppression */

/* Print "ncclguard: <fmt...>\n" (rate-limited). Any thread; formats on the stack, no malloc
 * of its own (vsnprintf of %f may); one write(2). */
void ncg_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print a line that already starts with "ncclguard: " (rate-limited). Any thread. */
void ncg_log_line(const char *line);

/* Like ncg_log, only when NCCLGUARD_VERBOSE >= level. Any thread. */
void ncg_debug(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print once per call site for the life of the process (racing threads: exactly one prints). */
#define NCG_LOG_ONCE(...)                                                                          \
    do {                                                                                           \
        static int ncg_once_;                                                                      \
        if (!__atomic_exchange_n(&ncg_once_, 1, __ATOMIC_RELAXED))                                 \
            ncg_log(__VA_ARGS__);                                                                  \
    } while (0)

#endif
