# Sourced by tests/fakenccl/t_*.sh (and usable by other tests): puts the fake libnccl.so.2 on
# LD_LIBRARY_PATH and names the launcher and test programs. Needs NCG_BUILD (tests/run.sh sets
# it). Helpers: fail MSG (exit 1), need FILE... (fail when a build artefact is missing),
# launch ARGS... (ncg-launch with output captured in $out and status in $rc).
: "${NCG_BUILD:?run through tests/run.sh (NCG_BUILD unset)}"
export LD_LIBRARY_PATH=$NCG_BUILD/fakenccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
LAUNCH=$NCG_BUILD/tests/ncg-launch
FN_T=$NCG_BUILD/tests/fakenccl
TMPD=${NCG_TMP:-$(mktemp -d)}
# Our segments carry this tag, so a test can check it left nothing in /dev/shm.
export FAKENCCL_SHM_TAG=t$$
fail() { echo "FAIL: $*"; exit 1; }
need() { local f; for f; do [ -e "$f" ] || fail "missing $f (build it: make)"; done; }
launch() { out=$("$LAUNCH" "$@" 2>&1); rc=$?; }
no_leftover_segments() {
  local left
  left=$(ls /dev/shm 2>/dev/null | grep -- "-$FAKENCCL_SHM_TAG-" || true)
  [ -z "$left" ] || fail "segments left in /dev/shm: $left"
}
need "$LAUNCH" "$NCG_BUILD/fakenccl/libnccl.so.2"
