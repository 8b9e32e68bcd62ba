# Ranks users know (issue 36, item 2): the headline names launcher (global) ranks, with the
# communicator's ranks beside them where they differ. The scenarios run on a child of the world
# communicator whose ranks are reversed (ncclCommSplit with key -rank: comm rank 3-r is launcher
# rank r); launcher rank 1 (comm rank 2) diverges. It said "on rank 2", the comm rank, while
# the launcher's log and the user's code know that process as rank 1.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
head='^ncclguard: VERDICT: MISMATCH on comm [0-9a-f]+ \(4 ranks\): slot 10: AllReduce\(count=9, float32, sum\) on global rank 1 \(comm rank 2\) vs AllReduce\(count=8, float32, sum\) on global ranks 0,2-3 \(comm ranks 0-1,3\)$'
SCEN_REVERSED=1 guarded "$NCG_TMP/count" "$LAUNCH" -n 4 -t 30 "$SCEN" count 20
expect "$(exited 86)" 4 "count: every rank ends"
expect "$(nlines "$head")" 4 "count: the headline names launcher rank 1, comm rank 2 beside it"
expect "$(nlines '^ncclguard:   communicator [0-9a-f]+, 4 ranks, global ranks by comm rank \[3,2,1,0\]$')" 2 "count: the map in the full blocks"
# the same job on the world communicator: comm ranks are launcher ranks, the headline as before
guarded "$NCG_TMP/plain" "$LAUNCH" -n 4 -t 30 "$SCEN" count 20
expect "$(nlines '^ncclguard: VERDICT: MISMATCH on comm [0-9a-f]+ \(4 ranks\): slot 10: AllReduce\(count=9, float32, sum\) on rank 1 vs AllReduce\(count=8, float32, sum\) on ranks 0,2-3$')" 4 "plain: comm ranks alone"
# RANK EXITED: launcher rank 1 destroys the reversed comm and returns early
SCEN_REVERSED=1 SCEN_VICTIM=1 guarded "$NCG_TMP/early" "$LAUNCH" -n 4 -t 30 "$SCEN" early 20
expect "$RC" 86 "early: launcher status"
[ "$(nlines '^ncclguard: VERDICT: RANK EXITED on comm [0-9a-f]+ \(4 ranks\): global rank 1 \(comm rank 2\) exited while global ranks? [0-9,-]+ \(comm ranks? [0-9,-]+\) issued calls it will never match$')" -ge 3 ] ||
  fail "early: the RANK EXITED headline names launcher rank 1 on the 3 others"
echo "global ranks ok"
