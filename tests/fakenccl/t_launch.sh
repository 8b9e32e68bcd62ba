# ncg-launch: environment of each rank, exit status propagation, per-rank failure lines,
# signals, and the timeout (124, every rank killed).
. "$NCG_ROOT/tests/fakenccl/lib.sh"
launch -n 3 -- sh -c 'echo "env $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $(dirname "$NCG_ID_FILE")"'
[ $rc -eq 0 ] || fail "all-zero job exited $rc: $out"
for r in 0 1 2; do echo "$out" | grep -q "^env $r 3 $r 3 /" || fail "rank $r env: $out"; done
dir=$(echo "$out" | awk '/^env 0/ {print $6}')
[ ! -e "$dir" ] || fail "private temp dir $dir left behind"
launch -n 3 -- sh -c 'exit $((RANK == 1 ? 5 : 0))'
[ $rc -eq 5 ] || fail "exit status: $rc, want 5"
echo "$out" | grep -q "^ncg-launch: rank 1 exited with status 5$" || fail "no failure line: $out"
[ "$(echo "$out" | grep -c '^ncg-launch:')" -eq 1 ] || fail "extra lines: $out"
launch -n 2 -- sh -c '[ $RANK = 0 ] && kill -9 $$; exit 0'
[ $rc -eq 137 ] || fail "signal: exit $rc, want 137"
echo "$out" | grep -q "^ncg-launch: rank 0 killed by signal 9" || fail "no signal line: $out"
launch -n 2 -t 1 -- sh -c '[ $RANK = 1 ] && exec sleep 30; exit 0'
[ $rc -eq 124 ] || fail "timeout: exit $rc, want 124: $out"
launch -n 0 true
[ $rc -eq 2 ] || fail "usage error: exit $rc"
echo "ok"
