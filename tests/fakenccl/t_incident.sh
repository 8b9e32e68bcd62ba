# The incident in miniature (tests/apps/incident.c, 16 ranks): with the evenfix it completes
# with correct results; without it, it hangs exactly where NCCL hangs: rank 3 in the epoch-end
# AllReduce, the 15 others in the ReduceScatter, all at the same slot (48) of the world comm.
# Also run the build compiled against NVIDIA's nccl.h when there is one.
. "$NCG_ROOT/tests/fakenccl/lib.sh"
progs="$NCG_BUILD/tests/incident"
[ -x "$NCG_BUILD/tests/incident-realhdr" ] && progs="$progs $NCG_BUILD/tests/incident-realhdr"
need $progs
for p in $progs; do
  launch -n 16 -t 120 "$p" --fix
  [ $rc -eq 0 ] || fail "$p --fix: exit $rc: $out"
  echo "$out" | grep -q "incident: epoch done after 24 steps, checkpoint saved" || fail "$p --fix: $out"

  FAKENCCL_TIMEOUT_S=2 launch -n 16 -t 120 "$p"
  [ $rc -ne 0 ] || fail "$p without --fix completed: $out"
  echo "$out" | grep -q "checkpoint saved" && fail "$p: checkpoint despite the hang: $out"
  echo "$out" | grep -q "^fakenccl: watchdog: rank 3 comm .*: ncclAllReduce slot 48 blocked" ||
    fail "$p: rank 3 not reported in the AllReduce: $out"
  n=$(echo "$out" | grep -c "^fakenccl: watchdog: rank [0-9]* comm .*: ncclReduceScatter slot 48 blocked")
  [ "$n" -eq 15 ] || fail "$p: $n ranks reported in the ReduceScatter at slot 48, want 15: $out"
  n=$(echo "$out" | grep -c "^fakenccl: watchdog:")
  [ "$n" -eq 16 ] || fail "$p: $n watchdog lines, want 16"
done
no_leftover_segments
echo "ok"
