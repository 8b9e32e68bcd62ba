#!/usr/bin/env bash
# make bench-python: the cost ncclguard adds to NCCL calls made from Python (Debian's python3),
# through ctypes on libnccl's handle (the vLLM shape, reached by the shim's dlsym) and through a
# C extension linked against libnccl (the PyTorch shape), over the do-nothing NCCL. Bare and
# guarded (zero-config checking on, 1 rank) alternate, NCG_BENCH_ROUNDS (5) rounds in one run;
# prints the median ns per call of each and the added cost. See BENCHMARKS.md "Python callers".
set -eu
B=$(cd "${1:-build}" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${NCG_BENCH_PYTHON:-/usr/bin/python3}
N=${NCG_BENCH_CALLS:-200000}
R=${NCG_BENCH_ROUNDS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$B/bench/null PYTHONDONTWRITEBYTECODE=1 NCG_EXT_DIR=$work/ext
NCG_ROOT=$ROOT B=$B
# shellcheck source=/dev/null
. <(sed -n '/^build_ext()/,/^}/p' "$ROOT/tests/python/lib.sh")
vias="ctypes"
if build_ext "$PY" "$NCG_EXT_DIR" 2>/dev/null; then vias="ctypes ext"; else echo "no Python headers: ctypes only"; fi
out=$work/out
for _ in $(seq "$R"); do
  for via in $vias; do
    "$PY" "$ROOT/tests/bench/pycall.py" "$via" "$N" | sed 's/^/bare /' >>"$out"
    env LD_PRELOAD="$B/libncclguard.so" NCCLGUARD_REPORT_DIR="$work" "$PY" "$ROOT/tests/bench/pycall.py" "$via" "$N" \
      | sed 's/^/shim /' >>"$out"
  done
done
echo "$("$PY" -V), $N calls per batch, $R rounds (median of 5 batches each)"
awk '{ split($3, a, "="); v[$1 " " $2] = v[$1 " " $2] " " a[2] }
  END { for (k in v) print k v[k] }' "$out" | sort | while read -r who via vals; do
  med=$(tr ' ' '\n' <<<"$vals" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  echo "$who $via $med"
done >"$work/med"
awk '{ m[$1 " " $2] = $3 } END {
  split("ctypes ext", vs, " ")
  for (i = 1; i <= 2; i++) { v = vs[i]; if (!(("bare " v) in m)) continue
    printf("%-6s bare %.1f ns/call, guarded %.1f ns/call: adds %.1f ns (%.2fx)\n", v, m["bare " v], m["shim " v],
           m["shim " v] - m["bare " v], m["shim " v] / m["bare " v]) } }' "$work/med"
