#!/usr/bin/env bash
# `ncclguard report DIR` merges the reports (one per process) into one account: first on
# hand-written reports (docs/report-format.md v1) with a missing rank, a malformed and a foreign
# file; processes holding several ranks counted apart from the ranks (issue 36); then on the
# reports of a real diverged job (the incident, 16 ranks, zero-config checker, abort).
. "$(dirname "$0")/lib.sh"
need "$NCG"
R=$NCG_TMP/rep; mkdir -p "$R"
mk() { # rank count call_site action
  cat >"$R/ncclguard-report.hostA.$((1000 + $1)).json" <<J
{"format":"ncclguard-report","version":1,"verdict":"MISMATCH","severity":"error","action":"$4","exit_status":86,"summary":"MISMATCH on comm 00000000000000ab (4 ranks): slot 7: AllReduce on rank 3 vs ReduceScatter on ranks 0-2","time_unix":1795930000.5,"host":"hostA","pid":$((1000 + $1)),"global_rank":$((10 + $1)),"comm":{"id":"00000000000000ab","size":4,"members":[10,11,12,13]},"rank":$1,"slot":7,"last_agreed_slot":6,"counts":[8,8,-1,$2],"calls":[{"func":"ReduceScatter","count":4096,"dtype":"bfloat16","op":"sum","root":null,"seq":7,"ranks":"0-2","global_ranks":"10-12","call_site":"train_step+0x1a"},{"func":"AllReduce","count":1,"dtype":"float32","op":"sum","root":null,"seq":7,"ranks":"3","global_ranks":"13","call_site":"barrier+0x2"}],"subject_ranks":"3","call_site":"$3","detail":"","future_key":{"x":[1,2,{"y":null}]}}
J
}
mk 0 8 "train_step+0x1a" abort
mk 1 8 "train_step+0x1a" abort
mk 3 8 "barrier+0x2" abort
echo '{"format":"ncclguard-report","version":1,"verdict":' >"$R/ncclguard-report.hostA.2000.json"
echo '{"format":"something-else","version":1}' >"$R/ncclguard-report.hostA.2001.json"
echo 'partial' >"$R/ncclguard-report.hostA.2002.json.tmp.55"
"$NCG" report "$R" >"$NCG_TMP/o1" 2>"$NCG_TMP/e1" || fail "report exit $?"
cat "$NCG_TMP/o1" "$NCG_TMP/e1"
contains "$NCG_TMP/o1" "3 reports (one per process), 1 verdict, 2 files skipped" \
  "MISMATCH (error) on comm 00000000000000ab (size 4) at slot 7, last agreed slot 6" \
  "ReduceScatter(count=4096, bfloat16, sum)" "on ranks 0-2 (global 10-12)" \
  "AllReduce(count=1, float32, sum)" "on rank 3 (global 13)" \
  "slot counts: 8 on ranks 0-1,3; unknown on rank 2" \
  "actions: abort on ranks 0-1,3" "reports from 3 processes: ranks 0-1,3; no report from rank 2"
grep -E "train_step\+0x1a +ranks 0-1" "$NCG_TMP/o1" >/dev/null || fail "call sites of ranks 0-1"
grep -E "barrier\+0x2 +rank 3" "$NCG_TMP/o1" >/dev/null || fail "call site of rank 3"
contains "$NCG_TMP/e1" "malformed JSON" "not an ncclguard report"
"$NCG" report "$R" --json >"$NCG_TMP/j1" 2>/dev/null || fail "report --json"
jcheck "$NCG_TMP/j1" 'd["format"]=="ncclguard-job-report" and d["version"]==1 and d["reports"]==3 and d["skipped"]==2 and len(d["skipped_files"])==2 and all(set(x)=={"file","reason"} for x in d["skipped_files"])'
jcheck "$NCG_TMP/j1" 'len(d["verdicts"])==1 and d["verdicts"][0]["counts"]==[8,8,-1,8] and d["verdicts"][0]["missing_ranks"]=="2"'
jcheck "$NCG_TMP/j1" '[r["rank"] for r in d["verdicts"][0]["ranks"]]==[0,1,3] and d["verdicts"][0]["ranks"][2]["call_site"]=="barrier+0x2"'
jcheck "$NCG_TMP/j1" 'sorted(c["func"] for c in d["verdicts"][0]["calls"])==["AllReduce","ReduceScatter"]'
mkdir "$NCG_TMP/none"
"$NCG" report "$NCG_TMP/none" >"$NCG_TMP/o2" || fail "empty dir"
contains "$NCG_TMP/o2" "0 reports (one per process), 0 verdicts"
"$NCG" report "$NCG_TMP/missing" 2>/dev/null; [ $? -eq 3 ] || fail "missing dir: want 3"

