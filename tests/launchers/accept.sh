#!/usr/bin/env bash
# accept.sh [N] (not part of `make test`: slow): the acceptance of issue 22. Runs the 4-rank
# count mismatch (rank 1's AllReduce has 9 elements at slot 100) N times (default 20) under
# each real launcher installed (mpirun, torchrun, srun on a single-node Slurm started here)
# with the commands of t_mpirun.sh, t_torchrun.sh and t_srun.sh, and prints per launcher how
# many runs ended non-zero with all 4 reports written and rank 1's full diagnostic printed.
# Environment: NCG_BUILD (default build), NCG_NCCL_MODE (sync or async, default sync),
# NCG_LAUNCHERS (default "mpirun torchrun srun"; also srun-K: srun -K, which kills the step
# at the first task that fails, as mpirun does). Exit 0 when every run of every launcher passed.
set -u
cd "$(dirname "$0")/../.." || exit 2
N=${1:-20}
export NCG_ROOT=$PWD NCG_BUILD=${NCG_BUILD:-build} NCG_SLOW=${NCG_SLOW:-1} NCG_NCCL_MODE=${NCG_NCCL_MODE:-sync}
case "$NCG_BUILD" in /*) ;; *) NCG_BUILD=$NCG_ROOT/$NCG_BUILD ;; esac
export NCG_PRELOAD=${NCG_PRELOAD:-$NCG_BUILD/libncclguard.so}
NCG_TMP=$(mktemp -d /tmp/ncgaccept.XXXXXX)
export NCG_TMP
. "$NCG_ROOT/tests/launchers/lib.sh"
at_exit() { rm -rf "$NCG_TMP"; }
trap lib_exit EXIT
# tally NAME: run the count mismatch N times with the command line in $CMD, one line per run
# that misses something (the first thing missing), then the summary line.
tally() {
  local name=$1 i nz=0 rep=0 blk=0 ok=0 why n
  for i in $(seq "$N"); do
    launched "$name.$i" "${CMD[@]}" "$RANKSH" "$SCEN" count >/dev/null
    [ "$RC" != 0 ] && nz=$((nz + 1))
    n=$(find "$REPORTS" -name 'ncclguard-report.*.json' | wc -l)
    [ "$n" = 4 ] && rep=$((rep + 1))
    rank_block 1 | grep -qE '^ncclguard:   slot 100 \(0-based\) differs:$' && blk=$((blk + 1))
    if why=$(incident_why) && [ "$RC" != 0 ]; then ok=$((ok + 1)); else
      echo "  $name run $i: status $RC, $n reports: ${why:-ended with status 0}"
    fi
  done
  printf '%-8s %d of %d runs passed (non-zero, 4 reports, rank 1 full block); non-zero %d, 4 reports %d, full block %d\n' \
    "$name:" "$ok" "$N" "$nz" "$rep" "$blk"
  [ "$ok" = "$N" ] || FAILED=1
}
FAILED=0
echo "accept: $N runs per launcher, NCCL mode $NCG_NCCL_MODE, $(git rev-parse --short HEAD 2>/dev/null)"
for l in ${NCG_LAUNCHERS:-mpirun torchrun srun}; do
  case $l in
    mpirun)
      command -v mpirun >/dev/null 2>&1 || { echo "mpirun:  not installed"; continue; }
      CMD=(mpirun --oversubscribe --allow-run-as-root -np 4 -x LD_PRELOAD -x NCCLGUARD_REPORT_DIR) ;;
    torchrun)
      command -v torchrun >/dev/null 2>&1 || { echo "torchrun: not installed"; continue; }
      CMD=(torchrun --nproc_per_node 4 --rdzv_backend c10d --rdzv_endpoint "localhost:$(free_port)"
        --monitor_interval 1 --redirects 1 --tee 1 --log_dir "$NCG_TMP/torchelastic" --no_python) ;;
    srun | srun-K)
      # a Slurm that cannot come up ends the script here (77, the reason on the last line)
      [ -n "$SLURM_PIDS" ] || slurm_start
      CMD=(srun -n 4 -l)
      [ "$l" = srun-K ] && CMD+=(-K) # kill the step at the first task that fails (as mpirun)
      LABELED=1 ;;
    *) echo "unknown launcher $l"; exit 2 ;;
  esac
  tally "$l"
  LABELED=0
done
exit $FAILED
