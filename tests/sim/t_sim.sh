# The relay tree through ncg-sim (512 virtual ranks, 64 nodes of 8, fan-out 4 so that the tree
# has three levels): a healthy run checks slots and draws no verdict; a mismatch, a rank's
# death, a relay's death, a frozen relay and a DEADLOCK are each found, the right rank named,
# every live rank notified exactly once within the bounds (2 s mismatch, 3 s deaths and
# deadlock, heartbeat + 1.5 s). A slow rank (straggler samples in every REPORT, rank 301 the
# last to arrive) draws one SLOW warning naming it, at every rank (once the rule held 5 s,
# NCCLGUARD_SLOW_HOLD_S), while the root's /metrics and
# /status are rendered every second; jittered samples with nobody slow name nobody.
set -u
# Under a sanitizer the relay code runs in relay_unit and t_relay_e2e; the simulator's fixed
# scenarios (9 s, run together) run in the plain pass (CI time).
[ -n "${NCG_SANITIZER:-}" ] && { echo "sanitizer build: relay code covered by relay_unit and t_relay_e2e here"; exit 77; }
SIM=$NCG_BUILD/tests/ncg-sim
[ -x "$SIM" ] || { echo "ncg-sim not built"; exit 1; }
fail=0
field() { sed -n "s/.*\"$1\": \([^,}]*\).*/\1/p" | tr -d '"'; }
# The seven runs go together (each is mostly waiting: ~0.3 CPU s in its 4 to 9 s), then each is
# checked.
T=${NCG_TMP:-/tmp}
sim() { "$SIM" --ranks 512 --per-node 8 --fanout 4 "$@" --json >"$T/sim.$1$2.json" 2>&1; }
check() { # name, expected verdict, expected named ranks, bound s, the file
  local name=$1 want=$2 named=$3 bound=$4 out
  out=$(cat "$5")
  echo "$name: $out"
  local v n nt ex du all
  v=$(echo "$out" | field verdict) n=$(echo "$out" | field named_ranks)
  nt=$(echo "$out" | field notified) ex=$(echo "$out" | field expected)
  du=$(echo "$out" | field duplicates) all=$(echo "$out" | field all_notified_s)
  if [ "$v" != "$want" ] || { [ "$named" != '*' ] && [ "$n" != "$named" ]; }; then
    echo "FAIL $name: verdict $v naming $n, wanted $want naming $named"; fail=1; return
  fi
  [ "$nt" = "$ex" ] && [ "$du" = 0 ] || { echo "FAIL $name: $nt of $ex notified, $du duplicates"; fail=1; }
  awk -v a="$all" -v b="$bound" -v s="${NCG_SLOW:-1}" 'BEGIN{exit !(a >= 0 && a <= b * s)}' ||
    { echo "FAIL $name: all notified after $all s (bound $bound s)"; fail=1; }
}
sim --seconds 4 &
sim --mismatch-rank 301 --mismatch-slot 250 &
sim --kill-rank 77 &
sim --kill-relay 9 &
sim --kill-relay 1 &
# a frozen relay (its process stopped, sockets open): caught by the heartbeat (2 s here)
sim --stop-relay 1 --heartbeat-s 2 &
# a DEADLOCK: rank 301 (node 37, three levels down) takes comm 1 before comm 0, the others the
# other way; every rank blocked sends WAITs (comm 0's verdict names the cycle's rank there)
sim --deadlock-rank 301 &
sim --slow-rank 301 --event-s 2 --after-s 8 --scrape-s 1 --scrape-status &
sim --samples --seconds 5 &
wait
out=$(cat "$T/sim.--seconds4.json")
echo "healthy: $out"
[ "$(echo "$out" | field verdict)" = null ] || { echo "FAIL healthy: a verdict"; fail=1; }
vs=$(echo "$out" | field verified_slots) is=$(echo "$out" | field issued_slots)
awk -v v="$vs" -v i="$is" 'BEGIN{exit !(i > 0 && v >= i / 2)}' ||
  { echo "FAIL healthy: only $vs of $is slots verified"; fail=1; }
