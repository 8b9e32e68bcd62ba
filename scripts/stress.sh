#!/usr/bin/env bash
# The load check of the protocol's end-to-end tests: each runs N times (default 20) while two
# processes burn a CPU each, so that the job's processes, their checker threads and the checker
# are descheduled as on a loaded host. A run alternates the NCCL modes of a script that has two
# (even runs sync, odd async). Prints one line per test (passed/failed of N, the median time) and
# ends with "N passed, N failed"; exits non-zero on any failure, keeping each failed run's log.
#   scripts/stress.sh [-n RUNS] [-b BUILD] [TEST ...]
# Default tests: the five issue #35 names (the relay flood, the tree, liveness, the exit release,
# a late exit). Needs `make all` first.
set -u
cd "$(dirname "$0")/.." || exit 2
runs=20 build=${NCG_BUILD:-build}
while getopts n:b: o; do
  case $o in n) runs=$OPTARG ;; b) build=$OPTARG ;; *) echo "usage: $0 [-n RUNS] [-b BUILD] [TEST ...]" >&2; exit 2 ;; esac
done
shift $((OPTIND - 1))
case $runs in '' | *[!0-9]*) echo "ncclguard: stress: -n wants a number of runs, not '$runs'" >&2; exit 2 ;; esac
[ -f "$build/libncclguard.so" ] || { echo "ncclguard: stress: no $build/libncclguard.so (run make first)" >&2; exit 2; }
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(tests/checker/t_relay_flood.sh tests/checker/t_tree.sh
  tests/checker/t_liveness.sh tests/checker/t_release.sh tests/checker/t_late_exit.sh)
burn() { while :; do :; done; }
burn & b1=$!
burn & b2=$!
trap 'kill $b1 $b2 2>/dev/null' EXIT
keep=$(mktemp -d /tmp/ncg-stress.XXXXXX)
tp=0 tf=0
for t in "${tests[@]}"; do
  [ -f "$t" ] || { echo "ncclguard: stress: no test $t" >&2; tf=$((tf + 1)); continue; }
  modes=$(sed -n 's/^# ncg-modes: *//p' "$t" | head -n 1)
  p=0 f=0 times=()
  for ((i = 0; i < runs; i++)); do
    mode=sync
    case " $modes " in *" async "*) [ $((i % 2)) = 1 ] && mode=async ;; esac
    s=$(date +%s.%N)
    out=$(NCG_BUILD=$build NCG_MODES=$mode bash tests/run.sh "$t" 2>&1)
    rc=$?
    times+=("$(awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')")
    if [ $rc = 0 ] && echo "$out" | grep -q '^1 passed, 0 failed'; then
      p=$((p + 1))
    else
      f=$((f + 1))
      log="$keep/$(basename "$t" .sh).$i.$mode.log"
      echo "$out" >"$log"
      echo "  FAIL $t run $i [$mode]: $log"
    fi
  done
  med=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  echo "$t: $p of $runs passed under two CPU burners (median ${med} s per run)"
  tp=$((tp + p))
  tf=$((tf + f))
done
[ $tf = 0 ] && rm -rf "$keep"
echo "$tp passed, $tf failed"
[ $tf = 0 ]
