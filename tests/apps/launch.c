/* ncg-launch: a tiny torchrun for tests. `ncg-launch -n N [-t TIMEOUT_S] [-k] [--] PROG ARGS...`
 * starts N copies of PROG with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and NCG_ID_FILE
 * (a fresh path in a private temp dir, removed at the end; see ncg_test.h) in the environment.
 * Children inherit stdout/stderr. It waits for all of them, prints one line per rank that did
 * not exit 0 ("ncg-launch: rank R exited with status S" / "killed by signal SIG"), and exits
 * with the first non-zero status of any rank (128+SIG for a signal), 0 if all
 * exited 0 ("first" in time), or 124 after SIGKILLing every rank still running when TIMEOUT_S
 * passes (all stopped first, so none reports another's end). NCG_LAUNCH_PER_NODE=K: the ranks form
 * "nodes" of K (LOCAL_RANK = RANK % K, LOCAL_WORLD_SIZE = K), as torchrun on several hosts would
 * number them; default: one node. -k: at the first rank that exits non-zero (or by a signal),
 * SIGKILL every rank still running, as Open MPI's mpirun does with its default settings. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void usage(void)
{
    fprintf(stderr, "usage: ncg-launch -n N [-t TIMEOUT_S] [-k] [--] PROG [ARGS...]\n");
    exit(2);
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[4096 + 512];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(dir);
}

static volatile sig_atomic_t g_alarm, g_term;
static void on_term(int sig)
{
    g_term = sig;
}
static void on_alarm(int sig)
{
    (void)sig;
    g_alarm = 1;
}

/* Ends every rank still running: all stopped first, then all killed, so that no rank sees
 * another one's end (a closed connection) and reports it while the launcher, descheduled
 * between two kills on a loaded machine, has not reached it yet. */
static void kill_all(const pid_t *pids, int n)
{
    for (int r = 0; r < n; r++)
        if (pids[r] > 0)
            kill(pids[r], SIGSTOP);
    for (int r = 0; r < n; r++)
        if (pids[r] > 0)
            kill(pids[r], SIGKILL);
}

int main(int argc, char **argv)
{
    int n = 0;
    double timeout = 0;
    int i = 1, kill_on_fail = 0;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            n = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            timeout = atof(argv[++i]);
        } else if (!strcmp(argv[i], "-k")) {
            kill_on_fail = 1;
        } else if (argv[i][0] == '-') {
            usage();
        } else {
            break;
        }
    }
    if (n < 1 || i >= argc)
        usage();
    char **prog = &argv[i];

    const char *tmpbase = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/ncg-launch.XXXXXX", tmpbase && *tmpbase ? tmpbase : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "ncg-launch: mkdtemp: %s\n", strerror(errno));
        return 2;
    }
    char idfile[4200];
    snprintf(idfile, sizeof idfile, "%s/id", dir);

    pid_t *pids = calloc((size_t)n, sizeof *pids);
    int *status = calloc((size_t)n, sizeof *status);
    if (!pids || !status)
        return 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: waitpid returns EINTR at the deadline */
    sigaction(SIGALRM, &sa, NULL);
    sa.sa_handler = on_term; /* killed itself: the ranks go too, never orphans */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    char buf[32];
    for (int r = 0; r < n; r++) {
        pid_t p = fork();
        if (p < 0) {
            fprintf(stderr, "ncg-launch: fork: %s\n", strerror(errno));
            kill_all(pids, r);
            return 2;
        }
        if (p == 0) {
            const char *pn = getenv("NCG_LAUNCH_PER_NODE");
            int k = pn && atoi(pn) > 0 ? atoi(pn) : n;
            snprintf(buf, sizeof buf, "%d", r);
            setenv("RANK", buf, 1);
            snprintf(buf, sizeof buf, "%d", r % k);
            setenv("LOCAL_RANK", buf, 1);
            snprintf(buf, sizeof buf, "%d", n);
            setenv("WORLD_SIZE", buf, 1);
            snprintf(buf, sizeof buf, "%d", k < n ? k : n);
            setenv("LOCAL_WORLD_SIZE", buf, 1);
            setenv("NCG_ID_FILE", idfile, 1);
            execvp(prog[0], prog);
            fprintf(stderr, "ncg-launch: cannot run %s: %s\n", prog[0], strerror(errno));
            _exit(127);
        }
        pids[r] = p;
    }
    if (timeout > 0) {
        struct itimerval it = {
            {0, 0}, {(time_t)timeout, (suseconds_t)((timeout - (double)(time_t)timeout) * 1e6)}};
        setitimer(ITIMER_REAL, &it, NULL);
    }
    int left = n, timed_out = 0, rc = 0;
    int term_sent = 0;
    while (left > 0) {
        int st;
        if (g_term && !term_sent) { /* also when it came before the first wait */
            kill_all(pids, n);
            term_sent = 1;
        }
        pid_t p = waitpid(-1, &st, 0);
        if (p < 0) {
            if (errno == EINTR && g_alarm) {
                timed_out = 1;
                kill_all(pids, n);
                g_alarm = 0;
                continue;
            }
            if (errno == EINTR)
                continue;
            break;
        }
        for (int r = 0; r < n; r++)
            if (pids[r] == p) {
                status[r] = st;
                pids[r] = -1;
                left--;
                if (!rc && WIFEXITED(st) && WEXITSTATUS(st) != 0)
                    rc = WEXITSTATUS(st);
                else if (!rc && WIFSIGNALED(st))
                    rc = 128 + WTERMSIG(st);
                if (rc && kill_on_fail)
                    for (int q = 0; q < n; q++)
                        if (pids[q] > 0)
                            kill(pids[q], SIGKILL);
            }
    }
    rm_tree(dir);
    if (g_term) {
        fprintf(stderr, "ncg-launch: %s, killed all ranks\n", strsignal(g_term));
        return 128 + g_term;
    }
    if (timed_out) {
        fprintf(stderr, "ncg-launch: timed out after %g s, killed all ranks\n", timeout);
        return 124;
    }
    for (int r = 0; r < n; r++) {
        int st = status[r];
        if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
            fprintf(stderr, "ncg-launch: rank %d exited with status %d\n", r, WEXITSTATUS(st));
        else if (WIFSIGNALED(st))
            fprintf(stderr, "ncg-launch: rank %d killed by signal %d (%s)\n", r, WTERMSIG(st),
                    strsignal(WTERMSIG(st)));
    }
    return rc;
}
