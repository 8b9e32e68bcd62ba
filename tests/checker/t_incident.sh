# The incident (16 ranks on the CPU NCCL): rank 3 enters the epoch-end AllReduce while the
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
