# Config parsing: every NCCLGUARD_* variable's good and bad values (unit test; common_test: the
# host:port parser and the other helpers of common/), then end to end:
# a bad value gives exactly one warning with the variable, the value and the value used, and
# only once the process makes a communicator.
. "$NCG_ROOT/tests/shim/lib.sh"
need "$NCG_BUILD/tests/shim/config_test" "$NCG_BUILD/tests/shim/common_test" "$CALLS" "$LAUNCH"
"$NCG_BUILD/tests/shim/config_test" || fail "config_test"
"$NCG_BUILD/tests/shim/common_test" || fail "common_test (common/: host:port, escapes, buffer)"

export NCG_ID_TIMEOUT_S=30
NCCLGUARD_ACTION=explode LD_PRELOAD="$NCG_PRELOAD" "$LAUNCH" -n 1 -t 60 -- "$CALLS" bcast \
  >"$NCG_TMP/out" 2>"$NCG_TMP/err" || { cat "$NCG_TMP/err"; fail "calls bcast under a bad value"; }
cat "$NCG_TMP/err"
n=$(grep -c '^ncclguard: NCCLGUARD_ACTION="explode": expected abort, warn or fail; using abort$' "$NCG_TMP/err")
[ "$n" = 1 ] || fail "expected the warning once, got $n"
grep -q "bcast ok" "$NCG_TMP/out" || fail "bcast did not complete"

# The same bad value in a process that only asks the version: silent (dormant).
NCCLGUARD_ACTION=explode LD_LIBRARY_PATH=$NCG_BUILD/bench/null LD_PRELOAD="$NCG_PRELOAD" \
  "$NCG_BUILD/tests/shim/realnccl" version >"$NCG_TMP/out2" 2>"$NCG_TMP/err2" || fail "realnccl version"
[ ! -s "$NCG_TMP/err2" ] || { cat "$NCG_TMP/err2"; fail "output from a process without a communicator"; }
grep -q "segment=0" "$NCG_TMP/out2" || fail "segment created without a communicator"


# NCCLGUARD_SHM=0: recorded privately, nothing under /dev/shm, no warning.
NCCLGUARD_SHM=0 NCG_DUMP=$NCG_TMP/dump LD_PRELOAD="$NCG_PRELOAD" "$LAUNCH" -n 1 -t 60 -- "$CALLS" bcast \
  >"$NCG_TMP/out" 2>"$NCG_TMP/err" || { cat "$NCG_TMP/err"; fail "NCCLGUARD_SHM=0"; }
grep -q "bcast ok" "$NCG_TMP/out" || fail "NCCLGUARD_SHM=0: bcast"
grep -qx noseg "$NCG_TMP/dump.bcast.0" || fail "NCCLGUARD_SHM=0 still made a shared segment"
! grep -q '^ncclguard:' "$NCG_TMP/err" || { cat "$NCG_TMP/err"; fail "NCCLGUARD_SHM=0 warned"; }
echo "shm=0 ok"

# A timeout too short to work (issue 13): one line, the default, the job unharmed.
NCCLGUARD_HEARTBEAT_TIMEOUT_S=0.05 LD_PRELOAD="$NCG_PRELOAD" "$LAUNCH" -n 1 -t 60 -- "$CALLS" bcast \
  >"$NCG_TMP/out" 2>"$NCG_TMP/err" || { cat "$NCG_TMP/err"; fail "calls bcast under a short heartbeat"; }
n=$(grep -c '^ncclguard: NCCLGUARD_HEARTBEAT_TIMEOUT_S="0.05": must be at least 1 (5 report intervals and 1 s); using 10$' "$NCG_TMP/err")
[ "$n" = 1 ] || { cat "$NCG_TMP/err"; fail "expected the heartbeat warning once, got $n"; }
echo "short heartbeat ok"
