/* On-demand dumps of this process (`ncclguard dump`, NCCLGUARD_DUMP_ON_WARN=1): native and
 * Python stacks of every thread, every recorded communicator with its counts and its last 32
 * records of each ring, as one JSON file ncclguard-dump.<host>.<pid>.json (docs/report-format.md)
 * written atomically. Requested through the segment header (dump_req), served by the checker
 * thread: no signal is sent to trigger it, and it works while the application is stuck in NCCL. */
#ifndef NCG_DUMP_H
#define NCG_DUMP_H

#include <stdint.h>

/* Serves a pending request in the segment header, if any. Checker thread, each interval;
 * blocks up to a few hundred ms per thread whose native stack is taken; allocates. */
void ncg_dump_poll(void);

/* A LAG warning about comm_id reached this process: dump into NCCLGUARD_REPORT_DIR when
 * NCCLGUARD_DUMP_ON_WARN=1 (once per comm and warning). Checker thread. */
void ncg_dump_on_warning(uint64_t comm_id);

/* Writes the dump into dir now. 0 or -errno. Checker thread. */
int ncg_dump_write(const char *dir, const char *reason);

#endif
