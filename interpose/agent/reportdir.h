/* Where the JSON reports go: NCCLGUARD_REPORT_DIR made absolute and created (like mkdir -p) at
 * activation, one warning then when it is unusable, and at verdict time the write with a
 * fallback to a private directory under $TMPDIR (default /tmp) and the reason in words. */
#ifndef NCG_REPORTDIR_H
#define NCG_REPORTDIR_H

#include <stddef.h>
#include <stdint.h>
#include "diag.h"

/* Creates dir and its parents (mode 0777 less the umask) and checks that it is a directory this
 * process may write. 0, or -errno with why ("mkdir /a/b: Permission denied"). Any thread;
 * blocks on file-system calls; no allocation. */
int ncg_reportdir_prepare(const char *dir, char *why, size_t cap);

/* The fallback directory, "$TMPDIR/ncclguard-<uid>" ("/tmp/..." when TMPDIR is unset or not
 * absolute), into out. Pure but for getenv/getuid. */
void ncg_reportdir_fallback(char *out, size_t cap);

/* At activation (comm creation, under ncg_lock): resolves NCCLGUARD_REPORT_DIR against the
 * working directory, creates it, and prints one line when it is unusable, naming the
 * fallback. Blocks on file-system calls. */
void ncg_reportdir_at_start(void);

/* Writes a verdict's report, its text json (len bytes, rendered: machine/vrender.h; NULL when
 * it could not be, -ENOMEM), as ncclguard-report.<host>.<pid>.json into the report directory
 * (created again if it went away), else into the fallback. path gets the file written ("" when
 * none); note gets why the first choice failed (and where it went instead), "" when all went as
 * configured. 0 when a report was written, else -errno. Checker thread; blocks on file I/O. */
int ncg_reportdir_write(const char *json, size_t len, const char *host, uint32_t pid, char *path,
                        size_t cap, char *note, size_t notecap);

#endif
