# A rank that exits before its checker accepted it. The checker is a standalone `ncclguard
# coord`, stopped (SIGSTOP) before the job starts: every rank's connection waits in its backlog,
# unanswered, and `scen early` makes rank 1 return from main at its 100th call while the others
# go on. Its exit waits (up to 5 s) for the checker to accept it: the checker, resumed 2 s into
# the job, learns of the rank and of its leaving, and the others get RANK EXITED and end (86).
# (It used to give up after 0.4 s: the checker never knew rank 1, and the others waited for it
# in silence.) The checker stopped for good: rank 1 says, once, that it leaves unannounced.
# The exit path does not depend on the NCCL mode: synchronous only.
. "$NCG_ROOT/tests/checker/lib.sh"
CLI=$B/ncclguard
[ -x "$CLI" ] || { echo "ncclguard CLI not built"; exit 77; }
CP=
trap '[ -n "$CP" ] && { kill -CONT $CP; kill $CP; } 2>/dev/null' EXIT
start_coord() { # -> CP, PORT; the checker stopped
  "$CLI" coord --listen 127.0.0.1:0 >"$NCG_TMP/coord.log" 2>&1 &
  CP=$!
  PORT=
  for _ in $(seq 50); do
    PORT=$(grep -oE 'listening on [^ ]+' "$NCG_TMP/coord.log" | sed 's/.*://')
    [ -n "$PORT" ] && break
    sleep 0.1
  done
  [ -n "$PORT" ] || fail "coordinator did not start: $(cat "$NCG_TMP/coord.log")"
  kill -STOP $CP
}
start_coord
(sleep 2; kill -CONT $CP) &
RESUME=$!
NCCLGUARD_COORD=127.0.0.1:$PORT guarded "$NCG_TMP/late" "$LAUNCH" -n 4 -t 30 "$SCEN" early
wait $RESUME
expect "$(exited 86)" 3 "ranks left behind that exited 86"
expect "$(nlines '^ncclguard: VERDICT: RANK EXITED on comm [0-9a-f]+ \(4 ranks\): rank 1 exited while ranks? [0-9,-]+ issued calls it will never match$')" 3 "RANK EXITED headline"
expect "$(nlines '^ncclguard: this process exits before the checker')" 0 "no give-up line when the checker answered"
kill $CP 2>/dev/null; wait $CP 2>/dev/null
# the checker never answers: the early rank says so, once; the others wait (the launcher ends them)
start_coord
SECONDS=0
NCCLGUARD_COORD=127.0.0.1:$PORT guarded "$NCG_TMP/never" "$LAUNCH" -n 4 -t 8 "$SCEN" early
expect "$RC" 124 "the others wait until the launcher ends them"
expect "$(nlines "^ncclguard: this process exits before the checker at 127\.0\.0\.1:$PORT accepted it \(no answer in [4-5]\.[0-9] s\): the checker does not learn that it left, and the other ranks of its communicators may wait for it without a verdict\$")" 1 "the early rank says it leaves unannounced"
echo "exit register ok"
