# NCCL's failure semantics: calls that differ in count, dtype, op, root or function at one slot
# block; so do a p2p size mismatch, a send nobody receives and a peer that died. Bounded here
# by FAKENCCL_TIMEOUT_S: each blocked rank prints one watchdog line and gets ncclSystemError.
# Without the timeout the job does not finish. Abort/revoke from another thread release a
# blocked call with an error.
. "$NCG_ROOT/tests/fakenccl/lib.sh"
need "$FN_T/faults"
check_mode() { # mode nranks expected-lines...
  local mode=$1 n=$2; shift 2
  FAKENCCL_TIMEOUT_S=1 launch -n $n -t 60 "$FN_T/faults" $mode
  [ $rc -eq 3 ] || fail "$mode: exit $rc, want 3 (call failed): $out"
  local want
  for want in "$@"; do
    echo "$out" | grep -q -- "$want" || fail "$mode: no line matching '$want' in: $out"
  done
}
for m in count dtype op; do
  check_mode $m 3 \
    "^fakenccl: watchdog: rank 0 comm [0-9a-f]* (nranks 3): ncclAllReduce slot 2 blocked for 1 s, returning ncclSystemError" \
    "^fakenccl: watchdog: rank 1 comm .*: ncclAllReduce slot 2 blocked" \
    "^fakenccl: watchdog: rank 2 comm .*: ncclAllReduce slot 2 blocked" \
    "faults: rank 1: ncclAllReduce returned 2"
done
check_mode root 3 "rank 0 comm .*: ncclReduce slot 2 blocked" "rank 1 comm .*: ncclReduce slot 2 blocked"
check_mode func 3 "rank 0 comm .*: ncclAllReduce slot 2 blocked" "rank 1 comm .*: ncclBroadcast slot 2 blocked" \
  "rank 2 comm .*: ncclAllReduce slot 2 blocked"
check_mode p2psize 2 "rank 0 comm .*: ncclSend to peer 1 message 0 blocked" \
  "rank 1 comm .*: ncclRecv from peer 0 message 0 blocked"
check_mode norecv 2 "rank 0 comm .*: ncclSend to peer 1 message 0 blocked"
check_mode dead 3 "rank 0 comm .*: ncclAllReduce slot 2 blocked" "rank 2 comm .*: ncclAllReduce slot 2 blocked"
n=$(echo "$out" | grep -c "fakenccl: watchdog")
[ "$n" -eq 2 ] || fail "dead: $n watchdog lines, want 2: $out"

# no timeout: the mismatch never completes (the launcher kills the job)
unset FAKENCCL_TIMEOUT_S
launch -n 3 -t 3 "$FN_T/faults" count
[ $rc -eq 124 ] || fail "mismatch without FAKENCCL_TIMEOUT_S: exit $rc, want 124 (blocked): $out"
echo "$out" | grep -q "fakenccl:" && fail "watchdog line without FAKENCCL_TIMEOUT_S: $out"

# abort / revoke from another thread
launch -n 2 -t 60 "$FN_T/faults" abort
[ $rc -eq 3 ] || fail "abort: exit $rc: $out"
echo "$out" | grep -q "faults: rank 0: ncclAllReduce returned 6" || fail "abort did not release: $out"
launch -n 2 -t 60 "$FN_T/faults" revoke
[ $rc -eq 3 ] || fail "revoke: exit $rc: $out"
echo "$out" | grep -q "faults: rank 0: ncclAllReduce returned 6" || fail "revoke did not release: $out"
echo "$out" | grep -q "after revoke: ncclAllReduce returned 5, async error 6" || fail "revoke state: $out"
echo "ok"
