# Pure parts: wire codec (incl. every truncation and corrupted frames), compact rank lists,
# figure runs (figruns_test), call grouping, diagnostic/report rendering, a verdict's way in a
# process (verdict_test), coordinator state
# machine, the wait-for graph (DEADLOCK), the straggler decision (SLOW), the relay tree
# (relay_unit), the exit's state machine (exit_sm_test); wire decoder fuzzing.
set -u
B=$NCG_BUILD/tests/checker
[ -x "$B/unit" ] && [ -x "$B/fuzz_wire" ] || { echo "unit tests not built"; exit 77; }
"$B/unit" || exit 1
[ -x "$B/waitfor_test" ] && { "$B/waitfor_test" || exit 1; }
[ -x "$B/straggler_test" ] || { echo "straggler_test not built"; exit 1; }
"$B/straggler_test" || exit 1
[ -x "$B/idtail_test" ] || { echo "idtail_test not built"; exit 1; }
"$B/idtail_test" || exit 1
[ -x "$B/figruns_test" ] || { echo "figruns_test not built"; exit 1; }
"$B/figruns_test" || exit 1
[ -x "$B/local_test" ] || { echo "local_test not built"; exit 1; }
"$B/local_test" || exit 1
[ -x "$B/link_sm_test" ] || { echo "link_sm_test not built"; exit 1; }
"$B/link_sm_test" || exit 1
[ -x "$B/exit_sm_test" ] || { echo "exit_sm_test not built"; exit 1; }
"$B/exit_sm_test" || exit 1
[ -x "$B/verdict_test" ] || { echo "verdict_test not built"; exit 1; }
"$B/verdict_test" || exit 1
[ -x "$B/relay_unit" ] || { echo "relay_unit not built"; exit 1; }
"$B/relay_unit" || exit 1
"$B/fuzz_wire" 100000 || exit 1
