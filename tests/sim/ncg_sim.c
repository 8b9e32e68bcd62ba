/* ncg-sim: N virtual ranks (no NCCL) through the relay tree's real code and protocol on one
 * machine. One root process (node 0's relay and ranks) and a few worker processes hosting the
 * other nodes (contiguous ranges: most parent links stay in a process); every relay
 * (interpose/relay/relay.c) with children listens on an abstract Unix socket, links to a parent
 * in another process over it (interpose/net/channel.c's peers) and to one in its own process,
 * and to its node's virtual ranks, through an in-process queue of encoded frames (encoded and
 * decoded as on a socket). Faults: a rank's death, a relay process's death or stop (its ranks
 * and child relays reattach to the dead relay's parent), a deadlock. This file: the options,
 * the driver (forks the processes, gathers their results) and the JSON object (--json).
 * See tests/sim/README.md; sim.h for the other files. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sim.h"

struct sim_args A = {1024, 8, 1,  16, 2, 100, 10, 2, 3, -1, -1, -1,
                     0,    0, -1, 10, 0, -1,  4,  0, 0, -1, 20, 0};
uint32_t nnodes;
uint64_t T0, t_event, t_end, w_start, w_end;
pid_t driver;

static void usage(void)
{
    fprintf(stderr,
            "usage: ncg-sim --ranks N --per-node K [--comms C] [--rate CALLS_PER_S] [--seconds T]\n"
            "               [--fanout F] [--workers W] [--heartbeat-s H] [--stop-relay NODE]\n"
            "               [--frames] [--event-s S (3)] [--after-s S (4; --slow-rank: 10)]\n"
            "               [--scrape-s S [--scrape-status]] [--samples]\n"
            "               [--mismatch-rank R --mismatch-slot S | --kill-rank R | --kill-relay "
            "NODE |\n"
            "                --deadlock-rank R | --slow-rank R [--slow-pct P (20)]] --json\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int have_seconds = 0, have_after = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (!strcmp(a, name) && v && ++i)
        if (OPT("--ranks"))
            A.ranks = (uint32_t)atol(v);
        else if (OPT("--per-node"))
            A.per_node = (uint32_t)atol(v);
        else if (OPT("--comms"))
            A.comms = (uint32_t)atol(v);
        else if (OPT("--rate"))
            A.rate = atof(v);
        else if (OPT("--seconds")) {
            A.seconds = atof(v);
            have_seconds = 1;
        } else if (OPT("--fanout"))
            A.fanout = (uint32_t)atol(v);
        else if (OPT("--workers"))
            A.workers = (uint32_t)atol(v);
        else if (OPT("--mismatch-rank"))
            A.mismatch_rank = atol(v);
        else if (OPT("--mismatch-slot"))
            A.mismatch_slot = (uint64_t)atoll(v);
        else if (OPT("--kill-rank"))
            A.kill_rank = atol(v);
        else if (OPT("--kill-relay"))
            A.kill_relay = atol(v);
        else if (OPT("--stop-relay"))
            A.stop_relay = atol(v);
        else if (OPT("--deadlock-rank"))
            A.deadlock_rank = atol(v);
        else if (OPT("--event-s"))
            A.event_s = atof(v);
        else if (OPT("--after-s")) {
            A.after_s = atof(v);
            have_after = 1;
        } else if (OPT("--scrape-s"))
            A.scrape_s = atof(v);
        else if (OPT("--slow-rank"))
            A.slow_rank = atol(v);
        else if (OPT("--slow-pct"))
            A.slow_pct = atof(v);
        else if (OPT("--heartbeat-s"))
            A.hb_s = atof(v);
        else if (!strcmp(a, "--json"))
            A.json = 1;
        else if (!strcmp(a, "--frames"))
            A.frames = 1;
        else if (!strcmp(a, "--scrape-status"))
            A.scrape_status = 1;
        else if (!strcmp(a, "--samples"))
            A.samples = 1;
        else
            usage();
#undef OPT
    }
    if (A.ranks < 2 || A.ranks > NCG_WIRE_MAX_RANKS || !A.per_node || !A.comms ||
        A.comms > NCG_WIRE_MAX_COMMS || A.fanout < 2 || !A.workers || A.rate <= 0 ||
        A.event_s < A.warm_s || A.after_s < 1 || A.scrape_s < 0 || A.slow_pct <= 0 ||
        A.slow_pct > 100 || A.slow_rank >= (int64_t)A.ranks)
        usage();
    nnodes = (A.ranks + A.per_node - 1) / A.per_node;
    if (A.workers > nnodes - 1 && nnodes > 1)
        A.workers = nnodes - 1;
    if (nnodes == 1)
        A.workers = 0;
    int faults = (A.mismatch_rank >= 0) + (A.kill_rank >= 0) + (A.kill_relay >= 0) +
                 (A.stop_relay >= 0) + (A.deadlock_rank >= 0) + (A.slow_rank >= 0);
    if (A.deadlock_rank >= 0 && A.comms < 2)
        A.comms = 2; /* the cycle needs two communicators */
    if (faults > 1 || (A.mismatch_rank >= (int64_t)A.ranks) || A.kill_rank >= (int64_t)A.ranks ||
        A.deadlock_rank >= (int64_t)A.ranks || A.kill_relay >= (int64_t)nnodes ||
        A.kill_relay == 0 || A.stop_relay >= (int64_t)nnodes || A.stop_relay == 0 || A.hb_s < 1 ||
        (A.kill_rank >= 0 && A.kill_rank < (int64_t)A.per_node && A.kill_rank % A.per_node == 0)) {
        fprintf(stderr,
                "ncg-sim: one fault at a time; the root (node 0, rank 0) cannot be killed\n");
        return 2;
    }
    if (A.mismatch_rank >= 0 && !A.mismatch_slot)
        A.mismatch_slot = (uint64_t)(A.rate * A.event_s);
    if (faults && !have_seconds)
        A.seconds = 0;
    if (A.slow_rank >= 0 && !have_after)
        A.after_s = 10; /* a window of 16 sampled slots is 2.6 s of calls, the rule holds 5 s
                         * (NCCLGUARD_SLOW_HOLD_S), then down the tree */
    chains_init();
    driver = getpid();
    /* File descriptors: a worker holds about two per relay (its link up, its end of a child's
     * link) plus the listeners of relays with children; raise the hard limit where allowed
     * (root), else take the soft limit up to it. */
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rlim_t want = 2 * (rlim_t)nnodes / (A.workers ? A.workers : 1) + nnodes / A.fanout + 1024;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
        struct rlimit up = {want, want};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl = up;
    }
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want)
        fprintf(stderr,
                "ncg-sim: %lu file descriptors may be too few for %u relays in %u workers "
                "(ulimit -n; or more --workers)\n",
                (unsigned long)rl.rlim_cur, nnodes, A.workers);
    T0 = now_ns() + 300000000ull + (uint64_t)nnodes * 20000ull;
    w_start = T0 + (uint64_t)(A.warm_s * 1e9);
    if (A.mismatch_rank >= 0)
        t_event = T0 + (uint64_t)((double)A.mismatch_slot / A.rate * 1e9);
    else if (faults)
        t_event = T0 + (uint64_t)(A.event_s * 1e9);
    dl_slot = count_at(t_event);
    if (A.slow_rank >= 0) { /* samples from the event on: the window covers them */
        t_samp = t_event;
        t_end = t_event + (uint64_t)(A.after_s * 1e9);
        if (A.seconds > 0 && T0 + (uint64_t)(A.seconds * 1e9) > t_end)
            t_end = T0 + (uint64_t)(A.seconds * 1e9);
        w_start = t_event;
        w_end = t_end - 200000000ull;
    } else if (faults) {
        w_end = t_event > w_start + 500000000ull ? t_event : w_start + 500000000ull;
        t_end = t_event + (uint64_t)(A.after_s * 1e9); /* the targets are 2 and 3 s */
        if (A.stop_relay >= 0)                         /* found by the heartbeat */
            t_end += (uint64_t)(A.hb_s * 1e9);
        if (A.seconds > 0 && T0 + (uint64_t)(A.seconds * 1e9) > t_end)
            t_end = T0 + (uint64_t)(A.seconds * 1e9);
    } else {
        t_end = T0 + (uint64_t)(A.seconds * 1e9);
        w_end = t_end - 200000000ull;
        if (w_end <= w_start)
            w_start = T0, w_end = t_end;
    }
    if (A.samples && !t_samp)
        t_samp = T0;
    int nproc = 1 + (int)A.workers, pfd[64][2], rel[2];
    pid_t pids[64];
    if (nproc > 64 || pipe(rel) < 0)
        usage();
    for (int p = 0; p < nproc; p++) {
        if (pipe(pfd[p]) < 0)
            return 2;
        pids[p] = fork();
        if (pids[p] == 0) {
            close(pfd[p][0]);
            close(rel[1]);
            run_proc(pfd[p][1], rel[0], p);
        }
        close(pfd[p][1]);
    }
    struct result tot = {0}, root = {0};
    tot.first_ns = UINT64_MAX;
    int bad = 0, slow_seen = 0;
    double relay_max = 0;
    uint32_t relay_max_node = 0;
    for (int p = 0; p < nproc; p++) {
        struct result r;
        ssize_t got = read(pfd[p][0], &r, sizeof r);
        if (got != (ssize_t)sizeof r) {
            bad = 1;
            continue;
        }
        if (p == 0)
            root = r;
        tot.expected += r.expected;
        tot.notified += r.notified;
        tot.narrowed_ranks += r.narrowed_ranks;
        tot.dups += r.dups;
        tot.wrong += r.wrong;
        tot.bytes_win += r.bytes_win;
        tot.net_win += r.net_win;
        tot.reports_win += r.reports_win;
        tot.cpu_win += r.cpu_win;
        tot.slow_notified += r.slow_notified;
        tot.slow_dups += r.slow_dups;
        tot.slow_wrong += r.slow_wrong;
        if (r.slow_notified) {
            if (!slow_seen++)
                tot.slow_named = r.slow_named;
            else if (r.slow_named != tot.slow_named) {
                tot.slow_wrong += r.slow_notified;
            }
            tot.slow_last_ns =
                r.slow_last_ns > tot.slow_last_ns ? r.slow_last_ns : tot.slow_last_ns;
        }
        for (int d = 0; d < 2; d++)
            for (int t = 0; t < NCG_MSG_TYPE_MAX_; t++)
                tot.type_win[d][t] += r.type_win[d][t];
        if (r.notified) {
            if (!tot.kind) {
                tot.kind = r.kind;
                memcpy(tot.subject, r.subject, sizeof tot.subject);
            } else if (r.kind != tot.kind || strcmp(r.subject, tot.subject)) {
                tot.wrong += r.notified;
            }
            tot.first_ns = r.first_ns < tot.first_ns ? r.first_ns : tot.first_ns;
            tot.last_ns = r.last_ns > tot.last_ns ? r.last_ns : tot.last_ns;
        }
        if (p && r.relay_busy_max > relay_max) {
            relay_max = r.relay_busy_max;
            relay_max_node = r.relay_busy_node;
        }
    }
    close(rel[1]);
    for (int p = 0; p < nproc; p++)
        waitpid(pids[p], NULL, 0);
    if (bad) {
        fprintf(stderr, "ncg-sim: a simulator process failed\n");
        return 2;
    }
    double win = (double)(w_end - w_start) / 1e9;
    double first = root.verdict_ns ? (double)root.verdict_ns : (double)tot.first_ns;
    char detect[32] = "null", alln[32] = "null";
    if (tot.notified && t_event) {
        snprintf(detect, sizeof detect, "%.3f", (first - (double)t_event) / 1e9);
        snprintf(alln, sizeof alln, "%.3f", ((double)tot.last_ns - (double)t_event) / 1e9);
    }
    char verdict[40] = "null";
    if (tot.notified)
        snprintf(verdict, sizeof verdict, "\"%s\"", ncg_verdict_key(tot.kind));
    uint32_t depth = 0; /* the deepest node's levels below the root */
    for (uint32_t m = 1; m < nnodes; m++) {
        uint32_t d = 0;
        for (uint32_t n = m; n; n = parent_of(n))
            d++;
        depth = d > depth ? d : depth;
    }
    char sl_named[24] = "null", sl_det[32] = "null", sl_all[32] = "null";
    if (tot.slow_notified)
        snprintf(sl_named, sizeof sl_named, "%d", tot.slow_named);
    if (root.slow_root_ns && t_samp)
        snprintf(sl_det, sizeof sl_det, "%.3f", ((double)root.slow_root_ns - (double)t_samp) / 1e9);
    if (tot.slow_notified && t_samp)
        snprintf(sl_all, sizeof sl_all, "%.3f", ((double)tot.slow_last_ns - (double)t_samp) / 1e9);
    printf("{\"ranks\": %u, \"per_node\": %u, \"comms\": %u, \"rate\": %.0f, \"nodes\": %u, "
           "\"fanout\": %u, \"depth\": %u, \"processes\": %d, \"verdict\": %s, "
           "\"named_ranks\": %s%s%s, \"detect_s\": %s, \"all_notified_s\": %s, "
           "\"notified\": %" PRIu64 ", \"expected\": %" PRIu64 ", \"duplicates\": %" PRIu64
           ", \"disagreeing\": %" PRIu64 ", \"root_verdicts\": %" PRIu64
           ", \"verified_slots\": %" PRIu64 ", \"issued_slots\": %" PRIu64
           ", \"root_cpu_s_per_s\": %.4f, \"root_relay_busy_s_per_s\": %.4f, "
           "\"relay_cpu_s_per_s_max\": %.4f, \"relay_max_node\": %u, "
           "\"reports_per_rank_per_s\": %.2f, \"sim_cpu_s_per_s\": %.3f, "
           "\"bytes_per_rank_per_s\": %.1f, \"net_bytes_per_rank_per_s\": %.1f, \"root_rss_kb\": "
           "%ld, \"fan_in\": %u, \"root_rounds\": %" PRIu64 ", \"root_narrowing_rounds\": %" PRIu64
           ", \"narrowed_ranks\": %" PRIu64 ", "
           "\"window_s\": %.2f, \"summary\": \"%s\"",
           A.ranks, A.per_node, A.comms, A.rate, nnodes, A.fanout, depth, nproc, verdict,
           tot.notified ? "\"" : "", tot.notified ? tot.subject : "null", tot.notified ? "\"" : "",
           detect, alln, tot.notified, tot.expected, tot.dups, tot.wrong, root.root_verdicts,
           root.verified, count_at(t_end) * A.comms, root.cpu_win / win, root.relay_busy_max,
           relay_max, relay_max_node, (double)tot.reports_win / A.ranks / win, tot.cpu_win / win,
           (double)tot.bytes_win / A.ranks / win, (double)tot.net_win / A.ranks / win, root.rss_kb,
           root.fan_in, root.root_rounds, root.root_narrowed, tot.narrowed_ranks, win,
           root.summary);
    printf(", \"slow_named\": %s, \"slow_detect_s\": %s, \"slow_all_notified_s\": %s, "
           "\"slow_notified\": %" PRIu64 ", \"slow_duplicates\": %" PRIu64
           ", \"slow_disagreeing\": %" PRIu64 ", \"slow_warnings\": %" PRIu64
           ", \"slow_summary\": \"%s\"",
           sl_named, sl_det, sl_all, tot.slow_notified, tot.slow_dups, tot.slow_wrong,
           root.slow_root_n, root.slow_summary);
    printf(", \"scrapes\": %u, \"scrape_ms_median\": %.3f, \"scrape_ms_max\": %.3f, "
           "\"metrics_bytes\": %" PRIu64,
           root.scrapes, root.scrape_ms_median, root.scrape_ms_max, root.metrics_bytes);
    if (A.scrape_status)
        printf(", \"status_bytes\": %" PRIu64 ", \"status_not_ready\": %u, "
               "\"status_wait_ms_max\": %.1f",
               root.status_bytes, root.scrapes_not_ready, root.status_wait_ms_max);
    if (A.frames) { /* per frame type: [node-local, between relays] bytes per rank and second */
        static const char *const name[NCG_MSG_TYPE_MAX_] = {
            "?",       "HELLO",   "WELCOME",  "REPORT",   "QUERY", "ANSWER", "P2P",
            "GOODBYE", "VERDICT", "PING",     "SHUTDOWN", "WAIT",  "RHELLO", "RSTAT",
            "RANSWER", "RFAULT",  "RVERDICT", "RWHERE",   "RHERE", "RP2P",   "RWAIT",
            "RASK",    "DONE",    "RELEASE",  "RFIGQ",    "RFIGA", "RSLOW"};
        _Static_assert(NCG_MSG_RSLOW + 1 == NCG_MSG_TYPE_MAX_, "a frame type without a name");
        printf(", \"frames\": {");
        const char *sep = "";
        for (int t = 0; t < NCG_MSG_TYPE_MAX_; t++) {
            if (!tot.type_win[0][t] && !tot.type_win[1][t])
                continue;
            printf("%s\"%s\": [%.1f, %.1f]", sep, name[t],
                   (double)tot.type_win[0][t] / A.ranks / win,
                   (double)tot.type_win[1][t] / A.ranks / win);
            sep = ", ";
        }
        printf("}");
    }
    printf("}\n");
    return 0;
}
