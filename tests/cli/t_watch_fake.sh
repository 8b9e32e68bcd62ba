#!/usr/bin/env bash
# `ncclguard watch` on synthetic segments: a dead rank, a stall (raised only once its configured
# time has passed), a mismatch and a verdict each raise one alert (line or JSON), the --exec
# hook gets the details in its environment, and the exit status says whether anything alerted.
# Ranks ended by a verdict raise one verdict alert for all of them (one --exec run), no died.
. "$(dirname "$0")/lib.sh"
need "$NCG" "$FAKESEG"
A=$NCG_TMP/a; B=$NCG_TMP/b; C=$NCG_TMP/c; M=$NCG_TMP/m; E=$NCG_TMP/empty; mkdir -p "$A" "$B" "$C" "$M" "$E"
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
  "NCCLGUARD_ALERT_RANK=1" "NCCLGUARD_ALERT_RANKS=1" "NCCLGUARD_ALERT_COMM=00000000000000aa" "NCCLGUARD_ALERT_DETAIL=process ended" \
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

# mismatch at slot 4 (rank 2 AllGather vs AllReduce), no verdict (NCCLGUARD_COORD=off): a
# mismatch alert, raised after a short wait for a verdict (about 1 s)
start_fakeseg m --dir "$M" --ranks 3 --counts 5 --last 2:AllGather:64:9 --comm 00000000000000dd
MPIDS=("${FS_PIDS[@]}")
"$NCG" watch --once --dir "$M" >"$NCG_TMP/o5m"; rc=$?; cat "$NCG_TMP/o5m"
[ $rc -eq 1 ] || fail "mismatch: want exit 1"
contains "$NCG_TMP/o5m" "ALERT mismatch" "pid=${MPIDS[2]} rank=2 comm=00000000000000dd slot=4" \
  "AllGather(count=64, bfloat16) on rank 2" "AllReduce(count=1024, float32, sum) on ranks 0-1"
# the same mismatch with the checker's verdict on the comm: one alert for the incident, the
# verdict, about the mismatch's odd rank (rank 2)
start_fakeseg b --dir "$B" --ranks 3 --counts 5 --last 2:AllGather:64:9 --verdict 0 --comm 00000000000000bb
BPIDS=("${FS_PIDS[@]}")
"$NCG" watch --once --dir "$B" >"$NCG_TMP/o5"; rc=$?; cat "$NCG_TMP/o5"
[ $rc -eq 1 ] || fail "verdict: want exit 1"
contains "$NCG_TMP/o5" "ALERT verdict" "pid=${BPIDS[2]} rank=2 comm=00000000000000bb" "synthetic verdict"
lacks "$NCG_TMP/o5" "ALERT mismatch"
[ "$(grep -c 'ALERT' "$NCG_TMP/o5")" -eq 1 ] || fail "one alert for the incident expected"
# alerts are raised once per event, not on every scan
timeout -s TERM 3 "$NCG" watch --interval 0.2 --dir "$B" >"$NCG_TMP/o6"
[ "$(grep -c 'ALERT' "$NCG_TMP/o6")" -eq 1 ] || fail "incident alerted more than once"
[ "$(grep -c 'ALERT verdict' "$NCG_TMP/o6")" -eq 1 ] || fail "verdict alerted more than once"
timeout -s TERM 3 "$NCG" watch --interval 0.2 --dir "$M" >"$NCG_TMP/o6m"
[ "$(grep -c 'ALERT mismatch' "$NCG_TMP/o6m")" -eq 1 ] || fail "mismatch alerted more than once"

# ranks 0-3 of a 5-rank comm (global ranks 8-12) recorded a verdict and ended (abort): one
# verdict alert naming them all, the hook run once; rank 4 died on its own: a died alert
start_fakeseg c --dir "$C" --ranks 5 --counts 7 --comm 00000000000000cc --grank-base 8 \
  --verdict 0 --verdict 1 --verdict 2 --verdict 3 --dead 0 --dead 1 --dead 2 --dead 3 --dead 4
CPIDS=("${FS_PIDS[@]}")
"$NCG" watch --once --dir "$C" --exec 'echo "$NCCLGUARD_ALERT_KIND" >>"$NCG_TMP/hooks"; env | grep ^NCCLGUARD_ALERT_ | sort >"$NCG_TMP/hook2.$NCCLGUARD_ALERT_KIND"' >"$NCG_TMP/o7"
rc=$?; cat "$NCG_TMP/o7"
[ $rc -eq 1 ] || fail "verdict: want exit 1, got $rc"
[ "$(grep -c 'ALERT verdict' "$NCG_TMP/o7")" -eq 1 ] || fail "one verdict alert expected"
[ "$(grep -c 'ALERT died' "$NCG_TMP/o7")" -eq 1 ] || fail "one died alert expected (rank 4 only)"
contains "$NCG_TMP/o7" "ALERT died host=$(hostname) pid=${CPIDS[4]} rank=12 " \
  "ALERT verdict host=$(hostname) pid=${CPIDS[0]} rank=8 comm=00000000000000cc: verdict on ranks 8-11 (comm ranks 0-3; 4 processes on this host): MISMATCH on comm 00000000000000cc: synthetic verdict; reports in /tmp"
