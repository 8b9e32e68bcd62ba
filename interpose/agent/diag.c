/* The report's atomic write (diag.h): a temporary file beside it, renamed over it when whole. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include "diag.h"

int ncg_diag_tmp_done(int rc, int closed, const char *tmp, const char *path)
{
    if (closed != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc != 0)
        unlink(tmp);
    return rc;
}

int ncg_diag_write_report(const char *json, size_t len, uint32_t pid, const char *path)
{
    char tmp[4200];
    if (!json)
        return -ENOMEM;
    snprintf(tmp, sizeof tmp, "%s.tmp.%u", path, pid);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int rc = 0;
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, json + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = w < 0 ? -errno : -EIO;
            break;
        }
        off += (size_t)w;
    }
    return ncg_diag_tmp_done(rc, close(fd), tmp, path);
}
