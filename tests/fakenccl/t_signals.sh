# NCCL 2.30's functions on the CPU NCCL: put/signal/wait exchanges with data checked (2-4 ranks,
# a mailbox smaller than a put: chunks, and every rank putting before it waits), grow by a
# process with no communicator, suspend/resume with memory statistics, the parameter API; and
# NCCL's hangs: a wait whose signal never comes blocks until FAKENCCL_TIMEOUT_S.
# ncg-modes: sync async
. "$NCG_ROOT/tests/fakenccl/lib.sh"
need "$FN_T/signals"
if [ "${NCG_NCCL_MODE:-sync}" = async ]; then
  [ -e "$NCG_BUILD/fakecuda/libcudart.so.13" ] || { echo "no CPU CUDA runtime"; exit 77; }
  export FAKENCCL_ASYNC=1 LD_LIBRARY_PATH=$NCG_BUILD/fakecuda:$LD_LIBRARY_PATH
fi
for n in 2 3 4; do
  launch -n $n -t 60 "$FN_T/signals" exchange 20
  [ $rc -eq 0 ] || fail "exchange on $n ranks (exit $rc): $out"
  [ "$(echo "$out" | grep -c ': 20 exchanges ok$')" = $n ] || fail "exchange on $n ranks: $out"
done
FAKENCCL_PUT_BYTES=256 launch -n 3 -t 60 "$FN_T/signals" exchange 4
[ $rc -eq 0 ] || fail "exchange with a 256-byte mailbox (exit $rc): $out"
launch -n 3 -t 60 "$FN_T/signals" grow
[ $rc -eq 0 ] && [ "$(echo "$out" | grep -c 'grown to 3 ranks ok$')" = 3 ] || fail "grow (exit $rc): $out"
launch -n 2 -t 60 "$FN_T/signals" suspend 1
[ $rc -eq 0 ] && [ "$(echo "$out" | grep -c 'suspended 1 s ok$')" = 2 ] || fail "suspend (exit $rc): $out"
out=$("$FN_T/signals" params 2>&1) || fail "params: $out"
echo "$out" | grep -q '^fakenccl: param FAKENCCL_TIMEOUT_S=-1$' || fail "params: no dump: $out"
# Hangs as NCCL's: the waits block until the watchdog.
for s in gone cycle; do
  FAKENCCL_TIMEOUT_S=2 launch -n 2 -t 30 "$FN_T/signals" $s
  [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "$s: exit $rc: $out"
  echo "$out" | grep -qE '^fakenccl: watchdog: rank [01] .*ncclWaitSignal from peer [01] signal 1 blocked for 2 s' ||
    fail "$s: no watchdog line: $out"
  # (asynchronous: after the watchdog fails one side's wait, its queued signal may still run)
  [ -n "${FAKENCCL_ASYNC:-}" ] || ! echo "$out" | grep -q 'the signal came\|the cycle completed' ||
    fail "$s: completed: $out"
done
no_leftover_segments
echo "ok"
