/* The shim's process lifecycle: configuration on the first NCCL call (quiet), activation at the
 * first communicator (kept warnings, segment, fork and exit handlers), the fork child reset and
 * the clean-exit handler. Nothing here runs in a process that never makes a communicator. */
#define _GNU_SOURCE
#include "shim.h"
#include "completion.h"

#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "observer.h"
#include "config.h"
#include "log.h"
#include "pyframes.h"
#include "shm.h"

__thread struct ncg_tls ncg_tls __attribute__((tls_model("initial-exec")));
int ncg_state;
pthread_mutex_t ncg_lock = PTHREAD_MUTEX_INITIALIZER;

/* Config warnings are held until activation: a process that never makes a communicator prints
 * nothing. One per variable at most, so a few slots suffice. */
#define NCG_KEPT_MAX 12
static char ncg_kept[NCG_KEPT_MAX][400];
static int ncg_nkept;

static void ncg_keep_warning(const char *line, void *arg)
{
    (void)arg;
    if (ncg_nkept < NCG_KEPT_MAX) {
        strncpy(ncg_kept[ncg_nkept], line, sizeof ncg_kept[0] - 1);
        ncg_nkept++;
    }
}

static pthread_once_t ncg_once = PTHREAD_ONCE_INIT;

/* Below this many descriptors (RLIMIT_NOFILE) the shim opens none of its own: the segment is
 * private and there is no side channel. Its descriptors (segment, wake pipe, sockets: about 4
 * per rank, 5 + 1 per rank in the checker's process) would be taken from a job that needs them. */
#define NCG_MIN_NOFILE 64

static void ncg_check_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= NCG_MIN_NOFILE || (!ncg_cfg.check && !ncg_cfg.shm))
        return;
    char line[300];
    snprintf(line, sizeof line,
             "ncclguard: only %llu file descriptors (ulimit -n; ncclguard needs %d to share): "
             "recording privately, running unguarded",
             (unsigned long long)rl.rlim_cur, NCG_MIN_NOFILE);
    ncg_keep_warning(line, NULL);
    ncg_cfg.check = 0;
    ncg_cfg.shm = 0;
}

static void ncg_configure(void)
{
    ncg_config_parse(&ncg_cfg, ncg_env_process, ncg_keep_warning, NULL);
    ncg_check_nofile();
    __atomic_store_n(&ncg_state, ncg_cfg.enabled ? NCG_ST_DORMANT : NCG_ST_DISABLED,
                     __ATOMIC_RELEASE);
}

int ncg_init_slow(void)
{
    pthread_once(&ncg_once, ncg_configure);
    return __atomic_load_n(&ncg_state, __ATOMIC_ACQUIRE);
}

uint32_t ncg_tid_slow(void)
{
    ncg_tls.tid = (uint32_t)syscall(SYS_gettid);
    ncg_py_register_thread(ncg_tls.tid); /* once per thread: its Python id (pyframes.h) */
    return ncg_tls.tid;
}

static void ncg_atfork_prepare(void)
{
    pthread_mutex_lock(&ncg_lock); /* no comm is half-created across the fork */
}

static void ncg_atfork_parent(void)
{
    pthread_mutex_unlock(&ncg_lock);
}

/* The child: one thread, no comms, no segment (the parent's stays the parent's); it activates
 * again, with its own segment, if it makes a communicator itself. */
static void ncg_atfork_child(void)
{
    pthread_mutex_unlock(&ncg_lock);
    ncg_tls.tid = 0;
    ncg_tls.group = 0;
    ncg_comm_fork_child();
    ncg_shm_fork_child();
    if (ncg_state == NCG_ST_ACTIVE)
        ncg_state = NCG_ST_DORMANT;
    if (ncg_observed()->fork_child)
        ncg_observed()->fork_child();
}

static const struct ncg_observer ncg_no_observer;
static const struct ncg_observer *ncg_observer = &ncg_no_observer;

void ncg_observer_set(const struct ncg_observer *o)
{
    ncg_observer = o ? o : &ncg_no_observer;
}

const struct ncg_observer *ncg_observed(void)
{
    return ncg_observer;
}

static void ncg_atexit(void)
{
    ncg_shm_exit();
}

int ncg_activate(void)
{
    static int handlers; /* survives fork: registrations are inherited */
    if (ncg_state == NCG_ST_ACTIVE)
        return 0;
    for (int i = 0; i < ncg_nkept; i++)
        ncg_log_line(ncg_kept[i]);
    ncg_nkept = 0;
    if (ncg_observed()->activate)
        ncg_observed()->activate();
    int rc = ncg_shm_create();
    if (rc < 0) {
        NCG_LOG_ONCE("cannot map memory for the call record (%s); running unguarded",
                     strerror(-rc));
        return rc;
    }
    if (!handlers) {
        handlers = 1;
        pthread_atfork(ncg_atfork_prepare, ncg_atfork_parent, ncg_atfork_child);
        atexit(ncg_atexit);
    }
    ncg_completion_init();
    __atomic_store_n(&ncg_state, NCG_ST_ACTIVE, __ATOMIC_RELEASE);
    return 0;
}
