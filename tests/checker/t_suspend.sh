# The whole job suspended (SIGSTOP to its process group, as Ctrl-Z or a paused VM) for longer
# ncg-modes: sync async
# than the heartbeat timeout, then resumed: nobody is declared dead, the job completes.
. "$NCG_ROOT/tests/checker/lib.sh"
command -v setsid >/dev/null || { echo "no setsid"; exit 77; }
OUT=$NCG_TMP/out
env LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_HEARTBEAT_TIMEOUT_S=2 NCCLGUARD_REPORT_DIR="$REPORTS" \
  setsid "$LAUNCH" -n 4 -t 60 "$SCEN" steady 4 >"$OUT" 2>&1 &
PG=$!
sleep 1.5
kill -STOP -- -"$PG" || fail "cannot stop the job"
sleep 4
kill -CONT -- -"$PG"
timeout 60 tail --pid="$PG" -f /dev/null
wait "$PG"
RC=$?
expect "$RC" 0 "job resumed and completed"
no_verdict
