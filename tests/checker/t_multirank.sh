# Several comm ranks in one process. (1) NCCL's multiple-devices-per-thread pattern (nccl-tests
# -g 2): 2 processes hold comm ranks 0-1 and 2-3, initialized in one group, each step one group
# of a call per comm; comm rank 3 diverges. Each process speaks for each rank it holds, with its
# own identity, and the process holding the odd rank 3 prints rank 3's full block; one report
# per process names its ranks. (2) ncclCommInitAll (one process, 4 comms): the process's own
# checker compares them; a divergence is a MISMATCH as across processes (it used to hang with no
# output). Healthy runs of both: exit 0, no ncclguard line.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
MD=$B/tests/multidev
[ -x "$MD" ] || { echo "missing multidev app"; exit 77; }
guarded "$NCG_TMP/h1" "$LAUNCH" -n 2 -t 60 "$MD" ranks
expect "$RC" 0 "healthy, 2 ranks per process: status"
expect "$(grep -c '^ncclguard' "$OUT")" 0 "healthy, 2 ranks per process: ncclguard lines"
expect "$(grep -c '^multidev: done' "$OUT")" 2 "healthy, 2 ranks per process: both done"

MULTIDEV_ODD=3 guarded "$NCG_TMP/o1" "$LAUNCH" -n 2 -t 60 "$MD" ranks
expect "$RC" 86 "odd comm rank 3: status"
expect "$(exited 86)" 2 "odd comm rank 3: processes that exited 86"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH on comm [0-9a-f]+ \(4 ranks\): slot 20: Broadcast\(count=64, float32, root=0\) on global rank 1 \(comm rank 3\) vs AllReduce\(count=64, float32, sum\) on global ranks 0-1 \(comm ranks 0-2\)$')" 4 "odd comm rank 3: a headline per comm rank (its process: launcher rank 1)"
for r in 0 1 2 3; do
  g=$((r / 2))
  expect "$(nlines "^ncclguard:   this process \\(comm rank $r, global rank $g, pid [0-9]+ ")" 1 "comm rank $r speaks once, as itself"
done
expect "$(nlines '^ncclguard:   slot 20 \(0-based\) differs:$')" 2 "full blocks (ranks 0 and 3)"
# rank 3's block: from its headline (the line before its "this process") to its action line
b3=$(awk '/^ncclguard: VERDICT:/ { buf = "" } { buf = buf $0 "\n" } /this process \(comm rank 3,/ { on = 1 } on && /^ncclguard:   action:/ { printf "%s", buf; exit }' "$OUT")
echo "$b3" | grep -q 'slot 20 (0-based) differs' || fail "comm rank 3's own block is not the full one"
echo "$b3" | grep -q 'this process (comm rank 3, global rank 1, pid [0-9]* on [^)]*): slot 20 Broadcast' || fail "comm rank 3's own call"
expect "$(ls "$REPORTS" | grep -c '^ncclguard-report\..*\.json$')" 2 "one report per process"
expect "$(grep -l '"ranks":\[2,3\]' "$REPORTS"/*.json | wc -l)" 1 "the report of the process holding ranks 2-3 names them"
expect "$(grep -l '"ranks":\[0,1\]' "$REPORTS"/*.json | wc -l)" 1 "the report of the process holding ranks 0-1 names them"
grep -l '"ranks":\[2,3\]' "$REPORTS"/*.json | xargs grep -q '"rank":3,' || fail "the report of ranks 2-3 is rank 3's (the odd one)"
# `ncclguard report` counts the processes and the ranks apart (issue 36: "2 rank reports")
"$B/ncclguard" report "$REPORTS" >"$NCG_TMP/merged" 2>&1 || fail "ncclguard report"
grep -q ': 2 reports (one per process), 1 verdict$' "$NCG_TMP/merged" || fail "report: 2 reports of processes"
grep -q '^  reports from 2 processes: ranks 0-3 (all 4 ranks)$' "$NCG_TMP/merged" || fail "report: 2 processes, 4 ranks"

rm -f "$REPORTS"/*
guarded "$NCG_TMP/h2" env MULTIDEV_PER_PROC=4 "$MD" initall
expect "$RC" 0 "healthy InitAll: status"
expect "$(grep -c '^ncclguard' "$OUT")" 0 "healthy InitAll: ncclguard lines"

MULTIDEV_ODD=2 MULTIDEV_PER_PROC=4 guarded "$NCG_TMP/o2" timeout 30 "$MD" initall
expect "$RC" 86 "InitAll, odd comm rank 2: status (it hung before)"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH on comm [0-9a-f]+ \(4 ranks\): slot 20: Broadcast\(count=64, float32, root=0\) on rank 2 vs AllReduce\(count=64, float32, sum\) on ranks 0-1,3$')" 4 "InitAll: a headline per comm rank"
expect "$(nlines '^ncclguard:   this process \(comm rank [0-3], pid [0-9]+ ')" 4 "InitAll: every comm rank speaks"
expect "$(nlines '^ncclguard:   slot 20 \(0-based\) differs:$')" 2 "InitAll: full blocks (ranks 0 and 2)"
expect "$(grep -l '"ranks":\[0,1,2,3\]' "$REPORTS"/*.json | wc -l)" 1 "InitAll: one report naming the 4 ranks"
# a hang inside NCCL between the process's own communicators (the CPU NCCL stalls slot 30 of the
# first comm of the process whose RANK is 1): STUCK, as across processes
rm -f "$REPORTS"/*
RANK=1 FAKENCCL_STALL=1:30 NCCLGUARD_STUCK_WARN_S=1 NCCLGUARD_STUCK_ABORT_S=2 MULTIDEV_PER_PROC=4 \
  guarded "$NCG_TMP/s2" timeout 30 "$MD" initall 60
expect "$RC" 86 "InitAll, stalled: status"
# (asynchronous: completion is sampled, so the headline gives a range that holds slot 30)
expect "$(nlines '^ncclguard: VERDICT: STUCK on comm [0-9a-f]+ \(4 ranks\): slot [0-9]+ AllReduce\(count=64, float32, sum\) issued identically by all 4 ranks')" 4 "InitAll, stalled: STUCK per comm rank"
echo ok