# RANK EXITED: reports of processes that had destroyed the comm carry "rank": -1; each is
# matched by its global rank to comm.members (from any report: rank 1's own lists none), else by
# pid and host to a dump of its process, else shown by pid and host; never as rank -1, and "no
# report from" names only ranks without one
X=$NCG_TMP/exited; mkdir -p "$X"
mkx() { # file-tag pid global_rank rank members call_site [extra keys]
  cat >"$X/ncclguard-report.$1.$2.json" <<J
{"format":"ncclguard-report","version":1,"verdict":"RANK_EXITED","severity":"error","action":"abort","exit_status":86,"summary":"RANK EXITED on comm 00000000000000cd (6 ranks): rank 2 left","time_unix":1795930001.5,"host":"$1","pid":$2,"global_rank":$3,"comm":{"id":"00000000000000cd","size":6,"members":$5},"rank":$4,"slot":-1,"last_agreed_slot":40,"counts":[41,41,40,41,41,41],"calls":[],"subject_ranks":"2","call_site":"$6","detail":""${7:-}}
J
}
mkx hostA 2000 20 -1 '[20,21,22,23,24,25]' "step+0x1"
mkx hostA 2001 21 -1 '[-1,-1,-1,-1,-1,-1]' "step+0x1"
mkx hostA 2003 23 -1 '[20,21,22,23,24,25]' "step+0x1"
mkx hostB 3004 -1 -1 '[20,21,22,23,-1,-1]' "other+0x2"  # no launcher variable: its dump says
echo '{"format":"ncclguard-dump","version":1,"host":"hostB","pid":3004,"global_rank":-1,"comms":[{"id":"00000000000000cd","rank":4,"nranks":6,"state":"destroyed"}],"threads":[]}' \
  >"$X/ncclguard-dump.hostB.3004.json"
mkx hostB 3005 -1 -1 '[20,21,22,23,-1,-1]' "other+0x2"  # nothing tells its comm rank
"$NCG" report "$X" >"$NCG_TMP/ox" 2>"$NCG_TMP/ex" || fail "report (rank -1) exit $?"
cat "$NCG_TMP/ox" "$NCG_TMP/ex"
contains "$NCG_TMP/ox" "5 reports (one per process), 1 verdict" "slot counts: 41 on ranks 0-1,3-5; 40 on rank 2" \
  "actions: abort on ranks 0-1,3-4 and pid 3005 on hostB (comm rank unknown)" \
  "reports from 5 processes: ranks 0-1,3-4 and pid 3005 on hostB (comm rank unknown); no report names ranks 2,5 (1 without a comm rank)"
grep -qE '^    step\+0x1 +ranks 0-1,3$' "$NCG_TMP/ox" || fail "rank -1: call sites of ranks 0-1,3"
grep -qE '^    other\+0x2 +rank 4 and pid 3005 on hostB \(comm rank unknown\)$' "$NCG_TMP/ox" || fail "rank -1: call site of rank 4 and the unknown"
lacks "$NCG_TMP/ox" "(unknown)" "no report from ranks 0"
! grep -qE '(^|[ ,])-1([^0-9]|$)' "$NCG_TMP/ox" || fail "rank -1: a rank shown as -1"
"$NCG" report "$X" --json >"$NCG_TMP/jx" || fail "report --json (rank -1)"
jcheck "$NCG_TMP/jx" '[(r["rank"], r["comm_ranks"]) for r in d["verdicts"][0]["ranks"]]==[(0,[0]),(1,[1]),(3,[3]),(4,[4]),(None,[])]'
jcheck "$NCG_TMP/jx" 'd["verdicts"][0]["missing_ranks"]=="2,5" and d["verdicts"][0]["reports_without_comm_rank"]==1'
# once the unknown one is gone, what is missing is certain
rm "$X/ncclguard-report.hostB.3005.json"
"$NCG" report "$X" >"$NCG_TMP/ox2" 2>&1 || fail "report (rank -1, all known)"
contains "$NCG_TMP/ox2" "reports from 4 processes: ranks 0-1,3-4; no report from ranks 2,5"

