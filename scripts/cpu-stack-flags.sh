#!/usr/bin/env bash
# cpu-stack-flags.sh [--build DIR] [--cflags | --libs | --run | --nccl-home]: how to build and
# run one's own NCCL program on the CPU stack of this checkout (no GPU): NVIDIA's headers
# (nccl.h, cuda_runtime.h), the CPU NCCL (build/fakenccl/libnccl.so.2) and the CPU CUDA
# runtime (build/fakecuda/libcudart.so.13), under ncclguard. See docs/launchers.md, "Your own
# NCCL program on the CPU stack".
#   --cflags     the -I flags: NVIDIA's nccl.h and cuda_runtime.h
#   --libs       the -L/-l flags: the CPU NCCL and CPU CUDA runtime (-lnccl -lcudart)
#   --run        VAR=VALUE words for env(1): LD_LIBRARY_PATH (the CPU runtime and NCCL first)
#                and LD_PRELOAD (the shim): env $(scripts/cpu-stack-flags.sh --run) ./prog
#   --nccl-home  lays out BUILD/cpu-nccl/{include,lib} for Makefiles that take NCCL_HOME (and
#                CUDA_HOME): include/nccl.h, lib/libnccl.so{,.2} (the CPU NCCL), lib/libcudart.so{,.13}
#                (the CPU runtime); prints its path
#   (none)       every value as a shell assignment (CFLAGS, LIBS, RUN_ENV, NCCL_HOME, CUDA_HOME)
# Environment: NCG_BUILD (the build directory, default build), CUDA_HOME (NVIDIA's headers,
# default /usr/local/cuda). nccl.h is taken from CUDA_HOME/include, else /usr/include.
# Exit 0; 2 on a usage error or when a piece is missing (what is missing on stderr).
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
BUILD=${NCG_BUILD:-build}
WHAT=all
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=${2:?--build DIR}; shift ;;
    --cflags | --libs | --run | --nccl-home) WHAT=${1#--} ;;
    -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "ncclguard: cpu-stack-flags.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
missing() { echo "ncclguard: cpu-stack-flags.sh: $*" >&2; exit 2; }
for f in "$BUILD/fakenccl/libnccl.so.2" "$BUILD/fakecuda/libcudart.so.13" "$BUILD/libncclguard.so"; do
  [ -e "$f" ] || missing "no $f (build it: make BUILD=$BUILD)"
done
[ -f "$CUDA_HOME/include/cuda_runtime.h" ] || missing "no $CUDA_HOME/include/cuda_runtime.h: NVIDIA's CUDA headers are needed (set CUDA_HOME)"
NCCL_H=$CUDA_HOME/include/nccl.h
[ -f "$NCCL_H" ] || NCCL_H=/usr/include/nccl.h
[ -f "$NCCL_H" ] || missing "no nccl.h in $CUDA_HOME/include or /usr/include: NVIDIA's NCCL headers are needed (libnccl-dev)"
INC=$(dirname "$NCCL_H")
CFLAGS="-I$CUDA_HOME/include"
[ "$INC" = "$CUDA_HOME/include" ] || CFLAGS="$CFLAGS -I$INC"
LIBS="-L$BUILD/fakenccl -L$BUILD/fakecuda -lnccl -lcudart"
RUN_ENV="LD_LIBRARY_PATH=$BUILD/fakecuda:$BUILD/fakenccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} LD_PRELOAD=$BUILD/libncclguard.so"
HOME_DIR=$BUILD/cpu-nccl
# nccl_home: the layout, links into the build (rebuilt libraries are picked up as they are)
nccl_home() {
  mkdir -p "$HOME_DIR/include" "$HOME_DIR/lib" || exit 2
  ln -sfn "$NCCL_H" "$HOME_DIR/include/nccl.h" &&
    ln -sfn ../../fakenccl/libnccl.so.2 "$HOME_DIR/lib/libnccl.so.2" &&
    ln -sfn libnccl.so.2 "$HOME_DIR/lib/libnccl.so" &&
    ln -sfn ../../fakecuda/libcudart.so.13 "$HOME_DIR/lib/libcudart.so.13" &&
    ln -sfn libcudart.so.13 "$HOME_DIR/lib/libcudart.so" || exit 2
}
case $WHAT in
  cflags) echo "$CFLAGS" ;;
  libs) echo "$LIBS" ;;
  run) echo "$RUN_ENV" ;;
  nccl-home) nccl_home; echo "$HOME_DIR" ;;
  all)
    printf "CFLAGS='%s'\nLIBS='%s'\nRUN_ENV='%s'\nNCCL_HOME='%s'\nCUDA_HOME='%s'\n" \
      "$CFLAGS" "$LIBS" "$RUN_ENV" "$HOME_DIR" "$CUDA_HOME" ;;
esac
