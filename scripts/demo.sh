#!/usr/bin/env bash
# `make demo`: the incident of docs/incident.md on the CPU NCCL, 16 ranks, three times:
# (1) without ncclguard: it hangs, ended by the launcher after a bounded wait; (2) with
# LD_PRELOAD=libncclguard.so: the diagnostic and the seconds from the divergence to every rank
# exited, then the outside view `ncclguard status` gives of the ended job; (3) with the evenfix
# (--fix): it completes. About 20-25 seconds in all. By default the CPU NCCL runs asynchronously,
# as NCCL does on GPUs (FAKENCCL_ASYNC=1 on the CPU CUDA runtime of tests/fakecuda): calls
# enqueue on each rank's stream and return, the host blocks later in a synchronization.
# DEMO_MODE=sync runs the synchronous model (every call completes before it returns).
set -u
cd "$(dirname "$0")/.." || exit 2
B=${NCG_BUILD:-build}
case "$B" in /*) ;; *) B=$PWD/$B ;; esac
N=${DEMO_RANKS:-16}
HANG_S=${DEMO_HANG_S:-15}
for f in "$B/tests/ncg-launch" "$B/tests/incident" "$B/libncclguard.so" "$B/fakenccl/libnccl.so.2"; do
  [ -e "$f" ] || { echo "demo: missing $f (run make first)"; exit 2; }
done
export LD_LIBRARY_PATH=$B/fakenccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
MODE=${DEMO_MODE:-async}
if [ "$MODE" = async ] && [ -e "$B/fakecuda/libcudart.so.13" ]; then
  export FAKENCCL_ASYNC=1 LD_LIBRARY_PATH=$B/fakecuda:$LD_LIBRARY_PATH
else
  MODE=sync
fi
T=$(mktemp -d /tmp/ncclguard-demo.XXXXXX)
# Step 2 runs the incident as $T/incident: its command line names this run (status --match).
ln -s "$B/tests/incident" "$T/incident"
trap '[ -x "$B/ncclguard" ] && "$B/ncclguard" clean --grace 0 --quiet --match "$T/" >/dev/null 2>&1; rm -rf "$T"' EXIT
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b-a}'; }
bar() { printf '\n== %s\n' "$*"; }

echo "ncclguard demo: $N ranks fine-tune on uneven data (rank 3 has the fewest blocks, rank 11"
echo "the most). Each rank trains until its own data runs out, then enters the epoch-end barrier"
echo "(an AllReduce) while the others are still in the backward pass's ReduceScatter."
if [ "$MODE" = async ]; then
  echo "As on GPUs, NCCL runs asynchronously: each call enqueues on the rank's CUDA stream (here the"
  echo "CPU CUDA runtime of tests/fakecuda) and returns; the host runs up to 4 steps ahead and blocks"
  echo "in cudaStreamSynchronize. The hung ranks' host threads wait there, not inside NCCL."
else
  echo "Synchronous model (DEMO_MODE=sync): every NCCL call completes before it returns."
fi

bar "1/3  without ncclguard (the launcher gives up after ${HANG_S} s; a real job waits for the watchdog)"
t0=$(now)
"$B/tests/ncg-launch" -n "$N" -t "$HANG_S" "$B/tests/incident" >"$T/plain.log" 2>&1
rc=$?
t1=$(now)
grep '^incident: rank 0 step' "$T/plain.log" | tail -n 1
if [ $rc -eq 124 ]; then
  echo "HUNG: no error, no progress; after $(secs "$t0" "$t1") s the launcher killed all $N ranks (exit 124)."
  echo "(a real job waits for the watchdog: 10 minutes in PyTorch, three hours in the incident)"
else
  echo "unexpected: the plain run ended with status $rc"; tail -n 5 "$T/plain.log"
fi

bar "2/3  with ncclguard: LD_PRELOAD=$(basename "$B")/libncclguard.so (zero configuration)"
R=$B/demo-reports
rm -rf "$R" && mkdir -p "$R"
t0=$(now)
LD_PRELOAD=$B/libncclguard.so NCCLGUARD_REPORT_DIR=$R \
  "$B/tests/ncg-launch" -n "$N" -t 60 "$T/incident" >"$T/guard.log" 2>&1
rc=$?
t_end=$(now)
# Rank 0's copy of the diagnostic: the block that ends with its "action:" line.
awk '/^ncclguard: VERDICT:/{blk=""} /^ncclguard: /{blk=blk $0 "\n"} /this process \(comm rank [0-9]+, global rank 0,/{mine=1} /^ncclguard:   action:/{ if (mine) { printf "%s", blk; exit } }' "$T/guard.log"
printers=$(grep -c '^ncclguard: VERDICT:' "$T/guard.log")
full=$(grep -c '^ncclguard:   slot [0-9]* (0-based) differs:' "$T/guard.log")
n86=$(grep -cE '^ncg-launch: rank [0-9]+ exited with status 86$' "$T/guard.log")
echo "(all $printers of $N ranks printed the verdict; showing rank 0's full block: $full ranks print it,"
echo " the odd one (3) and one of the majority (0); each other rank prints 3 lines: NCCLGUARD_DIAG=auto)"
# From the later of the two mismatching calls (the reports carry each rank's call time).
t_div=$(grep -ho '"call_time_unix":[0-9.]*' "$R"/*.json 2>/dev/null | cut -d: -f2 | sort -g | tail -n 1)
if [ -n "$t_div" ]; then
  echo "DETECTED: $n86 of $N ranks exited with status 86, all gone $(secs "$t_div" "$t_end") s after the divergence (launcher status $rc)."
else
  echo "launcher status $rc; $n86 ranks exited 86"
fi
echo "reports: $(ls "$R" | wc -l) JSON files in $R (one per rank); merged view: $(basename "$B")/ncclguard report $R"

if [ -x "$B/ncclguard" ]; then
  bar "the outside view after the job ended: $(basename "$B")/ncclguard status"
  echo "(each aborted rank left its small segment in /dev/shm, in VERDICT state)"
  "$B/ncclguard" status --match "$T/" --no-clean
  "$B/ncclguard" clean --grace 0 --quiet --match "$T/"
  echo "(ncclguard clean removed those segments)"
fi

bar "3/3  with the evenfix (--fix: every rank trains on the global minimum of blocks), under ncclguard"
t0=$(now)
LD_PRELOAD=$B/libncclguard.so "$B/tests/ncg-launch" -n "$N" -t 60 "$B/tests/incident" --fix >"$T/fix.log" 2>&1
rc=$?
t1=$(now)
tail -n 1 "$T/fix.log"
if [ $rc -eq 0 ] && ! grep -q '^ncclguard:' "$T/fix.log"; then
  echo "COMPLETED in $(secs "$t0" "$t1") s, exit 0, no ncclguard output."
else
  echo "unexpected: status $rc"; grep '^ncclguard:' "$T/fix.log" | head -n 5
fi
