#!/usr/bin/env bash
# The incident (16 ranks) hung, seen from outside while it is stuck: with the side channel off,
# status shows every rank at 49 slots and the mismatch at slot 48 (AllReduce on rank 3 against
# ReduceScatter on 0-2,4-15), and watch raises it; killed, their records still show it; with
# NCCLGUARD_ACTION=warn the checker's verdict is in every segment, status shows it on one line
# and watch raises one alert for the incident (the verdict, about rank 3);
# with the default action (abort) the ended job's segments stay: every rank "ended (verdict)",
# one verdict line, one verdict alert (one --exec run) and no died alert.
. "$(dirname "$0")/lib.sh"
need "$NCG" "$LAUNCH" "$NCG_BUILD/tests/incident" "$NCG_BUILD/libncclguard.so"
run_incident() { # TAG ENV...: the incident under the shim, argv[0] made unique for --match
  local tag=$1; shift
  mkdir -p "$NCG_TMP/$tag"; ln -s "$NCG_BUILD/tests/incident" "$NCG_TMP/$tag/incident"
  env "$@" LD_PRELOAD="$NCG_PRELOAD" timeout 90 "$LAUNCH" -n 16 -t 75 -- "$NCG_TMP/$tag/incident" >"$NCG_TMP/$tag.out" 2>&1 &
  JOB_PID=$!; BG_PIDS+=($JOB_PID)
}
hung() { # TAG: 16 processes, every one at 49 slots
  "$NCG" status --json --no-clean --match "$NCG_TMP/$1/" >"$NCG_TMP/poll" &&
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if len(d["processes"])==16 and len(d["communicators"])==1 and all(m["slots"]==49 for m in d["communicators"][0]["members"]) else 1)' "$NCG_TMP/poll"
}
killjob() { # TAG: kill the ranks (their segments stay)
  "$NCG" status --json --no-clean --match "$NCG_TMP/$1/" >"$NCG_TMP/end"
  kill -KILL $(python3 -c 'import json,sys; print(" ".join(str(p["pid"]) for p in json.load(open(sys.argv[1]))["processes"]))' "$NCG_TMP/end") 2>/dev/null
  wait "$JOB_PID"
}
endjob() { # TAG: kill the ranks, clean their segments
  killjob "$1"
  "$NCG" clean --grace 0 --quiet --match "$NCG_TMP/$1/"
}

run_incident off NCCLGUARD_COORD=off
echo "step: waiting for the hang (side channel off)"
wait_until 60 hung off
"$NCG" status --match "$NCG_TMP/off/" >"$NCG_TMP/s1"; cat "$NCG_TMP/s1"
contains "$NCG_TMP/s1" "size 16  here 16 (active 16)  slots 49..49" "MISMATCH at slot 48:" \
  "AllReduce(count=1, float32, sum)               on rank 3" \
  "ReduceScatter(count=64, bfloat16, sum)         on ranks 0-2,4-15"
lacks "$NCG_TMP/s1" "behind"
# 16 rows fold into 3 lines: rank 0, "ranks 1-2,4-15: same", and rank 3, marked as the odd one
grep -qE '^ +0 +0 +0 +[0-9]+ +49/[0-9]+ +0  ReduceScatter\(count=64, bfloat16, sum\) ' "$NCG_TMP/s1" || fail "row of rank 0"
contains "$NCG_TMP/s1" "  ranks 1-2,4-15: same as rank 0 (14 processes)"
grep -qE '^ +3 +3 +3 +[0-9]+ +49/[0-9]+ +0  AllReduce\(count=1, float32, sum\) .*alive  <- odd call \(MISMATCH\)$' "$NCG_TMP/s1" || fail "rank 3's row not marked"
[ "$(grep -c '<- odd call' "$NCG_TMP/s1")" -eq 1 ] || fail "one odd row expected"
"$NCG" status --all --match "$NCG_TMP/off/" >"$NCG_TMP/s1all"
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +49/[0-9]+ ' "$NCG_TMP/s1all")" -eq 16 ] || { cat "$NCG_TMP/s1all"; fail "--all: 16 rows expected"; }
"$NCG" status --json --match "$NCG_TMP/off/" >"$NCG_TMP/j1"
jcheck "$NCG_TMP/j1" '[m["rank"] for m in d["communicators"][0]["members"] if m["odd_call"]]==[3]'
jcheck "$NCG_TMP/j1" 'd["communicators"][0]["mismatch"]["slot"]==48 and {c["call"]["func"]: c["ranks"] for c in d["communicators"][0]["mismatch"]["calls"]}=={"AllReduce":[3],"ReduceScatter":[0,1,2]+list(range(4,16))}'
"$NCG" watch --once --match "$NCG_TMP/off/" >"$NCG_TMP/w1"; rc=$?; cat "$NCG_TMP/w1"
[ $rc -eq 1 ] || fail "watch: want exit 1"
contains "$NCG_TMP/w1" "ALERT mismatch" "rank=3" "slot=48"
# the hung ranks killed: their segments still hold the records, status still shows the mismatch
killjob off
"$NCG" status --no-clean --match "$NCG_TMP/off/" >"$NCG_TMP/s1k"; cat "$NCG_TMP/s1k"
contains "$NCG_TMP/s1k" "here 16 (active 0)" "MISMATCH at slot 48:" \
  "AllReduce(count=1, float32, sum)               on rank 3"
