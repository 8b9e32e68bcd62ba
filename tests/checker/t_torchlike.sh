# The PyTorch-shaped asynchronous app (tests/apps/torchlike.c) under the shim: its healthy runs
# end with exit 0 and no verdict (DDP, FSDP, nonblocking and scalable init, two process groups,
# 8 ranks, thousands of collectives with the host running ahead, a rank pausing 3 s with all its
# work complete); its faults end every rank with exit 86 and the verdict (the incident, a
# bucket-size mismatch, a killed, a frozen and an early-exiting rank); NCCLGUARD_ACTION=fail ends it through its own watchdog
# with its own error (exit 6), not 86.
# ncg-modes: async
. "$NCG_ROOT/tests/checker/lib.sh"
TL=$B/tests/torchlike
[ -x "$TL" ] || { echo "torchlike not built (needs /usr/local/cuda's nccl.h and libcudart.so.13)"; exit 77; }
for args in "--steps 1200 --mode both" "--steps 300 --mode ddp --groups 1 --nonblocking" \
            "--steps 300 --mode fsdp --scalable" "--steps 200 --sync-every 32 --pause 2:3"; do
  guarded "$NCG_TMP/h" "$LAUNCH" -n 8 -t 100 "$TL" $args
  expect "$RC" 0 "healthy ($args): launcher status"
  no_verdict
  grep -qE '^torchlike: 8 ranks, [0-9]+ collectives per rank ok$' "$OUT" || fail "healthy ($args): no ok line"
done
# the host ran ahead of the device by more than 50 collectives at a synchronization (32 steps
# of 6 collectives): the counts the checker compared differed by that much without a verdict
n=$(grep -oE '^torchlike: 8 ranks, [0-9]+' "$OUT" | grep -oE '[0-9]+$' | tail -n 1)
[ "${n:-0}" -ge 1000 ] || fail "the paused run made $n collectives per rank"

# the incident: rank 3 runs out of data at step 40 and enters the barrier's all-reduce while the
# others enqueue the next steps' bucket all-reduces; its host then waits in a synchronize
t0=$(date +%s.%N)
guarded "$NCG_TMP/inc" "$LAUNCH" -n 8 -t 60 "$TL" --steps 80 --fault incident --fault-step 40
secs=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')
expect "$RC" 86 "incident: launcher status"
expect "$(exited 86)" 8 "incident: ranks that exited 86"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH .*: AllReduce\(count=1, float32, sum\) on rank 3 vs AllReduce\(count=256, float32, sum\) on ranks 0-2,4-7$')" 8 "incident: headline"
awk -v s="$secs" 'BEGIN{exit !(s < 10)}' || fail "incident took $secs s"

guarded "$NCG_TMP/cnt" "$LAUNCH" -n 4 -t 60 "$TL" --steps 80 --fault count --fault-rank 1 --fault-step 20
expect "$RC" 86 "count: launcher status"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH .*AllReduce\(count=257, float32, sum\) on rank 1 vs AllReduce\(count=256, float32, sum\) on ranks 0,2-3$')" 4 "count: headline"

guarded "$NCG_TMP/kill" "$LAUNCH" -n 4 -t 60 "$TL" --steps 80 --fault kill --fault-rank 2 --fault-step 20
expect "$RC" 137 "kill: launcher status"
expect "$(exited 86)" 3 "kill: survivors that exited 86"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED .*rank 2 died')" 3 "kill: verdicts"

# a rank leaves early (clean exit) / freezes (SIGSTOP): RANK EXITED / RANK DIED on the others
guarded "$NCG_TMP/exit" "$LAUNCH" -n 4 -t 60 "$TL" --steps 80 --fault exit --fault-rank 2 --fault-step 20
expect "$(exited 86)" 3 "exit: the others exited 86"
expect "$(nlines '^ncclguard: VERDICT: RANK EXITED .*rank 2 exited while ranks? [0-9,-]+ issued calls it will never match$')" 3 "exit: verdicts"
rm -f "$REPORTS"/*
NCCLGUARD_HEARTBEAT_TIMEOUT_S=2 guarded "$NCG_TMP/stop" "$LAUNCH" -n 4 -t 12 "$TL" --steps 80 --fault stop --fault-rank 2 --fault-step 20
expect "$RC" 124 "stop: launcher status (the stopped rank never ends)"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED .*rank 2 died: .*silent for')" 3 "stop: verdicts"
expect "$(grep -l '"exit_status":86' "$REPORTS"/*.json | wc -l)" 3 "stop: reports of ranks that aborted"

# fail: the communicator is failed and revoked; the app's watchdog sees the async error and
# ends the process with its own error
NCCLGUARD_ACTION=fail guarded "$NCG_TMP/fail" "$LAUNCH" -n 4 -t 60 "$TL" --steps 80 --fault incident --fault-step 20
expect "$RC" 6 "fail: launcher status (the app's watchdog)"
expect "$(exited 6)" 4 "fail: ranks ended by their own watchdog"
expect "$(nlines '^torchlike: rank [0-3]: \[watchdog\] process group default_pg: NCCL error: remote process exited or there was a network error')" 4 "fail: the app's own error"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH .*on rank 3 vs')" 4 "fail: verdicts"
# (a rank may also see the checker's host end by its own watchdog first: RANK DIED on the
# second process group, also under action fail)
[ "$(nlines 'action: fail')" -ge 4 ] || fail "fail: action lines"
exit 0
