# Host waits (interpose/shim/hostwait.c): the unit test on the CPU CUDA runtime (threads blocked
# in cudaStreamSynchronize / cudaEventSynchronize / cudaDeviceSynchronize and NotReady polls
# show with their streams, and are gone after; what passes through unrecorded; results; the
# thread table; events; consistent snapshots), then through the real libncclguard.so with a
# communicator, guarded and with NCCLGUARD=0: results equal the runtime's, and the cost of an
# interposed cudaEventQuery and cudaStreamSynchronize of an idle stream (median ns per call).
. "$NCG_ROOT/tests/shim/lib.sh"
B=$NCG_BUILD
[ -e "$B/fakecuda/libcudart.so.13" ] || { echo "no CPU CUDA runtime (no /usr/local/cuda/include/cuda_runtime_api.h): skipped"; exit 77; }
need "$B/tests/shim/hostwait_test" "$B/tests/shim/hostwait_cost" "$SHIMLIB"
export LD_LIBRARY_PATH=$B/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
timeout 120 "$B/tests/shim/hostwait_test" || fail "hostwait_test: exit $?"
rounds=200; [ -n "$NCG_SANITIZER" ] && rounds=20
for mode in guarded off; do
  g=1; [ $mode = off ] && g=0
  LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD=$g NCCLGUARD_COORD=off LD_LIBRARY_PATH=$B/bench/null:$LD_LIBRARY_PATH \
    timeout 120 "$B/tests/shim/hostwait_cost" $rounds $mode >"$NCG_TMP/$mode" 2>&1 || { cat "$NCG_TMP/$mode"; fail "hostwait_cost $mode: exit $?"; }
  cat "$NCG_TMP/$mode"
  grep -q '^hostwait_cost: results same$' "$NCG_TMP/$mode" || fail "$mode: results differ"
done
# the exported functions are the ones hostwait.c defines
nm -D --defined-only "$SHIMLIB" | awk '{print $3}' | grep -cx 'cudaStreamSynchronize\|cudaEventQuery\|cudaEventRecord' | grep -qx 3 || fail "not exported"
echo "ok"
