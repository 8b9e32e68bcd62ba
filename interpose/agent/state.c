/* The state the agent's files share (agent_int.h): the one struct ncg_agent, the parameters
 * the checker thread runs by, and the queries every layer of the agent asks of them. The bottom
 * of the agent's files: it calls none of them (docs/checker.md, architecture). */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>

#include "agent_int.h"
#include "config.h"
#include "relayhost.h"
#include "shm.h"

struct ncg_agent ncg_agent = {.lk = PTHREAD_MUTEX_INITIALIZER,
                              .cv = PTHREAD_COND_INITIALIZER,
                              .ann_cv = PTHREAD_COND_INITIALIZER,
                              .wake = {-1, -1}};

/* This process hosts a relay that runs (acquire: pairs with the release that published it). */
int ncg_rh_up(void)
{
    return __atomic_load_n(&ncg_agent.have_rh, __ATOMIC_ACQUIRE) &&
           !ncg_rhost_stopped(ncg_agent.rh);
}

/* An abort verdict is ending this process: no other verdict is shown (one is enough). */
int ncg_ending(void)
{
    return ncg_exit_sm_ending(&ncg_agent.exit);
}

int ncg_exiting(void)
{
    pthread_mutex_lock(&ncg_agent.lk);
    int exiting = ncg_agent.exiting;
    pthread_mutex_unlock(&ncg_agent.lk);
    return exiting;
}

/* This process's checker runs (acquire: pairs with ncg_channel_listen's release). */
int ncg_root_up(void)
{
    return __atomic_load_n(&ncg_agent.have_root, __ATOMIC_ACQUIRE) &&
           !ncg_rhost_stopped(ncg_agent.root);
}

void ncg_wake_thread(void)
{
    if (ncg_agent.wake[1] >= 0) {
        char c = 1;
        ssize_t r = write(ncg_agent.wake[1], &c, 1);
        (void)r;
    }
}

static struct ncg_launch_ranks launch;
static void launch_parse(void)
{
    ncg_launch_ranks_parse(&launch, ncg_env_process, NULL);
}

/* The launcher's ranks (config.h's precedence), read once. Any thread. */
const struct ncg_launch_ranks *ncg_launch(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, launch_parse);
    return &launch;
}

int32_t ncg_global_rank(void)
{
    struct ncg_shm_header *h = ncg_seg_get();
    if (h)
        return h->global_rank;
    return ncg_launch()->global;
}

/* A relay's parameters from this process's configuration. */
struct ncg_rhost_params ncg_agent_rhost_params(uint64_t tok, uint32_t node, uint32_t root,
                                               uint32_t nnodes, uint32_t fanout)
{
    return ncg_rhost_params_of(&ncg_cfg, tok, node, root, nnodes, fanout, ncg_global_rank());
}

/* The agent's timings and thresholds: ncg_start_thread_locked builds them. */
struct ncg_agent_params ncg_params;
