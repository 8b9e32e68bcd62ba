# Dormant until the first communicator: preloaded into programs that never make one (/bin/true,
# python3, a program that only asks NCCL's version), the shim creates no segment, starts no
# thread and prints nothing, even with verbose output and a bad setting to complain about.
. "$NCG_ROOT/tests/shim/lib.sh"
need "$SHIMLIB" "$NCG_BUILD/tests/shim/realnccl" "$NCG_BUILD/bench/null/libnccl.so.2"
export NCCLGUARD_VERBOSE=2 NCCLGUARD_ACTION=bogus
check_quiet() { # label, command...
  local label=$1; shift
  LD_PRELOAD="$NCG_PRELOAD" "$@" >"$NCG_TMP/out" 2>"$NCG_TMP/err" || fail "$label failed"
  [ ! -s "$NCG_TMP/err" ] || { cat "$NCG_TMP/err"; fail "$label: output on stderr"; }
}
check_quiet true sh -c 'echo $$ >"$0"; exec /bin/true' "$NCG_TMP/pid"
[ ! -e "/dev/shm/ncclguard.$(id -u).$(cat "$NCG_TMP/pid")" ] || fail "/bin/true got a segment"
P=$NCG_TMP/pypid
export P
if command -v python3 >/dev/null; then
  LD_PRELOAD="$NCG_PRELOAD" python3 -c '
import os
open(os.environ["P"], "w").write(str(os.getpid()))
# only the main thread: the shim started none
print("threads", len(os.listdir("/proc/self/task")))
' >"$NCG_TMP/out" 2>"$NCG_TMP/err" || fail python3
  [ ! -s "$NCG_TMP/err" ] || { cat "$NCG_TMP/err"; fail "python3: output on stderr"; }
  grep -qx "threads 1" "$NCG_TMP/out" || fail "python3: extra threads: $(cat "$NCG_TMP/out")"
  [ ! -e "/dev/shm/ncclguard.$(id -u).$(cat "$P")" ] || fail "python3 got a segment"
fi
LD_LIBRARY_PATH=$NCG_BUILD/bench/null check_quiet version "$NCG_BUILD/tests/shim/realnccl" version
grep -qx "segment=0" "$NCG_TMP/out" || fail "ncclGetVersion alone created a segment"
grep -q "from libncclguard.so" "$NCG_TMP/out" || fail "the shim was not in front"
echo "dormant ok"
