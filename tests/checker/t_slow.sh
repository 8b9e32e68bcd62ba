# SLOW: one rank 20% (and 10%) slower in the compute before each all-reduce, on the host or (in
# ncg-modes: sync async
# asynchronous mode) on its stream: every rank prints one SLOW warning naming that rank, and
# only it, within 30 s, the job completes (a warning never acts, whatever NCCLGUARD_ACTION); the
# slow rank changing mid-run gives a second warning naming the new one, and the slow rank
# recovering ends the episode without a line (the host status stops naming it); every rank jittering
# 0-10% and none slower gives none. 8 ranks, and 16 once. The first run also serves the status
# endpoint (NCCLGUARD_HTTP): /status names the rank with its share, /metrics has the SLOW families
# (promtool-clean), and a report file holds the warning. Under a sanitizer (NCG_SANITIZER) only
# the first case and the jitter case run; the cases whose code is the checker's alone, not the
# shim's sampling (the change, the end, NCCLGUARD_SLOW=0), run in one NCCL mode each (CI time).
# The 10 x 1 min acceptance run is a manual command (docs/validation.md).
. "$NCG_ROOT/tests/checker/lib.sh"
# slow_run NAME RANKS STEPS ENV...: runs `scen slow STEPS` on RANKS ranks (30 ms steps).
slow_run() {
  local name=$1 n=$2 steps=$3; shift 3
  guarded "$NCG_TMP/$name" env "$@" "$LAUNCH" -n "$n" -t 110 "$SCEN" slow "$steps"
  expect "$RC" 0 "$name: a warning only, the job completes"
}
# named N RANK: every one of the N ranks printed exactly one SLOW naming RANK and no other line.
named() {
  expect "$(nlines '^ncclguard: WARNING: SLOW on comm [0-9a-f]+ \('"$1"' ranks\): rank '"$2"' is the one the others wait for')" "$1" "SLOW naming rank $2"
  expect "$(nlines '^ncclguard: (WARNING|VERDICT):')" "$1" "no other warning or verdict"
}
on=host; [ $async = 1 ] && on=stream
san=0; [ -n "${NCG_SANITIZER:-}" ] && san=1
# 20% slower, on the stream in asynchronous mode, under the abort action (the default); its
# checker's status endpoint read while the job runs, once the warning is out. 500 steps (18 s):
# the first window fills about 9-10 s into the job (16 samples, 16 calls apart on average, 36 ms
# steps), and a CI run once ended a 330-step case (12 s) before it.
SECONDS=0
slow_run slow20 8 500 SCEN_SLOW_RANK=5 SCEN_SLOW_ON=$on NCCLGUARD_HTTP=127.0.0.1:0 &
RUN=$!
trap 'kill $RUN 2>/dev/null' EXIT
JF=
for _ in $(seq 100); do JF=$(ls "$REPORTS"/ncclguard-job.*.json 2>/dev/null | head -n 1); [ -n "$JF" ] && break; sleep 0.1; done
[ -n "$JF" ] || fail "slow20: no job file in $REPORTS"
URL=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$JF"); TOK=$(sed -n 's/.*"token":"\([^"]*\)".*/\1/p' "$JF")
ST=$NCG_TMP/status.json
for _ in $(seq $((300 * SLOW))); do
  curl -s -H "Authorization: Bearer $TOK" -o "$ST" "$URL/status" 2>/dev/null && grep -q '"slow":{' "$ST" && break
  sleep 0.1
done
grep -q '"slow":{' "$ST" || fail "slow20: /status never named a rank: $(head -c 600 "$ST")"
curl -s -H "Authorization: Bearer $TOK" -o "$NCG_TMP/metrics" "$URL/metrics" || fail "slow20: /metrics"
"$B/ncclguard" status --job "$JF" >"$NCG_TMP/status.txt" 2>&1 || fail "slow20: status --job: $(cat "$NCG_TMP/status.txt")"
# the host's view (the segments): the SLOW line, and watch's one slow alert
"$B/ncclguard" status --match scen >"$NCG_TMP/host.txt" 2>&1
"$B/ncclguard" watch --once --json >"$NCG_TMP/watch.json" 2>&1
wait $RUN
RC=$?; OUT=$NCG_TMP/slow20
expect "$RC" 0 "slow20: a warning only, the job completes"
named 8 5
[ $SECONDS -le $((30 * SLOW)) ] || fail "slow20: took ${SECONDS}s (the warning should come within 30 s)"
python3 - "$ST" <<'PY' || fail "slow20: /status: $(head -c 800 "$ST")"
import json, sys
(c,) = json.load(open(sys.argv[1]))["communicators"]
s = c["slow"]
assert s["rank"] == 5 and 0.05 <= s["share"] < 0.5 and s["since_s"] >= 0, s
assert s["side"] in ("host", "gpu") and s["pid"] > 0 and s["host"], s
w = {m["rank"]: m["wait_share"] for m in c["members"]}
assert w[5] == max(w.values()) and w[5] >= 0.05, w
PY
grep -qE '^ncclguard_comm_slow_rank\{comm="[0-9a-f]{16}"\} 5$' "$NCG_TMP/metrics" || fail "slow20: no ncclguard_comm_slow_rank 5"
grep -qE '^ncclguard_comm_slow_share\{comm="[0-9a-f]{16}"\} 0\.[0-9]+$' "$NCG_TMP/metrics" || fail "slow20: no ncclguard_comm_slow_share"
expect "$(grep -cE '^ncclguard_rank_wait_share\{comm="[0-9a-f]{16}",rank="[0-7]"\} [0-9.]+$' "$NCG_TMP/metrics")" 8 "slow20: ncclguard_rank_wait_share of 8 ranks"
if command -v promtool >/dev/null; then
  promtool check metrics <"$NCG_TMP/metrics" >"$NCG_TMP/promtool" 2>&1 || fail "promtool: $(cat "$NCG_TMP/promtool")"
fi
grep -qE '^ncclguard: .*SLOW.*rank 5' "$NCG_TMP/status.txt" || fail "slow20: status --job shows no SLOW line: $(cat "$NCG_TMP/status.txt")"
grep -lq '"SLOW"' "$REPORTS"/*.json 2>/dev/null || fail "slow20: no report file with the SLOW warning in $REPORTS"
grep -qE 'SLOW .*rank 5 .*\(the latest SLOW warning here\)' "$NCG_TMP/host.txt" || fail "slow20: host status: $(cat "$NCG_TMP/host.txt")"
python3 - "$NCG_TMP/watch.json" <<'PY' || fail "slow20: watch --once: $(cat "$NCG_TMP/watch.json")"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
slow = [x for x in a if x["kind"] == "slow"]  # (other alerts: other processes' segments)
assert len(slow) == 1 and slow[0]["comm_rank"] == 5, a
assert not [x for x in a if x["kind"] == "verdict" and x.get("comm") == slow[0]["comm"]], a
PY
python3 - "$REPORTS" <<'PY' || fail "slow20: the report's slow object"
import glob, json, sys
rs = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/ncclguard-report.*.json")]
s = [r["slow"] for r in rs if r.get("slow")]
assert s and all(x["rank"] == 5 and x["side"] in ("host", "gpu") and 0.05 <= x["share"] < 0.5 for x in s), s
PY
if [ $async = 1 ] && [ $san = 0 ]; then
  grep -qE 'SLOW.*late on its GPU \(its stream starts the collective late\)' "$OUT" || fail "not named on the GPU"
  # on the host in asynchronous mode too
  slow_run slowhost 8 500 SCEN_SLOW_RANK=2 SCEN_SLOW_ON=host
  named 8 2
  grep -qE 'SLOW.*late on its host' "$OUT" || fail "not named on the host"
elif [ $async = 0 ]; then
  grep -qE 'SLOW.*late on its host \(it issues the collective late\)' "$OUT" || fail "not named on the host"
fi
if [ $san = 0 ]; then
# 10% slower (700 steps: under load the 3 ms it is late sits in more scheduling noise, and it
# may take more than the first windows to dominate)
slow_run slow10 8 700 SCEN_SLOW_RANK=1 SCEN_SLOW_PCT=10 SCEN_SLOW_ON=$on
named 8 1
fi
# the slow rank changes mid-run: a second warning naming the new one (asynchronous mode)
if [ $san = 0 ] && [ $async = 1 ]; then
slow_run change 8 700 SCEN_SLOW_RANK=6 SCEN_SLOW_RANK2=3 SCEN_SLOW_SWITCH=300 SCEN_SLOW_ON=$on
expect "$(nlines 'WARNING: SLOW .*: rank 6 is the one')" 8 "change: first SLOW naming rank 6"
expect "$(nlines 'WARNING: SLOW .*: rank 3 is the one')" 8 "change: second SLOW naming rank 3"
expect "$(nlines '^ncclguard: (WARNING|VERDICT):')" 16 "change: no other warning"
fi
if [ $san = 0 ] && [ $async = 0 ]; then
# the slow rank recovers mid-run: the episode ends silently, and the host's status stops naming
# it (and shows the processes alive again) while the job still runs, read from the segments as
# `ncclguard status` on a node does (a sample every 4 calls: the window fills 4 times sooner;
# synchronous mode)
slow_run end 8 700 SCEN_SLOW_RANK=6 SCEN_SLOW_RANK2=-1 SCEN_SLOW_SWITCH=300 SCEN_SLOW_ON=$on \
  NCCLGUARD_SLOW_SAMPLE=4 &
RUN=$!
seen=0; gone=0
for _ in $(seq $((600 * SLOW))); do
  kill -0 $RUN 2>/dev/null || break
  "$B/ncclguard" status --match scen >"$NCG_TMP/end.txt" 2>&1
  if grep -qE '^ncclguard: SLOW on comm [0-9a-f]+: rank 6 ' "$NCG_TMP/end.txt"; then seen=1
  elif [ $seen = 1 ] && grep -q 'AllReduce' "$NCG_TMP/end.txt" && ! grep -q 'SLOW' "$NCG_TMP/end.txt"; then
    gone=1; break
  fi
  sleep 0.1
done
wait $RUN
RC=$?; OUT=$NCG_TMP/end
expect "$RC" 0 "end: a warning only, the job completes"
expect "$seen$gone" 11 "end: the host status named rank 6, then (the episode over) no SLOW: $(cat "$NCG_TMP/end.txt")"
named 8 6
fi
# every rank jittering 0-10%, none slower: no SLOW
slow_run jitter 8 600 SCEN_JITTER_PCT=10 SCEN_SLOW_ON=$on
no_verdict
# 16 ranks, once (asynchronous mode: on the stream; 500 steps: 16 processes on 2 cores under CI load
# fill the window slower than 8 do, and the warning must come before the job ends)
if [ $async = 1 ] && [ $san = 0 ]; then
  slow_run slow16 16 500 SCEN_SLOW_RANK=11 SCEN_SLOW_ON=$on
  named 16 11
fi
# NCCLGUARD_SLOW=0: nothing sampled, nothing said (synchronous mode)
if [ $san = 0 ] && [ $async = 0 ]; then
  slow_run off 8 330 SCEN_SLOW_RANK=5 SCEN_SLOW_ON=$on NCCLGUARD_SLOW=0
  no_verdict
fi
echo "t_slow: ok"
