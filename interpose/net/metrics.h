/* What the status endpoint serves, rendered from the coordinator's read-only view
 * (coord.h): /status as JSON (format "ncclguard-job-status", version NCG_JOB_STATUS_VERSION) and
 * /metrics in the Prometheus text exposition format (0.0.4). No sockets; the output grows in a heap
 * buffer. */
#ifndef NCG_METRICS_H
#define NCG_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include "buf.h" /* the output buffer */

/* New keys keep the version (readers ignore unknown keys); renames, removals and changes of
 * meaning bump it. Since 1: members' completed counts, last call and its age, the verdict's
 * subject and calls (docs/cli.md). */
#define NCG_JOB_STATUS_VERSION 1

struct ncg_coord;

/* Append the document to out. now_ns: CLOCK_MONOTONIC (the coordinator's clock), time_unix:
 * the wall clock, printed once. The coordinator's thread; never blocks; allocates. 0 or
 * -ENOMEM. */
int ncg_status_render(struct ncg_coord *co, uint64_t now_ns, double time_unix, struct ncg_buf *out);
int ncg_metrics_render(struct ncg_coord *co, uint64_t now_ns, struct ncg_buf *out);

/* The two renderers above as the endpoint's source (http.h) for co. Pure. */
struct ncg_http_source;
void ncg_coord_http_source(struct ncg_coord *co, struct ncg_http_source *src);

#endif
