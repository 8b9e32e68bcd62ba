# ncg-modes: sync async
# NCCL calls captured into CUDA graphs and replayed (issue 16), on the CPU runtime's graphs
# (tests/apps/graphs.c: graph A = AllReduce then ReduceScatter, graph B = the reverse, captured
# in capture_graph_a / capture_graph_b, replayed 100 times, a stream sync every 10):
# replaying A everywhere, and one rank issuing A's calls eagerly, are no verdict; one rank
# replaying B at replay 50 is a MISMATCH at slot 100 on every rank within 2 s, naming the
# replayed calls and the graphs' capture sites; the same against an eager rank; NCCLGUARD=0
# changes nothing. Captured calls are eager calls with or without FAKENCCL_ASYNC (the CPU NCCL
# always defers captured work), so both modes run.
. "$NCG_ROOT/tests/checker/lib.sh"
G=$B/tests/graphs
[ -x "$G" ] && [ -e "$B/fakecuda/libcudart.so.13" ] || { echo "graphs app or CPU CUDA runtime not built"; exit 77; }
export LD_LIBRARY_PATH=$B/fakecuda:$LD_LIBRARY_PATH
guarded "$NCG_TMP/ok" "$LAUNCH" -n 4 -t 60 "$G" --replays 100
expect "$RC" 0 "healthy replays"
expect "$(grep -c 'replays ok' "$OUT")" 4 "healthy replays: every rank verified its data"
no_verdict
guarded "$NCG_TMP/eager" "$LAUNCH" -n 4 -t 60 "$G" --replays 100 --eager 1
expect "$RC" 0 "a rank calling eagerly what the others replay"
no_verdict
env LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD=0 timeout -k 5 60 "$LAUNCH" -n 4 -t 60 "$G" --replays 30 >"$NCG_TMP/off" 2>&1 \
  || { cat "$NCG_TMP/off"; fail "NCCLGUARD=0"; }
! grep -q '^ncclguard:' "$NCG_TMP/off" || fail "NCCLGUARD=0: ncclguard output"

# check_mismatch OUT WHAT: every rank exits 86 within 2 s of the odd replay; the headline names
# slot 100; rank 2's block shows graph B's capture site as a graph replay.
check_mismatch() {
  OUT=$1
  expect "$RC" 86 "$2: launcher status"
  expect "$(exited 86)" 4 "$2: ranks that exited 86"
  expect "$(nlines '^ncclguard: VERDICT: MISMATCH on comm [0-9a-f]+ \(4 ranks\): slot 100: ReduceScatter\(count=256, float32, sum\) on rank 2 vs AllReduce\(count=1024, float32, sum\) on ranks 0-1,3$')" 4 "$2: headlines"
  expect "$(nlines '^ncclguard:     ReduceScatter\(count=256, float32, sum\) +on rank 2  from capture_graph_b\+0x[0-9a-f]+ \(graphs\+0x[0-9a-f]+\) at graphs\.c:[0-9]+ \(in a CUDA graph replay\)$')" 2 "$2: graph B's capture site (full blocks on ranks 0 and 2)"
}
start=$(date +%s.%N)
guarded "$NCG_TMP/odd" "$LAUNCH" -n 4 -t 60 "$G" --replays 100 --odd 2 --at 50
end=$(date +%s.%N)
check_mismatch "$NCG_TMP/odd" "odd replay"
expect "$(nlines '^ncclguard:     AllReduce\(count=1024, float32, sum\) +on ranks 0-1,3  from issue_a\+0x[0-9a-f]+ \(graphs\+0x[0-9a-f]+\) at graphs\.c:[0-9]+ \(in a CUDA graph replay\)$')" 2 "odd replay: graph A's capture site"
at=$(sed -n 's/^replay_at //p' "$OUT")
secs=$(awk -v s="$at" -v e="$end" 'BEGIN{printf "%.2f", e-s}')
awk -v s="$secs" -v f="$SLOW" 'BEGIN{exit !(s < 2.0 * f)}' || fail "odd replay: ranks ended ${secs}s after the odd replay"
echo "odd replay: 4 ranks exited 86 ${secs}s after it"
guarded "$NCG_TMP/odd_eager" "$LAUNCH" -n 4 -t 60 "$G" --replays 100 --odd 2 --at 50 --eager 1
check_mismatch "$NCG_TMP/odd_eager" "odd replay against an eager rank"
echo "graphs ok"