[ "$(echo "$out" | field depth)" = 3 ] || { echo "FAIL healthy: the tree is not three levels deep"; fail=1; }
check mismatch MISMATCH 301 2 "$T/sim.--mismatch-rank301.json"
# the narrowing after the differing plain round asks one rank per group (here rank 0 for the
# 511 that agree, and rank 301), not all 512
out=$(cat "$T/sim.--mismatch-rank301.json")
[ "$(echo "$out" | field narrowed_ranks)" = 2 ] && [ "$(echo "$out" | field root_narrowing_rounds)" -ge 1 ] ||
  { echo "FAIL mismatch: the narrowing reached $(echo "$out" | field narrowed_ranks) ranks in $(echo "$out" | field root_narrowing_rounds) rounds, want 2 ranks"; fail=1; }
check kill-rank RANK_DIED 77 3 "$T/sim.--kill-rank77.json"
check kill-relay RANK_DIED 72 3 "$T/sim.--kill-relay9.json"
check kill-relay-inner RANK_DIED 8 3 "$T/sim.--kill-relay1.json"
check stop-relay RANK_DIED 8 3.5 "$T/sim.--stop-relay1.json"
check deadlock DEADLOCK '*' 3 "$T/sim.--deadlock-rank301.json"
grep -qE '"summary": "DEADLOCK on comm [0-9a-f]+ \(512 ranks\): global ranks ([0-9]+[,-]301|301[,-][0-9]+) wait on each other across comms ' "$T/sim.--deadlock-rank301.json" ||
  { echo "FAIL deadlock: the cycle does not name rank 301"; fail=1; }
out=$(cat "$T/sim.--slow-rank301.json")
echo "slow: $out"
sn=$(echo "$out" | field slow_notified) ex=$(echo "$out" | field expected)
[ "$(echo "$out" | field verdict)" = null ] && [ "$(echo "$out" | field slow_named)" = 301 ] &&
  [ "$(echo "$out" | field slow_warnings)" = 1 ] && [ "$sn" = "$ex" ] &&
  [ "$(echo "$out" | field slow_duplicates)" = 0 ] ||
  { echo "FAIL slow: SLOW named $(echo "$out" | field slow_named) ($(echo "$out" | field slow_warnings) warnings, $sn of $ex ranks), wanted rank 301 once at every rank, no verdict"; fail=1; }
awk -v a="$(echo "$out" | field slow_all_notified_s)" -v s="${NCG_SLOW:-1}" 'BEGIN{exit !(a >= 5 && a <= 7 * s)}' ||
  { echo "FAIL slow: every rank warned $(echo "$out" | field slow_all_notified_s) s after sampling began (bound 5-7 s: the rule holds 5 s first)"; fail=1; }
# the root's endpoint scraped every second: /metrics and /status rendered (a comm's worth each)
[ "$(echo "$out" | field scrapes)" -ge 4 ] && [ "$(echo "$out" | field metrics_bytes)" -gt 1000 ] &&
  [ "$(echo "$out" | field status_bytes)" -gt 1000 ] ||
  { echo "FAIL slow: $(echo "$out" | field scrapes) scrapes, /metrics $(echo "$out" | field metrics_bytes) B, /status $(echo "$out" | field status_bytes) B"; fail=1; }
out=$(cat "$T/sim.--samples--seconds.json")
echo "samples: $out"
[ "$(echo "$out" | field verdict)" = null ] && [ "$(echo "$out" | field slow_warnings)" = 0 ] ||
  { echo "FAIL samples: jitter alone drew $(echo "$out" | field slow_warnings) SLOW warnings, verdict $(echo "$out" | field verdict)"; fail=1; }
exit $fail
