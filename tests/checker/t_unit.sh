# Pure parts: wire codec (incl. every truncation and corrupted frames), compact rank lists,
# figure runs (figruns_test), call grouping, diagnostic/report rendering, the wait-for graph
# (DEADLOCK), the straggler decision (SLOW), the verdicts a process decides alone (local_test),
# the relay tree (relay_unit), the agent's machines: the link (link_sm_test), the exit
# (exit_sm_test), a verdict's way in a process (verdict_test); wire decoder fuzzing.
set -u
B=$NCG_BUILD/tests/checker
[ -x "$B/unit" ] && [ -x "$B/fuzz_wire" ] || { echo "unit tests not built"; exit 77; }
"$B/unit" || exit 1
[ -x "$B/waitfor_test" ] && { "$B/waitfor_test" || exit 1; }
for t in straggler_test idtail_test figruns_test local_test link_sm_test exit_sm_test \
  verdict_test relay_unit; do
  [ -x "$B/$t" ] || { echo "$t not built"; exit 1; }
  "$B/$t" || exit 1
done
"$B/fuzz_wire" 100000 || exit 1
