# LAG: rank 1 stops calling for 3 s while the others wait in a collective. A warning after
# ncg-modes: sync async
# NCCLGUARD_LAG_WARN_S (the job then completes, exit 0); with NCCLGUARD_LAG_ABORT_S it acts,
# and the diagnostic shows where each rank's thread is (the lagging one: in its sleep). A warning
# that is over (the job goes on) no longer shows the processes with it in `ncclguard status`.
. "$NCG_ROOT/tests/checker/lib.sh"
# The block content on every rank (the default, NCCLGUARD_DIAG=auto, prints it on the ranks the
# verdict is about and one other: tests/checker/t_incident.sh)
export NCCLGUARD_DIAG=full
NCCLGUARD_LAG_WARN_S=1 SCEN_LAG_S=3 guarded "$NCG_TMP/out" "$LAUNCH" -n 4 -t 60 "$SCEN" lag
expect "$RC" 0 "warning only: the job completes"
expect "$(nlines '^ncclguard: WARNING: LAG on comm [0-9a-f]+ \(4 ranks\): rank 1 behind, nobody progressed')" 4 "warning"
expect "$(nlines '^ncclguard: VERDICT:')" 0 "no error verdict"
expect "$(nlines '^ncclguard:   stack of thread')" 0 "no stack capture for a warning"
NCCLGUARD_LAG_WARN_S=1 NCCLGUARD_LAG_ABORT_S=2 SCEN_LAG_S=6 guarded "$NCG_TMP/out2" "$LAUNCH" -n 4 -t 60 "$SCEN" lag
expect "$RC" 86 "lag abort"
expect "$(exited 86)" 4 "ranks that exited 86"
expect "$(nlines '^ncclguard: VERDICT: LAG on comm')" 4 "lag verdict"
# an error LAG under abort shows each rank's stuck thread: the lagging rank 1 is in its sleep
expect "$(nlines '^ncclguard:   stack of thread')" 4 "stacks with the lag verdict"
[ $tsan = 1 ] || grep -qE '^ncclguard:     #[0-9]+ .*sleep' "$OUT" || fail "the lagging rank's stack does not show its sleep"
# A warning that is over: rank 1 catches up and the job goes on. The host's status showed the
# processes with the LAG warning, then (a call completed since) alive again, while the job runs;
# the warning stays in the log.
recovers "scen lag" LAG "$NCG_TMP/out3" env NCCLGUARD_LAG_WARN_S=1 SCEN_LAG_S=3 SCEN_LAG_TAIL_S=6 \
  "$LAUNCH" -n 4 -t 60 "$SCEN" lag
expect "$RC" 0 "recovered: the job completes"
expect "$SEEN$OVER" 11 "recovered: the host status showed the LAG warning, then the ranks alive: $(cat "$NCG_TMP/st.txt")"
expect "$(nlines '^ncclguard: WARNING: LAG on comm')" 4 "recovered: the warning printed"
