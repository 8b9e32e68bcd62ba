# The exit release under a launcher that kills every rank at the first non-zero exit (ncg-launch
# -k, as Open MPI's mpirun does): the incident on 4 ranks, several times. Every run ends 86 with
# all 4 reports written and both full blocks (the odd rank 3's and rank 0's) printed, because no
# rank exits before the checker's RELEASE, which comes once every rank said DONE (the bound on a
# rank that never says it: tests/checker/unit_coord.c and relay_unit_exit.c). With
# NCCLGUARD_EXIT_WAIT_S=0 (no release) the first run already fails.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
[ -x "$B/tests/incident" ] || { echo "missing incident app"; exit 77; }
runs=${NCG_RELEASE_RUNS:-4}
# the flat checker, then the relay tree (2 "nodes" of 2: DONE goes up through the node relay,
# RELEASE comes down from the root)
for i in $(seq 1 $((2 * runs))); do
  if [ "$i" -gt "$runs" ]; then export NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=2; fi
  rm -f "$REPORTS"/*
  guarded "$NCG_TMP/out" "$LAUNCH" -n 4 -k -t 60 "$B/tests/incident"
  expect "$RC" 86 "run $i: launcher status"
  expect "$(nlines '^ncclguard: VERDICT: MISMATCH .* on rank 3 vs ReduceScatter\(.*\) on ranks 0-2$')" 4 "run $i: headlines"
  expect "$(nlines '^ncclguard:   slot [0-9]+ \(0-based\) differs:$')" 2 "run $i: full blocks printed (ranks 0 and 3)"
  expect "$(nlines '^ncclguard:   action: abort \(exit status 86\); report: ')" 4 "run $i: action lines"
  expect "$(ls "$REPORTS" | grep -c '^ncclguard-report\..*\.json$')" 4 "run $i: report files"
  if [ $tsan = 0 ]; then # the odd rank's own stack made it out (TSan captures none)
    awk '/comm rank 3,/ { on = 1 } on { print } on && /^ncclguard:   action:/ { exit }' "$OUT" |
      grep -qE '^ncclguard:     #[0-9]+ ' || fail "run $i: rank 3's full block has no stack"
  fi
  [ "$(exited 86)" -ge 1 ] || fail "run $i: no rank exited 86 (the launcher killed the rest then)"
done
unset NCCLGUARD_TREE NCG_LAUNCH_PER_NODE
# Two verdicts on one process, one of their members late (tests/apps/tworelease.c): rank 2 is
# in W and S1 (RANK EXITED on both, rank 3 having returned); rank 1, stopped for 2 s, prints W's
# diagnostic late. The release of S1 must not let rank 2 exit (the launcher would kill rank 1):
# all 3 reports, rank 1's among them.
for mode in flat tree; do
  [ $mode = tree ] && export NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=2
  rm -f "$REPORTS"/*
  guarded "$NCG_TMP/two" "$LAUNCH" -n 4 -k -t 60 "$B/tests/tworelease"
  [ "$RC" = 86 ] || fail "two verdicts ($mode): launcher status $RC"
  expect "$(ls "$REPORTS" | grep -c '^ncclguard-report\..*\.json$')" 3 "two verdicts ($mode): reports of ranks 0-2"
  expect "$(nlines '^ncclguard:   this process \(comm rank 1, global rank 1,')" 1 "two verdicts ($mode): rank 1 printed"
done
echo "ok ($runs runs flat, $runs through the tree; two verdicts, a late member)"