[ "$(grep -c . "$NCG_TMP/hooks")" -eq 2 ] && [ "$(grep -c verdict "$NCG_TMP/hooks")" -eq 1 ] || { cat "$NCG_TMP/hooks"; fail "hook: one run per alert expected"; }
contains "$NCG_TMP/hook2.verdict" "NCCLGUARD_ALERT_KIND=verdict" "NCCLGUARD_ALERT_PID=${CPIDS[0]}" \
  "NCCLGUARD_ALERT_RANK=8" "NCCLGUARD_ALERT_RANKS=8-11" "NCCLGUARD_ALERT_COMM_RANK=0" \
  "NCCLGUARD_ALERT_COMM=00000000000000cc" "NCCLGUARD_ALERT_REPORTS=/tmp" "NCCLGUARD_ALERT_DETAIL=verdict on ranks 8-11"
"$NCG" watch --once --json --dir "$C" >"$NCG_TMP/o8"
grep '"kind":"verdict"' "$NCG_TMP/o8" >"$NCG_TMP/o8a"
[ "$(wc -l <"$NCG_TMP/o8a")" -eq 1 ] || fail "one JSON verdict alert expected"
jcheck "$NCG_TMP/o8a" 'd["rank"]==8 and d["comm_rank"]==0 and d["ranks"]==[8,9,10,11] and d["comm_ranks"]==[0,1,2,3] and d["processes"]==4 and d["reports"]=="/tmp" and d["pids"]=='"[${CPIDS[0]},${CPIDS[1]},${CPIDS[2]},${CPIDS[3]}]"
# a slot issued by all 3 ranks and completed by none for 30 s, rank 1's process SIGSTOPped (a
# debugger, a suspended job): the stuck alert and status say that it is stopped
D=$NCG_TMP/d; mkdir -p "$D"
start_fakeseg d --dir "$D" --ranks 3 --counts 9 --age 30 --comm 00000000000000dd
kill -STOP "${FS_PIDS[1]}"
# kill returns before the signal is delivered: wait (2 s at most) until the kernel says stopped
for _ in $(seq 40); do
  [ "$(sed 's/.*) //' "/proc/${FS_PIDS[1]}/stat" 2>/dev/null | cut -c1)" = T ] && break
  sleep 0.05
done
"$NCG" watch --once --stall 2 --dir "$D" >"$NCG_TMP/o9"; cat "$NCG_TMP/o9"
contains "$NCG_TMP/o9" "ALERT stuck " "; stopped: rank 1 (pid ${FS_PIDS[1]}): SIGSTOP or a debugger"
"$NCG" status --dir "$D" >"$NCG_TMP/o10"
grep -q "(stopped (SIGSTOP or a debugger))" "$NCG_TMP/o10" || { cat "$NCG_TMP/o10"; fail "status: the stopped rank"; }
[ "$(grep -c 'SIGSTOP' "$NCG_TMP/o10")" -eq 1 ] || fail "status: only rank 1 is stopped"
kill -CONT "${FS_PIDS[1]}"
"$NCG" watch --once --stall 2 --dir "$D" >"$NCG_TMP/o11"
! grep -q "stopped:" "$NCG_TMP/o11" || fail "continued: no longer stopped"
# a SLOW warning the members hold (rank 2 of 4, global 10, 15% on the host), another naming
# rank 1 three seconds later: one slow alert per episode and one more for the change, about the
# named rank's process; the warning in the headers raises no verdict alert
S=$NCG_TMP/s; mkdir -p "$S"
start_fakeseg s --dir "$S" --ranks 4 --grank-base 8 --comm 00000000000000ee --slow 2:15 --slow-next 1:3
SPIDS=("${FS_PIDS[@]}")
timeout -s TERM 6 "$NCG" watch --json --interval 0.3 --dir "$S" >"$NCG_TMP/o12"
grep '"kind":"slow"' "$NCG_TMP/o12" >"$NCG_TMP/o12a"
[ "$(wc -l <"$NCG_TMP/o12a")" -eq 2 ] || { cat "$NCG_TMP/o12"; fail "slow: one alert per named rank expected"; }
! grep -q '"kind":"verdict"' "$NCG_TMP/o12" || fail "slow: a verdict alert for the warning"
head -1 "$NCG_TMP/o12a" >"$NCG_TMP/o12b"; tail -1 "$NCG_TMP/o12a" >"$NCG_TMP/o12c"
jcheck "$NCG_TMP/o12b" 'd["rank"]==10 and d["comm_rank"]==2 and d["pid"]=='"${SPIDS[2]}"' and d["comm"]=="00000000000000ee" and d["slot"] is None and d["segment"].endswith(".'"${SPIDS[2]}"'")'
jcheck "$NCG_TMP/o12b" '"rank 2 (global rank 10, pid '"${SPIDS[2]}"' on " in d["detail"] and "they lose 15.0% of the step" in d["detail"] and d["detail"].endswith("late on its host")'
jcheck "$NCG_TMP/o12c" 'd["rank"]==9 and d["comm_rank"]==1 and d["pid"]=='"${SPIDS[1]}"
"$NCG" watch --once --dir "$S" >"$NCG_TMP/o13"
[ "$(grep -c 'ALERT' "$NCG_TMP/o13")" -eq 1 ] || { cat "$NCG_TMP/o13"; fail "slow: one alert per scan of a new watch"; }
contains "$NCG_TMP/o13" "ALERT slow host=$(hostname) pid=${SPIDS[1]} rank=9 comm=00000000000000ee: rank 1 (global rank 9"
echo ok
