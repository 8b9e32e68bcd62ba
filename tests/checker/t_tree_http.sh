# The status endpoint served by the relay tree (NCCLGUARD_TREE=on): 16 real ranks in 4 "nodes"
# of 4 (as t_tree.sh), NCCLGUARD_HTTP=127.0.0.1:0, rank 5 (node 1) stops calling while the
# others block in one more AllReduce (warn mode: the job hangs). The root (rank 0) and each
# node relay (ranks 4, 8, 12) write a job file with their role and node; the root's /status
# gives every rank's counts as aggregates (issued 5..6, rank 5 the slowest, 3 healthy relays)
# and every rank's row (the figures gathered through the tree: global rank, counts, rank 5
# behind; a range with ?ranks=); each node relay's /status its 4 ranks' rows; /metrics
# (promtool-clean when installed) job-level families at the root, per-rank ones at the relays;
# /healthz; the token required (401); `ncclguard status --job` on the root's and a relay's job
# file shows every rank's counts; `watch --job` at the root and at rank 5's relay names rank 5.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
APP=$B/tests/cli/cliapp
CLI=$B/ncclguard
[ -x "$APP" ] && [ -x "$CLI" ] || { echo "missing cliapp or the ncclguard CLI"; exit 77; }
command -v curl >/dev/null || { echo "curl not installed (scripts/install-deps.sh)"; exit 77; }
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
export NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=4
J=$NCG_TMP/jobs; mkdir -p "$J"
NCCLGUARD_HTTP=127.0.0.1:0 NCCLGUARD_ACTION=warn NCCLGUARD_REPORT_DIR=$J LD_PRELOAD="$NCG_PRELOAD" \
  timeout -k 5 60 "$LAUNCH" -n 16 -t 45 "$APP" --calls 5 --hang-rank 5 --hold-s 40 >"$NCG_TMP/out" 2>&1 &
JOB=$!
trap 'kill $JOB 2>/dev/null' EXIT
for _ in $(seq 100); do [ "$(ls "$J"/ncclguard-job.*.json 2>/dev/null | wc -l)" = 4 ] && break; sleep 0.1; done
expect "$(ls "$J"/ncclguard-job.*.json 2>/dev/null | wc -l)" 4 "job files: the root and 3 node relays"
field() { sed -n "s/.*\"$1\":\"\\{0,1\\}\\([^\",]*\\).*/\\1/p" "$2"; }
ROOT=$(grep -l '"role":"root","node":0' "$J"/ncclguard-job.*.json)
[ -n "$ROOT" ] || fail "no root job file: $(cat "$J"/*.json)"
expect "$(field global_rank "$ROOT")" 0 "the root is rank 0's process"
for n in 1 2 3; do
  f=$(grep -l "\"role\":\"relay\",\"node\":$n," "$J"/ncclguard-job.*.json)
  [ -n "$f" ] || fail "no job file of node $n's relay"
  expect "$(field global_rank "$f")" $((4 * n)) "node $n's relay is LOCAL_RANK 0 (global rank $((4 * n)))"
  eval "NODE$n=\$f"
