# Sourced by tests/fakecuda/t_*.sh: puts the fake libcudart.so.13 first on LD_LIBRARY_PATH and
# names the test programs ($FC_T). Skips (exit 77) when the fake was not built (no CUDA
# headers). Helpers: fail MSG (exit 1), need FILE... (fail when a build artefact is missing),
# run PROG ARGS... (output in $out, status in $rc).
: "${NCG_BUILD:?run through tests/run.sh (NCG_BUILD unset)}"
FC_LIB=$NCG_BUILD/fakecuda/libcudart.so.13
FC_T=$NCG_BUILD/tests/fakecuda
REAL_CUDART=/usr/local/cuda/lib64/libcudart.so.13
fail() { echo "FAIL: $*"; exit 1; }
need() { local f; for f; do [ -e "$f" ] || fail "missing $f (build it: make)"; done; }
run() { out=$("$@" 2>&1); rc=$?; }
if [ ! -e "$FC_LIB" ]; then
  [ -e /usr/local/cuda/include/cuda_runtime_api.h ] && fail "missing $FC_LIB (build it: make)"
  echo "no /usr/local/cuda/include/cuda_runtime_api.h: fakecuda not built"
  exit 77
fi
export LD_LIBRARY_PATH=$NCG_BUILD/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
