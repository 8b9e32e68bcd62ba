# Another process reads the segment while 4 threads write records as fast as they can: every
# record it accepts is whole (fields agree with the slot, digests chain), none torn.
. "$NCG_ROOT/tests/shim/lib.sh"
need "$CALLS" "$NCG_BUILD/tests/shim/shmread" "$SHIMLIB"
stop=$NCG_TMP/stop
# Recording only (NCCLGUARD_COORD=off): this is about the segment, not the side channel.
NCCLGUARD_COORD=off LD_PRELOAD="$NCG_PRELOAD" NCG_ID_FILE=$NCG_TMP/id timeout 120 "$CALLS" stress 4 "$stop" >"$NCG_TMP/out" 2>"$NCG_TMP/err" &
writer=$!
for _ in $(seq 1 200); do grep -q ready "$NCG_TMP/out" && break; sleep 0.1; done
pid=$(awk '/ready/{print $3}' "$NCG_TMP/out")
[ -n "$pid" ] || { kill $writer; cat "$NCG_TMP/err"; fail "writer did not start"; }
timeout 60 "$NCG_BUILD/tests/shim/shmread" --watch "$pid" 2
rc=$?
touch "$stop"
wait $writer || { cat "$NCG_TMP/err"; fail "writer failed"; }
grep -q "stress ok" "$NCG_TMP/out" || fail "writer did not finish"
[ $rc -eq 0 ] || { cat "$NCG_TMP/err"; fail "reader saw a torn or inconsistent record (or none at all)"; }
[ ! -e "/dev/shm/ncclguard.$(id -u).$pid" ] || fail "segment left after a clean exit"
echo "reader ok"
