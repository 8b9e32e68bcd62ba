/* A recorded call's site (siteof.h): the record's return address symbolized. */
#include <stdio.h>
#include <string.h>
#include "siteof.h"
#include "symbol.h"

void ncg_site_of(const struct ncg_shm_record *rec, char *buf, size_t n)
{
    static const char tag[] = " (in a CUDA graph replay)";
    if (!(rec->flags & NCG_REC_GRAPH) || n <= sizeof tag) {
        ncg_symbolize(rec->caller_pc, buf, n);
        return;
    }
    ncg_symbolize(rec->caller_pc, buf, n - (sizeof tag - 1));
    if (!buf[0])
        snprintf(buf, n, "a CUDA graph replay");
    else
        strcat(buf, tag);
}
