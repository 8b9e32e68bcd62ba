# Send/Recv in groups: rings both ways, all pairs with FIFO order, self sends, messages larger
# than the p2p ring, nested groups with a collective inside, blocking pairs outside groups.
. "$NCG_ROOT/tests/fakenccl/lib.sh"
need "$FN_T/p2p"
for n in 1 2 3 5 16; do
  launch -n $n -t 120 "$FN_T/p2p"
  [ $rc -eq 0 ] || fail "p2p on $n ranks (exit $rc): $out"
  echo "$out" | grep -q "p2p: $n ranks: .* ok" || fail "no summary on $n ranks: $out"
done
FAKENCCL_P2P_BYTES=64 launch -n 4 -t 120 "$FN_T/p2p"
[ $rc -eq 0 ] || fail "p2p with a 64-byte ring: $out"
no_leftover_segments
echo "ok"
