# Shared by tests/checker/t_*.sh (sourced): paths, the guarded launch, assertions.
set -u
B=$NCG_BUILD
export LD_LIBRARY_PATH=$B/fakenccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# NCG_NCCL_MODE=async (tests/run.sh, for scripts marked "# ncg-modes: sync async"): the CPU
# NCCL enqueues on streams of the CPU CUDA runtime and calls return at once, as on a GPU.
if [ "${NCG_NCCL_MODE:-sync}" = async ]; then
  [ -e "$B/fakecuda/libcudart.so.13" ] || { echo "no CPU CUDA runtime in $B/fakecuda"; exit 77; }
  export FAKENCCL_ASYNC=1 LD_LIBRARY_PATH=$B/fakecuda:$LD_LIBRARY_PATH
fi
# async: 1 in asynchronous mode. There a call returns once enqueued: the thread that issued the
# rank's latest call waits in its synchronization (ncg_test_sync), not inside NCCL, and errors
# of a failed communicator surface there.
async=0; [ "${NCG_NCCL_MODE:-sync}" = async ] && async=1
# failing_call NAME: the call the application sees fail (the NCCL call, or its synchronization).
failing_call() { [ $async = 1 ] && echo 'ncg_test_sync' || echo "$1"; }
# stuck_frame FN: the frame the stuck thread's stack shows, as a regex (the NCCL function in
# libncclguard.so, or the application's synchronization).
stuck_frame() { if [ $async = 1 ]; then echo 'ncg_test_sync\+0x[0-9a-f]+ \('; else echo "$1"'\+0x[0-9a-f]+ \(libncclguard\.so'; fi; }
# tsan: 1 in a ThreadSanitizer build. TSan defers asynchronous signals to its own safe points,
# so no stack is captured there (the diagnostic says "not captured" and why instead), and
# everything runs several times slower: time bounds are multiplied by SLOW.
tsan=0; case "${NCG_SANITIZER:-}" in *thread*) tsan=1 ;; esac
SLOW=${NCG_SLOW:-1} # tests/run.sh: 3 under ThreadSanitizer
# STACK_HDR: the end of a stack header line: a captured stack's, or TSan's "not captured" one.
STACK_HDR=', innermost first:$'
[ $tsan = 1 ] && STACK_HDR=': not captured: not under ThreadSanitizer .*$'
LAUNCH=$B/tests/ncg-launch
SCEN=$B/tests/checker/scen
REPORTS=$NCG_TMP/reports
mkdir -p "$REPORTS"
for f in "$LAUNCH" "$SCEN" "$B/libncclguard.so" "$B/fakenccl/libnccl.so.2"; do
  [ -e "$f" ] || { echo "missing $f (run make first)"; exit 77; }
