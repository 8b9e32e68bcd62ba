# A host function blocked on a flag blocks its stream and only what waits on it (an event
# recorded after it, a stream waiting on that event, the legacy stream, blocking streams' work
# queued after legacy work); other streams run, queries say not ready, no CPU is burnt; another
# thread setting the flag lets everything complete.
. "$NCG_ROOT/tests/fakecuda/lib.sh"
need "$FC_T/hang"
run timeout 60 "$FC_T/hang"
[ $rc -eq 0 ] || fail "hang: exit $rc: $out"
echo "$out" | grep -q "^hang: only the hung stream" || fail "hang: $out"
echo "ok"
