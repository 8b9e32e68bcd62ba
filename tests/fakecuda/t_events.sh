# Events: never-recorded is complete, record/query/synchronize, elapsed time, cudaStreamWaitEvent
# across streams, destroy with a pending record, flag errors.
. "$NCG_ROOT/tests/fakecuda/lib.sh"
need "$FC_T/events"
run "$FC_T/events"
[ $rc -eq 0 ] || fail "events: exit $rc: $out"
echo "$out" | grep -q "^events: ok" || fail "events: $out"
echo "ok"
