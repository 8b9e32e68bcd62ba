# fakenccl's asynchronous mode (FAKENCCL_ASYNC=1 with the CPU CUDA runtime): a call returns
# before its peers have called and its result is right after a synchronization; a mismatch
# blocks the stream, not the host call; abort and revoke release the stream; destroy waits for
# the pending work; a group spanning two streams joins them; without a runtime, one line and
# synchronous calls.
. "$NCG_ROOT/tests/fakenccl/lib.sh"
need "$FN_T/async"
[ -e "$NCG_BUILD/fakecuda/libcudart.so.13" ] || { echo "no CPU CUDA runtime (tests/fakecuda not built)"; exit 77; }
for s in early mismatch revoke destroy group; do
  out=$(env FAKENCCL_ASYNC=1 LD_LIBRARY_PATH=$NCG_BUILD/fakecuda:$LD_LIBRARY_PATH "$LAUNCH" -n 2 -t 30 "$FN_T/async" $s 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "$s: exit $rc: $out"
  [ "$(echo "$out" | grep -c "^async: $s ok$")" = 2 ] || fail "$s: not ok on both ranks: $out"
done
# no runtime in the process: the mode says so once per process and calls complete synchronously
out=$(FAKENCCL_ASYNC=1 "$LAUNCH" -n 2 -t 30 "$FN_T/async" nort 2>&1); rc=$?
[ $rc -eq 0 ] || fail "nort: exit $rc: $out"
[ "$(echo "$out" | grep -c '^fakenccl: FAKENCCL_ASYNC=1 but no CUDA runtime is loaded in this process (cudaLaunchHostFunc not found): calls run synchronously$')" = 2 ] || fail "nort: want one line per process: $out"
no_leftover_segments
exit 0
