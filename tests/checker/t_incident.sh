# The incident (16 ranks on the CPU NCCL): rank 3 enters the epoch-end AllReduce while the
# ncg-modes: sync async
# others are in a ReduceScatter at the same slot. Default action abort: every rank prints the
# diagnostic, writes its report and exits 86; the fixed program completes under the shim.
. "$NCG_ROOT/tests/checker/lib.sh"
[ -x "$B/tests/incident" ] || { echo "missing incident app"; exit 77; }
guarded "$NCG_TMP/out" "$LAUNCH" -n 16 -t 60 "$B/tests/incident"
expect "$RC" 86 "launcher status"
expect "$(exited 86)" 16 "ranks that exited 86"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH .*slot [0-9]+: AllReduce\(count=1, float32, sum\) on rank 3 vs ReduceScatter\(count=64, bfloat16, sum\) on ranks 0-2,4-15$')" 16 "diagnostic headline"
expect "$(nlines '^ncclguard:   action: abort \(exit status 86\); report: ')" 16 "action lines"
expect "$(ls "$REPORTS" | grep -c '^ncclguard-report\..*\.json$')" 16 "report files"
grep -q '"verdict":"MISMATCH"' "$REPORTS"/ncclguard-report.*.json || fail "report content"
# every rank shows the stack of its stuck thread (NCCLGUARD_STACKS=1 is the default): rank 3
# inside the barrier's AllReduce, the others inside the ReduceScatter, both called from main
expect "$(nlines '^ncclguard:   stack of thread [0-9]+ \(issued slot [0-9]+ (AllReduce|ReduceScatter|AllGather)\(.*\)\), innermost first:$')" 16 "stack headers"
# block R: rank R's diagnostic (one write(2) per rank, so its lines are contiguous)
block() { awk -v r="comm rank $1," 'index($0, r) { on = 1 } on { print } on && /^ncclguard:   action:/ { exit }' "$OUT"; }
# main is not exported: libunwind (when there) names it, else the module offset remains
caller='main\+0x[0-9a-f]+ \(incident\+0x'
ldconfig -p 2>/dev/null | grep -q 'libunwind\.so\.8 ' || caller='incident\+0x'
for r in 0 3; do
  b=$(block $r)
  want=ncclReduceScatter; [ $r = 3 ] && want=ncclAllReduce
  echo "$b" | grep -qE "^ncclguard:     #[0-9]+ $(stuck_frame $want)" || fail "rank $r: no frame where it waits ($want or the synchronization)"
  echo "$b" | grep -qE "^ncclguard:     #[0-9]+ $caller" || fail "rank $r: no frame in main"
  echo "$b" | grep -qE '^ncclguard:     #0 ' || fail "rank $r: no innermost frame"
  [ "$(echo "$b" | grep -cE '^ncclguard:     #[0-9]+ ')" -le 16 ] || fail "rank $r: more than 16 frames"
done
! block 3 | grep -qE ' ncclReduceScatter\+' || fail "rank 3's stack shows a ReduceScatter"
# asynchronous: the host ran ahead of the device; the others enqueued further steps before
# blocking in their synchronization, while rank 3 waits in the barrier's
if [ $async = 1 ]; then
  block 0 | grep -qE 'stack of thread [0-9]+ \(issued slot (49|5[0-9]) ' || fail "rank 0 did not run ahead of slot 48"
fi
expect "$(grep -l '"stack":\["' "$REPORTS"/ncclguard-report.*.json | wc -l)" 16 "reports with a stack"
# aborted ranks leave their segment in VERDICT state for `ncclguard status` (small: only the
# pages in use are reserved); the test runner reclaims them with `ncclguard clean`
pids=$(grep -oE 'this process \(comm rank [0-9]+, global rank [0-9]+, pid [0-9]+' "$OUT" | sed 's/.*pid //')
expect "$(echo "$pids" | grep -c .)" 16 "pids in diagnostics"
for p in $pids; do
  seg=/dev/shm/ncclguard.$(id -u).$p
  [ -e "$seg" ] || fail "segment of aborted pid $p is gone"
  [ $(( $(stat -c '%b*%B' "$seg") )) -le 262144 ] || fail "segment of pid $p holds more than 256 KiB"
done
if [ -x "$B/ncclguard" ]; then
  "$B/ncclguard" status --no-clean >"$NCG_TMP/status" 2>&1
  grep -q "MISMATCH" "$NCG_TMP/status" || { cat "$NCG_TMP/status"; fail "status after the abort shows no verdict"; }
fi
# every stderr line of ncclguard starts with the prefix (no stray lines)
! grep -v -E '^(ncclguard: |incident: |ncg-launch: )' "$OUT" | grep -q . || fail "unprefixed output"
guarded "$NCG_TMP/out2" "$LAUNCH" -n 16 -t 60 "$B/tests/incident" --fix
expect "$RC" 0 "fixed incident"
no_verdict
