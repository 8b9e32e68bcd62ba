#!/usr/bin/env bash
# `ncclguard watch` on synthetic segments: a dead rank, a stall (raised only once its configured
# time has passed), a mismatch and a verdict each raise one alert (line or JSON), the --exec
# hook gets the details in its environment, and the exit status says whether anything alerted.
. "$(dirname "$0")/lib.sh"
need "$NCG" "$FAKESEG"
A=$NCG_TMP/a; B=$NCG_TMP/b; E=$NCG_TMP/empty; mkdir -p "$A" "$B" "$E"
# nothing to report: exit 0, no output
"$NCG" watch --once --dir "$E" >"$NCG_TMP/o0"; [ $? -eq 0 ] || fail "empty: want exit 0"
[ ! -s "$NCG_TMP/o0" ] || fail "empty: unexpected output"

# dead rank 1; ranks 0,2,3 disagree (rank 2 behind) with fresh timestamps: no stall yet
start_fakeseg a --dir "$A" --ranks 4 --counts 12,12,11,12 --dead 1 --comm 00000000000000aa
APIDS=("${FS_PIDS[@]}")
"$NCG" watch --once --stall 30 --dir "$A" \
  --exec 'env | grep ^NCCLGUARD_ALERT_ | sort > "$NCG_TMP/hook.$NCCLGUARD_ALERT_KIND"' >"$NCG_TMP/o1"
rc=$?; cat "$NCG_TMP/o1"
[ $rc -eq 1 ] || fail "dead rank: want exit 1, got $rc"
contains "$NCG_TMP/o1" "ncclguard: ALERT died" "pid=${APIDS[1]} rank=1 comm=00000000000000aa" "pid gone"
lacks "$NCG_TMP/o1" "ALERT stall"
[ "$(grep -c ALERT "$NCG_TMP/o1")" -eq 1 ] || fail "one alert expected"
contains "$NCG_TMP/hook.died" "NCCLGUARD_ALERT_KIND=died" "NCCLGUARD_ALERT_PID=${APIDS[1]}" \
  "NCCLGUARD_ALERT_RANK=1" "NCCLGUARD_ALERT_COMM=00000000000000aa" "NCCLGUARD_ALERT_DETAIL=process ended" \
  "NCCLGUARD_ALERT_JSON={"
# the stall: alerted once it lasted --stall seconds, naming the rank behind
timeout 30 "$NCG" watch --stall 2 --interval 0.2 --json --dir "$A" >"$NCG_TMP/o3" & wp=$!
wait_until 20 grep -q '"kind":"stall"' "$NCG_TMP/o3"
kill $wp; wait $wp; rc=$?; cat "$NCG_TMP/o3"
[ $rc -eq 1 ] || fail "watch stopped by SIGTERM after alerts: want exit 1, got $rc"
grep '"kind":"stall"' "$NCG_TMP/o3" >"$NCG_TMP/o3a"
[ "$(wc -l <"$NCG_TMP/o3a")" -eq 1 ] || fail "stall alerted more than once"
jcheck "$NCG_TMP/o3a" 'd["version"]==1 and d["pid"]=='"${APIDS[2]}"' and d["rank"]==2 and d["slot"]==11 and d["comm"]=="00000000000000aa"'
jcheck "$NCG_TMP/o3a" '"behind: rank 2" in d["detail"]'
# never before its time: with --stall 1000 the same state gives no stall
"$NCG" watch --once --stall 1000 --dir "$A" >"$NCG_TMP/o4"
lacks "$NCG_TMP/o4" "ALERT stall"

# mismatch at slot 4 (rank 2 AllGather vs AllReduce) and a verdict on rank 0
start_fakeseg b --dir "$B" --ranks 3 --counts 5 --last 2:AllGather:64:9 --verdict 0 --comm 00000000000000bb
BPIDS=("${FS_PIDS[@]}")
"$NCG" watch --once --dir "$B" >"$NCG_TMP/o5"; rc=$?; cat "$NCG_TMP/o5"
[ $rc -eq 1 ] || fail "mismatch: want exit 1"
contains "$NCG_TMP/o5" "ALERT mismatch" "pid=${BPIDS[2]} rank=2 comm=00000000000000bb slot=4" \
  "AllGather(count=64, bfloat16) on rank 2" "AllReduce(count=1024, float32, sum) on ranks 0-1" \
  "ALERT verdict" "pid=${BPIDS[0]} rank=0" "synthetic verdict"
# alerts are raised once per event, not on every scan
timeout -s TERM 3 "$NCG" watch --interval 0.2 --dir "$B" >"$NCG_TMP/o6"
[ "$(grep -c 'ALERT mismatch' "$NCG_TMP/o6")" -eq 1 ] || fail "mismatch alerted more than once"
echo ok
