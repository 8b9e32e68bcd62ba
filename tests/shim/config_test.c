/* Unit test of ncg_config_parse (pure): defaults, every variable's good and bad values, and the
 * exact warning text. Prints each failed expectation; exit 0 when all hold. */
#include <stdio.h>
#include <string.h>

#include "config.h"

struct env {
    const char *kv[16][2];
    char warnings[16][400];
    int nwarn;
};

static const char *get(const char *name, void *arg)
{
    struct env *e = arg;
    for (int i = 0; i < 16 && e->kv[i][0]; i++)
        if (!strcmp(e->kv[i][0], name))
            return e->kv[i][1];
    return NULL;
}

static void warn(const char *line, void *arg)
{
    struct env *e = arg;
    if (e->nwarn < 16)
        snprintf(e->warnings[e->nwarn++], sizeof e->warnings[0], "%s", line);
}

static int fails;
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "config_test:%d: expected %s\n", __LINE__, #cond);                     \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

static struct ncg_config parse1(struct env *e)
{
    struct ncg_config c;
    e->nwarn = 0;
    ncg_config_parse(&c, get, warn, e);
    return c;
}

/* One variable set to value: the config, and the warning count / text checked by the caller. */
static struct ncg_config one(struct env *e, const char *k, const char *v)
{
    memset(e, 0, sizeof *e);
    e->kv[0][0] = k;
    e->kv[0][1] = v;
    return parse1(e);
}

