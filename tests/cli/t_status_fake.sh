#!/usr/bin/env bash
# `ncclguard status` (table and JSON) on synthetic segments: ranks, slot counts, who is behind,
# a dead rank, a half-written record never shown, a foreign file skipped, a mismatch at one
# slot, a recorded verdict, and ranks ended by a verdict (state "ended (verdict)", one line for
# the verdict however many ranks recorded it).
. "$(dirname "$0")/lib.sh"
need "$NCG" "$FAKESEG"
A=$NCG_TMP/a; B=$NCG_TMP/b; C=$NCG_TMP/c; mkdir -p "$A" "$B" "$C"
start_fakeseg a --dir "$A" --ranks 4 --counts 12,12,11,12 --dead 1 --torn 0 --p2p 2:3 --junk --comm 1234abcd5678ef01
APIDS=("${FS_PIDS[@]}")
"$NCG" status --dir "$A" >"$NCG_TMP/t1" 2>&1 || fail "status exit $?"
cat "$NCG_TMP/t1"
contains "$NCG_TMP/t1" "comm 1234abcd5678ef01" "size 4" "here 4 (active 3)" "slots 11..12" "behind: rank 2" \
  "dead (pid gone)" "(record being written)" "foreign file (bad magic)"
grep -E "^ +2 +2 +2 +${APIDS[2]} +11/0 +3 +AllReduce\(count=1024, float32, sum\).*alive  <- behind" "$NCG_TMP/t1" >/dev/null || fail "rank 2 row"
grep -E "^ +3 +3 +3 +${APIDS[3]} +12/0 +0 +AllReduce" "$NCG_TMP/t1" >/dev/null || fail "rank 3 row"
lacks "$NCG_TMP/t1" "MISMATCH" "ended (verdict)" "verdict on"
"$NCG" status --json --dir "$A" >"$NCG_TMP/j1" || fail "status --json exit $?"
jcheck "$NCG_TMP/j1" 'd["format"]=="ncclguard-status" and d["version"]==1 and len(d["processes"])==4'
jcheck "$NCG_TMP/j1" 'len(d["communicators"])==1 and d["communicators"][0]["id"]=="1234abcd5678ef01"'
jcheck "$NCG_TMP/j1" '[m["rank"] for m in d["communicators"][0]["members"]]==[0,1,2,3]'
jcheck "$NCG_TMP/j1" '[m["slots"] for m in d["communicators"][0]["members"]]==[12,12,11,12]'
jcheck "$NCG_TMP/j1" 'd["communicators"][0]["behind"]==[2] and d["communicators"][0]["mismatch"] is None'
jcheck "$NCG_TMP/j1" '[m["state"] for m in d["communicators"][0]["members"]]==["alive","dead","alive","alive"]'
jcheck "$NCG_TMP/j1" 'not any(p["ended_by_verdict"] for p in d["processes"]) and d["verdicts"]==[]'
jcheck "$NCG_TMP/j1" 'd["communicators"][0]["members"][0]["last_call"] is None'
jcheck "$NCG_TMP/j1" 'd["communicators"][0]["members"][3]["last_call"]["func"]=="AllReduce" and d["communicators"][0]["members"][3]["last_call"]["count"]==1024'
jcheck "$NCG_TMP/j1" 'd["communicators"][0]["members"][2]["p2p"]==3 and d["communicators"][0]["members"][1]["pid"]=='"${APIDS[1]}"
jcheck "$NCG_TMP/j1" 'len(d["skipped"])==1 and "bad magic" in d["skipped"][0]["reason"]'

start_fakeseg b --dir "$B" --ranks 3 --counts 5 --last 2:AllGather:64:9 --verdict 0 --comm 00000000000000b7 --tag mytag
BPIDS=("${FS_PIDS[@]}")
"$NCG" status --dir "$B" >"$NCG_TMP/t2" 2>&1 || fail "status exit $?"
cat "$NCG_TMP/t2"
contains "$NCG_TMP/t2" "MISMATCH at slot 4:" "AllGather(count=64, bfloat16)" "on rank 2" "on ranks 0-1" \
  "ncclguard: verdict on rank 0 (1 process on this host): MISMATCH on comm 00000000000000b7: synthetic verdict; report /tmp/ncclguard-report.fake.${BPIDS[0]}.json"
lacks "$NCG_TMP/t2" "behind"
"$NCG" status --json --dir "$B" >"$NCG_TMP/j2"
jcheck "$NCG_TMP/j2" 'd["communicators"][0]["mismatch"]["slot"]==4 and sorted(tuple(c["ranks"]) for c in d["communicators"][0]["mismatch"]["calls"])==[(0,1),(2,)]'
jcheck "$NCG_TMP/j2" '[p["state"] for p in d["processes"]].count("verdict")==1 and [p for p in d["processes"] if p["verdict"]][0]["verdict"]["kind"]==1'
jcheck "$NCG_TMP/j2" 'len(d["verdicts"])==1 and d["verdicts"][0]["ranks"]==[0] and d["verdicts"][0]["processes"]==1 and d["verdicts"][0]["ended"]==0'
# --match filters by command line
"$NCG" status --json --dir "$B" --match "rank 1 mytag" >"$NCG_TMP/j3"
jcheck "$NCG_TMP/j3" 'len(d["processes"])==1 and d["processes"][0]["global_rank"]==1'

