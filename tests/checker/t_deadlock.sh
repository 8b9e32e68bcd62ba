# DEADLOCK: two communicators taken in opposite orders by two ranks (issue 10). Rank 1 calls
# the second comm before world at ITERS/2 while the others keep world first: every comm's
# stream of calls is identical, yet the job never finishes. Every rank prints DEADLOCK naming
# the cycle and exits 86, within 2 s of the inversion: split child and parent (2 and 8 ranks),
# two root comms, a blocking send on world against a collective on the child (2 and 8 ranks).
# Synchronous NCCL: the threads are blocked in the calls (the wait-for graph of threads).
# Asynchronous NCCL: the calls return once enqueued and the hosts block in their stream
# synchronization; the cycle is in the order of the calls on each rank's stream. There, the
# same inversion with the child comm on a second stream is no deadlock (the streams overlap):
# the job ends normally without a verdict.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
# run NAME RANKS INVERT: scen invert under the shim; checks verdicts, exits, detection time.
run() {
  local name=$1 n=$2 how=$3
  NCCLGUARD_DIAG=full SCEN_INVERT=$how guarded "$NCG_TMP/$name" "$LAUNCH" -n "$n" -t 60 "$SCEN" invert 40
  local end; end=$(date +%s.%N)
  expect "$RC" 86 "$name: launcher status"
  expect "$(exited 86)" "$n" "$name: ranks that exited 86"
  [ "$(nlines '^ncclguard: VERDICT: DEADLOCK on comm [0-9a-f]+ \([0-9]+ ranks\): global ranks [0-9,-]+ wait on each other across comms')" -ge "$n" ] ||
    fail "$name: DEADLOCK headline on every rank"
  [ "$(nlines '^ncclguard:   cycle of [0-9]+ \(each waits for the next')" -ge "$n" ] || fail "$name: cycle"
  local stream=''; [ $async = 1 ] && stream=', stream [0-9]+'
  grep -qE "^ncclguard:   global rank 1 \(rank 1 of comm [0-9a-f]+, pid [0-9]+ on .*, thread [0-9]+$stream\): in .* from .*scen" "$OUT" ||
    fail "$name: the cycle names rank 1's call and call site"
  ! grep -qE '^ncclguard: (VERDICT|WARNING): (MISMATCH|LAG|STUCK)' "$OUT" || fail "$name: another verdict"
  local t0; t0=$(grep -oE '^scen: diverge at [0-9.]+' "$OUT" | head -1 | awk '{print $4}')
  # from the inverted call to every rank gone (the launcher returns after the last exit)
  awk -v a="$t0" -v b="$end" -v n="$name" -v s="$SLOW" 'BEGIN { d = b - a; printf "%s: detected and ended in %.2f s\n", n, d; exit !(d < 2.0 * s) }' ||
    fail "$name: more than 2 s from the inversion to every rank exited"
}
run split2 2 split
run split8 8 split
run root2 2 root
run p2p2 2 p2p
run p2p8 8 p2p
grep -q 'in Send(count=8, float32, peer=1) #0 of the pair' "$NCG_TMP/p2p2" || { OUT=$NCG_TMP/p2p2; fail "p2p: the blocked send is named"; }
if [ $async = 1 ]; then
  grep -q 'each rank below enqueued its call before the next line' "$NCG_TMP/split2" ||
    { OUT=$NCG_TMP/split2; fail "async: the diagnostic says the cycle is in the streams' order"; }
  # the same inversion, the child comm on a second stream: the streams overlap, no deadlock
  NCCLGUARD_DIAG=full SCEN_INVERT=streams guarded "$NCG_TMP/streams" "$LAUNCH" -n 2 -t 60 "$SCEN" invert 40
  expect "$RC" 0 "streams: launcher status (two overlapping streams finish)"
  grep -q '^scen: invert done' "$OUT" || fail "streams: the job finished"
  ! grep -qE '^ncclguard: (VERDICT|WARNING):' "$OUT" || fail "streams: a verdict on overlapping streams"
fi
