#!/usr/bin/env bash
# scripts/ncclguard-run: flags map to NCCLGUARD_* variables, the shim is preloaded before the
# user's LD_PRELOAD (sanitizer runtimes stay first), the library is found in an installed layout,
# --off / NCCLGUARD=0 run the command untouched, bad usage exits 2, and a job started through it
# is guarded (its segments appear for `ncclguard status`).
. "$(dirname "$0")/lib.sh"
RUN=$NCG_ROOT/scripts/ncclguard-run
LIB=$NCG_BUILD/libncclguard.so
need "$NCG" "$RUN" "$LIB"
"$RUN" --help | grep -q "usage: ncclguard-run" || fail "--help"
for bad in "" "--action nope x" "--coord nohost x" "--lag-warn abc x" "--bogus x" "--report-dir" "--stacks 2 x"; do
  "$RUN" $bad >"$NCG_TMP/o" 2>"$NCG_TMP/e"; rc=$?
  [ $rc -eq 2 ] || fail "ncclguard-run $bad: exit $rc, want 2"
  contains "$NCG_TMP/e" "usage: ncclguard-run"
done
"$RUN" --lib "$LIB" --print-env --action warn --coord=10.0.0.1:29650 --token t0k --report-dir /r \
  --heartbeat-timeout 5 --lag-warn 30 --lag-abort 600 --interval-ms 50 --verbose 1 --stacks 0 -- torchrun --nproc-per-node 8 train.py >"$NCG_TMP/p1"
cat "$NCG_TMP/p1"
contains "$NCG_TMP/p1" "NCCLGUARD_ACTION=warn" "NCCLGUARD_COORD=10.0.0.1:29650" "NCCLGUARD_TOKEN=t0k" \
  "NCCLGUARD_REPORT_DIR=/r" "NCCLGUARD_HEARTBEAT_TIMEOUT_S=5" "NCCLGUARD_LAG_WARN_S=30" \
  "NCCLGUARD_LAG_ABORT_S=600" "NCCLGUARD_INTERVAL_MS=50" "NCCLGUARD_VERBOSE=1" "NCCLGUARD_STACKS=0" \
  "LD_PRELOAD=$LIB" \
  "torchrun --nproc-per-node 8 train.py"
LD_PRELOAD="/x/libasan.so.8 /u/mine.so" "$RUN" --lib "$LIB" --print-env true 2>/dev/null >"$NCG_TMP/p2"
contains "$NCG_TMP/p2" "LD_PRELOAD=/x/libasan.so.8 $LIB /u/mine.so"
# installed layout: bin/ncclguard-run finds ../lib/libncclguard.so
mkdir -p "$NCG_TMP/inst/bin" "$NCG_TMP/inst/lib"
cp "$RUN" "$NCG_TMP/inst/bin/"; cp "$LIB" "$NCG_TMP/inst/lib/"
env -u NCCLGUARD_LIB "$NCG_TMP/inst/bin/ncclguard-run" --print-env true >"$NCG_TMP/p3"
contains "$NCG_TMP/p3" "LD_PRELOAD=$NCG_TMP/inst/lib/libncclguard.so"
rm "$NCG_TMP/inst/lib/libncclguard.so"
env -u NCCLGUARD_LIB "$NCG_TMP/inst/bin/ncclguard-run" true 2>"$NCG_TMP/e3"; [ $? -eq 3 ] || fail "missing lib: want 3"
contains "$NCG_TMP/e3" "cannot find libncclguard.so"
# off: untouched
NCCLGUARD=0 LD_PRELOAD= "$RUN" --lib "$LIB" sh -c 'echo "pre=[$LD_PRELOAD] g=$NCCLGUARD"' >"$NCG_TMP/p4"
contains "$NCG_TMP/p4" "pre=[] g=0"
LD_PRELOAD= "$RUN" --lib "$LIB" --off sh -c 'echo "pre=[$LD_PRELOAD] g=$NCCLGUARD"' >"$NCG_TMP/p5"
contains "$NCG_TMP/p5" "pre=[] g=0"
# a real job through it is guarded: its segments appear, with the options in effect (not under
# ThreadSanitizer: the script is bash, and bash crashes with TSan's runtime preloaded, which
# the job's processes need first)
case "${NCG_SANITIZER:-}" in *thread*)
  echo "real job skipped: bash cannot run with ThreadSanitizer's runtime preloaded"; echo ok; exit 0 ;; esac
need "$CLIAPP" "$LAUNCH"
san=${NCG_PRELOAD% *}; [ "$san" = "$NCG_PRELOAD" ] && san=
TAG=$NCG_TMP/runjob
LD_PRELOAD=$san timeout 120 "$RUN" --lib "$LIB" --coord off -- "$LAUNCH" -n 2 -t 100 -- "$CLIAPP" --calls 3 --hang-rank 1 --hold-s 60 --tag "$TAG" >"$NCG_TMP/job.out" 2>&1 &
J=$!; BG_PIDS+=($J)
two() { "$NCG" status --json --no-clean --match "$TAG" >"$NCG_TMP/j" && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if len(d["processes"])==2 and d["communicators"][0]["behind"]==[1] else 1)' "$NCG_TMP/j"; }
wait_until 60 two
PIDS=$(python3 -c 'import json,sys; print(" ".join(str(p["pid"]) for p in json.load(open(sys.argv[1]))["processes"]))' "$NCG_TMP/j")
for p in $PIDS; do tr '\0' '\n' </proc/$p/environ | grep -qx "NCCLGUARD_COORD=off" || fail "NCCLGUARD_COORD not passed to rank $p"; done
kill -KILL $PIDS; wait $J
"$NCG" clean --grace 0 --quiet --match "$TAG"
echo ok
