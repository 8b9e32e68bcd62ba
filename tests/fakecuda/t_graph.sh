# Stream capture and graphs (tests/fakecuda/tests/graph.c): captured work waits for launches;
# 100 launches of 3 host functions and a memset run in order; the exec outlives its graph;
# launches of one exec never overlap; exec update; capture rules (legacy stream refused,
# status, ids, a sync invalidates); user objects released with the last graph or exec.
. "$NCG_ROOT/tests/fakecuda/lib.sh"
need "$FC_T/graph"
run "$FC_T/graph"
[ $rc -eq 0 ] || fail "graph: exit $rc: $out"
for w in "basic ok" "serialize ok" "update ok" "capture rules ok" "user objects ok"; do
  echo "$out" | grep -q "graph: $w" || fail "graph: no '$w': $out"
done
echo "ok"
