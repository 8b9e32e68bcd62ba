#!/usr/bin/env bash
# Ranks from the launchers' variables (config.h): the unit test of every launcher's set and their
# precedence, then end to end: a guarded process started the way Slurm, Open MPI or MPICH start
# one (no RANK, only that launcher's variables) shows its global and local rank in `status`.
. "$(dirname "$0")/lib.sh"
need "$NCG" "$CLIAPP" "$NCG_BUILD/libncclguard.so" "$NCG_BUILD/tests/shim/ranks_test"
"$NCG_BUILD/tests/shim/ranks_test" || fail "ranks_test"
export NCCLGUARD_COORD=off
run_as() { # run_as NAME GRANK LRANK WORLD VAR=VALUE...: one single-rank job, checked in status
  local name=$1 g=$2 l=$3 w=$4; shift 4
  env -u RANK -u LOCAL_RANK -u WORLD_SIZE "$@" LD_PRELOAD="$NCG_PRELOAD" timeout 60 \
    "$CLIAPP" --calls 2 --hang-rank 0 --hold-s 30 --tag "$NCG_TMP/$name" >"$NCG_TMP/$name.out" 2>&1 &
  local p=$!; BG_PIDS+=($p)
  wait_until 20 sh -c "'$NCG' status --json --no-clean --match '$NCG_TMP/$name' | grep -q '\"slots\":2'"
  "$NCG" status --json --no-clean --match "$NCG_TMP/$name" >"$NCG_TMP/$name.json"
  jcheck "$NCG_TMP/$name.json" "[(p['global_rank'], p['local_rank'], p['world_size']) for p in d['processes']] == [($g, $l, $w)]"
  "$NCG" status --no-clean --match "$NCG_TMP/$name" >"$NCG_TMP/$name.txt"
  grep -qE "^ +0 +$g +$l +[0-9]+ " "$NCG_TMP/$name.txt" || { cat "$NCG_TMP/$name.txt"; fail "$name: status row"; }
  kill -TERM $p; wait $p 2>/dev/null
  echo "$name ok"
}
run_as slurm 12 3 32 SLURM_PROCID=12 SLURM_LOCALID=3 SLURM_NTASKS=32
run_as ompi 5 1 8 OMPI_COMM_WORLD_RANK=5 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_SIZE=8 PMIX_RANK=5
run_as mpich 9 2 10 PMI_RANK=9 MPI_LOCALRANKID=2 PMI_SIZE=10
run_as pmix 4 -1 -1 PMIX_RANK=4
run_as torchrun-under-srun 0 0 1 SLURM_PROCID=1 SLURM_LOCALID=1 SLURM_NTASKS=2 RANK=0 LOCAL_RANK=0 WORLD_SIZE=1
echo "launcher ranks ok"
