/* The status endpoint inside a job (http.h, ncg_http_tree_start): NCCLGUARD_HTTP read from
 * the shim's configuration, the job file for scrapers and `ncclguard status --job`, and the
 * shim's one-line messages. Linked into libncclguard.so only (the CLI has its own `coord`). */
#include <stdio.h>
#include <unistd.h>
#include "channel.h" /* ncg_host_name */
#include "config.h"
#include "http.h"
#include "log.h"
#include "relayhost.h"

void ncg_http_tree_start(struct ncg_rhost *h, uint32_t node, int root, int32_t global_rank)
{
    char err[300], path[4096];
    if (!ncg_cfg.http[0])
        return;
    struct ncg_http *http = ncg_rhost_http_start(h, ncg_cfg.http, err, sizeof err);
    if (!http) {
        ncg_log("NCCLGUARD_HTTP=%s: %s; no status endpoint at the %s of node %u", ncg_cfg.http, err,
                root ? "root" : "relay", node);
        return;
    }
    if (ncg_http_write_job_file(http, ncg_cfg.report_dir, ncg_host_name(), (uint32_t)getpid(),
                                global_rank, root ? "root" : "relay", (int32_t)node, path,
                                sizeof path, err, sizeof err) != 0)
        ncg_log("status endpoint on %s, but no job file: %s", ncg_http_url(http), err);
    else
        ncg_debug(1,
                  "status endpoint of the %s of node %u on %s (/status /metrics /healthz); "
                  "job file %s",
                  root ? "root" : "relay", node, ncg_http_url(http), path);
}