# one process holding several comm ranks of one communicator: one report naming them all
# ("ranks"), with "rank" its first or -1 (it had destroyed the comm); or no "ranks" and "rank"
# -1 (an older writer): its global rank is the members' of both
M=$NCG_TMP/multi; mkdir -p "$M"
mkm() { # pid global_rank rank ranks-key count call_site
  cat >"$M/ncclguard-report.hostC.$1.json" <<J
{"format":"ncclguard-report","version":1,"verdict":"MISMATCH","severity":"error","action":"abort","exit_status":86,"summary":"MISMATCH on comm 00000000000000ef (6 ranks): slot 9","time_unix":1795930002.5,"host":"hostC","pid":$1,"global_rank":$2,"comm":{"id":"00000000000000ef","size":6,"members":[0,0,1,1,2,2]},"rank":$3$4,"slot":9,"last_agreed_slot":8,"counts":[10,10,10,10,10,10],"calls":[],"subject_ranks":"4-5","call_site":"$6","detail":""}
J
}
mkm 4000 0 0 ',"ranks":[0,1]' 10 "a+0x1"
mkm 4001 1 -1 ',"ranks":[2,3]' 10 "a+0x1"
mkm 4002 2 -1 '' 10 "b+0x2"
"$NCG" report "$M" >"$NCG_TMP/om" 2>&1 || fail "report (several ranks per process)"
cat "$NCG_TMP/om"
contains "$NCG_TMP/om" "3 reports (one per process), 1 verdict" "slot counts: 10 on ranks 0-5" \
  "actions: abort on ranks 0-5" "reports from 3 processes: ranks 0-5 (all 6 ranks)"
lacks "$NCG_TMP/om" "rank reports" "every rank"
grep -qE '^    a\+0x1 +ranks 0-3$' "$NCG_TMP/om" || fail "several ranks: call site of ranks 0-3"
grep -qE '^    b\+0x2 +ranks 4-5$' "$NCG_TMP/om" || fail "several ranks: call site of ranks 4-5"
! grep -qE '(^|[ ,])-1([^0-9]|$)' "$NCG_TMP/om" || fail "several ranks: a rank shown as -1"
"$NCG" report "$M" --json >"$NCG_TMP/jm" || fail "report --json (several ranks)"
jcheck "$NCG_TMP/jm" '[(r["rank"], r["comm_ranks"]) for r in d["verdicts"][0]["ranks"]]==[(0,[0,1]),(2,[2,3]),(4,[4,5])] and d["verdicts"][0]["missing_ranks"]==""'
jcheck "$NCG_TMP/jm" 'd["reports"]==3 and d["verdicts"][0]["processes"]==3 and d["verdicts"][0]["ranks_reported"]==6'

# the reports of a real diverged job
need "$NCG_BUILD/tests/incident" "$LAUNCH" "$NCG_BUILD/libncclguard.so"
INCIDENT=$NCG_TMP/incident; ln -s "$NCG_BUILD/tests/incident" "$INCIDENT"
J=$NCG_TMP/job; mkdir -p "$J"
LD_PRELOAD=$NCG_PRELOAD NCCLGUARD_REPORT_DIR=$J timeout 120 "$LAUNCH" -n 16 -t 60 -- "$INCIDENT" >"$NCG_TMP/inc.out" 2>&1
rc=$?
[ $rc -eq 86 ] || { tail -n 20 "$NCG_TMP/inc.out"; fail "incident: launcher exit $rc, want 86"; }
"$NCG" report "$J" >"$NCG_TMP/o3" || fail "report on job"
cat "$NCG_TMP/o3"
contains "$NCG_TMP/o3" "16 reports (one per process), 1 verdict" "MISMATCH (error)" "(size 16) at slot 48" \
  "AllReduce(count=1, float32, sum)" "on rank 3" "ReduceScatter(count=64, bfloat16, sum)" "on ranks 0-2,4-15" \
  "actions: abort on ranks 0-15" "reports from 16 processes: ranks 0-15 (all 16 ranks)"
