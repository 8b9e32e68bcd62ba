#!/usr/bin/env bash
# make bench-http-real: the checker's CPU with and without scraping, in a real 16-rank job on the
# CPU NCCL (tests/checker/scen steady: AllReduce in a loop). Each round runs the job twice,
# unscraped and with /metrics and /status fetched NCG_BENCH_RATE times a second (default 10, so
# that the difference stands out of the 10 ms tick of the thread's CPU clock); rank 0 prints its
# checker thread's CPU seconds at the end. Prints each run and the added CPU per scrape, and the
# share of a core at one scrape of each per second. See BENCHMARKS.md "Status endpoint".
set -eu
B=$(cd "${1:-build}" && pwd)
T=${NCG_BENCH_SECONDS:-20}
RATE=${NCG_BENCH_RATE:-10}
ROUNDS=${NCG_BENCH_ROUNDS:-2}
N=16
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$B/fakenccl
field() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p" "$2"; }
# run LABEL SCRAPE: one job; prints "LABEL cpu_s scrapes"
run() {
  local d=$work/$1.$RANDOM
  mkdir -p "$d"
  env NCCLGUARD_HTTP=127.0.0.1:0 NCCLGUARD_REPORT_DIR="$d" SCEN_FDS=1 LD_PRELOAD="$B/libncclguard.so" \
    timeout -k 5 $((T + 60)) "$B/tests/ncg-launch" -n $N -t $((T + 50)) "$B/tests/checker/scen" steady "$T" \
    >"$d/out" 2>&1 &
  local job=$! n=0
  if [ "$2" = 1 ]; then
    local f=""
    for _ in $(seq 100); do f=$(ls "$d"/ncclguard-job.*.json 2>/dev/null | head -n 1); [ -n "$f" ] && break; sleep 0.1; done
    local url tok end
    url=$(field url "$f"); tok=$(field token "$f")
    end=$(($(date +%s) + T - 2))
    while [ "$(date +%s)" -lt "$end" ]; do
      curl -s -o /dev/null -H "Authorization: Bearer $tok" "$url/metrics" || true
      curl -s -o /dev/null -H "Authorization: Bearer $tok" "$url/status" || true
      n=$((n + 1))
      sleep "$(awk -v r="$RATE" 'BEGIN{print 1/r}')"
    done
  fi
  wait $job || { tail -n 20 "$d/out" >&2; return 1; }
  echo "$1 $(sed -n 's/.*checker thread cpu \([0-9.]*\) s$/\1/p' "$d/out") $n"
}
: >"$work/res"
for _ in $(seq "$ROUNDS"); do
  run idle 0 | tee -a "$work/res"
  run scraped 1 | tee -a "$work/res"
done
awk -v t="$T" -v n=$N '
  $1 == "idle" { ic[++ni] = $2 } $1 == "scraped" { sc[++ns] = $2; k[ns] = $3 }
  END {
    for (i = 1; i <= ni; i++) { d = sc[i] - ic[i]; per += d / (k[i] > 0 ? k[i] : 1); idle += ic[i]; scr += sc[i] }
    per /= ni
    printf("%d ranks, %d s per job: checker CPU %.2f s unscraped, %.2f s scraped (means of %d rounds), %.2f ms per scrape of /metrics + /status -> %.3f%% of a core at one of each per second\n",
           n, t, idle / ni, scr / ns, ni, per * 1000, per * 100)
  }' "$work/res"
