#!/usr/bin/env bash
# `make bench-release`: what the exit release costs and what it saves, under a launcher that
# kills every rank at the first non-zero exit (ncg-launch -k, as Open MPI's mpirun does). The
# 16-rank incident BENCH_RUNS times (default 7) with the release (NCCLGUARD_EXIT_WAIT_S=5, the
# default) and without it (=0), alternated run by run: the launcher's wall time (the job, the
# verdict, then the first exit and the kill of the rest), and how many reports and full blocks
# survived. The difference of the medians is the time the release adds before the first exit.
set -u
cd "$(dirname "$0")/.." || exit 2
B=${NCG_BUILD:-build}
case "$B" in /*) ;; *) B=$PWD/$B ;; esac
RUNS=${BENCH_RUNS:-7}
N=${BENCH_RANKS:-16}
export LD_LIBRARY_PATH=$B/fakenccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
T=$(mktemp -d /tmp/ncclguard-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
echo "bench-release: $N ranks on $(nproc) CPUs, ncg-launch -k (kill at the first non-zero exit)"
for r in $(seq "$RUNS"); do
  for w in 5 0; do
    rm -rf "$T/rep" && mkdir -p "$T/rep"
    s=$(date +%s%N)
    NCCLGUARD_EXIT_WAIT_S=$w LD_PRELOAD=$B/libncclguard.so NCCLGUARD_REPORT_DIR=$T/rep \
      timeout 60 "$B/tests/ncg-launch" -n "$N" -k "$B/tests/incident" >"$T/out" 2>&1
    e=$(date +%s%N)
    echo "$(( (e - s) / 1000000 )) $(ls "$T/rep" | wc -l) $(grep -c 'differs:$' "$T/out")" >>"$T/w$w"
  done
done
for w in 5 0; do
  label="with the release (NCCLGUARD_EXIT_WAIT_S=5)"; [ $w = 0 ] && label="without (NCCLGUARD_EXIT_WAIT_S=0)  "
  sort -n "$T/w$w" | awk -v l="$label" -v n="$N" '{t[NR]=$1; rep+=($2==n); full+=($3==2)} END {
    m=(NR%2)?t[(NR+1)/2]:(t[NR/2]+t[NR/2+1])/2
    printf "%s: job wall time median %d ms (best %d, worst %d); all %d reports in %d of %d runs, both full blocks in %d\n", l, m, t[1], t[NR], n, rep, NR, full }'
done
