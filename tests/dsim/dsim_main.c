/* ncg-dsim: options, one seed's setup (the workload, its size, the schedule's faults, the
 * launcher: all drawn from the seed unless given), runs of one seed, of a range, or until
 * stopped (--forever, seeds per second). docs/simulator.md. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dsim.h"

struct opts {
    uint64_t seed, nseeds;
    const char *workload; /* NULL: from the seed */
    uint32_t ranks, k;    /* 0: from the seed */
    int launcher;         /* -1: from the seed */
    int calm, forever, verbose;
    /* the load failures of issue 35 item 5 as scenarios (docs/simulator.md) */
    uint64_t stop_host_at, stop_host_for; /* --stop-host AT_MS,FOR_MS: process 0 stopped */
    uint64_t backlog_until;               /* --backlog-until MS: nothing accepted until then */
    int no_backlog_farewell;              /* --no-backlog-farewell */
    int rules_only;                       /* --rules-only (dsim.h) */
    char args[256];                       /* the options that shape a run, for the replay line */
};

static void setup(const struct opts *o, uint64_t seed)
{
    memset(&W, 0, sizeof W);
    W.seed = seed;
    W.args = o->args;
    W.verbose = o->verbose;
    rnd_seed(seed);
    const char *const *names = work_names();
    size_t nn = 0;
    while (names[nn])
        nn++;
    const char *drawn = names[rnd_below(nn)]; /* drawn always: a given one replays the rest */
    W.workload = o->workload ? o->workload : drawn;
    int small = !strcmp(W.workload, "stuck") || !strcmp(W.workload, "deadlock") ||
                !strcmp(W.workload, "lag");
    static const uint32_t sizes[] = {2, 4, 8, 16, 32, 64, 256, 1024, 4096};
    uint64_t d = rnd_below(100), si = rnd_below(6), kd = rnd_below(4);
    uint32_t n = d < 80 ? sizes[si] : d < 95 ? sizes[6] : d < 99 ? sizes[7] : sizes[8];
    if (small && n > 16)
        n = 16;
    if (o->ranks)
        n = o->ranks;
    uint32_t k = 1u << kd;
    while (k > 1 && n / k < 2)
        k /= 2;
    if (n >= 1024 && k < 8)
        k = 8; /* big jobs: 8 ranks a process, as on a GPU node */
    if (o->k)
        k = o->k;
    W.nranks = n;
    W.k = k;
    W.nproc = n / k;
    W.proc = calloc(W.nproc, sizeof *W.proc);
    W.rank = calloc(n, sizeof *W.rank);
    if (!W.proc || !W.rank)
        abort();
    for (uint32_t i = 0; i < W.nproc; i++) {
        W.proc[i].id = i;
        W.proc[i].first_rank = i * k;
        W.proc[i].nranks = k;
        W.proc[i].conn = -1;
    }
    for (uint32_t g = 0; g < n; g++) {
        W.rank[g].g = g;
        W.rank[g].proc = g / k;
    }
    uint64_t ld = rnd_below(3);
    W.launcher = (uint8_t)(o->launcher >= 0 ? o->launcher : (int)ld);
    W.end_t = (small ? 100 : 300) * SEC;
    W.delay_lo = 50000;
    W.delay_hi = 200000;
    W.ap.interval_ns = 100 * MS; /* world_init sets the real ones; work_build reads none */
    if (work_build(W.workload) != 0) {
        fprintf(stderr, "ncclguard: ncg-dsim: unknown workload '%s'\n", W.workload);
        exit(2);
    }
    W.silent_bound = (W.ex.kind == NCG_V_NONE ? 20 : 75) * SEC;
    if (!o->calm) { /* the schedule's faults, within the documented bounds */
        static const uint64_t hi[] = {200000, 2 * MS, 20 * MS};
        W.delay_hi = hi[rnd_below(3)];
        W.fault = realloc(W.fault, (W.nfault + 3) * sizeof *W.fault);
        if (!W.fault)
            abort();
        static const struct {
            uint8_t kind;
            uint32_t lo_ms, hi_ms;
        } sched[] = {{F_PARTITION, 50, 1500}, {F_STOP, 100, 3000}, {F_STARVE, 200, 2000}};
        for (int i = 0; i < 3; i++) { /* each with a chance of one in three */
            if (rnd_below(3) != 0)
                continue;
            /* one draw per statement: the order of an initializer's draws is unspecified */
            struct fault *f = &W.fault[W.nfault++];
            f->at = rnd_range(0, 2 * SEC);
            f->kind = sched[i].kind;
            f->a = (uint32_t)rnd_below(W.nproc);
            f->b = (uint32_t)rnd_range(sched[i].lo_ms, sched[i].hi_ms);
        }
        if (rnd_below(4) == 0)
            W.refuse_until = rnd_range(100 * MS, 800 * MS);
    }
    if (o->backlog_until)
        W.refuse_until = o->backlog_until * MS;
    W.no_backlog_farewell = (uint8_t)o->no_backlog_farewell;
    W.rules_only = (uint8_t)o->rules_only;
    if (o->stop_host_for) { /* after the drawn faults: the seed's other draws stay */
        /* the checker silent past the heartbeat: what each process decides is its own (RANK
         * DIED of the host once welcomed, CHECKER LOST before): only a refusal is wrong */
        W.rules_only = 1;
        W.fault = realloc(W.fault, (W.nfault + 1) * sizeof *W.fault);
        if (!W.fault)
            abort();
        W.fault[W.nfault++] = (struct fault){
            .at = o->stop_host_at * MS, .kind = F_STOP, .a = 0, .b = (uint32_t)o->stop_host_for};
    }
}