int main(void)
{
    struct env e;
    memset(&e, 0, sizeof e);
    struct ncg_config c = parse1(&e);
    EXPECT(e.nwarn == 0);
    EXPECT(c.enabled == 1 && c.check == 1 && c.action == NCG_ACTION_ABORT && c.coord[0] == 0);
    EXPECT(c.interval_ms == 100 && c.heartbeat_timeout_s == 10.0 && c.lag_warn_s == 60.0 &&
           c.lag_abort_s == 0.0);
    EXPECT(!strcmp(c.report_dir, ".") && c.shm == 1 && c.verbose == 0 && c.stacks == 1);

    c = one(&e, "NCCLGUARD", "0");
    EXPECT(c.enabled == 0 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD", "off");
    EXPECT(c.enabled == 0 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD", "");
    EXPECT(c.enabled == 1 && e.nwarn == 0); /* empty = unset */
    c = one(&e, "NCCLGUARD", "maybe");
    EXPECT(c.enabled == 1 && e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0], "ncclguard: NCCLGUARD=\"maybe\": expected 0 or 1; using 1"));

    c = one(&e, "NCCLGUARD_COORD", "off");
    EXPECT(c.check == 0 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_COORD", "10.0.0.1:29400");
    EXPECT(c.check == 1 && !strcmp(c.coord, "10.0.0.1:29400") && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_COORD", "[::1]:7");
    EXPECT(!strcmp(c.coord, "[::1]:7") && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_COORD", "host:99999");
    EXPECT(c.coord[0] == 0 && e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0], "ncclguard: NCCLGUARD_COORD=\"host:99999\": port must be "
                                  "1..65535; using the id's coordinates"));
    c = one(&e, "NCCLGUARD_COORD", "justahost");
    EXPECT(c.coord[0] == 0 && e.nwarn == 1);

    c = one(&e, "NCCLGUARD_ACTION", "warn");
    EXPECT(c.action == NCG_ACTION_WARN && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_ACTION", "FAIL");
    EXPECT(c.action == NCG_ACTION_FAIL && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_ACTION", "explode");
    EXPECT(c.action == NCG_ACTION_ABORT && e.nwarn == 1);
    EXPECT(!strcmp(
        e.warnings[0],
        "ncclguard: NCCLGUARD_ACTION=\"explode\": expected abort, warn or fail; using abort"));

    c = one(&e, "NCCLGUARD_INTERVAL_MS", "250");
    EXPECT(c.interval_ms == 250 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_INTERVAL_MS", "0");
    EXPECT(c.interval_ms == 100 && e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0],
                   "ncclguard: NCCLGUARD_INTERVAL_MS=\"0\": out of range 1..60000; using 100"));
    c = one(&e, "NCCLGUARD_INTERVAL_MS", "12ms");
    EXPECT(c.interval_ms == 100 && e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0],
                   "ncclguard: NCCLGUARD_INTERVAL_MS=\"12ms\": not a whole number; using 100"));
    c = one(&e, "NCCLGUARD_INTERVAL_MS", "-5");
    EXPECT(c.interval_ms == 100 && e.nwarn == 1);

    c = one(&e, "NCCLGUARD_HEARTBEAT_TIMEOUT_S", "2.5");
    EXPECT(c.heartbeat_timeout_s == 2.5 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_HEARTBEAT_TIMEOUT_S", "0");
    EXPECT(c.heartbeat_timeout_s == 10.0 && e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0],
                   "ncclguard: NCCLGUARD_HEARTBEAT_TIMEOUT_S=\"0\": must be > 0; using 10"));
    c = one(&e, "NCCLGUARD_HEARTBEAT_TIMEOUT_S", "nan");
    EXPECT(c.heartbeat_timeout_s == 10.0 && e.nwarn == 1);
    /* Too short to work (issue 13): liveness and LAG need a few report intervals. */
    c = one(&e, "NCCLGUARD_HEARTBEAT_TIMEOUT_S", "0.05");
    EXPECT(c.heartbeat_timeout_s == 10.0 && e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0], "ncclguard: NCCLGUARD_HEARTBEAT_TIMEOUT_S=\"0.05\": must be at "
                                  "least 1 (5 report intervals and 1 s); using 10"));
    c = one(&e, "NCCLGUARD_HEARTBEAT_TIMEOUT_S", "0.09");
    EXPECT(c.heartbeat_timeout_s == 10.0 && e.nwarn == 1);
    c = one(&e, "NCCLGUARD_HEARTBEAT_TIMEOUT_S", "1");
    EXPECT(c.heartbeat_timeout_s == 1.0 && e.nwarn == 0);
    memset(&e, 0, sizeof e);
    e.kv[0][0] = "NCCLGUARD_INTERVAL_MS", e.kv[0][1] = "1000";
    e.kv[1][0] = "NCCLGUARD_HEARTBEAT_TIMEOUT_S", e.kv[1][1] = "3";
    c = parse1(&e);
    EXPECT(c.heartbeat_timeout_s == 10.0 && e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0], "ncclguard: NCCLGUARD_HEARTBEAT_TIMEOUT_S=\"3\": must be at "
                                  "least 5 (5 report intervals and 1 s); using 10"));
    c = one(&e, "NCCLGUARD_INTERVAL_MS", "60000");
    EXPECT(c.interval_ms == 60000 && c.heartbeat_timeout_s == 300.0 && c.lag_warn_s == 300.0 &&
           e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0], "ncclguard: NCCLGUARD_INTERVAL_MS=\"60000\": the heartbeat "
                                  "timeout must be at least 5 intervals; using "
                                  "NCCLGUARD_HEARTBEAT_TIMEOUT_S=300"));
    c = one(&e, "NCCLGUARD_LAG_WARN_S", "0");
    EXPECT(c.lag_warn_s == 60.0 && e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0], "ncclguard: NCCLGUARD_LAG_WARN_S=\"0\": must be > 0; using 60"));
    c = one(&e, "NCCLGUARD_LAG_WARN_S", "0.2");
    EXPECT(c.lag_warn_s == 60.0 && e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0], "ncclguard: NCCLGUARD_LAG_WARN_S=\"0.2\": must be at least "
                                  "0.5 (5 report intervals); using 60"));
    c = one(&e, "NCCLGUARD_LAG_ABORT_S", "0.1");
    EXPECT(c.lag_abort_s == 0.0 && e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0], "ncclguard: NCCLGUARD_LAG_ABORT_S=\"0.1\": must be 0 (never) "
                                  "or at least 0.5 (5 report intervals); using 0"));
    c = one(&e, "NCCLGUARD_LAG_WARN_S", "1");
    EXPECT(c.lag_warn_s == 1.0 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_LAG_WARN_S", "soon");
    EXPECT(c.lag_warn_s == 60.0 && e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0],
                   "ncclguard: NCCLGUARD_LAG_WARN_S=\"soon\": not a number of seconds; using 60"));
    c = one(&e, "NCCLGUARD_LAG_ABORT_S", "300");
    EXPECT(c.lag_abort_s == 300.0 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_LAG_ABORT_S", "-1");
    EXPECT(c.lag_abort_s == 0.0 && e.nwarn == 1);
    /* SLOW's knobs: the hold in seconds (0: at once), the share in percent */
    EXPECT(one(&e, "NCCLGUARD_SLOW_HOLD_S", "0").slow_hold_s == 0.0 && e.nwarn == 0);
    EXPECT(one(&e, "NCCLGUARD_SLOW_HOLD_S", "30").slow_hold_s == 30.0 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_SLOW_HOLD_S", "-2");
    EXPECT(c.slow_hold_s == 5.0 && e.nwarn == 1);
    EXPECT(
        !strcmp(e.warnings[0], "ncclguard: NCCLGUARD_SLOW_HOLD_S=\"-2\": must be >= 0; using 5"));
    c = one(&e, "NCCLGUARD_SLOW_SHARE_PCT", "150");
    EXPECT(c.slow_share_pct == 5.0 && e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0],
                   "ncclguard: NCCLGUARD_SLOW_SHARE_PCT=\"150\": more than 100; using 5"));
    c = one(&e, "NCCLGUARD_SLOW_SHARE_PCT", "lots");
    EXPECT(c.slow_share_pct == 5.0 && e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0],
                   "ncclguard: NCCLGUARD_SLOW_SHARE_PCT=\"lots\": not a number; using 5"));

    c = one(&e, "NCCLGUARD_REPORT_DIR", "/tmp/reports");
    EXPECT(!strcmp(c.report_dir, "/tmp/reports") && e.nwarn == 0);
    char longdir[300];
    memset(longdir, 'x', sizeof longdir - 1);
    longdir[sizeof longdir - 1] = 0;
    c = one(&e, "NCCLGUARD_REPORT_DIR", longdir);
    EXPECT(!strcmp(c.report_dir, ".") && e.nwarn == 1);

    /* NCCLGUARD_HTTP (issue 12): loopback unless a host is given; 0/off: none; a free port
     * with a colon only (issue 36: one meaning for "0") */
    EXPECT(!strcmp(one(&e, "NCCLGUARD_HTTP", "9400").http, "127.0.0.1:9400") && e.nwarn == 0);
    EXPECT(!strcmp(one(&e, "NCCLGUARD_HTTP", ":0").http, "127.0.0.1:0") && e.nwarn == 0);
    EXPECT(!strcmp(one(&e, "NCCLGUARD_HTTP", "0.0.0.0:80").http, "0.0.0.0:80") && e.nwarn == 0);
    EXPECT(!strcmp(one(&e, "NCCLGUARD_HTTP", "[::1]:9").http, "[::1]:9") && e.nwarn == 0);
    EXPECT(!strcmp(one(&e, "NCCLGUARD_HTTP", "off").http, "") && e.nwarn == 0);
    EXPECT(!strcmp(one(&e, "NCCLGUARD_HTTP", "0").http, "") && e.nwarn == 0);
    EXPECT(!strcmp(one(&e, "NCCLGUARD_HTTP", "00").http, "") && e.nwarn == 0);
    EXPECT(!strcmp(one(&e, "NCCLGUARD_HTTP", "127.0.0.1:0").http, "127.0.0.1:0") && e.nwarn == 0);
    EXPECT(!strcmp(one(&e, "NCCLGUARD_HTTP", "h:70000").http, "") && e.nwarn == 1);
    EXPECT(!strcmp(one(&e, "NCCLGUARD_HTTP", "::1:9").http, "") && e.nwarn == 1);
    c = one(&e, "NCCLGUARD_HTTP", "yes");
    EXPECT(!c.http[0] && e.nwarn == 1 &&
           !strcmp(e.warnings[0], "ncclguard: NCCLGUARD_HTTP=\"yes\": expected [host:]port (:0 "
                                  "picks a free port), or 0 or off; using off"));
    EXPECT(!one(&e, "NCCLGUARD_COORD", "h:1").http[0]); /* default: off */

    c = one(&e, "NCCLGUARD_SHM", "0");
    EXPECT(c.shm == 0 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_SHM", "2");
    EXPECT(c.shm == 1 && e.nwarn == 1);
    c = one(&e, "NCCLGUARD_VERBOSE", "2");
    EXPECT(c.verbose == 2 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_VERBOSE", "3");
    EXPECT(c.verbose == 0 && e.nwarn == 1);
    EXPECT(
        !strcmp(e.warnings[0], "ncclguard: NCCLGUARD_VERBOSE=\"3\": out of range 0..2; using 0"));

    c = one(&e, "NCCLGUARD_STACKS", "0");
    EXPECT(c.stacks == 0 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_STACKS", "off");
    EXPECT(c.stacks == 0 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_STACKS", "maybe");
    EXPECT(c.stacks == 1 && e.nwarn == 1);
    EXPECT(
        !strcmp(e.warnings[0], "ncclguard: NCCLGUARD_STACKS=\"maybe\": expected 0 or 1; using 1"));

    c = one(&e, "NCCLGUARD_DIAG", "full");
    EXPECT(c.diag == NCG_DIAG_FULL && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_DIAG", "SHORT");
    EXPECT(c.diag == NCG_DIAG_SHORT && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_DIAG", "auto");
    EXPECT(c.diag == NCG_DIAG_AUTO && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_DIAG", "quiet");
    EXPECT(c.diag == NCG_DIAG_QUIET && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_DIAG", "long");
    EXPECT(c.diag == NCG_DIAG_AUTO && e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0], "ncclguard: NCCLGUARD_DIAG=\"long\": expected auto, full, short "
                                  "or quiet; using auto"));

    c = one(&e, "NCCLGUARD_TREE", "on");
    EXPECT(c.tree == NCG_TREE_ON && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_TREE", "OFF");
    EXPECT(c.tree == NCG_TREE_OFF && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_TREE", "flat");
    EXPECT(c.tree == NCG_TREE_AUTO && e.nwarn == 1);
    EXPECT(!strcmp(e.warnings[0],
                   "ncclguard: NCCLGUARD_TREE=\"flat\": expected auto, on or off; using auto"));
    c = one(&e, "NCCLGUARD_TREE_FANOUT", "4");
    EXPECT(c.fanout == 4 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_TREE_FANOUT", "1");
    EXPECT(c.fanout == 16 && e.nwarn == 1);
    /* the exit release's bound: 0 allowed (no release), negative or not a number refused */
    c = one(&e, "NCCLGUARD_EXIT_WAIT_S", "2.5");
    EXPECT(c.exit_wait_s == 2.5 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_EXIT_WAIT_S", "0");
    EXPECT(c.exit_wait_s == 0 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_EXIT_WAIT_S", "-1");
    EXPECT(c.exit_wait_s == 5.0 && e.nwarn == 1);
    c = one(&e, "NCCLGUARD_EXIT_WAIT_S", "soon");
    EXPECT(c.exit_wait_s == 5.0 && e.nwarn == 1 && strstr(e.warnings[0], "NCCLGUARD_EXIT_WAIT_S"));
    /* the checker's host's stay: 0 (default) = while others run, seconds bound it */
    c = one(&e, "NCCLGUARD_HOST_STAY_S", NULL);
    EXPECT(c.host_stay_s == 0 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_HOST_STAY_S", "30");
    EXPECT(c.host_stay_s == 30 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_HOST_STAY_S", "0.5");
    EXPECT(c.host_stay_s == 0.5 && e.nwarn == 0);
    c = one(&e, "NCCLGUARD_HOST_STAY_S", "-3");
    EXPECT(c.host_stay_s == 0 && e.nwarn == 1 && strstr(e.warnings[0], "NCCLGUARD_HOST_STAY_S"));
    c = one(&e, "NCCLGUARD_HOST_STAY_S", "forever");
    EXPECT(c.host_stay_s == 0 && e.nwarn == 1 && strstr(e.warnings[0], "NCCLGUARD_HOST_STAY_S"));

    /* Unprintable bytes are shown as '?', never echoed raw. */
    c = one(&e, "NCCLGUARD_ACTION", "a\x1b[2Jb");
    EXPECT(e.nwarn == 1 && strstr(e.warnings[0], "\"a?[2Jb\""));

    /* Several bad values: one warning each. */
    memset(&e, 0, sizeof e);
    e.kv[0][0] = "NCCLGUARD_ACTION", e.kv[0][1] = "x";
    e.kv[1][0] = "NCCLGUARD_SHM", e.kv[1][1] = "y";
    e.kv[2][0] = "NCCLGUARD_INTERVAL_MS", e.kv[2][1] = "50";
    c = parse1(&e);
    EXPECT(e.nwarn == 2 && c.interval_ms == 50);

    if (fails)
        return 1;
    printf("config_test ok\n");
    return 0;
}
