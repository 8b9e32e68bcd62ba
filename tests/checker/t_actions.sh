# NCCLGUARD_ACTION=warn (diagnostic and report, the job is left as it is: blocked in NCCL here)
# ncg-modes: sync async
# and =fail (the comm is failed and revoked: the blocked calls return ncclRemoteError, the app
# handles its own error). Also NCCLGUARD_COORD=off: no side channel, no verdict.
. "$NCG_ROOT/tests/checker/lib.sh"
NCCLGUARD_ACTION=warn guarded "$NCG_TMP/out" "$LAUNCH" -n 4 -t 6 "$SCEN" count
expect "$RC" 124 "warn: the diverged job stays blocked"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH')" 4 "warn: diagnostic"
expect "$(nlines 'action: warn')" 4 "warn: action line"
expect "$(grep -l '"action":"warn"' "$REPORTS"/*.json | wc -l)" 4 "warn: reports"

NCCLGUARD_ACTION=fail guarded "$NCG_TMP/out2" "$LAUNCH" -n 4 -t 60 "$SCEN" count
expect "$RC" 3 "fail: the app's own error path"
expect "$(nlines "^scen: rank [0-3]: $(failing_call ncclAllReduce).*: remote process exited or there was a network error \(ncclguard: MISMATCH on comm [0-9a-f]{16} \(4 ranks\): slot [0-9]+: AllReduce\(count=9, float32, sum\) on rank 1 vs AllReduce\(count=8, float32, sum\) on ranks 0,2-3; report .*/ncclguard-report\.[^ ]*\.json \(NCCLGUARD_ACTION=fail failed the communicator\)\)\$")" 4 "fail: ncclRemoteError's string names the verdict"
# ncclGetLastError(comm) carries the same line, then NCCL's own last error
# (asynchronous: NCCL's own last error was set on the stream's thread, not the caller's)
expect "$(nlines '^scen: rank [0-3]: last error: ncclguard: MISMATCH on comm [0-9a-f]{16} \(4 ranks\): slot [0-9]+: AllReduce\(count=9, float32, sum\) on rank 1 vs AllReduce\(count=8, float32, sum\) on ranks 0,2-3; report [^ ]*\.json \(NCCLGUARD_ACTION=fail failed the communicator\)(; NCCL.s last error: |$)')" 4 "fail: ncclGetLastError names the verdict"
expect "$(nlines 'action: fail')" 4 "fail: action line"

NCCLGUARD_COORD=off guarded "$NCG_TMP/out3" "$LAUNCH" -n 4 -t 5 "$SCEN" count
expect "$RC" 124 "off: plain hang"
no_verdict

# an unreachable checker: one line per rank, the job runs on unguarded and completes
NCCLGUARD_COORD=127.0.0.1:1 guarded "$NCG_TMP/out4" "$LAUNCH" -n 4 -t 60 "$SCEN" healthy 50
expect "$RC" 0 "unreachable checker: the job still completes"
expect "$(nlines '^ncclguard: cannot reach the checker at 127.0.0.1:1: .*; running unguarded$')" 4 "one warning per rank"
expect "$(nlines '^ncclguard:')" 4 "nothing else printed"
