#!/usr/bin/env bash
# `ncclguard coord` serves jobs end to end through NCCLGUARD_COORD: a healthy job completes with
# no verdict; the incident (16 ranks) is caught: every rank exits 86 with the diagnostic naming
# AllReduce on rank 3 against ReduceScatter on the others. SIGTERM stops the daemon cleanly.
. "$(dirname "$0")/lib.sh"
need "$NCG" "$CLIAPP" "$LAUNCH" "$NCG_BUILD/tests/incident" "$NCG_BUILD/libncclguard.so"
"$NCG" coord --help | grep -q "usage: ncclguard coord" || fail "coord --help"
"$NCG" coord --listen 127.0.0.1:0 --token s3cret >"$NCG_TMP/coord.out" 2>&1 &
C=$!; BG_PIDS+=($C)
wait_until 20 grep -qE "listening on [^ ]*:[0-9]+" "$NCG_TMP/coord.out"
cat "$NCG_TMP/coord.out"
grep -q "this build has no coordinator" "$NCG_TMP/coord.out" && skip "ncclguard built without the coordinator"
PORT=$(grep -oE "listening on [^ ]*:[0-9]+" "$NCG_TMP/coord.out" | head -n 1 | sed 's/.*://')
# a second daemon on the same address cannot listen: exit 3 with the reason
timeout 20 "$NCG" coord --listen 127.0.0.1:$PORT >"$NCG_TMP/coord2.out" 2>&1; rc=$?
[ $rc -eq 3 ] || { cat "$NCG_TMP/coord2.out"; fail "second coord on port $PORT: exit $rc, want 3"; }
contains "$NCG_TMP/coord2.out" "ncclguard: coord: "
export NCCLGUARD_COORD=127.0.0.1:$PORT NCCLGUARD_TOKEN=s3cret
# a healthy job: completes, no verdict
LD_PRELOAD=$NCG_PRELOAD timeout 120 "$LAUNCH" -n 4 -t 100 -- "$CLIAPP" --calls 200 >"$NCG_TMP/ok.out" 2>&1
rc=$?; cat "$NCG_TMP/ok.out"
[ $rc -eq 0 ] || fail "healthy job through coord: exit $rc"
lacks "$NCG_TMP/ok.out" "VERDICT"
# (run through a link in $NCG_TMP so that cleanup finds the segments the abort leaves)
INCIDENT=$NCG_TMP/incident; ln -s "$NCG_BUILD/tests/incident" "$INCIDENT"
# the incident: every rank ends with 86 and the diagnostic
LD_PRELOAD=$NCG_PRELOAD NCCLGUARD_REPORT_DIR=$NCG_TMP timeout 120 "$LAUNCH" -n 16 -t 60 -- "$INCIDENT" >"$NCG_TMP/inc.out" 2>&1
rc=$?; grep -v "^incident:" "$NCG_TMP/inc.out" | head -n 30
[ $rc -eq 86 ] || fail "incident through coord: launcher exit $rc, want 86"
contains "$NCG_TMP/inc.out" "MISMATCH" "AllReduce(count=1, float32, sum)" "ReduceScatter(count=64, bfloat16, sum)" "on ranks 0-2,4-15"
[ "$(grep -c "exited with status 86" "$NCG_TMP/inc.out")" -eq 16 ] || fail "not every rank exited 86"
# a process with the wrong token is refused (it runs on unguarded)
NCCLGUARD_TOKEN=wrong LD_PRELOAD=$NCG_PRELOAD timeout 60 "$CLIAPP" --calls 50 --sleep-ms 10 >"$NCG_TMP/bad.out" 2>&1 \
  || { cat "$NCG_TMP/bad.out"; fail "job with a wrong token"; }
# the daemon's log: one line per join, leave, verdict and refused connection
wait_until 10 grep -q "wrong token" "$NCG_TMP/coord.out"
L='^ncclguard: coord: [0-9-]{10} [0-9:.]{12} UTC '
[ "$(grep -cE "${L}join: pid [0-9]+ \(global rank [0-9]+\) on .* \(connection [0-9]+\)$" "$NCG_TMP/coord.out")" -ge 16 ] \
  || { cat "$NCG_TMP/coord.out"; fail "coord log: a join per process expected"; }
grep -qE "${L}leave: pid [0-9]+ \(global rank [0-3]\) on .* \(clean exit\)$" "$NCG_TMP/coord.out" \
  || fail "coord log: the healthy job's clean leaves"
[ "$(grep -cE "${L}verdict: MISMATCH on comm [0-9a-f]{16} \(16 ranks\): slot 48: AllReduce\(count=1, float32, sum\) on rank 3 vs" "$NCG_TMP/coord.out")" -eq 1 ] \
  || fail "coord log: one verdict line"
grep -qE "${L}refused pid [0-9]+ on .* \(connection [0-9]+\): wrong token$" "$NCG_TMP/coord.out" || fail "coord log: refused"
# the daemon is still serving, and stops cleanly on SIGTERM
kill -0 $C || fail "coord died"
kill -TERM $C; wait $C; rc=$?
[ $rc -eq 0 ] || fail "coord after SIGTERM: exit $rc"
cat "$NCG_TMP/coord.out"; echo ok
