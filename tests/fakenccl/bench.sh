#!/usr/bin/env bash
# fakenccl speed (make bench): wall and CPU time of a 16-rank job of ~500 small calls per rank
# (tests/apps/mixed), and the CPU a blocked (mismatched) 16-rank job burns while it waits.
# Usage: tests/fakenccl/bench.sh BUILD_DIR. Prints "fakenccl bench: ..." lines; no pass/fail.
set -u
b=$(cd "${1:-build}" && pwd)
export LD_LIBRARY_PATH=$b/fakenccl
t() { local TIMEFORMAT="%R s wall, %U s user, %S s sys"; { time "$@" >/dev/null 2>&1; } 2>&1; }
echo "fakenccl bench: 16 ranks, mixed --iters 40 (~500 calls per rank): $(t "$b/tests/ncg-launch" -n 16 -t 120 "$b/tests/mixed" --iters 40)"
echo "fakenccl bench: 16 ranks, mixed --iters 400 (~5000 calls per rank): $(t "$b/tests/ncg-launch" -n 16 -t 300 "$b/tests/mixed" --iters 400)"
echo "fakenccl bench: 16 ranks blocked on a mismatch for 3 s: $(t "$b/tests/ncg-launch" -n 16 -t 3 "$b/tests/mixed" --iters 5 --mismatch 1)"