"$NCG" clean --grace 0 --quiet --match "$NCG_TMP/off/"

run_incident warn NCCLGUARD_ACTION=warn NCCLGUARD_REPORT_DIR=$NCG_TMP
echo "step: waiting for the hang (warn)"
wait_until 60 hung warn
verdicts() { "$NCG" status --json --no-clean --match "$NCG_TMP/warn/" >"$NCG_TMP/poll2" &&
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if [p["state"] for p in d["processes"]].count("verdict")==16 else 1)' "$NCG_TMP/poll2"; }
echo "step: waiting for 16 verdicts"
wait_until 45 verdicts
"$NCG" status --all --match "$NCG_TMP/warn/" >"$NCG_TMP/s2"; cat "$NCG_TMP/s2"
[ "$(grep -c "verdict" "$NCG_TMP/s2")" -eq 17 ] || fail "16 rows in state verdict and one verdict line expected"
grep -E "^ncclguard: verdict on ranks 0-15 \(16 processes on this host\): MISMATCH on comm [0-9a-f]{16} \(16 ranks\): slot 48: .*; reports in $NCG_TMP\$" "$NCG_TMP/s2" >/dev/null || fail "grouped verdict line"
"$NCG" watch --once --match "$NCG_TMP/warn/" --json >"$NCG_TMP/w2"
grep '"kind":"verdict"' "$NCG_TMP/w2" >"$NCG_TMP/w2a"
[ "$(wc -l <"$NCG_TMP/w2a")" -eq 1 ] || { cat "$NCG_TMP/w2"; fail "one verdict alert expected"; }
# one alert for the incident: the verdict, about the odd rank of the mismatch seen here (3)
[ "$(grep -c . "$NCG_TMP/w2")" -eq 1 ] || { cat "$NCG_TMP/w2"; fail "one alert for the incident expected"; }
jcheck "$NCG_TMP/w2a" 'd["ranks"]==list(range(16)) and d["rank"]==3 and d["comm_rank"]==3 and d["processes"]==16'
endjob warn

# the default action: every rank exits 86 and leaves its segment in VERDICT state
mkdir -p "$NCG_TMP/reports"
run_incident abort NCCLGUARD_REPORT_DIR=$NCG_TMP/reports
echo "step: waiting for the abort"
wait "$JOB_PID"; rc=$?
[ $rc -eq 86 ] || { tail -n 20 "$NCG_TMP/abort.out"; fail "aborted job: want exit 86, got $rc"; }
"$NCG" status --all --no-clean --match "$NCG_TMP/abort/" >"$NCG_TMP/s3"; cat "$NCG_TMP/s3"
[ "$(grep -cE '  ended \(verdict\)( |$)' "$NCG_TMP/s3")" -eq 16 ] || fail "16 ranks ended by the verdict expected"
lacks "$NCG_TMP/s3" "dead" "alive"
[ "$(grep -c '^ncclguard: verdict on' "$NCG_TMP/s3")" -eq 1 ] || fail "one verdict line expected"
contains "$NCG_TMP/s3" "ncclguard: verdict on ranks 0-15 (16 processes on this host): MISMATCH on comm " \
  "AllReduce(count=1, float32, sum) on rank 3 vs ReduceScatter(count=64, bfloat16, sum) on ranks 0-2,4-15; reports in $NCG_TMP/reports"
"$NCG" status --json --no-clean --match "$NCG_TMP/abort/" >"$NCG_TMP/j3"
jcheck "$NCG_TMP/j3" 'len(d["processes"])==16 and all(p["ended_by_verdict"] and p["state"]=="dead" for p in d["processes"])'
jcheck "$NCG_TMP/j3" 'len(d["verdicts"])==1 and d["verdicts"][0]["ranks"]==list(range(16)) and d["verdicts"][0]["ended"]==16 and d["verdicts"][0]["reports"]=="'"$NCG_TMP/reports"'"'
"$NCG" watch --once --no-clean --match "$NCG_TMP/abort/" \
  --exec 'echo "$NCCLGUARD_ALERT_KIND rank=$NCCLGUARD_ALERT_RANK ranks=$NCCLGUARD_ALERT_RANKS" >>"$NCG_TMP/hooks"' >"$NCG_TMP/w3"
rc=$?; cat "$NCG_TMP/w3"; cat "$NCG_TMP/hooks"
[ $rc -eq 1 ] || fail "watch after the abort: want exit 1, got $rc"
[ "$(grep -c 'ALERT verdict' "$NCG_TMP/w3")" -eq 1 ] || fail "one verdict alert expected"
[ "$(grep -c ALERT "$NCG_TMP/w3")" -eq 1 ] || fail "no other alert (no died) expected"
contains "$NCG_TMP/w3" " rank=3 " "verdict on ranks 0-15 (16 processes on this host)"
[ "$(cat "$NCG_TMP/hooks")" = "verdict rank=3 ranks=0-15" ] || fail "--exec: one run for the verdict expected"
contains "$NCG_TMP/s3" "MISMATCH at slot 48:"
"$NCG" clean --grace 0 --match "$NCG_TMP/abort/" >"$NCG_TMP/c3"; cat "$NCG_TMP/c3"
contains "$NCG_TMP/c3" "removed 16 segments"
echo ok
