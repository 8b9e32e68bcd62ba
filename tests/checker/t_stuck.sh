# ncg-modes: sync async
# STUCK: FAKENCCL_STALL=1:SLOT makes rank 1 never finish slot SLOT of the world comm; every
# rank issued it identically, none completes it. A warning after NCCLGUARD_STUCK_WARN_S naming
# the slot, the call and the members (the job stays blocked: the launcher ends it), and an
# error with NCCLGUARD_STUCK_ABORT_S (exit 86 everywhere); a stall that ends (RANK:SLOT:SECONDS)
# warns, and the host status then shows the ranks alive again. No STUCK/DEADLOCK on healthy runs:
# several comms, a second thread owning a comm, groups, p2p, rank 0 pausing 5 s before a
# barrier while the others wait in it (a LAG, not STUCK), the CPU NCCL's mixed workload.
# Asynchronous mode: completion is sampled by CUDA events (at most one per stream every 2 ms),
# so the stalled jobs space their calls 5 ms apart, as a GPU's take time: every call then has
# its event and the slot is exact (a faster stream gives a range, checked last); no thread
# blocks inside the call, so the member lines name none.
# The stalled runs print the full diagnostic on every rank (NCCLGUARD_DIAG=full): by default
# only rank 0 and the ranks a verdict names print it, and a sampled range names the rank whose
# bound is lowest, not all four (the coarse clock that spaces the events can lag a 5 ms gap).
. "$NCG_ROOT/tests/checker/lib.sh"
[ $async = 1 ] && export SCEN_GAP_US=5000
export NCCLGUARD_DIAG=full
FAKENCCL_STALL=1:30 NCCLGUARD_STUCK_WARN_S=2 guarded "$NCG_TMP/warn" "$LAUNCH" -n 4 -t 6 "$SCEN" steady 30
expect "$RC" 124 "a stalled job stays blocked after a warning"
expect "$(stuck_slots WARNING 30 4)" 4 "STUCK warning on every rank naming slot 30"
if [ $async = 0 ]; then
  expect "$(nlines '^ncclguard:   last slot completed on every rank: 29')" 4 "last completed slot"
else
  expect "$(nlines '^ncclguard:   last slot completed on every rank: (at least )?(2[6-9])$')" 4 "last completed slot"
fi
if [ $async = 1 ]; then
  expect "$(nlines '^ncclguard:   rank 1 \(global 1, .*\): issued [0-9]+, completed (30|(2[7-9]|30)-3[0-3] \(sampled\))$')" 4 "member lines"
else
  expect "$(nlines '^ncclguard:   rank 1 \(global 1, .*\): issued 31, completed 30, thread [0-9]+ in AllReduce')" 4 "member lines"
fi
expect "$(nlines '^ncclguard: VERDICT:')" 0 "no error verdict"
FAKENCCL_STALL=2:12 NCCLGUARD_STUCK_WARN_S=1 NCCLGUARD_STUCK_ABORT_S=2 guarded "$NCG_TMP/abort" "$LAUNCH" -n 4 -t 30 "$SCEN" steady 30
expect "$RC" 86 "STUCK abort"
expect "$(exited 86)" 4 "ranks that exited 86"
expect "$(stuck_slots VERDICT 12 4)" 4 "STUCK error verdict naming slot 12"
expect "$(nlines '^ncclguard:   stack of thread')" 4 "stacks with the STUCK error"
# no rank counts a call issued after the stalled one as complete (a CUDA runtime loaded after
# the comm's creation is found by the first call given a stream: before that, an asynchronous
# call's return was taken for its completion, "completed 19"). An exact count is 12; a sampled
# range (a call that got no event of its own on a loaded machine) must hold 12 and start at 12
# or a little below it.
expect "$(grep -E '^ncclguard:   rank [0-3] \(global [0-3], .*\): issued [0-9]+, completed' "$OUT" |
  sed -E 's/.* completed ([0-9]+)(-([0-9]+) \(sampled\))?(, thread .*)?$/\1 \3/' |
  awk '$2 == "" && $1 != 12 || $2 != "" && ($1 > 12 || $1 < 8 || $2 < 12) { n++ } END { print n + 0 }')" \
  0 "member lines whose count is not 12 or a range holding it"
expect "$(nlines '^ncclguard:   rank [0-3] \(global [0-3], .*\): issued [0-9]+, completed [0-9]')" 32 \
  "member lines (4 ranks, in the warning and the error on every rank)"
unset SCEN_GAP_US NCCLGUARD_DIAG
# A stall that ends (FAKENCCL_STALL=RANK:SLOT:SECONDS, 3 s): the STUCK warning, then the job goes on.
# The host's status showed the processes with the warning, then (a call completed since) alive
# again, while the job runs; the warning stays in the log (as t_lag's recovered case). Not under
# ThreadSanitizer, nor in ASan's asynchronous pass (CI time: the checker's side of it is the same
# code in every pass).
if [ $tsan = 0 ] && { [ -z "${NCG_SANITIZER:-}" ] || [ $async = 0 ]; }; then
"$B/ncclguard" clean --grace 0 --match "$B/" >/dev/null 2>&1 # the aborted jobs' segments above
recovers "scen steady" STUCK "$NCG_TMP/out_rec" env FAKENCCL_STALL=1:30:3 NCCLGUARD_STUCK_WARN_S=1 \
  SCEN_GAP_US=10000 "$LAUNCH" -n 4 -t 40 "$SCEN" steady 6
expect "$RC" 0 "recovered: the job completes"
expect "$SEEN$OVER" 11 "recovered: the host status showed the STUCK warning, then the ranks alive: $(cat "$NCG_TMP/st.txt")"
expect "$(stuck_slots WARNING 30 4)" 4 "recovered: the STUCK warning printed on every rank, naming slot 30"
expect "$(nlines '^ncclguard: VERDICT:')" 0 "recovered: no error verdict"
fi
# healthy: no STUCK / DEADLOCK at a 2 s threshold (rank 0 pauses 5 s before a barrier)
NCCLGUARD_STUCK_WARN_S=2 SCEN_PAUSE_S=5 guarded "$NCG_TMP/healthy" "$LAUNCH" -n 4 -t 120 "$SCEN" healthy 300
expect "$RC" 0 "healthy run"
no_verdict
if [ -x "$B/tests/mixed" ]; then
  NCCLGUARD_STUCK_WARN_S=2 guarded "$NCG_TMP/mixed" "$LAUNCH" -n 4 -t 120 "$B/tests/mixed" --iters 600
  expect "$RC" 0 "mixed workload"
  no_verdict
fi
