#!/usr/bin/env bash
# `make bench-detect`: the checker's detection latency and side-channel traffic on the CPU NCCL.
#  1. MISMATCH: the 16-rank incident, from the later of the two mismatching calls (the reports'
#     call_time_unix) to every rank exited (the launcher returning), BENCH_RUNS times.
#  2. RANK DIED: 16 ranks, one SIGKILLs itself; from its kill to every rank exited.
#  3. DEADLOCK: 16 ranks, rank 13 (the fourth node's second rank in the tree) takes the world
#     comm and its split child in the other order; from that call to every rank exited.
#     All three in the synchronous and the asynchronous mode of the CPU NCCL, and with the flat
#     checker and through the relay tree (NCCLGUARD_TREE=on, 4 "nodes" of 4 ranks).
#  4. Steady-state traffic: 16 ranks, AllReduce loop for BENCH_STEADY_S seconds, bytes per rank
#     per second on the side channel (from NCCLGUARD_VERBOSE=1's per-link totals), and the same
#     for a mixed workload with a p2p ring (4 ranks, scen healthy).
# Prints median and worst of each; no pass/fail (see BENCHMARKS.md for targets).
# BENCH_VS=/path/to/other/libncclguard.so: every measurement also with that build of the shim,
# alternated run by run with this one (lines marked "vs"), for before/after figures.
set -u
cd "$(dirname "$0")/.." || exit 2
B=${NCG_BUILD:-build}
case "$B" in /*) ;; *) B=$PWD/$B ;; esac
RUNS=${BENCH_RUNS:-7}
N=${BENCH_RANKS:-16}
STEADY=${BENCH_STEADY_S:-10}
export LD_LIBRARY_PATH=$B/fakenccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
L=$B/tests/ncg-launch S=$B/tests/checker/scen I=$B/tests/incident
T=$(mktemp -d /tmp/ncclguard-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
now() { date +%s.%N; }
stats() { sort -g | awk '{v[NR]=$1} END{ if (!NR) {print "no data"; exit} m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "median %.3f s, worst %.3f s, best %.3f s (%d runs)\n", m, v[NR], v[1], NR}'; }

echo "bench-detect: $N ranks on $(nproc) CPUs, interval ${NCCLGUARD_INTERVAL_MS:-100} ms"
# Each measurement runs in both NCCL modes of the CPU NCCL: sync (a call completes before it
# returns) and async (FAKENCCL_ASYNC=1: calls enqueue on streams of the CPU CUDA runtime and the
# host blocks later in a synchronization, as on GPUs), alternating run by run.
MODES=sync
[ -e "$B/fakecuda/libcudart.so.13" ] && MODES="sync async"
mode_env() { [ "$1" = async ] && echo "FAKENCCL_ASYNC=1 LD_LIBRARY_PATH=$B/fakecuda:$LD_LIBRARY_PATH" || echo "FAKENCCL_ASYNC=0"; }
# The checker: flat (one connection per process into rank 0's checker thread), or the relay tree.
CFGS=${BENCH_CHECKERS:-flat tree}
cfg_env() { [ "$1" = tree ] && echo "NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=4" || echo "NCCLGUARD_TREE=off"; }
LIBS="this" && [ -n "${BENCH_VS:-}" ] && LIBS="this vs"
lib_of() { [ "$1" = vs ] && echo "$BENCH_VS" || echo "$B/libncclguard.so"; }
for c in $CFGS; do for m in $MODES; do for v in $LIBS; do
  : >"$T/mm.$m.$c.$v"; : >"$T/kill.$m.$c.$v"; : >"$T/dl.$m.$c.$v"
done; done; done
for r in $(seq "$RUNS"); do
  for c in $CFGS; do for m in $MODES; do for v in $LIBS; do
    P=$(lib_of $v)
    rm -rf "$T/rep" && mkdir -p "$T/rep"
    env $(mode_env $m) $(cfg_env $c) LD_PRELOAD=$P NCCLGUARD_REPORT_DIR=$T/rep "$L" -n "$N" -t 60 "$I" >"$T/log" 2>&1
    rc=$?
    te=$(now)
    td=$(grep -ho '"call_time_unix":[0-9.]*' "$T"/rep/*.json | cut -d: -f2 | sort -g | tail -n 1)
    [ $rc -eq 86 ] && [ -n "$td" ] && awk -v a="$td" -v b="$te" 'BEGIN{printf "%.3f\n", b-a}' >>"$T/mm.$m.$c.$v"
    env $(mode_env $m) $(cfg_env $c) LD_PRELOAD=$P NCCLGUARD_REPORT_DIR=$T "$L" -n "$N" -t 60 "$S" kill 100 >"$T/log" 2>&1
    te=$(now)
    td=$(grep -o 'scen: diverge at [0-9.]*' "$T/log" | awk '{print $4}')
    n86=$(grep -cE 'exited with status 86$' "$T/log")
    [ -n "$td" ] && [ "$n86" -eq $((N - 1)) ] && awk -v a="$td" -v b="$te" 'BEGIN{printf "%.3f\n", b-a}' >>"$T/kill.$m.$c.$v"
    env $(mode_env $m) $(cfg_env $c) SCEN_VICTIM=13 LD_PRELOAD=$P NCCLGUARD_REPORT_DIR=$T "$L" -n "$N" -t 60 "$S" invert 40 >"$T/log" 2>&1
    te=$(now)
    td=$(grep -o 'scen: diverge at [0-9.]*' "$T/log" | awk '{print $4}')
    ndl=$(grep -cE '^ncclguard: VERDICT: DEADLOCK' "$T/log")
    [ -n "$td" ] && [ "$ndl" -ge "$N" ] && awk -v a="$td" -v b="$te" 'BEGIN{printf "%.3f\n", b-a}' >>"$T/dl.$m.$c.$v"
  done; done; done
done
for c in $CFGS; do for m in $MODES; do for v in $LIBS; do
  x=$([ $v = vs ] && echo " vs" || echo "")
  printf "MISMATCH (incident, %-5s %-4s%s), later mismatching call -> all ranks exited: " $m $c "$x"; stats <"$T/mm.$m.$c.$v"
  printf "RANK DIED (SIGKILL, %-5s %-4s%s), kill -> all ranks exited:                   " $m $c "$x"; stats <"$T/kill.$m.$c.$v"
  printf "DEADLOCK (invert,  %-5s %-4s%s), inverted call -> all ranks exited:          " $m $c "$x"; stats <"$T/dl.$m.$c.$v"
done; done; done

traffic() { # label ranks scen-args... (TRAFFIC_LIB: the shim, default this build's)
  local label=$1 n=$2; shift 2
  NCCLGUARD_VERBOSE=1 LD_PRELOAD=${TRAFFIC_LIB:-$B/libncclguard.so} "$L" -n "$n" -t 120 "$S" "$@" >"$T/log" 2>&1
  grep -oE 'side channel to [^ ]+: sent [0-9]+ B, received [0-9]+ B in [0-9.]+ s' "$T/log" |
    awk -v label="$label" -v calls="$(grep -oE 'steady: [0-9]+' "$T/log" | awk '{print $2}')" '
      {tx=$6; rx=$9; s=$12; if (s>0) {r=tx/s; q=rx/s; t+=r; u+=q; n++; if (r>w) w=r}}
      END{ if (!n) {print label ": no data"; exit}
           printf "%s: sent %.0f B/s per rank (worst %.0f), received %.0f B/s per rank, %d ranks", label, t/n, w, u/n, n;
           if (calls) printf ", %s calls per rank", calls; printf "\n" }'
}
for v in $LIBS; do
  x=$([ $v = vs ] && echo " (vs)" || echo "")
  TRAFFIC_LIB=$(lib_of $v) traffic "steady AllReduce loop, $N ranks, ${STEADY} s$x" "$N" steady "$STEADY"
  TRAFFIC_LIB=$(lib_of $v) traffic "mixed (3 comms, groups, p2p ring), 4 ranks$x" 4 healthy 3000
done