static const char *LN[] = {"none", "mpirun", "torchrun"};

static int run_one(const struct opts *o, uint64_t seed, int quiet)
{
    setup(o, seed);
    world_init();
    int bad = world_run();
    if (!quiet || bad)
        printf("seed %" PRIu64 " %s: %u ranks in %u processes, launcher %s, %u faults: %s, "
               "%.3f virtual s, %" PRIu64 " events, max %" PRIu64
               " comms tracked, trace %016" PRIx64 "\n",
               seed, W.workload, W.nranks, W.nproc, LN[W.launcher], W.nfault,
               bad ? "VIOLATION" : "ok", (double)W.now / 1e9, W.events, W.max_comms_seen,
               trace_hash());
    fflush(stdout);
    world_free();
    return bad;
}

static volatile sig_atomic_t stop;
static void on_sig(int s)
{
    (void)s;
    stop = 1;
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: ncg-dsim [--seed N] [--seeds COUNT | --forever] [--workload NAME]\n"
            "                [--ranks N] [--ranks-per-proc K] [--launcher none|mpirun|torchrun]\n"
            "                [--calm] [--stop-host AT_MS,FOR_MS] [--backlog-until MS]\n"
            "                [--no-backlog-farewell] [--rules-only] [-v|-vv]\n"
            "workloads:");
    for (const char *const *n = work_names(); *n; n++)
        fprintf(stderr, " %s", *n);
    fprintf(stderr, "\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct opts o = {.seed = 1, .nseeds = 1, .launcher = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--seed") && v)
            o.seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--seeds") && v)
            o.nseeds = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--workload") && v)
            o.workload = !strcmp(argv[++i], "auto") ? NULL : argv[i];
        else if (!strcmp(a, "--ranks") && v)
            o.ranks = (uint32_t)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(a, "--ranks-per-proc") && v)
            o.k = (uint32_t)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(a, "--launcher") && v) {
            i++;
            o.launcher = !strcmp(v, "none")       ? 0
                         : !strcmp(v, "mpirun")   ? 1
                         : !strcmp(v, "torchrun") ? 2
                                                  : -2;
            if (o.launcher == -2)
                usage();
        } else if (!strcmp(a, "--stop-host") && v) {
            char *e;
            o.stop_host_at = strtoull(argv[++i], &e, 0);
            o.stop_host_for = *e == ',' ? strtoull(e + 1, NULL, 0) : 0;
        } else if (!strcmp(a, "--backlog-until") && v)
            o.backlog_until = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--no-backlog-farewell"))
            o.no_backlog_farewell = 1;
        else if (!strcmp(a, "--rules-only"))
            o.rules_only = 1;
        else if (!strcmp(a, "--calm"))
            o.calm = 1;
        else if (!strcmp(a, "--forever"))
            o.forever = 1;
        else if (!strcmp(a, "-v"))
            o.verbose = 1;
        else if (!strcmp(a, "-vv"))
            o.verbose = 2;
        else if (!strcmp(a, "-vvv"))
            o.verbose = 3;
        else
            usage();
    }
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--seed") && strcmp(argv[i], "--seeds") &&
            strcmp(argv[i], "--forever") && strncmp(argv[i], "-v", 2) &&
            (i == 1 || (strcmp(argv[i - 1], "--seed") && strcmp(argv[i - 1], "--seeds"))))
            snprintf(o.args + strlen(o.args), sizeof o.args - strlen(o.args), "%s%s",
                     o.args[0] ? " " : "", argv[i]);
    if (o.ranks && o.k && (o.ranks % o.k || o.ranks / o.k < 1))
        usage();
    if (o.forever) {
        signal(SIGINT, on_sig);
        signal(SIGTERM, on_sig);
        double t0 = wall(), last = t0;
        uint64_t n = 0;
        for (uint64_t s = o.seed; !stop; s++, n++) {
            if (run_one(&o, s, 1))
                return 1;
            double t = wall();
            if (t - last >= 10) {
                printf("ncg-dsim: %" PRIu64 " seeds, %.1f seeds/s\n", n + 1, (n + 1) / (t - t0));
                fflush(stdout);
                last = t;
            }
        }
        double t = wall();
        printf("ncg-dsim: %" PRIu64 " seeds in %.1f s, %.1f seeds/s\n", n, t - t0,
               n / (t - t0 > 0 ? t - t0 : 1));
        return 0;
    }
    int bad = 0;
    for (uint64_t s = o.seed; s < o.seed + o.nseeds; s++)
        bad |= run_one(&o, s, 0);
    return bad;
}
