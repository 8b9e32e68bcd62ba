/* The agent's parameters from a configuration (params.h). */
#include "params.h"
#include "config.h"

#define MS 1000000ull
#define S 1000000000ull

static uint64_t secs(double s)
{
    return s > 0 ? (uint64_t)(s * 1e9) : 0;
}

struct ncg_agent_params ncg_agent_params_of(const struct ncg_config *cfg)
{
    struct ncg_agent_params p = {0};
    p.interval_ns = (uint64_t)(cfg->interval_ms ? cfg->interval_ms : 100) * MS;
    p.heartbeat_ns = secs(cfg->heartbeat_timeout_s);
    p.exit.wait_release = cfg->exit_wait_s > 0;
    p.exit.release_bound = secs(cfg->exit_wait_s > 0 ? cfg->exit_wait_s + 2.0 : 2.0);
    p.exit.host_stay = secs(cfg->host_stay_s);
    p.exit.clean_deadline = 600 * MS;
    p.exit.bye_margin = 200 * MS;
    p.exit.register_wait = 5 * S;
    p.exit.stay_say = 1 * S;
    p.exit.stay_self = 1 * S;
    p.exit.abort_flush = 1 * S;
    p.exit.abort_past = 300 * MS;
    p.exit.sd_read = 200 * MS;
    p.link.connect_timeout = 10 * S;
    p.link.retry = 1 * S;
    p.link.relay_retry = 100 * MS;
    p.link.relay_retry_new = 10 * MS;
    p.link.relay_elect = 1 * S;
    p.link.tree_say = 5 * S;
    return p;
}
