# SLOW through the relay tree (NCCLGUARD_TREE=on): 16 real ranks in 4 "nodes" of 4 (as
# ncg-modes: async
# t_tree.sh), `scen slow` with rank 9 (node 2: its samples reach the root through node 2's
# relay) 20% slower on its stream (asynchronous mode only: what the tree adds, the relays'
# merging and the root's decision, does not depend on the mode, and t_slow.sh covers the
# sampling in both; the relay code runs under the sanitizers in relay_unit): every rank prints one SLOW
# naming it, with its global rank, pid and host, within 30 s, and the job completes; while the
# job runs the root's /status shows `slow` (rank 9, its pid and host) and /metrics
# ncclguard_comm_slow_rank 9. Every rank jittering 0-10% and none slower: no SLOW.
. "$NCG_ROOT/tests/checker/lib.sh"
command -v curl >/dev/null || { echo "curl not installed (scripts/install-deps.sh)"; exit 77; }
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
export NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=4
on=host; [ $async = 1 ] && on=stream
J=$NCG_TMP/jobs; mkdir -p "$J"
SECONDS=0
SCEN_SLOW_RANK=9 SCEN_SLOW_ON=$on NCCLGUARD_HTTP=127.0.0.1:0 NCCLGUARD_REPORT_DIR=$J \
  LD_PRELOAD="$NCG_PRELOAD" timeout -k 5 110 "$LAUNCH" -n 16 -t 100 "$SCEN" slow 700 \
  >"$NCG_TMP/slow" 2>&1 &
JOB=$!
trap 'kill $JOB 2>/dev/null' EXIT
for _ in $(seq 100); do [ -n "$(grep -l '"role":"root"' "$J"/ncclguard-job.*.json 2>/dev/null)" ] && break; sleep 0.1; done
ROOT=$(grep -l '"role":"root"' "$J"/ncclguard-job.*.json 2>/dev/null)
[ -n "$ROOT" ] || fail "no root job file"
field() { sed -n "s/.*\"$1\":\"\\{0,1\\}\\([^\",]*\\).*/\\1/p" "$2"; }
URL=$(field url "$ROOT"); AUTH="Authorization: Bearer $(field token "$ROOT")"
# the root's /status shows the straggler once it is named (polled while the job runs)
slowok() { curl -s -H "$AUTH" -o "$NCG_TMP/body" "$URL/status" && python3 - "$NCG_TMP/body" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = [c["slow"] for c in d["communicators"] if c.get("slow")]
assert len(s) == 1, s
s = s[0]
assert s["rank"] == 9 and s["global_rank"] == 9 and s["pid"] > 0 and s["host"], s
assert 0.05 < s["share"] < 0.4 and s["since_s"] >= 0 and s["side"] in ("host", "gpu"), s
PY
}
ok=0
for _ in $(seq 300); do slowok 2>/dev/null && { ok=1; break; }; kill -0 $JOB 2>/dev/null || break; sleep 0.2; done
[ $ok = 1 ] || fail "root /status never showed slow rank 9: $(head -c 1500 "$NCG_TMP/body")"
curl -s -H "$AUTH" "$URL/metrics" >"$NCG_TMP/root.prom"
grep -q '^ncclguard_comm_slow_rank{comm="[0-9a-f]\{16\}"} 9$' "$NCG_TMP/root.prom" || fail "root /metrics: no ncclguard_comm_slow_rank 9"
grep -qE '^ncclguard_comm_slow_share\{comm="[0-9a-f]{16}"\} 0\.[0-9]+$' "$NCG_TMP/root.prom" || fail "root /metrics: no slow share"
[ $SECONDS -le $((30 * SLOW)) ] || fail "named only after ${SECONDS}s (within 30 s)"
wait $JOB; RC=$?
trap - EXIT
OUT=$NCG_TMP/slow
expect "$RC" 0 "a warning only, the job completes"
expect "$(nlines '^ncclguard: WARNING: SLOW on comm [0-9a-f]+ \(16 ranks\): rank 9 is the one the others wait for')" 16 "every rank prints one SLOW naming rank 9"
expect "$(nlines '^ncclguard: (WARNING|VERDICT):')" 16 "no other warning or verdict"
grep -qE 'SLOW.*\(global rank 9, pid [1-9][0-9]* on [^ ]+\)' "$OUT" || fail "not named with its global rank, pid and host: $(grep -m1 SLOW "$OUT")"
# every rank jittering 0-10%, none slower: no SLOW
guarded "$NCG_TMP/jitter" env SCEN_JITTER_PCT=10 SCEN_SLOW_ON=$on "$LAUNCH" -n 16 -t 100 "$SCEN" slow 500
expect "$RC" 0 "jitter: the job completes"
no_verdict
echo "t_tree_slow: ok"
