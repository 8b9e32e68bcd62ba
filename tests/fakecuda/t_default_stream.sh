# The legacy default stream synchronizes with blocking streams (both ways), non-blocking streams
# do not; cudaStreamPerThread is per thread and blocking. The same program built with
# CUDA_API_PER_THREAD_DEFAULT_STREAM reaches the _ptsz entry points: NULL is per thread there.
. "$NCG_ROOT/tests/fakecuda/lib.sh"
need "$FC_T/legacy" "$FC_T/legacy-ptds"
run "$FC_T/legacy"
[ $rc -eq 0 ] || fail "legacy: exit $rc: $out"
echo "$out" | grep -q "legacy: legacy default stream build ok" || fail "legacy: $out"
run "$FC_T/legacy-ptds"
[ $rc -eq 0 ] || fail "legacy-ptds: exit $rc: $out"
echo "$out" | grep -q "legacy: per-thread default stream build ok" || fail "legacy-ptds: $out"
nm -D "$FC_T/legacy-ptds" | grep -q "cudaLaunchHostFunc_ptsz" ||
  fail "legacy-ptds does not call the _ptsz entry points"
echo "ok"
