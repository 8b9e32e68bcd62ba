# NCCL 2.30 under ncclguard (tests/fakenccl/tests/signals.c): put/signal/wait exchanges, a
# grown communicator, a 3 s suspension with 1 s STUCK/LAG thresholds run healthy and silent; a
# wait for a signal that never comes (the sender exits, or destroys the communicator; two ranks
# each waiting for the other first) ends with a verdict within 2 s of the wait, naming both
# sides and the waiting calls' sites; the grown comm's old and new members are compared; the
# device API's line comes once per process. The matcher's signal rules: signal_test.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
SIG=$B/tests/fakenccl/signals
[ -x "$SIG" ] && [ -x "$B/tests/checker/signal_test" ] || { echo "missing signals/signal_test (make)"; exit 77; }
"$B/tests/checker/signal_test" || fail "signal_test"
silent() { # NAME: no ncclguard line at all, every rank ok
  expect "$RC" 0 "$1: exit status"
  ! grep -q '^ncclguard:' "$OUT" || fail "$1: ncclguard spoke"
}
guarded "$NCG_TMP/exchange.out" "$LAUNCH" -n 3 -t 60 "$SIG" exchange 20
silent exchange
expect "$(grep -c ': 20 exchanges ok$' "$OUT")" 3 "exchange: ranks ok"
guarded "$NCG_TMP/grow.out" "$LAUNCH" -n 3 -t 60 "$SIG" grow
silent grow
NCCLGUARD_STUCK_WARN_S=1 NCCLGUARD_LAG_WARN_S=1 guarded "$NCG_TMP/suspend.out" "$LAUNCH" -n 2 -t 60 "$SIG" suspend 3
silent suspend
# The grown comm is compared: the new rank passes another count at its second all-reduce.
guarded "$NCG_TMP/growmm.out" "$LAUNCH" -n 3 -t 60 "$SIG" grow mismatch
grep -qE '^ncclguard: VERDICT: MISMATCH on comm [0-9a-f]+ \(3 ranks\)' "$OUT" || fail "grow mismatch: no MISMATCH"
grep -qE 'AllReduce\(count=33, float32, sum\)' "$OUT" || fail "grow mismatch: the new rank's call not named"
# hang NAME KIND: the verdict within 2 s of the first wait, both sides and the waits' sites named
hang() {
  local name=$1 kind=$2 t1 tw ms
  guarded "$NCG_TMP/$name.out" "$LAUNCH" -n 2 -t 60 "$SIG" "$name"
  t1=$(date +%s.%N)
  [ "$RC" != 124 ] || fail "$name: hung until the launcher's timeout"
  tw=$(grep -oE 'waits at [0-9.]+' "$OUT" | head -n 1 | awk '{print $3}')
  [ -n "$tw" ] || fail "$name: no wait stamp"
  ms=$(awk -v a="$tw" -v b="$t1" 'BEGIN {printf "%d", (b - a) * 1000}')
  [ "$ms" -lt $((2000 * SLOW)) ] || fail "$name: verdict $ms ms after the wait"
  grep -qE "^ncclguard: VERDICT: $kind on comm [0-9a-f]+ \(2 ranks\)" "$OUT" || fail "$name: no $kind"
  # a signal's ordinal reads as its k on the channel, never the encoded pair number
  ! grep -qE '#[0-9]{6,}' "$OUT" || fail "$name: an encoded pair number shown: $(grep -oE '[^ ]* #[0-9]{6,}[^;]*' "$OUT" | head -n 2)"
  echo "$name: $kind $ms ms after the wait"
}
for how in gone destroy; do
  hang $how 'RANK EXITED'
  grep -qE '^ncclguard: VERDICT: RANK EXITED on comm [0-9a-f]+ \(2 ranks\): rank 1 exited while rank 0 ' "$OUT" ||
    fail "$how: the sender is not named"
  grep -qE '^ncclguard:     waiting: WaitSignal\(signals=1, peer=1, sigIdx=0, ctx=0, up to #1\) +on rank 0  from [a-z_]+\+0x[0-9a-f]+ \(signals\+0x[0-9a-f]+\) at signals\.c:[0-9]+$' "$OUT" ||
    fail "$how: the waiting call and its site are not named"
done
hang cycle DEADLOCK
for r in 0 1; do
  grep -qE "^ncclguard:   global rank $r \(rank $r of comm [0-9a-f]+, pid [0-9]+ on [^)]*\): in WaitSignal\(signals=1, peer=$((1 - r)), sigIdx=0, ctx=0, up to #1\).* from [a-z_]+\+0x[0-9a-f]+ \(signals\+0x[0-9a-f]+\) at signals\.c:[0-9]+;" "$OUT" ||
    fail "cycle: rank $r's wait and site not named"
done
# The device API: one line per process, once, on the comm it was used on.
guarded "$NCG_TMP/devapi.out" "$LAUNCH" -n 2 -t 60 "$SIG" devapi
expect "$RC" 0 "devapi: exit status"
expect "$(grep -c '^ncclguard: ncclDevCommCreate on communicator [0-9a-f]* (rank [01] of 2): traffic its kernels initiate through the device API is not seen by ncclguard' "$OUT")" 2 "devapi: lines"
expect "$(grep -c '^ncclguard:' "$OUT")" 2 "devapi: ncclguard lines"
echo "ok"
