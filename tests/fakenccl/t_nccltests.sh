# ncg-modes: sync async
# NVIDIA's nccl-tests on the CPU stack, bare and under ncclguard: scripts/nccl-tests.sh --quick
# (every *_perf binary, several devices per thread, CUDA graphs, mpirun where MPI is installed)
# on the checkout named by NCG_NCCL_TESTS_SRC, in this run's NCCL mode. Needs nvcc; the build
# goes to $NCG_BUILD/nccl-tests (incremental: minutes the first time, seconds after). The run
# leaves nothing behind: no segment in /dev/shm of the processes it ran (its divergence cells
# end with exit 86) and no log directory (the default one, in $TMPDIR, once nothing failed).
. "$NCG_ROOT/tests/fakenccl/lib.sh"
if [ -z "${NCG_NCCL_TESTS_SRC:-}" ] || [ ! -f "$NCG_NCCL_TESTS_SRC/src/common.cu" ]; then
  echo "no nccl-tests checkout: set NCG_NCCL_TESTS_SRC to one (git clone https://github.com/NVIDIA/nccl-tests)"
  exit 77
fi
[ -x /usr/local/cuda/bin/nvcc ] || { echo "no /usr/local/cuda/bin/nvcc: nccl-tests cannot be built"; exit 77; }
[ -e "$NCG_BUILD/fakecuda/libcudart.so.13" ] || { echo "no CPU CUDA runtime (tests/fakecuda not built)"; exit 77; }
mkdir -p "$NCG_TMP/tmp"
out=$(TMPDIR=$NCG_TMP/tmp "$NCG_ROOT/scripts/nccl-tests.sh" --src "$NCG_NCCL_TESTS_SRC" --quick \
  --modes "${NCG_NCCL_MODE:-sync}" --build "$NCG_BUILD/nccl-tests" 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "scripts/nccl-tests.sh --quick: exit $rc"
echo "$out" | grep -qE '^nccl-tests matrix \((sync|async)\): [1-9][0-9]* passed, 0 failed' || fail "no passing summary"
echo "$out" | grep -qE '^(PASS|FAIL) .*divergence: ' || fail "no divergence cell ran (they are the ones that leave segments)"
left=$(ls -A "$NCG_TMP/tmp")
[ -z "$left" ] || fail "left in its TMPDIR after a passing run: $left"
segs=$("$NCG_BUILD/ncclguard" clean --dry-run --grace 0 --match "$NCG_BUILD/nccl-tests/" 2>&1 | grep -c 'would remove /dev/shm/')
[ "$segs" = 0 ] || fail "$segs segments left in /dev/shm by the processes it ran"
no_leftover_segments
echo ok
