# Single-process API: version, errors, id layout and NCCL_COMM_ID, argument errors, groups,
# GroupSimulateEnd, memory/registration/windows, InitAll, grouped InitRank of several ranks.
# And ncclBcast reaching an interposed ncclBroadcast through the PLT, as with NCCL 2.28.
. "$NCG_ROOT/tests/fakenccl/lib.sh"
need "$FN_T/api" "$FN_T/libbcastspy.so"
out=$("$FN_T/api" basics 2>&1) || fail "api basics: $out"
echo "$out" | grep -q "api: basics ok" || fail "api basics: $out"
pre=""
case "${NCG_SANITIZER:-}" in *address*) pre="$(${CC:-cc} -print-file-name=libasan.so) " ;; esac
out=$(LD_PRELOAD="${pre}$FN_T/libbcastspy.so" "$FN_T/api" bcast 3 2>&1) || fail "bcast: $out"
echo "$out" | grep -q "bcastspy: ncclBroadcast calls: 3$" ||
  fail "ncclBcast did not reach the interposed ncclBroadcast: $out"
# NCCL_COMM_ID=host:port: ranks build the id locally (fixed magic) and still meet
NCCL_COMM_ID=127.0.0.1:$((20000 + $$ % 30000)) launch -n 4 -t 60 "$FN_T/api" commid
[ $rc -eq 0 ] || fail "NCCL_COMM_ID job: exit $rc: $out"
echo "$out" | grep -q "api: NCCL_COMM_ID job of 4 ranks ok" || fail "NCCL_COMM_ID job: $out"
no_leftover_segments
echo "ok"
