#!/usr/bin/env bash
# What creating a communicator costs under ncclguard (issue 33: a communicator's creation waits
# until the REPORT that registers it is on the checker's socket). `scen inittime` on BENCH_RANKS
# (default 4) ranks, BENCH_RUNS times (default 20) per library, alternated run by run: without
# the shim, and with each library of BENCH_LIBS ("label=path ...", default: this build's). Per
# run: ncclCommInitRank of the world comm as the last rank to arrive sees it (the smallest time
# of the ranks: the others wait for it inside NCCL's bootstrap; for a guarded process this
# includes connecting to the checker), and ncclCommSplit after a barrier (the largest of the
# ranks: the link is up). Prints the median and the 90th percentile of each, in microseconds.
set -u
cd "$(dirname "$0")/.." || exit 2
B=${NCG_BUILD:-build}
case "$B" in /*) ;; *) B=$PWD/$B ;; esac
RUNS=${BENCH_RUNS:-20}
N=${BENCH_RANKS:-4}
LIBS=${BENCH_LIBS:-shim=$B/libncclguard.so}
export LD_LIBRARY_PATH=$B/fakenccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
T=$(mktemp -d /tmp/ncclguard-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
echo "bench-init: $N ranks on $(nproc) CPUs, $RUNS runs each, microseconds (median / p90)"
for r in $(seq "$RUNS"); do
  for l in none=- $LIBS; do
    name=${l%%=*} lib=${l#*=}
    pre=; [ "$lib" != - ] && pre=$lib
    env ${pre:+LD_PRELOAD=$pre} NCCLGUARD_REPORT_DIR=$T timeout 60 "$B/tests/ncg-launch" -n "$N" \
      "$B/tests/checker/scen" inittime >"$T/out" 2>&1 || { echo "$name: run $r failed"; cat "$T/out"; exit 1; }
    sed -nE 's/^scen: rank [0-9]+: ncclCommInitRank ([0-9]+) us, ncclCommSplit ([0-9]+) us$/\1 \2/p' "$T/out" |
      awk '{ if (NR == 1 || $1 < i) i = $1; if ($2 > s) s = $2 } END { print i, s }' >>"$T/$name"
  done
done
for l in none=- $LIBS; do
  name=${l%%=*}
  for col in 1 2; do
    cut -d' ' -f$col "$T/$name" | sort -n >"$T/c"
    awk -v n="$name" -v c=$col '{ v[NR] = $1 } END {
      printf "%-10s %-16s median %6d  p90 %6d\n", n, c == 1 ? "ncclCommInitRank" : "ncclCommSplit",
             v[int((NR + 1) / 2)], v[int(NR * 0.9 + 0.5)] }' "$T/c"
  done
done
