# A rank that crashes right after creating its communicator: scen crashinit, rank 1
# SIGKILLs itself after ncclCommInitRank and one AllReduce. A process used to register its
# communicators with the checker in its first periodic REPORT, up to an interval (100 ms) after
# init: a rank killed before was never a member its checker knew, and its peers waited for it
# forever without a verdict (3 runs of 3 hung before the change). Now init returns once the
# REPORT that registers the comm is written to the checker's socket: every surviving rank gets
# RANK DIED within 3 s and exits 86. Five runs.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
for k in 1 2 3 4 5; do
  guarded "$NCG_TMP/crash$k" "$LAUNCH" -n 4 -t 30 "$SCEN" crashinit
  end=$(date +%s.%N)
  expect "$RC" 137 "run $k: launcher status (first rank: killed)"
  expect "$(exited 86)" 3 "run $k: survivors that exited 86"
  expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \(4 ranks\): rank 1 died: pid [0-9]+ on .*connection lost without goodbye')" 3 "run $k: RANK DIED on every survivor"
  t0=$(grep -oE '^scen: diverge at [0-9.]+' "$OUT" | head -1 | awk '{print $4}')
  [ -n "$t0" ] || fail "run $k: no diverge mark"
  awk -v a="$t0" -v b="$end" -v k="$k" -v s="$SLOW" 'BEGIN { d = b - a; printf "run %s: ended %.2f s after the kill\n", k, d; exit !(d < 3.0 * s) }' ||
    fail "run $k: more than 3 s from the kill to the end"
done
echo "crash init ok"
