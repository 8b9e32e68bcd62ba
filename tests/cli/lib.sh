# Sourced by the CLI tests (tests/cli/t_*.sh): paths, assertions and bounded waits.
# Uses NCG_BUILD, NCG_TMP, NCG_PRELOAD from tests/run.sh.
set -u
NCG=$NCG_BUILD/ncclguard
FAKESEG=$NCG_BUILD/tests/cli/fakeseg
CLIAPP=$NCG_BUILD/tests/cli/cliapp
LAUNCH=$NCG_BUILD/tests/ncg-launch
export LD_LIBRARY_PATH=$NCG_BUILD/fakenccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
BG_PIDS=()

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "$*"; exit 77; }
need() { for f in "$@"; do [ -x "$f" ] || skip "missing $f (not built)"; done; }
# contains FILE TEXT...: every TEXT occurs in FILE
contains() { local f=$1; shift; for t in "$@"; do grep -qF -- "$t" "$f" || { echo "--- $f:"; cat "$f"; fail "'$t' not in $f"; }; done; }
lacks() { local f=$1; shift; for t in "$@"; do ! grep -qF -- "$t" "$f" || { echo "--- $f:"; cat "$f"; fail "'$t' unexpectedly in $f"; }; done; }
# wait_until SECS CMD...: poll CMD every 0.2 s until it succeeds; fail after SECS (wall clock)
wait_until() {
  local secs=$1; shift
  local end=$(awk -v n="$(date +%s.%N)" -v s="$secs" 'BEGIN{printf "%.3f", n+s}')
  while :; do
    "$@" >/dev/null 2>&1 && return 0
    awk -v n="$(date +%s.%N)" -v e="$end" 'BEGIN{exit !(n>e)}' && break
    sleep 0.2
  done
  fail "timed out after ${secs}s waiting for: $*"
}
# jq-like check with python: jcheck FILE PYTHON-EXPR (d = the parsed document)
jcheck() {
  python3 - "$1" "$2" <<'PY' || { echo "--- $1:"; cat "$1"; fail "json check failed: $2"; }
import json, sys
d = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2])
sys.exit(0 if ok else 1)
PY
}
cleanup() {
  for p in "${BG_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  # guarded processes this test started (their command lines name $NCG_TMP) and any launcher
  # left them behind: end them by pid and remove their segments
  if [ -x "${NCG:-}" ]; then
    local left
    left=$("$NCG" status --json --no-clean --match "$NCG_TMP" 2>/dev/null | python3 -c 'import json,sys; print(" ".join(str(p["pid"]) for p in json.load(sys.stdin)["processes"] if p["state"] in ("alive","verdict")))' 2>/dev/null)
    [ -n "$left" ] && kill -KILL $left 2>/dev/null
  fi
  for p in "${BG_PIDS[@]}"; do wait "$p" 2>/dev/null; done
  [ -x "${NCG:-}" ] && "$NCG" clean --grace 0 --quiet --match "$NCG_TMP" >/dev/null 2>&1
  return 0
}
trap cleanup EXIT
# start_fakeseg NAME ARGS...: synthetic segments (tests/cli/fakeseg.c) held until the test ends;
# sets FS_PIDS (pids of its ranks, in rank order)
start_fakeseg() {
  local name=$1; shift
  mkfifo "$NCG_TMP/$name.in"
  "$FAKESEG" "$@" <"$NCG_TMP/$name.in" >"$NCG_TMP/$name.out" 2>&1 &
  BG_PIDS+=($!)
  exec {_fs_fd}>"$NCG_TMP/$name.in"
  wait_until 10 grep -q "fakeseg: ready" "$NCG_TMP/$name.out"
  read -r -a FS_PIDS <<<"$(sed -n 's/^fakeseg: ready //p' "$NCG_TMP/$name.out")"
}
