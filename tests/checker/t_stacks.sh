# The stack of the stuck thread in error diagnostics (NCCLGUARD_STACKS): off prints none; a
# ncg-modes: sync async
# RANK DIED verdict still shows the survivors' stacks and ends quickly; a thread stuck in a
# p2p group shows ncclGroupEnd; a signal the application owns or blocks is left alone.
. "$NCG_ROOT/tests/checker/lib.sh"
case "${NCG_SANITIZER:-}" in *thread*)
  echo "ThreadSanitizer defers asynchronous signals to its own safe points: no stacks under TSan"; exit 77;; esac
# The block content on every rank (the default, NCCLGUARD_DIAG=auto, prints it on the ranks the
# verdict is about and one other: tests/checker/t_incident.sh)
export NCCLGUARD_DIAG=full
hdr='^ncclguard:   stack of thread [0-9]+ \(issued '

NCCLGUARD_STACKS=0 guarded "$NCG_TMP/off" "$LAUNCH" -n 4 -t 60 "$SCEN" count
expect "$RC" 86 "NCCLGUARD_STACKS=0: launcher status"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH')" 4 "NCCLGUARD_STACKS=0: verdicts"
expect "$(nlines "$hdr")" 0 "NCCLGUARD_STACKS=0: stacks"
expect "$(grep -l '"stack_tid":null,"stack":\[\]' "$REPORTS"/*.json | wc -l)" 4 "NCCLGUARD_STACKS=0: reports without a stack"
rm -f "$REPORTS"/*

# SIGKILL: the survivors are blocked in an AllReduce; the capture works there too and costs
# them little (the launcher sees them exit 86 within a few seconds of the kill)
t0=$(date +%s.%N)
guarded "$NCG_TMP/kill" "$LAUNCH" -n 4 -t 60 "$SCEN" kill
secs=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN{printf "%d", e-s}')
expect "$RC" 137 "kill: launcher status"
expect "$(exited 86)" 3 "kill: survivors that exited 86"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED')" 3 "kill: verdicts"
expect "$(nlines "${hdr}slot [0-9]+ AllReduce\(count=8, float32, sum\)\), innermost first:\$")" 3 "kill: stacks"
expect "$(nlines "^ncclguard:     #[0-9]+ $(stuck_frame ncclAllReduce)")" 3 "kill: frames where the thread waits"
[ "$secs" -lt 20 ] || fail "kill scenario took ${secs}s"
expect "$(grep -l '"stack":\["' "$REPORTS"/*.json | wc -l)" 3 "kill: reports with a stack"
rm -f "$REPORTS"/*

# P2P MISMATCH: the ranks wait in the ncclGroupEnd that launches the send/recv pair
guarded "$NCG_TMP/p2p" "$LAUNCH" -n 4 -t 60 "$SCEN" p2p
expect "$RC" 86 "p2p: launcher status"
n=$(nlines '^ncclguard: VERDICT: P2P MISMATCH')
[ "$n" -ge 1 ] || fail "p2p: no verdict"
expect "$(nlines "${hdr}(Send|Recv)\(.*\), #[0-9]+ of the pair\), innermost first:\$")" "$n" "p2p: stacks"
[ "$(nlines "^ncclguard:     #[0-9]+ $(stuck_frame ncclGroupEnd)")" -ge 1 ] || fail "p2p: no frame where the thread waits (ncclGroupEnd or the synchronization)"
rm -f "$REPORTS"/*

# The application handles SIGRTMIN+7 itself, or blocks it: no capture, no signal sent, the
# diagnostic says why there is no stack, and the process is not killed by a left-over signal
for m in handle block; do
  SCEN_RTSIG=$m guarded "$NCG_TMP/rt$m" "$LAUNCH" -n 4 -t 60 "$SCEN" count
  expect "$RC" 86 "SCEN_RTSIG=$m: launcher status"
  expect "$(exited 86)" 4 "SCEN_RTSIG=$m: ranks that exited 86"
  expect "$(nlines '^ncclguard: VERDICT: MISMATCH')" 4 "SCEN_RTSIG=$m: verdicts"
  expect "$(nlines "$hdr.*innermost first:\$")" 0 "SCEN_RTSIG=$m: stacks"
  why='the application has its own handler on SIGRTMIN\+7'; [ $m = block ] && why='the thread blocks SIGRTMIN\+7'
  expect "$(nlines "$hdr.*\): not captured: $why\$")" 4 "SCEN_RTSIG=$m: why there is no stack"
  expect "$(nlines '^scen: own handler ran')" 0 "SCEN_RTSIG=$m: the app's handler was not called"
done
exit 0