# ranks 0-3 of a 5-rank comm (global ranks 8-12) recorded a verdict and ended (abort); rank 4
# (global 12) died on its own: one verdict line, "ended (verdict)" against "dead (pid gone)"
start_fakeseg c --dir "$C" --ranks 5 --counts 7 --comm 00000000000000c7 --grank-base 8 \
  --verdict 0 --verdict 1 --verdict 2 --verdict 3 --dead 0 --dead 1 --dead 2 --dead 3 --dead 4
CPIDS=("${FS_PIDS[@]}")
"$NCG" status --dir "$C" >"$NCG_TMP/t3" 2>&1 || fail "status exit $?"
cat "$NCG_TMP/t3"
[ "$(grep -c '  ended (verdict)$' "$NCG_TMP/t3")" -eq 4 ] || fail "4 ranks ended by the verdict expected"
grep -E "^ +4 +12 +4 +${CPIDS[4]} +7/0 .*  dead \(pid gone\)$" "$NCG_TMP/t3" >/dev/null || fail "rank 4 row"
[ "$(grep -c 'verdict' "$NCG_TMP/t3")" -eq 5 ] || fail "one verdict line expected"
contains "$NCG_TMP/t3" "ncclguard: verdict on ranks 8-11 (comm ranks 0-3; 4 processes on this host): MISMATCH on comm 00000000000000c7: synthetic verdict; reports in /tmp"
lacks "$NCG_TMP/t3" "MISMATCH on comm 00000000000000c7: MISMATCH"
"$NCG" status --json --dir "$C" >"$NCG_TMP/j4"
jcheck "$NCG_TMP/j4" '[p["ended_by_verdict"] for p in sorted(d["processes"], key=lambda p: p["global_rank"])]==[True]*4+[False] and all(p["state"]=="dead" for p in d["processes"])'
jcheck "$NCG_TMP/j4" '[m["ended_by_verdict"] for m in d["communicators"][0]["members"]]==[True]*4+[False] and all(m["state"]=="dead" for m in d["communicators"][0]["members"])'
jcheck "$NCG_TMP/j4" 'len(d["verdicts"])==1 and d["verdicts"][0]["ranks"]==[8,9,10,11] and d["verdicts"][0]["comm_ranks"]==[0,1,2,3] and d["verdicts"][0]["processes"]==4 and d["verdicts"][0]["ended"]==4'
jcheck "$NCG_TMP/j4" 'd["verdicts"][0]["comm"]=="00000000000000c7" and d["verdicts"][0]["name"]=="MISMATCH" and d["verdicts"][0]["reports"]=="/tmp" and d["verdicts"][0]["pids"]=='"[${CPIDS[0]},${CPIDS[1]},${CPIDS[2]},${CPIDS[3]}]"
# a SLOW warning the members hold (rank 1 of 3 on its GPU, 12.5%): its line (host, pid found
# here) even though the header shows it as its warning; --json: "slow" on the comm
W=$NCG_TMP/w; mkdir -p "$W"
start_fakeseg w --dir "$W" --ranks 3 --comm 00000000000000e1 --grank-base 4 --slow 1:12:gpu
WPIDS=("${FS_PIDS[@]}")
"$NCG" status --dir "$W" >"$NCG_TMP/t7" 2>&1 || fail "status exit $?"
contains "$NCG_TMP/t7" "ncclguard: SLOW on comm 00000000000000e1: rank 1 (global rank 5, pid ${WPIDS[1]} on $(hostname)) is the one the others wait for: they lose 12.0% of the step, for "
grep -qE "for [5-9] s, late on its GPU \(the latest SLOW warning here\)$" "$NCG_TMP/t7" || { cat "$NCG_TMP/t7"; fail "status: SLOW's since and side"; }
"$NCG" status --json --dir "$W" >"$NCG_TMP/j7"
jcheck "$NCG_TMP/j7" 'd["communicators"][0]["slow"]["rank"]==1 and d["communicators"][0]["slow"]["global_rank"]==5 and d["communicators"][0]["slow"]["pid"]=='"${WPIDS[1]}"' and d["communicators"][0]["slow"]["side"]=="gpu" and abs(d["communicators"][0]["slow"]["share"]-0.12)<1e-6 and 4<=d["communicators"][0]["slow"]["since_s"]<30'
"$NCG" status --json --dir "$C" >"$NCG_TMP/j8"
jcheck "$NCG_TMP/j8" 'd["communicators"][0]["slow"] is None'
# an empty directory is not an error
mkdir "$NCG_TMP/empty"
"$NCG" status --dir "$NCG_TMP/empty" >"$NCG_TMP/t4" || fail "empty dir"
contains "$NCG_TMP/t4" "no guarded process"
# an unreadable directory is
"$NCG" status --dir "$NCG_TMP/nonexistent" 2>"$NCG_TMP/e5"; [ $? -eq 3 ] || fail "missing dir: want exit 3"
# --watch refreshes until interrupted
timeout -s INT 3 "$NCG" status --watch 0.5 --dir "$A" >"$NCG_TMP/t6"; rc=$?
[ "$(grep -c '^comm 1234abcd5678ef01' "$NCG_TMP/t6")" -ge 2 ] || fail "--watch did not refresh (rc $rc)"
echo ok
