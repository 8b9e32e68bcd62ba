# Split (color, key, NOCOLOR, split of split), shrink, two threads on two comms, nonblocking
# init, InitRankScalable, re-init of one id, and the ignored id tail.
. "$NCG_ROOT/tests/fakenccl/lib.sh"
need "$FN_T/comms"
for n in 1 2 3 4 7 16; do
  launch -n $n -t 120 "$FN_T/comms"
  [ $rc -eq 0 ] || fail "comms on $n ranks (exit $rc): $out"
  echo "$out" | grep -q "comms: $n ranks: .* ok" || fail "no summary on $n ranks: $out"
done
no_leftover_segments
echo "ok"
