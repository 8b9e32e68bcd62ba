# Every collective x datatype x reduction op (and PreMulSum), in place and out of place,
# against the test's own reference, on 1 to 16 ranks; small staging buffers force chunking.
. "$NCG_ROOT/tests/fakenccl/lib.sh"
need "$FN_T/colls"
for n in 1 2 3 4 8 16; do
  launch -n $n -t 120 "$FN_T/colls"
  [ $rc -eq 0 ] || fail "colls on $n ranks (exit $rc): $out"
  echo "$out" | grep -q "colls: $n ranks, 564 calls" || fail "no summary on $n ranks: $out"
done
# chunked rounds: 64-byte and 256-byte staging areas, odd counts; zero-count calls
FAKENCCL_STAGE_BYTES=64 launch -n 3 -t 120 "$FN_T/colls" 101
[ $rc -eq 0 ] || fail "chunked colls (3 ranks): $out"
FAKENCCL_STAGE_BYTES=256 launch -n 16 -t 120 "$FN_T/colls" 33
[ $rc -eq 0 ] || fail "chunked colls (16 ranks): $out"
launch -n 4 -t 120 "$FN_T/colls" 0
[ $rc -eq 0 ] || fail "zero-count colls: $out"
FAKENCCL_STAGE_BYTES=4096 launch -n 2 -t 120 "$FN_T/colls" 5000
[ $rc -eq 0 ] || fail "large colls: $out"
no_leftover_segments
echo "ok"
