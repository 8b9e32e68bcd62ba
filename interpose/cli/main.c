/* `ncclguard`: the outside view of guarded jobs. Dispatches to the subcommands (status, watch,
 * clean, coord, report); each has its own --help. Usage errors exit 2 (docs/cli.md). */
#include <stdio.h>
#include <string.h>
#include "cli.h"

static const char usage[] =
    "usage: ncclguard COMMAND [OPTIONS]\n"
    "commands:\n"
    "  status   show every guarded process and communicator on this host (reads /dev/shm)\n"
    "  watch    node-side watchdog: alert on dead ranks, stalls, mismatches and verdicts\n"
    "  clean    remove the segments of processes that are gone\n"
    "  coord    run the checker's coordinator as a daemon (for NCCLGUARD_COORD=host:port)\n"
    "  report   merge the per-rank JSON reports of a job into one account\n"
    "  dump     every guarded process here writes its stacks and records into a directory\n"
    "  help     this text; `ncclguard COMMAND --help` for each command\n"
    "  version  print the version\n";

#define NCG_CLI_VERSION "0.1.0"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"status", ncg_cmd_status}, {"watch", ncg_cmd_watch},   {"clean", ncg_cmd_clean},
    {"coord", ncg_cmd_coord},   {"report", ncg_cmd_report}, {"dump", ncg_cmd_dump},
};

/* Runs subcommand cmd with its own argv (argv[0] = its name). */
static int dispatch(const char *cmd, int argc, char **argv)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc, argv);
    return ncg_cli_usage_error(usage, "unknown command '%s'", cmd);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return ncg_cli_usage_error(usage, "missing command");
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 && argc > 2 && strcmp(argv[2], "help") != 0) {
        /* `ncclguard help COMMAND` is `ncclguard COMMAND --help` */
        char *sub[] = {argv[2], "--help", NULL};
        argv = sub;
        argc = 2;
        cmd = argv[0];
        return dispatch(cmd, argc, argv);
    }
    if (ncg_cli_is_help(cmd) || strcmp(cmd, "help") == 0) {
        fputs(usage, stdout);
        return NCG_CLI_OK;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("ncclguard %s (segment layout %u, status format %d)\n", NCG_CLI_VERSION,
               NCG_SHM_LAYOUT_VERSION, NCG_STATUS_FORMAT_VERSION);
        return NCG_CLI_OK;
    }
    /* Subcommands see argv[0] = their own name. */
    return dispatch(cmd, argc - 1, argv + 1);
}
