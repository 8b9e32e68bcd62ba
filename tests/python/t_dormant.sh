# Python processes the shim must leave alone, under each CPython: one that never calls NCCL (it
# does its own run-time lookups through ctypes), one that loads libnccl and only looks functions
# up, and NCCLGUARD=0 (a pure pass-through: ctypes gets libnccl's own functions, the healthy
# loop completes, no segment, no output). With the shim on, the lookup is ncclguard's wrapper.
. "$NCG_ROOT/tests/python/lib.sh"
py=$(pythons)
[ -n "$py" ] || { echo "no CPython 3.9+ here"; exit 77; }
cat >"$NCG_TMP/lookup.py" <<'PY'
import ctypes, sys
libc = ctypes.CDLL(None)
assert libc.getpid() > 0 and libc.strlen(b"abc") == 3
if sys.argv[1] == "nccl":
    n = ctypes.CDLL("libnccl.so.2")
    a = ctypes.cast(n.ncclAllReduce, ctypes.c_void_p).value
    p = ctypes.cast(n.pncclAllReduce, ctypes.c_void_p).value
    v = ctypes.c_int()
    assert n.ncclGetVersion(ctypes.byref(v)) == 0
    print("lookup", "real" if a == p else "wrapper")
print("ok")
PY
segs() { ls /dev/shm | grep -c "^ncclguard\.$(id -u)\.$1$"; }
while read -r label PY; do
  OUT=$NCG_TMP/none.$label
  LD_PRELOAD="$NCG_PRELOAD" "$PY" "$NCG_TMP/lookup.py" none >"$OUT" 2>&1 || fail "$label: no NCCL"
  [ "$(cat "$OUT")" = ok ] || fail "$label: no NCCL: output '$(cat "$OUT")'"
  OUT=$NCG_TMP/look.$label
  LD_PRELOAD="$NCG_PRELOAD" "$PY" "$NCG_TMP/lookup.py" nccl >"$OUT" 2>&1 || fail "$label: lookups"
  [ "$(tr '\n' ' ' <"$OUT")" = "lookup wrapper ok " ] || fail "$label: lookups: '$(cat "$OUT")'"
  OUT=$NCG_TMP/off.$label
  LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD=0 "$PY" "$NCG_TMP/lookup.py" nccl >"$OUT" 2>&1 || fail "$label: NCCLGUARD=0 lookups"
  [ "$(tr '\n' ' ' <"$OUT")" = "lookup real ok " ] || fail "$label: NCCLGUARD=0: '$(cat "$OUT")'"
  OUT=$NCG_TMP/offrun.$label
  before=$(ls /dev/shm | grep -c "^ncclguard\.$(id -u)\." || true)
  env LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD=0 timeout 60 "$LAUNCH" -n 4 -t 30 "$PY" "$NCG_ROOT/tests/python/train.py" --steps 20 >"$OUT" 2>&1 \
    || fail "$label: NCCLGUARD=0 healthy loop"
  expect "$(grep -o 'rank [0-9]* done' "$OUT" | wc -l)" 4 "$label: NCCLGUARD=0 ranks done"
  ! grep -q '^ncclguard:' "$OUT" || fail "$label: NCCLGUARD=0 printed"
  after=$(ls /dev/shm | grep -c "^ncclguard\.$(id -u)\." || true)
  expect "$after" "$before" "$label: NCCLGUARD=0 segments"
  OUT=$NCG_TMP/onrun.$label
  env LD_PRELOAD="$NCG_PRELOAD" timeout 60 "$LAUNCH" -n 4 -t 30 "$PY" "$NCG_ROOT/tests/python/train.py" --steps 20 >"$OUT" 2>&1 \
    || fail "$label: guarded healthy loop"
  ! grep -q '^ncclguard:' "$OUT" || fail "$label: guarded healthy loop printed"
  echo "$label ok"
done <<<"$py"
echo "dormant ok"
