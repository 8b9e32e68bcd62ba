/* `ncclguard coord`: the checker (the relay tree's root of one node, net/relayhost.h, the same
 * code that runs inside a job) as a standalone daemon, for jobs started with
 * NCCLGUARD_COORD=host:port.
 * SIGINT/SIGTERM stop it cleanly (clients are told SHUTDOWN). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "hostport.h"
#include "relayhost.h"

#define NCG_COORD_DEFAULT_PORT 29650

static const char usage[] =
    "usage: ncclguard coord [--listen [HOST]:PORT] [--token TOKEN] [--http [HOST:]PORT]\n"
    "  --listen HOST:PORT  address to listen on (default 0.0.0.0:29650; port 0 = any, printed)\n"
    "  --http [HOST:]PORT  also serve /status, /metrics, /healthz over HTTP (host default\n"
    "                      127.0.0.1; 0.0.0.0 for every interface; port 0 = any, printed);\n"
    "                      with a token, requests need \"Authorization: Bearer TOKEN\"\n"
    "  --token TOKEN       clients must present NCCLGUARD_TOKEN=TOKEN (default: $NCCLGUARD_TOKEN,\n"
    "                      or none)\n"
    "  the job's ranks run with NCCLGUARD_COORD=<this host>:PORT (and NCCLGUARD_TOKEN=TOKEN);\n"
    "  NCCLGUARD_INTERVAL_MS, _HEARTBEAT_TIMEOUT_S, _LAG_WARN_S, _LAG_ABORT_S apply here too\n"
    "exit status: 0 stopped by SIGINT/SIGTERM, 2 usage error, 3 cannot listen\n";

/* "HOST:PORT", ":PORT", "PORT" or "[v6]:PORT" into host/port. */
static int parse_listen(const char *s, char *host, size_t hlen, int *port)
{
    struct ncg_hostport hp;
    if (ncg_hostport_parse(s, NCG_HP_PORT_ONLY | NCG_HP_BARE_V6 | NCG_HP_PORT_ZERO, &hp) != 0 ||
        hp.hostlen >= hlen)
        return -1;
    memcpy(host, hp.host, hp.hostlen);
    host[hp.hostlen] = 0;
    *port = (int)hp.port;
    return 0;
}

int ncg_cmd_coord(int argc, char **argv)
{
    char host[256] = "";
    int port = NCG_COORD_DEFAULT_PORT;
    const char *token = getenv("NCCLGUARD_TOKEN");
    char http[300] = "";
    for (int i = 1; i < argc; i++) {
        const char *val;
        int r;
        if (ncg_cli_help(argv[i], usage))
            return NCG_CLI_OK;
        if ((r = ncg_cli_opt(argc, argv, &i, "--listen", &val)) != 0) {
            if (r < 0 || parse_listen(val, host, sizeof(host), &port) < 0)
                return ncg_cli_usage_error(usage, "coord: --listen needs [HOST]:PORT");
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--http", &val)) != 0) {
            char hh[256];
            int hp;
            if (r < 0 || parse_listen(val, hh, sizeof hh, &hp) < 0)
                return ncg_cli_usage_error(usage, "coord: --http needs [HOST:]PORT");
            int v6 = strchr(hh, ':') != NULL;
            snprintf(http, sizeof http, "%s%s%s:%d", v6 ? "[" : "", hh[0] ? hh : "127.0.0.1",
                     v6 ? "]" : "", hp);
        } else if ((r = ncg_cli_opt(argc, argv, &i, "--token", &val)) != 0) {
            if (r < 0 || !*val)
                return ncg_cli_usage_error(usage, "coord: --token needs a value");
            token = val;
        } else {
            return ncg_cli_usage_error(usage, "coord: unexpected argument '%s'", argv[i]);
        }
    }
    if (token && !*token)
        token = NULL;
    ncg_cli_catch_stop();
    signal(SIGPIPE, SIG_IGN);
    char err[256] = "";
    if (ncg_rhost_serve(host[0] ? host : NULL, port, token, http[0] ? http : NULL, &ncg_cli_stop,
                        err, sizeof(err)) < 0) {
        fprintf(stderr, "ncclguard: coord: %s\n", err[0] ? err : "failed");
        return NCG_CLI_ERROR;
    }
    return NCG_CLI_OK;
}
