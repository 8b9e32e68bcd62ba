# RANK DIED (SIGKILL: connection lost; SIGSTOP: silent past NCCLGUARD_HEARTBEAT_TIMEOUT_S) and
# ncg-modes: sync async
# RANK EXITED (a rank returns from main while the others go on).
. "$NCG_ROOT/tests/checker/lib.sh"
guarded "$NCG_TMP/kill" "$LAUNCH" -n 4 -t 60 "$SCEN" kill
expect "$RC" 137 "launcher status (first rank: killed)"
expect "$(exited 86)" 3 "survivors that exited 86"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \(4 ranks\): rank 1 died: pid [0-9]+ on .*connection lost without goodbye$')" 3 "SIGKILL headline"
# fresh facts: a rank that prints the counts gives its own count as it is now
grep -E '^ncclguard:   collective calls issued per rank: .* \(rank [0-9]+: its own count now; the others: as last reported\)$' "$OUT" >/dev/null \
  || fail "no fresh own count in the counts line"

# the rank whose process hosts the checker (zero-config: rank 0) dies: the others still act
SCEN_VICTIM=0 guarded "$NCG_TMP/kill0" "$LAUNCH" -n 4 -t 60 "$SCEN" kill
expect "$(exited 86)" 3 "survivors of rank 0 that exited 86"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \(4 ranks\): rank holding the checker \(global rank 0\) died: ')" 3 "checker host died headline"

rm -f "$REPORTS"/*
NCCLGUARD_HEARTBEAT_TIMEOUT_S=2 guarded "$NCG_TMP/stop" "$LAUNCH" -n 4 -t 12 "$SCEN" stop
expect "$RC" 124 "launcher status (stopped rank never ends)"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \(4 ranks\): rank 2 died: .*silent for')" 3 "SIGSTOP headline"
# the silent rank's count is its last word: the verdict says how old it is
expect "$(nlines '^ncclguard: VERDICT: RANK DIED .*: rank 2 died: .*silent for .*; count of rank 2 as last reported, up to [0-9.]+ s ago$')" 3 "age of the silent rank's count"
expect "$(grep -l '"exit_status":86' "$REPORTS"/*.json | wc -l)" 3 "reports of ranks that aborted"
expect "$(printers)" "0 1 3 " "ranks that printed"

guarded "$NCG_TMP/early" "$LAUNCH" -n 4 -t 60 "$SCEN" early
expect "$(exited 86)" 3 "ranks left behind that exited 86"
expect "$(nlines '^ncclguard: VERDICT: RANK EXITED on comm [0-9a-f]+ \(4 ranks\): rank 1 exited while ranks? [0-9,-]+ issued calls it will never match$')" 3 "RANK EXITED headline"
grep -qE '^ncg-launch: rank 1 exited' "$OUT" && fail "the early rank itself exited non-zero"
# the rank hosting the checker leaves early: its SHUTDOWN carries its final counts, and the
# others raise RANK EXITED themselves when they go beyond them
# (the host leaving at once, its stay bounded to a millisecond: the others judge from its
# SHUTDOWN's counts; by default it stays and its checker judges: t_host_leaves.sh)
NCCLGUARD_HOST_STAY_S=0.001 SCEN_VICTIM=0 guarded "$NCG_TMP/early0" "$LAUNCH" -n 4 -t 60 "$SCEN" early
expect "$(exited 86)" 3 "ranks left behind by the checker host that exited 86"
expect "$(nlines '^ncclguard: VERDICT: RANK EXITED .*: rank 0 exited while rank [1-3] issued calls it will never match$')" 3 "RANK EXITED (checker host, named by its comm rank)"
# RANK is set: the local verdict names what this rank knows, never "RANK not set" (issue 13)
expect "$(nlines 'RANK not set')" 0 "no untrue 'RANK not set'"
expect "$(nlines '^ncclguard:   communicator [0-9a-f]+, 4 ranks, global ranks by comm rank \[(\?|[0-9]),(\?|[0-9]),(\?|[0-9]),(\?|[0-9])\]( \(\?: not gathered\))?$')" 3 "global ranks as known"
exit 0
