# STUCK: FAKENCCL_STALL=1:SLOT makes rank 1 never finish slot SLOT of the world comm; every
# ncg-modes: sync
# (sync only for now: under asynchronous NCCL completion is sampled with CUDA events, so a
# member's completed count is a lower bound and the STUCK slot and blame can be wrong, and no
# thread blocks inside an NCCL call for WAIT; see docs/checker.md)
# rank issued it identically, none completes it. A warning after NCCLGUARD_STUCK_WARN_S naming
# the slot, the call and the members (the job stays blocked: the launcher ends it), and an
# error with NCCLGUARD_STUCK_ABORT_S (exit 86 everywhere). No STUCK/DEADLOCK on healthy runs:
# several comms, a second thread owning a comm, groups, p2p, rank 0 pausing 5 s before a
# barrier while the others wait in it (a LAG, not STUCK), the CPU NCCL's mixed workload.
. "$NCG_ROOT/tests/checker/lib.sh"
FAKENCCL_STALL=1:30 NCCLGUARD_STUCK_WARN_S=2 guarded "$NCG_TMP/warn" "$LAUNCH" -n 4 -t 6 "$SCEN" steady 30
expect "$RC" 124 "a stalled job stays blocked after a warning"
expect "$(nlines '^ncclguard: WARNING: STUCK on comm [0-9a-f]+ \(4 ranks\): slot 30 AllReduce\(count=8, float32, sum\) issued identically by all 4 ranks, completed on none for [0-9.]+ s')" 4 "STUCK warning on every rank"
expect "$(nlines '^ncclguard:   last slot completed on every rank: 29')" 4 "last completed slot"
expect "$(nlines '^ncclguard:   rank 1 \(global 1, .*\): issued 31, completed 30, thread [0-9]+ in AllReduce')" 4 "member lines"
expect "$(nlines '^ncclguard: VERDICT:')" 0 "no error verdict"
FAKENCCL_STALL=2:12 NCCLGUARD_STUCK_WARN_S=1 NCCLGUARD_STUCK_ABORT_S=2 guarded "$NCG_TMP/abort" "$LAUNCH" -n 4 -t 30 "$SCEN" steady 30
expect "$RC" 86 "STUCK abort"
expect "$(exited 86)" 4 "ranks that exited 86"
expect "$(nlines '^ncclguard: VERDICT: STUCK on comm [0-9a-f]+ \(4 ranks\): slot 12 ')" 4 "STUCK error verdict"
expect "$(nlines '^ncclguard:   stack of thread')" 4 "stacks with the STUCK error"
# healthy: no STUCK / DEADLOCK at a 2 s threshold (rank 0 pauses 5 s before a barrier)
NCCLGUARD_STUCK_WARN_S=2 SCEN_PAUSE_S=5 guarded "$NCG_TMP/healthy" "$LAUNCH" -n 4 -t 120 "$SCEN" healthy 300
expect "$RC" 0 "healthy run"
no_verdict
if [ -x "$B/tests/mixed" ]; then
  NCCLGUARD_STUCK_WARN_S=2 guarded "$NCG_TMP/mixed" "$LAUNCH" -n 4 -t 120 "$B/tests/mixed" --iters 600
  expect "$RC" 0 "mixed workload"
  no_verdict
fi
