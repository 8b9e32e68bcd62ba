# DEADLOCK while completion is still being probed (issue 22, item 7). A process with a CUDA
# runtime loaded decides from its first 64 calls whether NCCL is asynchronous
# (NCCLGUARD_COMPLETION=auto, docs/checker.md); it used to send no WAIT meanwhile, so two
# communicators taken in opposite orders early on (a framework creating its process groups in
# different orders) hung silently. Here the runtime is preloaded also under the synchronous
# NCCL, and rank 1 inverts the split child and world after 10 calls (2 ranks) or 20 (4 ranks):
# every rank names the DEADLOCK and exits 86 within a few seconds, in both NCCL modes.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
CUDART=$B/fakecuda/libcudart.so.13
[ -e "$CUDART" ] || { echo "no CPU CUDA runtime in $B/fakecuda"; exit 77; }
# probe NAME RANKS ITERS: scen invert with the runtime in every process
probe() {
  local name=$1 n=$2 iters=$3
  guarded "$NCG_TMP/$name" env LD_PRELOAD="$NCG_PRELOAD $CUDART" NCCLGUARD_VERBOSE=1 \
    NCCLGUARD_DIAG=full "$LAUNCH" -n "$n" -t 30 "$SCEN" invert "$iters"
  local end; end=$(date +%s.%N)
  # the runtime was seen and the mode still undecided when the ranks hung (synchronous NCCL)
  expect "$(nlines '^ncclguard: completion: CUDA runtime found; probing whether NCCL is async$')" "$n" "$name: every rank probes"
  [ $async = 1 ] || [ "$(nlines '^ncclguard: completion: NCCL calls complete before they return')" = 0 ] ||
    fail "$name: the probing ended before the inversion (the test no longer covers it)"
  expect "$RC" 86 "$name: launcher status"
  expect "$(exited 86)" "$n" "$name: ranks that exited 86"
  [ "$(nlines '^ncclguard: VERDICT: DEADLOCK on comm [0-9a-f]+ \([0-9]+ ranks\): global ranks [0-9,-]+ wait on each other across comms')" -ge "$n" ] ||
    fail "$name: DEADLOCK headline on every rank"
  local t0; t0=$(grep -oE '^scen: diverge at [0-9.]+' "$OUT" | head -1 | awk '{print $4}')
  awk -v a="$t0" -v b="$end" -v n="$name" -v s="$SLOW" 'BEGIN { d = b - a; printf "%s: detected and ended in %.2f s\n", n, d; exit !(d < 3.0 * s) }' ||
    fail "$name: more than 3 s from the inversion to every rank exited"
}
probe probe2 2 10
probe probe4 4 20
echo "deadlock while probing ok"
