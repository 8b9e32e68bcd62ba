# ncg-modes: sync async
# The NCCL user guide's examples on the CPU stack (NVIDIA's headers, the genuine runtime's
# link, run on the CPU runtime): inputs written by memsets and copies queued on the streams
# behind a slow host function, so each collective must run after the work queued before it on
# its stream, in the synchronous mode as in the asynchronous one. Example 1 (one process, 4 and
# 8 devices, ncclCommInitAll, a group) and example 3 (one device per process, 3 ranks).
. "$NCG_ROOT/tests/fakenccl/lib.sh"
UG=$FN_T/userguide
[ -f /usr/local/cuda/include/nccl.h ] && [ -f /usr/local/cuda/lib64/libcudart.so.13 ] ||
  { echo "no /usr/local/cuda (nccl.h, libcudart.so.13): userguide not built"; exit 77; }
[ -e "$NCG_BUILD/fakecuda/libcudart.so.13" ] || { echo "no CPU CUDA runtime (tests/fakecuda not built)"; exit 77; }
need "$UG"
export LD_LIBRARY_PATH=$NCG_BUILD/fakecuda:$LD_LIBRARY_PATH
unset FAKENCCL_ASYNC
[ "${NCG_NCCL_MODE:-sync}" = async ] && export FAKENCCL_ASYNC=1
for ndev in 4 8; do
  out=$(timeout 60 "$UG" single $ndev 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "example 1 ($ndev devices): exit $rc: $out"
  [ "$out" = "userguide: single ok" ] || fail "example 1 ($ndev devices): output: $out"
done
launch -n 3 -t 60 "$UG" ranks
[ $rc -eq 0 ] || fail "example 3 (3 ranks): exit $rc: $out"
[ "$(echo "$out" | grep -c '^userguide: ranks ok$')" = 3 ] || fail "example 3: not ok on every rank: $out"
! echo "$out" | grep -q 'calls run synchronously' || fail "asynchronous mode not in effect: $out"
no_leftover_segments
echo "ok ($NCG_NCCL_MODE)"