done
fail() { echo "FAIL: $*"; [ -n "${OUT:-}" ] && [ -f "$OUT" ] && sed 's/^/  | /' "$OUT" | tail -n 40; exit 1; }
# guarded OUT ARGS...: run ARGS under the shim, output (both streams) to OUT; sets RC.
guarded() {
  OUT=$1; shift
  env LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_REPORT_DIR="$REPORTS" timeout -k 5 120 "$@" >"$OUT" 2>&1
  RC=$?
}
# recovers MATCH KIND OUT CMD...: runs CMD as guarded does (RC, OUT), in the background, while
# the host's `ncclguard status --match MATCH` is read every 0.1 s: SEEN=1 once it showed ranks
# 0-3 with KIND's warning, OVER=1 once after that all 4 processes showed alive again (the
# warning over); the last status read stays in $NCG_TMP/st.txt.
recovers() {
  local match=$1 kind=$2 run; OUT=$3; shift 3
  env LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_REPORT_DIR="$REPORTS" timeout -k 5 120 "$@" >"$OUT" 2>&1 &
  run=$!
  SEEN=0; OVER=0
  for _ in $(seq $((300 * SLOW))); do
    kill -0 $run 2>/dev/null || break
    "$B/ncclguard" status --match "$match" >"$NCG_TMP/st.txt" 2>&1
    if grep -qE "^ncclguard: verdict on ranks 0-3 .*: $kind on comm" "$NCG_TMP/st.txt"; then SEEN=1
    elif [ $SEEN = 1 ] && [ "$(grep -cE ' alive( |$)' "$NCG_TMP/st.txt")" = 4 ]; then OVER=1; break
    fi
    sleep 0.1
  done
  wait $run
  RC=$?
}
# nlines PATTERN: lines of $OUT matching the extended regex.
nlines() { grep -cE -- "$1" "$OUT"; }
# exited STATUS: ranks the launcher saw exit with STATUS.
exited() { grep -cE "^ncg-launch: rank [0-9]+ exited with status $1\$" "$OUT"; }
# printers: distinct global ranks that printed a diagnostic ("this process (comm rank R, global rank G").
printers() { grep -oE "this process \(comm rank [0-9]+, global rank [0-9]+" "$OUT" | sed 's/.*global rank //' | sort -n | uniq | tr '\n' ' '; }
expect() { [ "$1" = "$2" ] || fail "$3: got '$1', want '$2'"; }
no_verdict() { ! grep -qE "^ncclguard: (VERDICT|WARNING):" "$OUT" || fail "unexpected verdict"; }
# two_hosts SPLIT PREFIX: two "hosts" on this machine, network namespaces $A ($NET.1) and $B
# ($NET.2, NET=PREFIX.x) joined by a veth pair; $NCG_TMP/onhost.sh runs a rank in its host's
# namespace (ranks below SPLIT on A). Removed at exit (and the process $CP, if set, killed).
two_hosts() {
  command -v ip >/dev/null || { echo "iproute2 not installed"; exit 77; }
  A=ncgA$$ B=ncgB$$ NET=$2.$(( $$ % 250 ))
  ip netns add $A 2>/dev/null || { echo "cannot create network namespaces here"; exit 77; }
  trap 'kill ${CP:-} 2>/dev/null; ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null' EXIT
  ip netns add $B || fail "netns $B"
  ip link add va$$ netns $A type veth peer name vb$$ netns $B || fail "veth"
  ip -n $A addr add $NET.1/24 dev va$$ && ip -n $B addr add $NET.2/24 dev vb$$ || fail "addresses"
  ip -n $A link set va$$ up && ip -n $B link set vb$$ up || fail "link up"
  ip -n $A link set lo up && ip -n $B link set lo up
  cat >"$NCG_TMP/onhost.sh" <<EOS
#!/bin/sh
if [ "\$RANK" -lt $1 ]; then ns=$A; else ns=$B; fi
exec ip netns exec \$ns "\$@"
EOS
  chmod +x "$NCG_TMP/onhost.sh"
}
# stuck_slots KIND SLOT N: the STUCK headlines of KIND (WARNING / VERDICT) on a comm of N ranks
# whose slot or sampled range holds SLOT: exact ("slot S"), or "slot K ... (or a later one up to
# slot H...)" with K <= SLOT <= H and H - K <= 3 (asynchronous mode: one event at most 2 ms
# apart was skipped).
stuck_slots() {
  grep -E "^ncclguard: $1: STUCK on comm [0-9a-f]+ \($3 ranks\): slot [0-9]+ AllReduce\(count=8, float32, sum\) issued identically by all $3 ranks, " "$OUT" |
    sed -E -e 's/.*: slot ([0-9]+) .*/\1 &/' -e 'ta' -e ':a' \
      -e 's/^([0-9]+) .*or a later one up to slot ([0-9]+):.*/\1 \2/' -e 't' -e 's/^([0-9]+) .*/\1 \1/' |
    awk -v s="$2" -v a=$async '$1 <= s && s <= $2 && (a ? $2 - $1 <= 3 : $1 == $2)' | wc -l
}
# coord_start ARGS...: a standalone checker (`ncclguard coord --listen 127.0.0.1:0 ARGS...`) in
# the background: CP its pid (killed at exit, resumed first if stopped), PORT its port.
coord_start() {
  "$B/ncclguard" coord --listen 127.0.0.1:0 "$@" >"$NCG_TMP/coord.log" 2>&1 &
  CP=$!
  trap 'kill -CONT $CP 2>/dev/null; kill $CP 2>/dev/null' EXIT
  for _ in $(seq 50); do grep -q 'listening on' "$NCG_TMP/coord.log" && break; sleep 0.1; done
  PORT=$(grep -oE 'listening on [^ ]+' "$NCG_TMP/coord.log" | sed 's/.*://')
  [ -n "$PORT" ] || fail "coordinator did not start: $(cat "$NCG_TMP/coord.log")"
}
