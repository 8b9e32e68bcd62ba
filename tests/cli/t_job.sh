#!/usr/bin/env bash
# The CLI on real guarded jobs (shim + CPU NCCL, side channel off): status (table and JSON) on a
# running 4-rank job; on a hung one where rank 2 stopped calling NCCL (it is behind: 5 slots
# against 6); watch raises the stall, then the death of rank 2 after SIGKILL; clean removes
# the dead ranks' segments; a clean exit leaves no segment behind.
. "$(dirname "$0")/lib.sh"
need "$NCG" "$CLIAPP" "$LAUNCH" "$NCG_BUILD/libncclguard.so"
TAG=$NCG_TMP/job
export NCCLGUARD_COORD=off
nprocs() { "$NCG" status --json --match "$TAG" --no-clean >"$NCG_TMP/poll" && python3 - "$NCG_TMP/poll" "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); want = sys.argv[2]
if want == "running":
    ok = len(d["processes"]) == 4 and all(m["slots"] > 0 for c in d["communicators"] for m in c["members"])
elif want == "hung":
    ok = len(d["communicators"]) == 1 and sorted(m["slots"] for m in d["communicators"][0]["members"]) == [5, 6, 6, 6]
elif want == "none":
    ok = len(d["processes"]) == 0
sys.exit(0 if ok else 1)
PY
}

# 1. a running job: 4 ranks, 300 AllReduces 20 ms apart
LD_PRELOAD=$NCG_PRELOAD timeout 120 "$LAUNCH" -n 4 -t 100 -- "$CLIAPP" --calls 300 --sleep-ms 20 --tag "$TAG.run" >"$NCG_TMP/run.out" 2>&1 &
J=$!; BG_PIDS+=($J)
TAG=$NCG_TMP/job.run
wait_until 60 nprocs running
"$NCG" status --match "$TAG" >"$NCG_TMP/s1"; cat "$NCG_TMP/s1"
contains "$NCG_TMP/s1" "size 4  here 4 (active 4)" "AllReduce(count=256, float32, sum)"
[ "$(grep -c '  alive' "$NCG_TMP/s1")" -eq 4 ] || fail "4 live ranks expected"
lacks "$NCG_TMP/s1" "MISMATCH" "dead"
# no false alarm on a healthy job
"$NCG" watch --once --stall 5 --match "$TAG" >"$NCG_TMP/w0"; rc=$?
[ $rc -eq 0 ] || { cat "$NCG_TMP/w0"; fail "watch on a healthy job: exit $rc, want 0"; }
"$NCG" status --json --match "$TAG" >"$NCG_TMP/j1"
jcheck "$NCG_TMP/j1" 'sorted(m["rank"] for m in d["communicators"][0]["members"])==[0,1,2,3] and d["communicators"][0]["size"]==4'
jcheck "$NCG_TMP/j1" 'all(m["last_call"]["func"]=="AllReduce" and m["last_call"]["count"]==256 and m["last_call"]["dtype"]=="float32" for m in d["communicators"][0]["members"])'
jcheck "$NCG_TMP/j1" 'sorted(p["global_rank"] for p in d["processes"])==[0,1,2,3] and all(p["state"]=="alive" for p in d["processes"])'
wait $J || fail "healthy job failed: $(cat "$NCG_TMP/run.out")"
wait_until 10 nprocs none  # clean exit: the shim removed its segments

# 2. a hung job: rank 2 stops after 5 calls, the others block in the 6th
TAG=$NCG_TMP/job.hang
LD_PRELOAD=$NCG_PRELOAD timeout 120 "$LAUNCH" -n 4 -t 100 -- "$CLIAPP" --calls 5 --hang-rank 2 --hold-s 90 --tag "$TAG" >"$NCG_TMP/hang.out" 2>&1 &
J=$!; BG_PIDS+=($J)
wait_until 60 nprocs hung
"$NCG" status --match "$TAG" >"$NCG_TMP/s2"; cat "$NCG_TMP/s2"
contains "$NCG_TMP/s2" "here 4 (active 4)  slots 5..6  behind: rank 2"
grep -E "^ +2 +2 +2 +[0-9]+ +5/5 +0 +AllReduce\(count=256, float32, sum\) .* alive  <- behind" "$NCG_TMP/s2" >/dev/null || fail "rank 2 row"
[ "$(grep -c '<- behind' "$NCG_TMP/s2")" -eq 1 ] || fail "only rank 2 is behind"
"$NCG" status --json --match "$TAG" >"$NCG_TMP/j2"
jcheck "$NCG_TMP/j2" 'd["communicators"][0]["behind"]==[2] and d["communicators"][0]["min_slots"]==5 and d["communicators"][0]["max_slots"]==6'
jcheck "$NCG_TMP/j2" '[m["slots"] for m in d["communicators"][0]["members"]]==[6,6,5,6]'
R2=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([m["pid"] for m in d["communicators"][0]["members"] if m["rank"]==2][0])' "$NCG_TMP/j2")
PIDS=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(str(p["pid"]) for p in d["processes"]))' "$NCG_TMP/j2")
# watch: the stall, within its configured time
timeout 60 "$NCG" watch --stall 1 --interval 0.2 --exit-on-alert --match "$TAG" >"$NCG_TMP/w1"; rc=$?
cat "$NCG_TMP/w1"
[ $rc -eq 1 ] || fail "watch stall: want exit 1, got $rc"
contains "$NCG_TMP/w1" "ALERT stall" "pid=$R2 rank=2" "slot=5" "behind: rank 2"
# watch: SIGKILL rank 2 -> died
kill -KILL "$R2"
timeout 60 "$NCG" watch --stall 1000 --interval 0.2 --exit-on-alert --match "$TAG" >"$NCG_TMP/w2"; rc=$?
cat "$NCG_TMP/w2"
[ $rc -eq 1 ] || fail "watch died: want exit 1, got $rc"
contains "$NCG_TMP/w2" "ALERT died" "pid=$R2 rank=2" "process ended without a clean exit"
"$NCG" status --match "$TAG" >"$NCG_TMP/s3"; cat "$NCG_TMP/s3"
grep -E "^ +2 +2 +2 +$R2 .*dead \((pid gone|zombie)\)" "$NCG_TMP/s3" >/dev/null || fail "rank 2 not shown dead"
# end the job: the others are killed too; clean removes every segment, a live one never
kill -KILL $PIDS 2>/dev/null
wait $J
"$NCG" clean --grace 0 --match "$TAG" >"$NCG_TMP/c1"; cat "$NCG_TMP/c1"
contains "$NCG_TMP/c1" "removed 4 segments, 0 kept"
nprocs none || fail "segments left after clean"
echo ok
