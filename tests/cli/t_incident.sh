#!/usr/bin/env bash
# The incident (16 ranks) hung, seen from outside while it is stuck: with the side channel off,
# status shows every rank at 49 slots and the mismatch at slot 48 (AllReduce on rank 3 against
# ReduceScatter on 0-2,4-15), and watch raises it; with NCCLGUARD_ACTION=warn the checker's
# verdict is in every segment and watch raises a verdict alert.
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
endjob() { # TAG: kill the ranks, clean their segments
  "$NCG" status --json --no-clean --match "$NCG_TMP/$1/" >"$NCG_TMP/end"
  kill -KILL $(python3 -c 'import json,sys; print(" ".join(str(p["pid"]) for p in json.load(open(sys.argv[1]))["processes"]))' "$NCG_TMP/end") 2>/dev/null
  wait "$JOB_PID"
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
"$NCG" status --json --match "$NCG_TMP/off/" >"$NCG_TMP/j1"
jcheck "$NCG_TMP/j1" 'd["communicators"][0]["mismatch"]["slot"]==48 and {c["call"]["func"]: c["ranks"] for c in d["communicators"][0]["mismatch"]["calls"]}=={"AllReduce":[3],"ReduceScatter":[0,1,2]+list(range(4,16))}'
"$NCG" watch --once --match "$NCG_TMP/off/" >"$NCG_TMP/w1"; rc=$?; cat "$NCG_TMP/w1"
[ $rc -eq 1 ] || fail "watch: want exit 1"
contains "$NCG_TMP/w1" "ALERT mismatch" "rank=3" "slot=48"
endjob off

run_incident warn NCCLGUARD_ACTION=warn NCCLGUARD_REPORT_DIR=$NCG_TMP
echo "step: waiting for the hang (warn)"
wait_until 60 hung warn
verdicts() { "$NCG" status --json --no-clean --match "$NCG_TMP/warn/" >"$NCG_TMP/poll2" &&
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if [p["state"] for p in d["processes"]].count("verdict")==16 else 1)' "$NCG_TMP/poll2"; }
echo "step: waiting for 16 verdicts"
wait_until 45 verdicts
"$NCG" status --match "$NCG_TMP/warn/" >"$NCG_TMP/s2"; cat "$NCG_TMP/s2"
[ "$(grep -c ") verdict MISMATCH on comm .*MISMATCH.*slot 48.*; report $NCG_TMP/ncclguard-report" "$NCG_TMP/s2")" -eq 16 ] || fail "16 verdict lines expected"
"$NCG" watch --once --match "$NCG_TMP/warn/" --json >"$NCG_TMP/w2"
[ "$(grep -c '"kind":"verdict"' "$NCG_TMP/w2")" -eq 16 ] || fail "16 verdict alerts expected"
endjob warn
echo ok
