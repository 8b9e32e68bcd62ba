# Cut off from a standalone checker (issue 13, item 1): NCCLGUARD_COORD mode, ranks 0-1 and the
# checker on host A, ranks 2-3 on host B (network namespaces joined by a veth pair; NCCL's own
# traffic goes through /dev/shm and is not cut). The link goes down mid-job: the checker gives
# RANK DIED to ranks 0-1 (they exit 86); ranks 2-3 lose the checker, keep retrying, and once
# their communicator makes no progress for the heartbeat timeout they act on CHECKER LOST
# (diagnostic with their own counts and stack, report, exit 86) instead of hanging silently.
# Then the checker crashes (SIGKILL) and is restarted on the same port, and later stopped
# (SIGTERM: it says SHUTDOWN) and restarted: a healthy job reconnects each time and completes.
. "$NCG_ROOT/tests/checker/lib.sh"
# every rank's full block is checked (the default prints it on two ranks)
export NCCLGUARD_DIAG=full
CLI=$B/ncclguard
[ -x "$CLI" ] || { echo "ncclguard CLI not built"; exit 77; }
CP=""
two_hosts 2 10.78
start_coord() { # PORT (0: ephemeral) -> CP, PORT
  ip netns exec $A "$CLI" coord --listen "$NET.1:$1" >"$NCG_TMP/coord.log" 2>&1 &
  CP=$!
  for _ in $(seq 50); do grep -q 'listening on' "$NCG_TMP/coord.log" && break; sleep 0.1; done
  PORT=$(grep -oE 'listening on [^ ]+' "$NCG_TMP/coord.log" | sed 's/.*://')
  [ -n "$PORT" ] || fail "coordinator did not start: $(cat "$NCG_TMP/coord.log")"
}
export NCCLGUARD_HEARTBEAT_TIMEOUT_S=2
start_coord 0
export NCCLGUARD_COORD=$NET.1:$PORT
(sleep 2; ip -n $A link set va$$ down) &
CUT=$!
guarded "$NCG_TMP/out" "$LAUNCH" -n 4 -t 60 "$NCG_TMP/onhost.sh" "$SCEN" steady 20
wait $CUT
expect "$RC" 86 "launcher status"
expect "$(exited 86)" 4 "every rank ends"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \(4 ranks\): rank [23] died: .*silent for')" 2 "host A: a rank on B silent"
expect "$(nlines "^ncclguard: lost the standalone checker at $NET.1:$PORT \(the checker went silent \(frozen or unreachable\)\); retrying every second")" 2 "host B: the loss, once per rank"
expect "$(nlines "^ncclguard: VERDICT: CHECKER LOST on comm [0-9a-f]+ \(4 ranks\): the standalone checker at $NET.1:$PORT: unreachable for [0-9.]+ s")" 2 "host B: CHECKER LOST"
expect "$(nlines '^ncclguard:   this process \(comm rank [23], global rank [23],')" 2 "host B: what each rank knows"
case "${NCG_SANITIZER:-}" in *thread*) ;; # no stacks under TSan (docs/checker.md)
  *) expect "$(nlines '^ncclguard:   stack of thread')" 4 "stacks on every rank" ;; esac
expect "$(grep -l '"verdict":"CHECKER_LOST"' "$REPORTS"/*.json | wc -l)" 2 "host B: reports"
ip -n $A link set va$$ up
for _ in $(seq 50); do # the link is back once host B reaches the checker again
  ip netns exec $B timeout 1 bash -c "exec 3<>/dev/tcp/$NET.1/$PORT" 2>/dev/null && break
  sleep 0.1
done

# the checker restarted on the same port while a job runs: the ranks reconnect, no verdict
rm -f "$REPORTS"/*
# every rank must be connected before the crash (slower to start under sanitizers)
D=3 J=10; [ -n "${NCG_SANITIZER:-}" ] && D=8 J=16
(sleep $D; kill -9 $CP; sleep 0.5; start_coord "$PORT"; sleep 2.5; kill $CP; sleep 0.5;
 start_coord "$PORT"; echo "$CP" >"$NCG_TMP/cp2"; wait) &
RS=$!
guarded "$NCG_TMP/out2" "$LAUNCH" -n 4 -t 60 "$NCG_TMP/onhost.sh" "$SCEN" steady $J
CP=$(cat "$NCG_TMP/cp2" 2>/dev/null)
kill "$CP" 2>/dev/null; wait $RS 2>/dev/null
expect "$RC" 0 "restart: the job completes"
no_verdict
expect "$(nlines "^ncclguard: lost the standalone checker at $NET.1:$PORT \(connection lost\); retrying")" 4 "crash: every rank notices"
expect "$(nlines "^ncclguard: the standalone checker at $NET.1:$PORT shut down; retrying every second")" 4 "stop: every rank notices"
expect "$(nlines "^ncclguard: reconnected to the standalone checker at $NET.1:$PORT\$")" 8 "restart: every rank reconnects, twice"
echo "checker lost ok"
