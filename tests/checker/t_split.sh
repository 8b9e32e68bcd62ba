# A divergence only inside one split subgroup (even ranks: rank 2 calls Broadcast where rank 0
# ncg-modes: sync async
# calls AllReduce). Warn mode: only the even half's ranks print, about the 2-rank child comm;
# the odd half and the world comm are unaffected (the odd ranks finish; the even ones stay
# blocked, as NCCL would, until the launcher's time limit).
. "$NCG_ROOT/tests/checker/lib.sh"
NCCLGUARD_ACTION=warn guarded "$NCG_TMP/out" "$LAUNCH" -n 4 -t 8 "$SCEN" split
expect "$RC" 124 "launcher status (even half blocked)"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH on comm [0-9a-f]+ \(2 ranks\): slot 100: Broadcast\(count=8, float32, root=0\) on global rank 2 \(comm rank 1\) vs AllReduce\(count=8, float32, sum\) on global rank 0 \(comm rank 0\)$')" 2 "headline (launcher ranks, issue 36)"
expect "$(nlines '^ncclguard: VERDICT:')" 2 "verdict count (world comm unaffected)"
expect "$(printers)" "0 2 " "ranks that printed"
expect "$(nlines '^scen: rank (1|3) done$')" 2 "odd half finished"
expect "$(nlines 'action: warn')" 2 "warn action"
# abort mode: the even half exits 86
guarded "$NCG_TMP/out2" "$LAUNCH" -n 4 -t 30 "$SCEN" split
grep -qE '^ncg-launch: rank 0 exited with status 86$' "$OUT" || fail "rank 0 not 86"
grep -qE '^ncg-launch: rank 2 exited with status 86$' "$OUT" || fail "rank 2 not 86"
