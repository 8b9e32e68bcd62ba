# A p2p size mismatch in a pipeline ring: rank 2 sends 33 elements to rank 3, which receives 32.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
guarded "$NCG_TMP/out" "$LAUNCH" -n 4 -t 60 "$SCEN" p2p
expect "$RC" 86 "launcher status"
expect "$(exited 86)" 4 "ranks that exited 86"
expect "$(nlines '^ncclguard: VERDICT: P2P MISMATCH on comm [0-9a-f]+ \(4 ranks\): Send\(count=33, float32, peer=3\) on rank 2 vs Recv\(count=32, float32, peer=2\) on rank 3$')" 4 "headline"
grep -q '"verdict":"P2P_MISMATCH"' "$REPORTS"/*.json || fail "report"
# Each side's report names its own call's site with file:line (the P2P records carry none: it
# was empty), and its full block shows it on the pair's line.
for r in 2 3; do
  f=$(grep -l '"global_rank":'$r',' "$REPORTS"/*.json | head -n 1)
  [ -n "$f" ] || fail "no report of rank $r"
  grep -qE '"call_site":"p2p_ring\+0x[0-9a-f]+ \(scen\+0x[0-9a-f]+\) at scen\.c:[0-9]+"' "$f" ||
    fail "rank $r's report names no call site with file:line"
done
expect "$(nlines '^ncclguard:     (Send\(count=33, float32, peer=3\) +on rank 2|Recv\(count=32, float32, peer=2\) +on rank 3) \(#[0-9]+ of the pair\)  from p2p_ring\+0x[0-9a-f]+ \(scen\+0x[0-9a-f]+\) at scen\.c:[0-9]+$')" 2 "own sites on the pair's lines"