done
URL=$(field url "$ROOT"); AUTH="Authorization: Bearer $(field token "$ROOT")"
code() { curl -s -o "$NCG_TMP/body" -w '%{http_code}' "$@"; }
expect "$(code "$URL/status")" 401 "root /status without a token"
! grep -q communicators "$NCG_TMP/body" || fail "401 carried data"
expect "$(code -H "$AUTH" "$URL/healthz")" 200 "root /healthz"
expect "$(code -H "$AUTH" "$URL/status?ranks=9-1")" 400 "a bad rank range"
grep -q '^bad ranks=9-1' "$NCG_TMP/body" || fail "400's line: $(cat "$NCG_TMP/body")"
# the hang seen through the tree: every rank's counts in the root's aggregates
rootok() { code -H "$AUTH" "$URL/status" >/dev/null && python3 - "$NCG_TMP/body" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["tree"]
assert d["format"] == "ncclguard-job-status" and t["role"] == "root" and t["nodes"] == 4, t
assert t["child_relays"] == 3 and t["child_relays_healthy"] == 3 and sorted(r["node"] for r in t["relays"]) == [1, 2, 3], t
c = d["communicators"][0]
assert c["size"] == 16 and c["registered"] == 16 and c["active"] == 16, c
assert c["min_slots"] == 5 and c["max_slots"] == 6 and c["slowest_ranks"] == [5] and c["slowest_rank"] == 5, c
assert c["completed_min"] <= 5 and c["members_partial"] is False, c
rows = {m["rank"]: m for m in c["members"]}
assert sorted(rows) == list(range(16)), c["members"]
for r, m in rows.items():
    assert m["global_rank"] == r and m["state"] == "active" and m["slots"] == (5 if r == 5 else 6), m
    assert m["behind"] == (r == 5), m
# its own node's rows keep their process (pid, host); the others' come from the gather
assert all(rows[r]["pid"] > 0 and rows[r]["host"] for r in range(4)), c["members"]
PY
}
wait_ok() { for _ in $(seq 100); do "$@" 2>/dev/null && return 0; sleep 0.1; done; "$@"; }
wait_ok rootok || fail "root /status: $(head -c 1500 "$NCG_TMP/body")"
# a rank range across nodes: those rows only
code -H "$AUTH" "$URL/status?ranks=3-9" >/dev/null
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["communicators"][0]; assert [m["rank"] for m in c["members"]]==list(range(3,10)) and c["members_partial"], c["members"]' "$NCG_TMP/body" || fail "?ranks=3-9: $(head -c 800 "$NCG_TMP/body")"
# each node relay: its 4 ranks with their counts (rank 5 behind at node 1)
for n in 1 2 3; do
  eval "f=\$NODE$n"
  NURL=$(field url "$f"); NAUTH="Authorization: Bearer $(field token "$f")"
  expect "$(code "$NURL/metrics")" 401 "node $n /metrics without a token"
  nodeok() { code -H "$NAUTH" "$NURL/status" >/dev/null && python3 - "$NCG_TMP/body" "$n" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); n = int(sys.argv[2])
assert d["tree"]["role"] == "relay" and d["tree"]["node"] == n, d["tree"]
c = d["communicators"][0]
rows = {m["rank"]: m for m in c["members"]}
assert sorted(rows) == list(range(4 * n, 4 * n + 4)), rows
for r, m in rows.items():
    assert m["global_rank"] == r and m["slots"] == (5 if r == 5 else 6), m
    assert m["behind"] == (r == 5), m
PY
  }
  wait_ok nodeok || fail "node $n /status: $(head -c 1500 "$NCG_TMP/body")"
done
# /metrics: job-level at the root (no per-rank series but its own node's), per rank at relays
expect "$(code -H "$AUTH" "$URL/metrics")" 200 "root /metrics"
cp "$NCG_TMP/body" "$NCG_TMP/root.prom"
grep -q '^ncclguard_comm_slowest_rank{comm="[0-9a-f]\{16\}"} 5$' "$NCG_TMP/root.prom" || fail "root: slowest rank"
grep -q '^ncclguard_comm_lag_calls{comm="[0-9a-f]\{16\}"} 1$' "$NCG_TMP/root.prom" || fail "root: lag calls"
grep -q '^ncclguard_relays_healthy 3$' "$NCG_TMP/root.prom" || fail "root: relays"
grep -q '^ncclguard_verdicts_total{kind="MISMATCH"} 0$' "$NCG_TMP/root.prom" || fail "root: verdicts by kind"
expect "$(grep -c '^ncclguard_calls_issued_total{' "$NCG_TMP/root.prom")" 4 "root: per-rank series of its own node only"
NURL=$(field url "$NODE1"); NAUTH="Authorization: Bearer $(field token "$NODE1")"
code -H "$NAUTH" "$NURL/metrics" >/dev/null; cp "$NCG_TMP/body" "$NCG_TMP/node1.prom"
grep -q '^ncclguard_calls_issued_total{comm="[0-9a-f]\{16\}",rank="5"} 5$' "$NCG_TMP/node1.prom" || fail "node 1: rank 5's count"
expect "$(grep -c '^ncclguard_rank_state{comm="[0-9a-f]\{16\}",rank="[4-7]"} 1$' "$NCG_TMP/node1.prom")" 4 "node 1: its ranks' states"
! grep -q '^ncclguard_comm_verdict\|^ncclguard_verdicts_total' "$NCG_TMP/node1.prom" || fail "node 1: job-level families duplicated"
if command -v promtool >/dev/null; then
  for p in root node1; do promtool check metrics <"$NCG_TMP/$p.prom" || fail "promtool: $p"; done