"$NCG" report "$J" --json >"$NCG_TMP/j3"
jcheck "$NCG_TMP/j3" 'd["reports"]==16 and d["verdicts"][0]["verdict"]=="MISMATCH" and d["verdicts"][0]["slot"]==48'
jcheck "$NCG_TMP/j3" 'all(r["call_site"] for r in d["verdicts"][0]["ranks"]) and all(r["exit_status"]==86 for r in d["verdicts"][0]["ranks"])'
# the stuck threads' stacks: two distinct ones (rank 3 in AllReduce, the others in
# ReduceScatter), each once with its ranks; in JSON per rank
# (ThreadSanitizer builds capture no stacks: the reports hold none to group)
tsan=0; case "${NCG_SANITIZER:-}" in *thread*) tsan=1 ;; esac
if [ "${NCCLGUARD_STACKS:-1}" != 0 ] && [ $tsan = 0 ]; then
  contains "$NCG_TMP/o3" "stacks of the stuck threads (innermost first):" "    ranks 0-2,4-15:" "    rank 3:"
  [ "$(grep -c '^      #[0-9]* ncclAllReduce+' "$NCG_TMP/o3")" -ge 1 ] || fail "rank 3's stack lacks ncclAllReduce"
  # the ranks' copies differ only by file:line (short-form ranks have none): one group, shown
  # with file:line when libdw is there
  [ "$(grep -c '^    rank' "$NCG_TMP/o3")" -eq 2 ] || fail "two distinct stacks expected"
  if ldconfig -p 2>/dev/null | grep -q 'libdw\.so\.1 '; then
    grep -qE '^      #[0-9]+ main\+0x[0-9a-f]+ \(incident\+0x[0-9a-f]+\) at incident\.c:[0-9]+$' "$NCG_TMP/o3" \
      || fail "report: the stack shown lacks file:line"
  fi
  [ "$(grep -c '^      #[0-9]* ncclReduceScatter+' "$NCG_TMP/o3")" -ge 1 ] || fail "the others' stack lacks ncclReduceScatter"
  jcheck "$NCG_TMP/j3" 'all(r["stack"] for r in d["verdicts"][0]["ranks"]) and any("ncclAllReduce" in f for f in [r for r in d["verdicts"][0]["ranks"] if r["rank"]==3][0]["stack"])'
fi
# dumps holding a comm's SLOW warning: one line for the comm, the newest episode's figures
# (least since_s: after a change of rank, the new one), how many dumps hold it
SD=$NCG_TMP/slowdumps; mkdir -p "$SD"
mkd() { # pid slow-object
  echo '{"format":"ncclguard-dump","version":1,"host":"h","pid":'"$1"',"global_rank":'"$1"',"comms":[{"id":"00000000000000ee","rank":'"$1"',"nranks":3,"state":"active","calls_issued":9,"latest":null,"slow":'"$2"'}],"threads":[]}' >"$SD/ncclguard-dump.h.$1.json"
}
mkd 0 '{"rank":2,"global_rank":2,"pid":402,"share":0.1450,"since_s":20.0,"side":"host"}'
mkd 1 '{"rank":1,"global_rank":1,"pid":401,"share":0.0820,"since_s":3.5,"side":"gpu"}'
mkd 2 null
"$NCG" report "$SD" >"$NCG_TMP/osd" 2>&1 || fail "report (slow dumps) exit $?"
cat "$NCG_TMP/osd"
contains "$NCG_TMP/osd" "ncclguard: dumps: SLOW on comm 00000000000000ee: rank 1 (global rank 1, pid 401) is the one the others wait for: they lose 8.2% of the step, for 4 s, late on its GPU (the latest SLOW warning in 2 dumps)"
[ "$(grep -c 'SLOW' "$NCG_TMP/osd")" -eq 1 ] || fail "slow dumps: one SLOW line expected"
echo ok
