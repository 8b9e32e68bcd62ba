# NCCL calls captured into CUDA graphs (tests/apps/graphs.c on the CPU runtime, no shim): 4
# ranks replay a captured AllReduce + ReduceScatter 100 times with right results, in the
# synchronous and the asynchronous mode; a rank issuing the same calls eagerly matches the
# others' replays; a rank replaying the other graph at replay 50 hangs the job (ended by the
# launcher's timeout, not a success) without crashing. One process driving 3 devices whose
# streams are captured into one graph each, from one group (nccl-tests -g 3 -G N): every
# stream's capture gets its calls, 5 launches with right results (userguide graphs).
. "$NCG_ROOT/tests/fakenccl/lib.sh"
need "$NCG_BUILD/tests/graphs"
[ -e "$NCG_BUILD/fakecuda/libcudart.so.13" ] || { echo "no CPU CUDA runtime (tests/fakecuda not built)"; exit 77; }
export LD_LIBRARY_PATH=$NCG_BUILD/fakecuda:$LD_LIBRARY_PATH
G=$NCG_BUILD/tests/graphs
all_ok() { # $1 = label, $2 = replays
  [ $rc -eq 0 ] || fail "$1: exit $rc: $out"
  [ "$(echo "$out" | grep -c "^graphs: rank [0-3]: $2 replays ok$")" = 4 ] || fail "$1: not ok on 4 ranks: $out"
}
launch -n 4 -t 60 "$G"
all_ok healthy 100
out=$(FAKENCCL_ASYNC=1 "$LAUNCH" -n 4 -t 60 "$G" --sync-every 7 2>&1); rc=$?
all_ok "healthy async" 100
launch -n 4 -t 60 "$G" --eager 1 --replays 50
all_ok eager 50
out=$(FAKENCCL_ASYNC=1 "$LAUNCH" -n 4 -t 60 "$G" --eager 1 --replays 50 2>&1); rc=$?
all_ok "eager async" 50
launch -n 4 -t 3 "$G" --odd 2 --at 50
[ $rc -ne 0 ] || fail "odd: the mismatched replay completed: $out"
echo "$out" | grep -q "replays ok" && fail "odd: a rank finished: $out"
[ "$(echo "$out" | grep -c '^replay_at [0-9]*\.[0-9]\{6\}$')" = 1 ] || fail "odd: no replay_at line: $out"
echo "$out" | grep -qiE "timeout|timed out" || fail "odd: not ended by the timeout: $out"
echo "$out" | grep -qiE "segmentation|core dumped|sanitizer|signal 11|SIGSEGV|SIGABRT" && fail "odd: crashed: $out"
# several capturing streams in one group (one thread, 3 devices), both modes
UG=$NCG_BUILD/tests/fakenccl/userguide
need "$UG"
for m in "" 1; do
  out=$(FAKENCCL_ASYNC=$m timeout 60 "$UG" graphs 3 2>&1); rc=$?
  [ $rc -eq 0 ] && [ "$out" = "userguide: graphs ok" ] || fail "graphs over 3 streams (FAKENCCL_ASYNC=$m): exit $rc: $out"
done
no_leftover_segments
echo "ok"
