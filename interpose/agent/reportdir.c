/* The report directory (reportdir.h): made absolute once at activation (the application may
 * chdir later), created like `mkdir -p`, checked, and a private fallback under $TMPDIR when it
 * cannot take the report, so a verdict's report is never lost with no word of why. */
#include "reportdir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "log.h"

/* NCCLGUARD_REPORT_DIR as resolved at activation ("" until then: ncg_cfg's value is used). */
static char ncg_rdir[4096];

/* A failed call on path, in words: "<what><path>: <errno's text>" into why; returns -errno. */
static int said(char *why, size_t cap, const char *what, const char *path)
{
    int e = errno;
    snprintf(why, cap, "%s%s: %s", what, path, strerror(e));
    return -e;
}

int ncg_reportdir_prepare(const char *dir, char *why, size_t cap)
{
    char p[4096];
    struct stat st;
    if (!dir || !dir[0])
        dir = ".";
    if (strlen(dir) >= sizeof p) {
        snprintf(why, cap, "path too long");
        return -ENAMETOOLONG;
    }
    strcpy(p, dir);
    /* mkdir -p: every prefix ending before a '/', then the whole path. */
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != 0)
            continue;
        char c = *s;
        *s = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            return said(why, cap, "cannot create ", p);
        *s = c;
        if (!c)
            break;
    }
    if (stat(dir, &st) != 0)
        return said(why, cap, "", dir);
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, cap, "%s is not a directory", dir);
        return -ENOTDIR;
    }
    if (access(dir, W_OK | X_OK) != 0)
        return said(why, cap, "cannot write in ", dir);
    return 0;
}

void ncg_reportdir_fallback(char *out, size_t cap)
{
    const char *t = getenv("TMPDIR");
    if (!t || t[0] != '/' || strlen(t) > 1024)
        t = "/tmp";
    snprintf(out, cap, "%s/ncclguard-%u", t, (unsigned)getuid());
}

/* The fallback directory, created private (0700) and checked to be ours and not a link. */
static int fallback_prepare(char *dir, size_t cap, char *why, size_t whycap)
{
    struct stat st;
    ncg_reportdir_fallback(dir, cap);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return said(why, whycap, "cannot create ", dir);
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
        snprintf(why, whycap, "%s is not a directory of this user", dir);
        return -EPERM;
    }
    if (access(dir, W_OK | X_OK) != 0)
        return said(why, whycap, "cannot write in ", dir);
    return 0;
}

void ncg_reportdir_at_start(void)
{
    const char *d = ncg_cfg.report_dir[0] ? ncg_cfg.report_dir : ".";
    char cwd[2048];
    if (d[0] == '/' || !getcwd(cwd, sizeof cwd))
        snprintf(ncg_rdir, sizeof ncg_rdir, "%s", d);
    else if (!strcmp(d, "."))
        snprintf(ncg_rdir, sizeof ncg_rdir, "%s", cwd);
    else
        snprintf(ncg_rdir, sizeof ncg_rdir, "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", d);
    char why[512], fb[1100];
    if (ncg_reportdir_prepare(ncg_rdir, why, sizeof why) != 0) {
        ncg_reportdir_fallback(fb, sizeof fb);
        ncg_log("NCCLGUARD_REPORT_DIR=\"%s\": %s; reports will go to %s", d, why, fb);
    }
}

int ncg_reportdir_write(const char *json, size_t len, const char *host, uint32_t pid, char *path,
                        size_t cap, char *note, size_t notecap)
{
    const char *dir = ncg_rdir[0] ? ncg_rdir : ncg_cfg.report_dir;
    char why[600], fb[1100];
    int rc;
    note[0] = 0;
    ncg_diag_report_path(dir, host, pid, path, cap);
    if ((rc = ncg_reportdir_prepare(dir, why, sizeof why)) == 0) {
        if ((rc = ncg_diag_write_report(json, len, pid, path)) == 0)
            return 0;
        snprintf(why, sizeof why, "cannot write %s: %s", path, strerror(-rc));
    }
    if ((rc = fallback_prepare(fb, sizeof fb, note, notecap)) == 0) {
        ncg_diag_report_path(fb, host, pid, path, cap);
        if ((rc = ncg_diag_write_report(json, len, pid, path)) == 0) {
            snprintf(note, notecap, "%s; written to %s instead", why, fb);
            return 0;
        }
        char fbwhy[700];
        snprintf(fbwhy, sizeof fbwhy, "cannot write %s: %s", path, strerror(-rc));
        snprintf(note, notecap, "%s, nor %s", why, fbwhy);
    } else {
        char fbwhy[700];
        snprintf(fbwhy, sizeof fbwhy, "%s", note);
        snprintf(note, notecap, "%s, nor %s", why, fbwhy);
    }
    path[0] = 0;
    return rc;
}
