/* A verdict's report on disk: the JSON text rendered by machine/vrender.h (which this header
 * brings, with struct ncg_diag_ctx) written atomically. File I/O only. */
#ifndef NCG_DIAG_H
#define NCG_DIAG_H

#include <stddef.h>
#include <stdint.h>
#include "vrender.h"

/* Writes the report's text json (len bytes; NULL: it could not be rendered, -ENOMEM) to path
 * atomically (path.tmp.<pid>, fsync-free, rename). Checker thread; blocks on file I/O. 0 or
 * -errno. */
int ncg_diag_write_report(const char *json, size_t len, uint32_t pid, const char *path);

/* The end of an atomic write (reports, dumps): rc so far and closed, what close or fclose of
 * tmp returned (errno still its); tmp renamed over path when both are 0, else removed. 0 or the
 * first -errno. Any thread; blocks on file-system calls. */
int ncg_diag_tmp_done(int rc, int closed, const char *tmp, const char *path);

#endif
