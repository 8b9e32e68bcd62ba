# A job in another pid namespace (a container whose watchdog sidecar does not share the pid
# namespace): its pids mean nothing here (/proc shows another process or none), but each live
# rank holds a lock on its segment. `status` shows the ranks alive, `clean` keeps their segments;
# once the job is gone, `clean` removes them.
. "$NCG_ROOT/tests/cli/lib.sh"
need "$NCG" "$CLIAPP" "$LAUNCH"
command -v unshare >/dev/null && unshare --pid --fork --mount-proc true 2>/dev/null \
  || skip "cannot create pid namespaces here"
TAG=pidns$$
LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_COORD=off unshare --pid --fork --mount-proc \
  "$LAUNCH" -n 2 -t 60 -- "$CLIAPP" --calls 5 --hang-rank 1 --hold-s 30 --tag $TAG >"$NCG_TMP/job" 2>&1 &
JOB=$!
# the launcher (the namespace's init) and the ranks all carry the tag in their command lines
end_job() { pkill -KILL -f -- "--tag $TAG" 2>/dev/null; kill -KILL $JOB 2>/dev/null; wait $JOB 2>/dev/null; }
trap end_job EXIT
two_alive() {
  "$NCG" status --json --no-clean --match $TAG >"$NCG_TMP/s.json" 2>/dev/null &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["processes"]; sys.exit(0 if len(p)==2 and all(x["state"]=="alive" for x in p) else 1)' "$NCG_TMP/s.json"
}
wait_until 30 two_alive
"$NCG" clean --grace 0 --match $TAG >"$NCG_TMP/c1" 2>&1
contains "$NCG_TMP/c1" "removed 0 segments"
two_alive || fail "clean removed or changed a live job's segments: $(cat "$NCG_TMP/s.json")"
end_job
sleep 0.5
"$NCG" clean --grace 0 --match $TAG >"$NCG_TMP/c2" 2>&1
contains "$NCG_TMP/c2" "removed 2 segments"
echo ok
