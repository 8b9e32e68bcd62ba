# The hangs a new user's programs showed that ncclguard once missed (tests/checker/shapes.c):
# a send/recv peer that left or died, send/recv-only deadlocks, a collective against a
# send/recv, a thread's rank that destroys its comm early; each must end with the right verdict
# on every rank still waiting, naming the ranks and the waiting call's site with file:line.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
SHAPES=$B/tests/checker/shapes
[ -x "$SHAPES" ] || { echo "missing $SHAPES (run make first)"; exit 77; }
# shape NAME NRANKS KIND WAITERS: a guarded run whose ranks WAITERS (a regex of global ranks)
# print the verdict KIND and exit 86, well before the launcher's 60 s.
shape() {
  local name=$1 n=$2 kind=$3 waiters=$4 t0 t1
  rm -f "$REPORTS"/*.json
  t0=$(date +%s%N)
  guarded "$NCG_TMP/$name.out" "$LAUNCH" -n "$n" -t 60 "$SHAPES" "$name"
  t1=$(date +%s%N)
  [ "$RC" != 124 ] || fail "$name: hung until the launcher's timeout"
  [ $(((t1 - t0) / 1000000)) -lt $((10000 * SLOW)) ] || fail "$name: took $(((t1 - t0) / 1000000)) ms"
  nlines "^ncclguard: VERDICT: $kind on comm [0-9a-f]+ " >/dev/null
  [ "$(nlines "^ncclguard: VERDICT: $kind on comm [0-9a-f]+ ")" -ge 1 ] || fail "$name: no $kind verdict"
  local p
  p=$(printers)
  echo "$p" | grep -qE "(^| )($waiters)( |$)" || fail "$name: printers '$p', want ranks $waiters"
  for r in $(echo "$waiters" | tr '|' ' '); do
    grep -qE "^ncg-launch: rank $r exited with status 86$" "$OUT" || fail "$name: rank $r did not exit 86"
  done
  echo "$name: $kind in $(((t1 - t0) / 1000000)) ms"
}
# 1. A send/recv peer gone: the waiting send is named, with its file:line.
shape p2pexit 2 'RANK EXITED' 0
grep -qE '^ncclguard:   left after 4 collective calls; rank 0 waits in its send #0 to it, which it never received$' "$OUT" ||
  fail "p2pexit: the waiting send is not named"
grep -qE '^ncclguard:     waiting: Send\(count=8, float32, peer=1\) +on rank 0  from main\+0x[0-9a-f]+ \(shapes\+0x[0-9a-f]+\) at shapes\.c:[0-9]+$' "$OUT" ||
  fail "p2pexit: no call site with file:line"
grep -qE '"call_site":"main\+0x[0-9a-f]+ \(shapes\+0x[0-9a-f]+\) at shapes\.c:[0-9]+"' "$REPORTS"/*.json || fail "p2pexit: report"
shape p2perr 2 'RANK EXITED' 0
SHAPE_DELAY_MS=500 shape p2pcrash 2 'RANK DIED' 0
# 2. Send/recv-only deadlocks.
shape recvrecv 2 DEADLOCK '0|1'
# 6. the cycle's lines name each process's own call site with file:line
grep -qE '^ncclguard:   global rank [01] \(rank [01] of comm [0-9a-f]+, pid [0-9]+ on [^)]*\): in Recv\(count=8, float32, peer=[01]\) #0 of the pair from main\+0x[0-9a-f]+ \(shapes\+0x[0-9a-f]+\) at shapes\.c:[0-9]+;' "$OUT" ||
  fail "recvrecv: the cycle names no call site with file:line"
shape sendsend 2 DEADLOCK '0|1'
shape dupsend 2 DEADLOCK '0|1'
shape gatherroot 3 'RANK EXITED' '0|2'
# 3. A collective against a send/recv (asynchronous mode: through rank 1's host wait).
shape collp2p 2 DEADLOCK '0|1'
# 5. Several ranks in one process: thread 1 destroys its comm one call early.
rm -f "$REPORTS"/*.json
guarded "$NCG_TMP/threads.out" "$SHAPES" threads
expect "$RC" 86 "threads: exit status"
grep -qE '^ncclguard: VERDICT: RANK EXITED on comm [0-9a-f]+ \(2 ranks\): rank 1 exited ' "$OUT" ||
  fail "threads: no RANK EXITED of rank 1"
rm -f "$REPORTS"/*.json
guarded "$NCG_TMP/threadsp2p.out" "$SHAPES" threadsp2p
expect "$RC" 86 "threadsp2p: exit status"
grep -qE '^ncclguard: VERDICT: P2P MISMATCH on comm [0-9a-f]+ \(2 ranks\): Send\(count=8, float32, peer=1\) on rank 0 vs Recv\(count=9, float32, peer=0\) on rank 1$' "$OUT" ||
  fail "threadsp2p: no P2P MISMATCH"
echo "all shapes caught"
