# SLOW: one rank 20% (and 10%) slower in the compute before each all-reduce, on the host or (in
# ncg-modes: sync async
# asynchronous mode) on its stream: every rank prints one SLOW warning naming that rank, and
# only it, within 30 s, the job completes (a warning never acts, whatever NCCLGUARD_ACTION); the
# slow rank changing mid-run gives a second warning naming the new one; every rank jittering
# 0-10% and none slower gives none. 8 ranks, and 16 once. The 10 x 1 min acceptance run is a
# manual command (docs/validation.md).
. "$NCG_ROOT/tests/checker/lib.sh"
# slow_run NAME RANKS STEPS ENV...: runs `scen slow STEPS` on RANKS ranks (30 ms steps).
slow_run() {
  local name=$1 n=$2 steps=$3; shift 3
  guarded "$NCG_TMP/$name" env "$@" "$LAUNCH" -n "$n" -t 110 "$SCEN" slow "$steps"
  expect "$RC" 0 "$name: a warning only, the job completes"
}
# named N RANK: every one of the N ranks printed exactly one SLOW naming RANK and no other line.
named() {
  expect "$(nlines '^ncclguard: WARNING: SLOW on comm [0-9a-f]+ \('"$1"' ranks\): rank '"$2"' is the one the others wait for')" "$1" "SLOW naming rank $2"
  expect "$(nlines '^ncclguard: (WARNING|VERDICT):')" "$1" "no other warning or verdict"
}
on=host; [ $async = 1 ] && on=stream
# 20% slower, on the stream in asynchronous mode, under the abort action (the default)
SECONDS=0
slow_run slow20 8 330 SCEN_SLOW_RANK=5 SCEN_SLOW_ON=$on
named 8 5
[ $SECONDS -le $((30 * SLOW)) ] || fail "slow20: took ${SECONDS}s (the warning should come within 30 s)"
if [ $async = 1 ]; then
  grep -qE 'SLOW.*late on its GPU \(its stream starts the collective late\)' "$OUT" || fail "not named on the GPU"
  # on the host in asynchronous mode too
  slow_run slowhost 8 330 SCEN_SLOW_RANK=2 SCEN_SLOW_ON=host
  named 8 2
  grep -qE 'SLOW.*late on its host' "$OUT" || fail "not named on the host"
else
  grep -qE 'SLOW.*late on its host \(it issues the collective late\)' "$OUT" || fail "not named on the host"
fi
# 10% slower
slow_run slow10 8 330 SCEN_SLOW_RANK=1 SCEN_SLOW_PCT=10 SCEN_SLOW_ON=$on
named 8 1
# the slow rank changes mid-run: a second warning naming the new one
slow_run change 8 700 SCEN_SLOW_RANK=6 SCEN_SLOW_RANK2=3 SCEN_SLOW_SWITCH=300 SCEN_SLOW_ON=$on
expect "$(nlines 'WARNING: SLOW .*: rank 6 is the one')" 8 "change: first SLOW naming rank 6"
expect "$(nlines 'WARNING: SLOW .*: rank 3 is the one')" 8 "change: second SLOW naming rank 3"
expect "$(nlines '^ncclguard: (WARNING|VERDICT):')" 16 "change: no other warning"
# every rank jittering 0-10%, none slower: no SLOW
slow_run jitter 8 600 SCEN_JITTER_PCT=10 SCEN_SLOW_ON=$on
no_verdict
# 16 ranks, once (asynchronous mode: on the stream)
if [ $async = 1 ]; then
  slow_run slow16 16 330 SCEN_SLOW_RANK=11 SCEN_SLOW_ON=$on
  named 16 11
fi
# NCCLGUARD_SLOW=0: nothing sampled, nothing said
slow_run off 8 330 SCEN_SLOW_RANK=5 SCEN_SLOW_ON=$on NCCLGUARD_SLOW=0
no_verdict
echo "t_slow: ok"
