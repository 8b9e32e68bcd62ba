# One's own NCCL program on the CPU stack: the recipes "cpu-stack-flags" (compiled with the
# ncg-modes: sync async
# flags scripts/cpu-stack-flags.sh prints) and "cpu-stack-nccl-home" (an NCCL_HOME laid out in
# build/cpu-nccl, a Makefile in the shape of NVIDIA's NCCL examples) of docs/launchers.md, run
# as written (lib.sh, launched_recipe) on tests/apps/nccl_example (one process, ncclCommInitAll
# over 4 devices, grouped ncclAllReduce, cudaStreamSynchronize): each builds, runs under the
# shim with a correct result and no ncclguard line, and the shim saw the 4 communicators.
. "$NCG_ROOT/tests/launchers/lib.sh"
[ -n "${NCG_SANITIZER:-}" ] && { echo "the recipes preload the plain shim (a sanitizer build needs its runtime first): run in the plain pass"; exit 77; }
for h in /usr/local/cuda/include/cuda_runtime.h /usr/local/cuda/include/nccl.h; do
  [ -f "$h" ] || { echo "no $h: the recipes build against NVIDIA's headers in /usr/local/cuda"; exit 77; }
done
command -v c++ >/dev/null 2>&1 || { echo "no C++ compiler (c++)"; exit 77; }
RECIPE_SETUP=""
OK_LINE='^allreduce_all: 4 devices, 20 AllReduce of 1024 floats each: correct$'
# check_recipe NAME: the recipe builds the program and runs it under the shim
check_recipe() {
  local r=$1
  rm -rf "$NCG_BUILD/allreduce_all" "$NCG_BUILD/nccl_example" "$NCG_BUILD/cpu-nccl"
  launched_recipe "$r" "$r"
  expect "$RC" 0 "$r: status"
  grep -qE "$OK_LINE" "$OUT" || fail "$r: the program did not end correct"
  no_ncclguard
  # the shim was there: verbose, it names each rank's communicator
  NCCLGUARD_VERBOSE=2 launched_recipe "$r.verbose" "$r"
  expect "$RC" 0 "$r (NCCLGUARD_VERBOSE=2): status"
  expect "$(grep -cE '^ncclguard: comm .* origin initall rank [0-3]/4$' "$OUT")" 4 "$r: communicators the shim saw"
}
check_recipe cpu-stack-flags
check_recipe cpu-stack-nccl-home
# the NCCL_HOME layout: NVIDIA's header, the CPU NCCL and runtime
[ "$(readlink -f "$NCG_BUILD/cpu-nccl/lib/libnccl.so")" = "$(readlink -f "$NCG_BUILD/fakenccl/libnccl.so.2")" ] || fail "cpu-nccl/lib/libnccl.so is not the CPU NCCL"
[ "$(readlink -f "$NCG_BUILD/cpu-nccl/lib/libcudart.so")" = "$(readlink -f "$NCG_BUILD/fakecuda/libcudart.so.13")" ] || fail "cpu-nccl/lib/libcudart.so is not the CPU runtime"
[ -f "$NCG_BUILD/cpu-nccl/include/nccl.h" ] || fail "no cpu-nccl/include/nccl.h"
