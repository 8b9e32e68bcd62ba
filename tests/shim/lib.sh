# Sourced by tests/shim/t_*.sh: paths of what the tests run, and small helpers.
LAUNCH=$NCG_BUILD/tests/ncg-launch
CALLS=$NCG_BUILD/tests/shim/calls
FAKE_DIR=$NCG_BUILD/fakenccl
SHIMLIB=$NCG_BUILD/libncclguard.so
# SANPRE: the sanitizer runtime of NCG_PRELOAD alone (empty in a plain build). An uninstrumented
# program (python3) that loads an instrumented library needs it preloaded: ThreadSanitizer's
# runtime cannot be loaded later (static TLS).
SANPRE=""; case "$NCG_PRELOAD" in *" "*) SANPRE=${NCG_PRELOAD%% *} ;; esac
# PY3: an interpreter run directly (a pyenv shim is a bash script, and bash under a preloaded
# ThreadSanitizer runtime crashes).
PY3=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null); [ -x "$PY3" ] || PY3=python3
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
