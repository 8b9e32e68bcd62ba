# ncg-modes: sync async
# A standalone checker that is slow to answer is not a refusal (issue 35, item 5): the checker
# (`ncclguard coord --listen`, no token) is stopped (SIGSTOP) before it answers the processes'
# HELLO, and rank 2 of the job freezes (SIGSTOP) halfway. The kernel completes the connections,
# the HELLOs go unanswered: no rank may blame its token or run unguarded in silence; each one
# takes the checker as lost (silent for the heartbeat timeout), retries it, and once its
# communicator makes no progress for the heartbeat timeout acts on CHECKER LOST (exit 86), as
# it does when a checker that did answer freezes.
. "$NCG_ROOT/tests/checker/lib.sh"
CLI=$B/ncclguard
[ -x "$CLI" ] || { echo "ncclguard CLI not built"; exit 77; }
coord_start
kill -STOP $CP
export NCCLGUARD_COORD=127.0.0.1:$PORT NCCLGUARD_HEARTBEAT_TIMEOUT_S=2
guarded "$NCG_TMP/out" "$LAUNCH" -n 4 -t $((14 * SLOW)) "$SCEN" stop
expect "$RC" 124 "launcher status (the stopped rank never ends)"
expect "$(nlines 'refused this process|running unguarded')" 0 "no refusal, nobody unguarded"
expect "$(nlines "^ncclguard: lost the standalone checker at 127.0.0.1:$PORT \(the checker went silent \(frozen or unreachable\)\); retrying every second" | awk '{print ($1 >= 3)}')" 1 "each live rank: the loss"
expect "$(nlines "^ncclguard: VERDICT: CHECKER LOST on comm [0-9a-f]+ \(4 ranks\): the standalone checker at 127.0.0.1:$PORT: unreachable for [0-9.]+ s")" 3 "CHECKER LOST on the live ranks"
expect "$(nlines '^ncclguard:   this process \(comm rank [013], global rank [013],')" 3 "what each live rank knows"
expect "$(grep -l '"verdict":"CHECKER_LOST"' "$REPORTS"/*.json 2>/dev/null | wc -l)" 3 "reports"
expect "$(grep -l '"exit_status":86' "$REPORTS"/*.json 2>/dev/null | wc -l)" 3 "the live ranks end (86)"
expect "$(printers)" "0 1 3 " "ranks that printed"
echo "hello silent ok"
