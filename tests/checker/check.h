/* The checker's unit-test programs' one harness: a count of checks and failures, CHECK and
 * CHECKF (a failure names the program, file:line and the expression, and goes on), and the end
 * of main (the summary line and the exit status). One file per program defines the counters
 * with NCG_CHECK_PROGRAM; the program's other files include this header only. */
#ifndef NCG_TESTS_CHECK_H
#define NCG_TESTS_CHECK_H

#include <stdarg.h>
#include <stdio.h>

extern const char ncg_check_prog[];
extern long ncg_check_count, ncg_check_fails;

/* At file scope in the file with main: the program's name, as its failure lines start. */
#define NCG_CHECK_PROGRAM(name)                                                                    \
    const char ncg_check_prog[] = name;                                                            \
    long ncg_check_count, ncg_check_fails

/* One check passed; returns 1. Main thread (the counters are plain). */
static inline int ncg_check_pass(void)
{
    ncg_check_count++;
    return 1;
}

/* One check failed: its line on stderr; returns 0. Main thread. */
static inline int ncg_check_fail(const char *file, int line, const char *expr)
{
    ncg_check_count++;
    ncg_check_fails++;
    fprintf(stderr, "%s: %s:%d: CHECK(%s) failed\n", ncg_check_prog, file, line, expr);
    return 0;
}

/* As ncg_check_fail, with a printf-style explanation after the expression. Main thread. */
__attribute__((format(printf, 4, 5))) static inline int
ncg_check_failf(const char *file, int line, const char *expr, const char *fmt, ...)
{
    va_list ap;
    ncg_check_count++;
    ncg_check_fails++;
    fprintf(stderr, "%s: %s:%d: CHECK(%s) failed: ", ncg_check_prog, file, line, expr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 0;
}

/* Both evaluate to 1 when c holds, else 0 (after the failure's line): `if (!CHECK(x)) return;`
 * stops a test whose next steps need x. CHECKF's message arguments are read only on failure. */
#define CHECK(c) ((c) ? ncg_check_pass() : ncg_check_fail(__FILE__, __LINE__, #c))
#define CHECKF(c, ...)                                                                             \
    ((c) ? ncg_check_pass() : ncg_check_failf(__FILE__, __LINE__, #c, __VA_ARGS__))

/* The end of main: "<prog>: ok (N checks)" and 0, or "<prog>: F of N checks failed" and 1. */
static inline int ncg_check_done(void)
{
    if (ncg_check_fails) {
        fprintf(stderr, "%s: %ld of %ld checks failed\n", ncg_check_prog, ncg_check_fails,
                ncg_check_count);
        return 1;
    }
    printf("%s: ok (%ld checks)\n", ncg_check_prog, ncg_check_count);
    return 0;
}

#endif
