# Memory shortage (issue 13, item 2). 1) Every allocation in rank 0's checker thread fails after
# 1 s (tests/checker/failalloc.c): the checker stops with one true line in every rank, nobody
# gets a verdict, and the job completes unguarded. 2) Under `ulimit -v` (address space), from the
# lowest limit the plain job survives upwards: the guarded job never gives a verdict, never
# hangs, and needs at most 12 MiB more than the plain one (the checker thread's stack was 8 MiB;
# the shim's own reservations are now about 9-10 MiB of address space on this machine).
. "$NCG_ROOT/tests/checker/lib.sh"
FA=$B/tests/checker/failalloc.so
if [ -z "${NCG_SANITIZER:-}" ] && [ -f "$FA" ]; then
  OUT=$NCG_TMP/fa
  env LD_PRELOAD="$FA $NCG_PRELOAD" NCCLGUARD_REPORT_DIR="$REPORTS" FAILALLOC_AFTER_MS=1000 \
    timeout -k 5 60 "$LAUNCH" -n 4 -t 40 "$SCEN" steady 3 >"$OUT" 2>&1
  RC=$?
  expect "$RC" 0 "checker out of memory: the job completes"
  no_verdict
  expect "$(nlines '^ncclguard: the checker in this process ran out of memory and stopped; this job runs unguarded$')" 1 "rank 0 says so"
  expect "$(nlines '^ncclguard: the checker at .* stopped \(its process ran out of memory\); running unguarded$')" 3 "the others say so"
  expect "$(nlines '^ncclguard:')" 4 "nothing else"
else
  echo "sanitizer build: the malloc fault injection is not run (the sanitizer owns malloc)"
fi

# lowest address-space limit (KiB, 1 MiB steps) at which the 4-rank healthy job exits 0
run_at() { # KB PRELOAD -> RC, OUT
  OUT=$NCG_TMP/v.$1.${2:+g}
  (ulimit -v "$1" && exec env ${2:+LD_PRELOAD="$2"} NCCLGUARD_REPORT_DIR="$REPORTS" \
     timeout -k 5 60 "$LAUNCH" -n 4 -t 40 "$SCEN" healthy 20) >"$OUT" 2>&1
  RC=$?
}
[ -z "${NCG_SANITIZER:-}" ] || { echo "sanitizer build: no address-space limits (shadow memory), no malloc injection"; exit 77; }
lo=16384 hi=131072
while [ $((hi - lo)) -gt 1024 ]; do
  mid=$(((lo + hi) / 2)); run_at $mid ""
  if [ $RC = 0 ]; then hi=$mid; else lo=$mid; fi
done
plain=$hi
echo "plain job runs from ulimit -v $plain"
for kb in $((plain - 2048)) $plain $((plain + 4096)) $((plain + 8192)) $((plain + 12288)); do
  run_at $kb "$NCG_PRELOAD"
  echo "guarded at $kb: exit $RC"
  [ $RC != 124 ] && [ $RC != 137 ] || fail "guarded job hung at ulimit -v $kb"
  # a verdict only about a rank the application itself lost (its own call failed and it exited:
  # a true RANK EXITED), never one from the checker's own shortage
  grep -qE '^scen: rank [0-9]+: ' "$OUT" || no_verdict
  ! grep -q "NCCLGUARD_TOKEN" "$OUT" || fail "a token blamed at ulimit -v $kb"
done
expect "$RC" 0 "guarded job at plain + 12 MiB"
echo "nomem ok"