else
  echo "promtool not installed (apt-get install prometheus): the exposition grammar not checked here"
fi
# the CLI against the root's and a relay's job files
"$CLI" status --job "$ROOT" >"$NCG_TMP/st.root" || fail "status --job root"
grep -q 'slots 5..6  behind: rank 5' "$NCG_TMP/st.root" || fail "status --job root: $(cat "$NCG_TMP/st.root")"
! grep -q 'members partial' "$NCG_TMP/st.root" || fail "status --job root: rows missing: $(cat "$NCG_TMP/st.root")"
grep -qE '^ +0 +0 .* +6/[0-9]+ .* alive$' "$NCG_TMP/st.root" || fail "root: rank 0's row"
# the root's own node's ranks show the call they wait in (their WAITs reach the root); the
# others' rows are gathered figures, without it
grep -qE '^ +0 +0 .* AllReduce\(count=256, float32, sum\) .* alive$' "$NCG_TMP/st.root" || fail "root: rank 0's last call"
grep -q '^  ranks 1-3: same as rank 0 (3 processes)$' "$NCG_TMP/st.root" || fail "status --job root: its node's ranks as rank 0: $(cat "$NCG_TMP/st.root")"
grep -q '^  ranks 6-15: same as rank 4 (10 processes)$' "$NCG_TMP/st.root" || fail "status --job root: the other nodes' ranks as rank 4: $(cat "$NCG_TMP/st.root")"
grep -qE '^ +5 +5 .* +5/[0-9]+ .* <- behind$' "$NCG_TMP/st.root" || fail "root: rank 5's row"
"$CLI" status --job "$NODE1" >"$NCG_TMP/st.node1" || fail "status --job node 1"
grep -q 'slots 5..6  behind: rank 5' "$NCG_TMP/st.node1" || fail "status --job node 1: $(cat "$NCG_TMP/st.node1")"
grep -qE '^ +5 +5 .* +5/[0-9]+ .* <- behind$' "$NCG_TMP/st.node1" || fail "node 1: rank 5's row"
# watch --job on the hang: the stall names rank 5, at the root as at rank 5's relay
for f in "$ROOT" "$NODE1"; do
  timeout 30 "$CLI" watch --job "$f" --stall 2 --json --exit-on-alert >"$NCG_TMP/alerts"; RC=$?
  expect "$RC" 1 "watch --job $f: exit on its alert"
  python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).readline()); assert d["kind"]=="stall" and d["comm_rank"]==5 and "behind: rank 5" in d["detail"], d' "$NCG_TMP/alerts" || fail "watch $f: $(cat "$NCG_TMP/alerts")"
done
kill $JOB 2>/dev/null; wait $JOB 2>/dev/null
! grep -q 'no status endpoint\|no job file' "$NCG_TMP/out" || fail "an endpoint failed: $(grep '^ncclguard:' "$NCG_TMP/out" | head -3)"
exit 0
