#!/usr/bin/env bash
# make bench: cost per NCCL call added by libncclguard.so over a NCCL whose calls do nothing,
# 1 and 8 threads (distinct comms), without the shim, with it, and with NCCLGUARD=0, in one run.
# "checked": the checker on (its embedded coordinator, no peers), so the straggler sampling runs
# (NCCLGUARD_COORD=off turns it off with the checking); with NCG_BENCH_BASE also that build
# checked ("base-chk"): the sampled path's cost is checked - base-chk.
# Prints median / p99 ns per call and the added cost; see BENCHMARKS.md "Per-call cost".
set -eu
B=${1:-build}
N=${NCG_BENCH_BATCHES:-100000}
bin=$B/bench/percall
shim=$(cd "$B" && pwd)/libncclguard.so
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for t in 1 8; do
  "$bin" "$t" "$N" none >>"$out"
  LD_PRELOAD=$shim NCCLGUARD_COORD=off "$bin" "$t" "$N" shim >>"$out"
  LD_PRELOAD=$shim NCCLGUARD=0 "$bin" "$t" "$N" disabled >>"$out"
  # completion by CUDA events (a do-nothing runtime), and a second shim (NCG_BENCH_BASE:
  # another build's libncclguard.so, e.g. before completion tracking) in the same run
  LD_PRELOAD="$(cd "$B" && pwd)/bench/mockcudart/libcudart.so $shim" NCCLGUARD_COORD=off \
    NCCLGUARD_COMPLETION=events "$bin" "$t" "$N" events >>"$out"
  [ -n "${NCG_BENCH_BASE:-}" ] && LD_PRELOAD=$NCG_BENCH_BASE NCCLGUARD_COORD=off "$bin" "$t" "$N" base >>"$out"
  LD_PRELOAD=$shim "$bin" "$t" "$N" checked >>"$out"
  [ -n "${NCG_BENCH_BASE:-}" ] && LD_PRELOAD=$NCG_BENCH_BASE "$bin" "$t" "$N" base-chk >>"$out"
  LD_PRELOAD=$shim NCCLGUARD_SLOW=0 "$bin" "$t" "$N" chk-noslow >>"$out"
done
cat "$out"
awk '
  { split($2,a,"="); t=a[2]; split($3,m,"="); split($4,p,"="); med[$1,t]=m[2]; p99[$1,t]=p[2] }
  END {
    for (t = 1; t <= 8; t += 7) {
      printf("threads=%d: shim adds median %.1f ns (target <= 50), p99 %.1f ns (target <= 500); NCCLGUARD=0 adds median %.1f ns (target <= 5)\n",
             t, med["shim",t]-med["none",t], p99["shim",t]-p99["none",t], med["disabled",t]-med["none",t])
    }
    for (t = 1; t <= 8; t += 7) {
      printf("threads=%d: completion by events adds median %.1f ns, p99 %.1f ns", t, med["events",t]-med["none",t], p99["events",t]-p99["none",t])
      if (("base",t) in med) printf("; base build adds median %.1f ns, p99 %.1f ns", med["base",t]-med["none",t], p99["base",t]-p99["none",t])
      printf("\n")
    }
    for (t = 1; t <= 8; t += 7) {
      printf("threads=%d: checked (sampling on) adds median %.1f ns; with NCCLGUARD_SLOW=0 %.1f ns", t, med["checked",t]-med["none",t], med["chk-noslow",t]-med["none",t])
      if (("base-chk",t) in med) printf("; base build checked %.1f ns; checked - base checked %.1f ns (issue 26: within 2), ratio %.3f", med["base-chk",t]-med["none",t], med["checked",t]-med["base-chk",t], med["checked",t]/med["base-chk",t])
      printf("\n")
    }
    a1 = med["shim",1]-med["none",1]; a8 = med["shim",8]-med["none",8]
    printf("8 threads vs 1: added median ratio %.2f (target <= 2), shim/none median ratio 1t %.2f 8t %.2f\n",
           (a1 > 0 ? a8/a1 : 0), med["shim",1]/med["none",1], med["shim",8]/med["none",8])
  }' "$out"
