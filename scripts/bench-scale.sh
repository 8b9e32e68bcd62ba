#!/usr/bin/env bash
# `make bench-scale`: the relay tree at N = 64, 1,024, 4,096 and 16,384 virtual ranks
# (build/tests/ncg-sim, 8 ranks per node, fan-out 16, 100 calls/s per rank, one communicator);
# BENCH_BIG=1 adds 65,536 and 131,072 (about 12 more minutes; BENCH_SIZES chooses freely).
# Per N: one healthy run of BENCH_HEALTHY_S seconds (BENCH_HEALTHY_BIG_S, default 60, from
# 131,072 ranks up; steady-state figures), BENCH_RUNS mismatch runs (a random rank and slot each
# run, within the second after the event time), and BENCH_RUNS runs each of --kill-rank (a random
# rank), --kill-relay and --deadlock-rank (at the event time), and one --stop-relay run (a frozen
# relay, found by a 2 s heartbeat: --heartbeat-s 2) and one --slow-rank run (a random rank 20%
# of the step late at every sampled slot: the SLOW warning); BENCH_FAULTS limits the kinds. The
# healthy run scrapes the root's /metrics every second (--scrape-s 1: the render's time and
# size in the table, its CPU in the root's). The event
# time is 3 s up to 16,384 ranks and 1 s more per further 16,384 (start-up takes longer there:
# 10 s at 131,072). BENCH_SEED seeds the random ranks and slots (default 1). Prints every run's
# JSON line into $OUT (default build/bench-scale; the healthy run's with its bytes per frame
# type, --frames) and a table of medians; no pass/fail (BENCHMARKS.md has the targets).
set -u
cd "$(dirname "$0")/.." || exit 2
B=${NCG_BUILD:-build}
SIM=$B/tests/ncg-sim
RUNS=${BENCH_RUNS:-5}
HEALTHY=${BENCH_HEALTHY_S:-10}
SIZES=${BENCH_SIZES:-64 1024 4096 16384${BENCH_BIG:+ 65536 131072}}
FAULTS=${BENCH_FAULTS:-mismatch kill-rank kill-relay deadlock stop-relay slow}
RANDOM=${BENCH_SEED:-1}
want() { case " $FAULTS " in *" $1 "*) return 0 ;; esac; return 1; }
OUT=${OUT_DIR:-$B/bench-scale}
[ -x "$SIM" ] || { echo "bench-scale: $SIM not built (make)"; exit 2; }
mkdir -p "$OUT"
field() { sed -n "s/.*\"$1\": \([^,}]*\).*/\1/p" | tr -d '"'; }
median() { sort -g | awk '{v[NR]=$1} END{ if (!NR) {print "-"; exit} printf "%s", (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2 }'; }
worst() { sort -g | tail -n 1; }
echo "bench-scale: $(nproc) CPUs, sizes $SIZES, $RUNS runs per fault ($FAULTS), healthy ${HEALTHY} s, seed ${BENCH_SEED:-1}, $(git rev-parse --short HEAD 2>/dev/null)"
printf '%-6s | %-9s %-9s %-9s %-9s %-9s %-7s %-7s | %-17s | %-19s | %-19s | %-19s | %-13s | %s\n' N root_cpu relay_max B/rank/s net_B/r/s rss_kB rep/s sim_cpu "scrape ms med/max B" "mismatch det/all" "kill-rank det/all" "kill-relay det/all" "stop(hb 2 s)" "named (ok runs)"
for n in $SIZES; do
  f=$OUT/n$n.jsonl
  : >"$f"
  hs=$HEALTHY; [ "$n" -ge 131072 ] && hs=${BENCH_HEALTHY_BIG_S:-60}
  ev=3; [ "$n" -gt 16384 ] && ev=$(( 3 + (n - 16384) / 16384 ))
  "$SIM" --ranks "$n" --per-node 8 --seconds "$hs" --scrape-s 1 --json --frames | sed 's/^{/{"run": "healthy", /' >>"$f"
  nodes=$(( (n + 7) / 8 ))
  rnd() { echo $(( (RANDOM * 32768 + RANDOM) % $1 )); } # 0 .. $1-1, up to 2^30
  for r in $(seq "$RUNS"); do
    if want mismatch; then
      mr=$(rnd "$n") ms=$(( ev * 100 + $(rnd 100) ))
      "$SIM" --ranks "$n" --per-node 8 --mismatch-rank "$mr" --mismatch-slot "$ms" --json | sed "s/^{/{\"run\": \"mismatch\", \"want\": \"$mr\", \"slot\": $ms, /" >>"$f"
    fi
    if want kill-rank; then
      kr=$(rnd "$n"); [ $((kr % 8)) = 0 ] && kr=$((kr + 1))
      "$SIM" --ranks "$n" --per-node 8 --kill-rank "$kr" --event-s "$ev" --json | sed "s/^{/{\"run\": \"kill-rank\", \"want\": \"$kr\", /" >>"$f"
    fi
    if want kill-relay; then
      kn=$(( 1 + (r * 31 + nodes / 2) % (nodes - 1) ))
      "$SIM" --ranks "$n" --per-node 8 --kill-relay "$kn" --event-s "$ev" --json | sed "s/^{/{\"run\": \"kill-relay\", \"want\": \"$((kn * 8))\", /" >>"$f"
    fi
    if want deadlock; then
      dr=$(( (r * 6007 + n / 2 + 1) % n ))
      "$SIM" --ranks "$n" --per-node 8 --deadlock-rank "$dr" --event-s "$ev" --json | sed "s/^{/{\"run\": \"deadlock\", \"want\": \"$dr\", /" >>"$f"
    fi
  done
  if want stop-relay; then
    kn=$(( 1 + (nodes / 3) % (nodes - 1) ))
    "$SIM" --ranks "$n" --per-node 8 --stop-relay "$kn" --heartbeat-s 2 --event-s "$ev" --json | sed "s/^{/{\"run\": \"stop-relay\", \"want\": \"$((kn * 8))\", /" >>"$f"
  fi
  if want slow; then
    sr=$(rnd "$n") sa=8; [ "$n" -gt 16384 ] && sa=12 # a simulator behind fills the window later
    "$SIM" --ranks "$n" --per-node 8 --slow-rank "$sr" --event-s "$ev" --after-s "$sa" --json | sed "s/^{/{\"run\": \"slow\", \"want\": \"$sr\", /" >>"$f"
  fi
  h=$(grep '"run": "healthy"' "$f")
  cell() { # kind -> "det/all"
    local d a
    d=$(grep "\"run\": \"$1\"" "$f" | field detect_s | median)
    a=$(grep "\"run\": \"$1\"" "$f" | field all_notified_s | median)
    echo "$d/$a (worst $(grep "\"run\": \"$1\"" "$f" | field all_notified_s | worst))"
  }
  ok=0 tot=0
  while read -r line; do
    tot=$((tot + 1))
    w=$(echo "$line" | field want) g=$(echo "$line" | field named_ranks)
    nt=$(echo "$line" | field notified) ex=$(echo "$line" | field expected) du=$(echo "$line" | field duplicates)
    [ "$w" = "$g" ] && [ "$nt" = "$ex" ] && [ "$du" = 0 ] && ok=$((ok + 1))
  done < <(grep -v '"run": "healthy"' "$f" | grep -v '"run": "deadlock"' | grep -v '"run": "slow"')
  printf '%-6s | %-9s %-9s %-9s %-9s %-9s %-7s %-7s | %-17s | %-19s | %-19s | %-19s | %-13s | %s/%s; healthy verdict: %s\n' "$n" \
    "$(echo "$h" | field root_cpu_s_per_s)" "$(echo "$h" | field relay_cpu_s_per_s_max)" \
    "$(echo "$h" | field bytes_per_rank_per_s)" "$(echo "$h" | field net_bytes_per_rank_per_s)" \
    "$(echo "$h" | field root_rss_kb)" "$(echo "$h" | field reports_per_rank_per_s)" \
    "$(echo "$h" | field sim_cpu_s_per_s)" \
    "$(echo "$h" | field scrape_ms_median)/$(echo "$h" | field scrape_ms_max) $(echo "$h" | field metrics_bytes)" \
    "$(cell mismatch)" "$(cell kill-rank)" "$(cell kill-relay)" \
    "$(grep '"run": "stop-relay"' "$f" | field detect_s)/$(grep '"run": "stop-relay"' "$f" | field all_notified_s)" \
    "$ok" "$tot" "$(echo "$h" | field verdict)"
  # DEADLOCK: named when the cycle's summary names the inverted rank, every rank notified once
  dok=0 dtot=0
  while read -r line; do
    dtot=$((dtot + 1))
    w=$(echo "$line" | field want)
    nt=$(echo "$line" | field notified) ex=$(echo "$line" | field expected) du=$(echo "$line" | field duplicates)
    echo "$line" | grep -qE "global ranks ([0-9]+,$w|$w,[0-9]+) wait on each other" && [ "$nt" = "$ex" ] && [ "$du" = 0 ] && dok=$((dok + 1))
  done < <(grep '"run": "deadlock"' "$f")
  printf '%-6s | deadlock (--deadlock-rank) det/all: %s | named (ok runs) %s/%s\n' "$n" "$(cell deadlock)" "$dok" "$dtot"
  # SLOW: the warning names the slow rank, at every live rank once, and no verdict
  while read -r line; do
    w=$(echo "$line" | field want) g=$(echo "$line" | field slow_named)
    sn=$(echo "$line" | field slow_notified) ex=$(echo "$line" | field expected)
    ok=bad; [ "$w" = "$g" ] && [ "$sn" = "$ex" ] && [ "$(echo "$line" | field slow_duplicates)" = 0 ] &&
      [ "$(echo "$line" | field verdict)" = null ] && ok=ok
    printf '%-6s | slow (--slow-rank %s) named %s (%s): detect %s s, all warned %s s, %s of %s ranks; root_cpu %s, B/rank/s %s (%s between nodes), rep/s %s\n' \
      "$n" "$w" "$g" "$ok" "$(echo "$line" | field slow_detect_s)" "$(echo "$line" | field slow_all_notified_s)" "$sn" "$ex" \
      "$(echo "$line" | field root_cpu_s_per_s)" "$(echo "$line" | field bytes_per_rank_per_s)" \
      "$(echo "$line" | field net_bytes_per_rank_per_s)" "$(echo "$line" | field reports_per_rank_per_s)"
  done < <(grep '"run": "slow"' "$f")
done
echo "bench-scale: runs in $OUT/n*.jsonl"
