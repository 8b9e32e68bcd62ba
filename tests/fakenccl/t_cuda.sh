# fakenccl's CUDA-aware mode (FAKENCCL_CUDA=1) on the CPU CUDA runtime: cudaMalloc buffers
# (cudaMemoryTypeDevice) staged through host memory after the call's stream was synchronized,
# with the runtime global or loaded RTLD_LOCAL (found with RTLD_NOLOAD), 1 and 3 ranks, the
# staging chunked by a small FAKENCCL_STAGE_BYTES; FAKENCCL_ASYNC=1 beside it is overridden;
# without a runtime one line and host buffers; then the PyTorch-shaped app (torchlike) in this
# mode under the shim: healthy, the incident (every rank exits 86), NCCLGUARD_ACTION=fail (the
# app's own error from the failed call).
. "$NCG_ROOT/tests/fakenccl/lib.sh"
need "$FN_T/cudaaware"
[ -e "$NCG_BUILD/fakecuda/libcudart.so.13" ] || { echo "no CPU CUDA runtime (tests/fakecuda not built)"; exit 77; }
RT=$NCG_BUILD/fakecuda
for n in 3 1; do
  for m in global local; do
    out=$(env FAKENCCL_CUDA=1 LD_LIBRARY_PATH=$RT:$LD_LIBRARY_PATH "$LAUNCH" -n $n -t 60 "$FN_T/cudaaware" $m 2>&1); rc=$?
    [ $rc -eq 0 ] || fail "$m ($n ranks): exit $rc: $out"
    [ "$(echo "$out" | grep -c "^cudaaware: $m ok$")" = $n ] || fail "$m ($n ranks): not ok on every rank: $out"
  done
done
out=$(env FAKENCCL_CUDA=1 FAKENCCL_ASYNC=1 FAKENCCL_STAGE_BYTES=4096 LD_LIBRARY_PATH=$RT:$LD_LIBRARY_PATH "$LAUNCH" -n 2 -t 60 "$FN_T/cudaaware" global 2>&1); rc=$?
[ $rc -eq 0 ] || fail "with FAKENCCL_ASYNC=1 too: exit $rc: $out"
out=$(FAKENCCL_CUDA=1 "$LAUNCH" -n 2 -t 30 "$FN_T/cudaaware" nort 2>&1); rc=$?
[ $rc -eq 0 ] || fail "nort: exit $rc: $out"
[ "$(echo "$out" | grep -c '^fakenccl: FAKENCCL_CUDA=1 but no CUDA runtime is loaded in this process (cudaPointerGetAttributes not found): buffers are used as host memory$')" = 2 ] || fail "nort: want one line per process: $out"
no_leftover_segments

# torchlike (linked with libcudart.so.13, its buffers from cudaMalloc) on the CUDA-aware mode
TL=$NCG_BUILD/tests/torchlike
[ -x "$TL" ] || { echo "cudaaware ok; torchlike not built (needs /usr/local/cuda): its part skipped"; exit 0; }
export FAKENCCL_CUDA=1 LD_LIBRARY_PATH=$RT:$LD_LIBRARY_PATH NCCLGUARD_REPORT_DIR=$TMPD
tl() { out=$(env LD_PRELOAD="$NCG_PRELOAD" timeout -k 5 100 "$LAUNCH" -n 4 -t 60 "$TL" "$@" 2>&1); rc=$?; }
tl --steps 200 --mode both
[ $rc -eq 0 ] || fail "torchlike healthy: exit $rc: $out"
echo "$out" | grep -qE '^torchlike: 4 ranks, [0-9]+ collectives per rank ok$' || fail "torchlike: no ok line: $out"
! echo "$out" | grep -q '^ncclguard:' || fail "torchlike healthy: ncclguard output: $out"
tl --steps 80 --fault incident --fault-step 40
[ $rc -eq 86 ] || fail "torchlike incident: exit $rc (want 86): $out"
[ "$(echo "$out" | grep -cE '^ncg-launch: rank [0-9]+ exited with status 86$')" = 4 ] || fail "incident: not every rank exited 86: $out"
[ "$(echo "$out" | grep -cE '^ncclguard: VERDICT: MISMATCH .*AllReduce\(count=1, float32, sum\) on rank 3 vs')" = 4 ] || fail "incident: headline: $out"
# fail: calls are host-synchronous in this mode, so the blocked call itself returns
# ncclRemoteError and the app fails with its own error (exit 1), not 86 (as PyTorch raises from
# the failed call)
NCCLGUARD_ACTION=fail tl --steps 80 --fault incident --fault-step 20
[ $rc -eq 1 ] || fail "torchlike fail action: exit $rc (want 1, the app's own error): $out"
[ "$(echo "$out" | grep -cE '^torchlike: rank [0-3]: .* failed: remote process exited or there was a network error')" = 4 ] || fail "fail: the app's own error on every rank: $out"
echo "cudaaware ok"
exit 0
