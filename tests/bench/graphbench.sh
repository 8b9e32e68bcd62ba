#!/usr/bin/env bash
# make bench-graph: what the shim adds to a cudaGraphLaunch whose graph holds K captured NCCL
# calls (K = 2 and 16), over a do-nothing CUDA runtime and NCCL, without the shim, with it
# (zero-config checking on) and with NCCLGUARD=0, in one run. See BENCHMARKS.md "CUDA graph
# replays".
set -eu
B=$(cd "${1:-build}" && pwd)
N=${NCG_BENCH_BATCHES:-100000}
bin=$B/bench/graphbench
out=$(mktemp)
rep=$(mktemp -d)
trap 'rm -rf "$out" "$rep"' EXIT
for k in 2 16; do
  "$bin" "$k" "$N" none >>"$out"
  LD_PRELOAD=$B/libncclguard.so NCCLGUARD_REPORT_DIR=$rep "$bin" "$k" "$N" shim >>"$out"
  LD_PRELOAD=$B/libncclguard.so NCCLGUARD=0 "$bin" "$k" "$N" disabled >>"$out"
done
cat "$out"
awk '{ split($2,a,"="); k=a[2]; split($3,m,"="); split($4,p,"="); med[$1,k]=m[2]; p99[$1,k]=p[2] }
  END { for (k = 2; k <= 16; k += 14)
    printf("calls=%d: shim adds median %.1f ns per launch (%.1f per captured call), p99 %.1f ns; NCCLGUARD=0 adds %.1f ns\n",
           k, med["shim",k]-med["none",k], (med["shim",k]-med["none",k])/k, p99["shim",k]-p99["none",k], med["disabled",k]-med["none",k]) }' "$out"
