# tests/apps/mixed (the healthy workload other tests reuse): three comms, two threads,
# groups and p2p rings, every result checked, on 1 to 16 ranks; and its --mismatch switch
# really hangs the world comm (bounded by FAKENCCL_TIMEOUT_S).
. "$NCG_ROOT/tests/fakenccl/lib.sh"
need "$NCG_BUILD/tests/mixed"
for n in 1 2 5 16; do
  launch -n $n -t 120 "$NCG_BUILD/tests/mixed" --iters 100
  [ $rc -eq 0 ] || fail "mixed on $n ranks (exit $rc): $out"
  echo "$out" | grep -q "^mixed: $n ranks, [0-9]* calls per rank ok" || fail "mixed $n: $out"
done
FAKENCCL_TIMEOUT_S=1 launch -n 4 -t 60 "$NCG_BUILD/tests/mixed" --iters 20 --mismatch 5
[ $rc -ne 0 ] || fail "mixed --mismatch completed: $out"
# slot 22: the two ncclCommSplit calls on world took slots 0 and 1, then 4 calls per iteration
n=$(echo "$out" | grep -c "^fakenccl: watchdog: rank [0-3] comm .*: ncclAllReduce slot 22 blocked")
[ "$n" -eq 4 ] || fail "mixed --mismatch: $n ranks blocked at world slot 22, want 4: $out"
no_leftover_segments
echo "ok"
