#!/bin/sh
# rank.sh PROGRAM [ARGS...]: one rank of a test app (tests/apps/ncg_test.h reads RANK and
# WORLD_SIZE) started by a real launcher: the rank and size come from torchrun's RANK, Open
# MPI's OMPI_COMM_WORLD_RANK or Slurm's SLURM_PROCID (and their sizes).
# The unique id file is one per attempt of a torchrun job ($NCG_ID_FILE.<restart count>): a
# restarted rank must never read the id of the attempt before. NCG_RETRY_ARGS (optional): the
# arguments of every attempt after the first (a job that diverges once, then runs clean).
RANK=${RANK:-${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-}}}
WORLD_SIZE=${WORLD_SIZE:-${OMPI_COMM_WORLD_SIZE:-${SLURM_NTASKS:-}}}
[ -n "$RANK" ] && [ -n "$WORLD_SIZE" ] || { echo "rank.sh: no launcher rank variables" >&2; exit 2; }
attempt=${TORCHELASTIC_RESTART_COUNT:-0}
export RANK WORLD_SIZE NCG_ID_FILE="$NCG_ID_FILE.$attempt"
prog=$1
shift
# by its full path: the command line then names where it came from (a relative path would not)
case $prog in /*) ;; *) prog=$PWD/$prog ;; esac
# word splitting of NCG_RETRY_ARGS is intended: a list of arguments
# shellcheck disable=SC2086
[ "$attempt" -gt 0 ] && [ -n "${NCG_RETRY_ARGS:-}" ] && set -- $NCG_RETRY_ARGS
exec "$prog" "$@"
