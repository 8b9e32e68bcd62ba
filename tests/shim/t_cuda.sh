# Completion by CUDA events binds to the genuine CUDA 13 runtime and degrades cleanly without a
# GPU: prototypes checked against cuda_runtime_api.h at build time; at run time the runtime is
# found, the probe's cudaStreamQuery fails (no device) and completion falls back to the call's
# return, with one verbose line; the guarded calls succeed. Skipped without /usr/local/cuda
# (after the event engine's unit test against a mock runtime, tests/shim/cev_test.c).
set -u
B=$NCG_BUILD
bin=$B/tests/shim/cuda_bind
[ -x "$B/tests/shim/cev_test" ] && { "$B/tests/shim/cev_test" || exit 1; }
[ -x "$bin" ] || { echo "CUDA runtime not installed (no /usr/local/cuda/lib64/libcudart.so): skipped"; exit 77; }
out=$NCG_TMP/out
LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_VERBOSE=1 NCCLGUARD_COORD=off LD_LIBRARY_PATH=$B/bench/null:/usr/local/cuda/lib64 \
  timeout 60 "$bin" >"$out" 2>&1 || { cat "$out"; echo "FAIL: exit $?"; exit 1; }
cat "$out"
grep -q '^cuda_bind: done' "$out" || { echo "FAIL: calls"; exit 1; }
grep -q '^ncclguard: completion: CUDA runtime found; probing whether NCCL is async' "$out" || { echo "FAIL: runtime not found"; exit 1; }
grep -q "^ncclguard: completion: .*; a call's return is its completion" "$out" || { echo "FAIL: no fallback line"; exit 1; }
# the same program with the runtime forced (events): it still degrades, and says so once
LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_VERBOSE=1 NCCLGUARD_COORD=off NCCLGUARD_COMPLETION=events \
  LD_LIBRARY_PATH=$B/bench/null:/usr/local/cuda/lib64 timeout 60 "$bin" >"$out" 2>&1 || { cat "$out"; echo "FAIL: events exit"; exit 1; }
[ "$(grep -c "a call's return is its completion" "$out")" = 1 ] || { cat "$out"; echo "FAIL: events fallback"; exit 1; }
exit 0
