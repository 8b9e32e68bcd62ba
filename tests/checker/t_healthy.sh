# No false positive: long healthy runs (thousands of calls on several comms, a second thread on
# ncg-modes: sync async
# its own comm, groups, a p2p ring, rank 0 pausing ~10 check intervals before a barrier) exit 0
# with no ncclguard verdict or warning; also at a fast check interval (20 ms).
. "$NCG_ROOT/tests/checker/lib.sh"
guarded "$NCG_TMP/out" "$LAUNCH" -n 4 -t 120 "$SCEN" healthy 1500
expect "$RC" 0 "healthy run"
no_verdict
! grep -q '^ncclguard:' "$OUT" || fail "ncclguard printed something on a healthy run"
NCCLGUARD_INTERVAL_MS=20 guarded "$NCG_TMP/out2" "$LAUNCH" -n 6 -t 120 "$SCEN" healthy 800
expect "$RC" 0 "healthy run, 20 ms interval"
no_verdict
! grep -q '^ncclguard:' "$OUT" || fail "ncclguard printed something on a healthy run"
# the CPU NCCL's own mixed workload (AlltoAll, Broadcast, split comms, a second thread's p2p)
if [ -x "$B/tests/mixed" ]; then
  guarded "$NCG_TMP/out3" "$LAUNCH" -n 4 -t 120 "$B/tests/mixed" --iters 1000
  expect "$RC" 0 "mixed workload"
  ! grep -q '^ncclguard:' "$OUT" || fail "ncclguard printed something on the mixed workload"
  # and its --mismatch variant is diagnosed (the last rank's world AllReduce count differs)
  guarded "$NCG_TMP/out4" "$LAUNCH" -n 4 -t 60 "$B/tests/mixed" --iters 300 --mismatch 150
  expect "$RC" 86 "mixed --mismatch"
  expect "$(nlines '^ncclguard: VERDICT: MISMATCH .* on rank 3 vs AllReduce')" 4 "mixed --mismatch headline"
fi
