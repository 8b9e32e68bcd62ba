/* Fault injection for a hang that is not a desync: FAKENCCL_STALL=RANK:SLOT makes the global
 * rank RANK ($RANK) never finish collective slot SLOT (0-based) of the first communicator its
 * process initialised; its peers then block in that slot too. RANK:SLOT:SECONDS holds it that
 * long from the first time the engine tries it, then lets it go (a device hiccup the job
 * recovers from). One hook, called by the progress engine before it advances an operation
 * (fn_engine.c, op_progress). */
#include <stdlib.h>
#include <time.h>

#include "fn_internal.h"

static int parsed, armed;
static long stall_rank;
static unsigned long long stall_slot;
static double stall_s = -1; /* -1: for ever */
static double held_at = -1; /* when the slot was first held (CLOCK_MONOTONIC s) */
static uint64_t first_comm; /* hash of the first communicator that joined here, 0 = none yet */

static void parse(void)
{
    parsed = 1;
    const char *v = getenv("FAKENCCL_STALL"), *r = getenv("RANK");
    char *end;
    if (!v || !*v || !r)
        return;
    stall_rank = strtol(v, &end, 10);
    if (*end != ':')
        return;
    stall_slot = strtoull(end + 1, &end, 10);
    if (*end == ':') {
        stall_s = strtod(end + 1, &end);
        if (!(stall_s >= 0))
            return;
    }
    armed = !*end && stall_rank == atol(r);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 1: hold op (never progress it). Thread driving op's comm; no allocation, no blocking. */
int fn_stall_hold(const struct fn_op *op)
{
    if (!parsed)
        parse();
    if (!armed)
        return 0;
    if (!first_comm && op->kind == FN_OP_JOIN)
        first_comm = op->comm->hash; /* joins come in initialisation order */
    if (op->kind != FN_OP_COLL || op->comm->hash != first_comm || op->seq != stall_slot)
        return 0;
    if (stall_s < 0)
        return 1;
    double now = mono_s();
    if (held_at < 0)
        held_at = now;
    return now - held_at < stall_s;
}

double fn_stall_wait(void)
{
    if (stall_s < 0 || held_at < 0)
        return -1;
    double left = held_at + stall_s - mono_s();
    return left > 0 ? left : -1;
}
