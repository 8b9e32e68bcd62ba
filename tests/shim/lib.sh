# Sourced by tests/shim/t_*.sh: paths of what the tests run, and small helpers.
LAUNCH=$NCG_BUILD/tests/ncg-launch
CALLS=$NCG_BUILD/tests/shim/calls
FAKE_DIR=$NCG_BUILD/fakenccl
SHIMLIB=$NCG_BUILD/libncclguard.so
export PYTHONPATH=$NCG_ROOT/tests/shim${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1

need() {
  for f in "$@"; do
    [ -e "$f" ] || { echo "missing $f: run make first"; exit 1; }
  done
}

fail() {
  echo "FAIL: $*"
  exit 1
}

# The segments of processes that are gone (a test's leftovers would be its own bug).
own_segments() {
  ls /dev/shm/ 2>/dev/null | grep "^ncclguard\.$(id -u)\." || true
}
