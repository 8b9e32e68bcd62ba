# Stream order (host functions, async memcpy/memset), many host threads enqueueing to their own
# and to a shared stream, and cudaStreamDestroy with pending work (returns at once, work runs).
. "$NCG_ROOT/tests/fakecuda/lib.sh"
need "$FC_T/stream"
run "$FC_T/stream"
[ $rc -eq 0 ] || fail "stream: exit $rc: $out"
for w in "order ok" "4 threads ok" "destroy with pending work ok"; do
  echo "$out" | grep -q "stream: $w" || fail "stream: no '$w': $out"
done
echo "ok"
