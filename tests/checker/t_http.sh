# The status endpoint (issue 12) end to end: a 16-rank job with NCCLGUARD_HTTP writes its job
# file; /healthz, /status (every rank) and /metrics (every rank; `promtool check metrics` when
# Debian's prometheus is installed) answer with the token; no token or a wrong one gets 401 and
# no data; garbage and oversized requests get 400 / 431 and the job completes untouched. Then
# a hang in warn mode names the rank behind; then `ncclguard coord --http` with a string token.
. "$NCG_ROOT/tests/checker/lib.sh"
APP=$B/tests/cli/cliapp
CLI=$B/ncclguard
[ -x "$APP" ] && [ -x "$CLI" ] || { echo "missing cliapp or the ncclguard CLI"; exit 77; }
command -v curl >/dev/null || { echo "curl not installed (scripts/install-deps.sh)"; exit 77; }
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
# raw PORT BYTES: send BYTES (printf escapes) as they are, print the answer's status line
raw() { python3 - "$1" "$2" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
data = b""
while True:
    try:
        b = s.recv(65536)
    except (ConnectionResetError, socket.timeout):
        break
    if not b:
        break
    data += b
print(data.split(b"\r\n", 1)[0].decode())
EOF
}
jobfile() { for _ in $(seq 100); do f=$(ls "$1"/ncclguard-job.*.json 2>/dev/null | head -n 1); [ -n "$f" ] && { echo "$f"; return; }; sleep 0.1; done; }
field() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p" "$2"; }

J1=$NCG_TMP/job1; mkdir -p "$J1"
NCCLGUARD_HTTP=:0 NCCLGUARD_REPORT_DIR=$J1 LD_PRELOAD="$NCG_PRELOAD" \
  timeout -k 5 120 "$LAUNCH" -n 16 -t 90 "$APP" --calls 120 --sleep-ms 50 >"$NCG_TMP/out" 2>&1 &
JOB=$!
trap 'kill $JOB 2>/dev/null; [ -n "${CP:-}" ] && kill $CP 2>/dev/null' EXIT
F=$(jobfile "$J1")
[ -n "$F" ] || fail "no job file in $J1"
URL=$(field url "$F"); TOK=$(field token "$F"); PORT=${URL##*:}
echo "$URL" | grep -qE '^http://127\.0\.0\.1:[0-9]+$' || fail "job file url: $(cat "$F")"
echo "$TOK" | grep -qE '^[0-9a-f]{16}$' || fail "job file token: $(cat "$F")"
[ "$(stat -c %a "$F")" = 600 ] || fail "job file mode $(stat -c %a "$F")"
AUTH="Authorization: Bearer $TOK"
code() { curl -s -o "$NCG_TMP/body" -w '%{http_code}' "$@"; }
expect "$(code -H "$AUTH" "$URL/healthz")" 200 "/healthz"
expect "$(cat "$NCG_TMP/body")" ok "/healthz body"
expect "$(code "$URL/status")" 401 "/status without a token"
! grep -q communicators "$NCG_TMP/body" || fail "401 carried data"
expect "$(code -H "Authorization: Bearer 0000000000000000" "$URL/metrics")" 401 "/metrics, wrong token"
! grep -q ncclguard_calls "$NCG_TMP/body" || fail "401 carried metrics"
expect "$(code "$URL/healthz")" 401 "/healthz without a token"
# wait until all 16 ranks registered and reported a call (a rank's first REPORT may come
# before its first call: slots 0), then check /status and /metrics
for _ in $(seq 100); do
  code -H "$AUTH" "$URL/metrics" >/dev/null
  [ "$(grep -c '^ncclguard_calls_issued_total{.*} [1-9][0-9]*$' "$NCG_TMP/body")" = 16 ] && break; sleep 0.1
done
expect "$(grep -c '^ncclguard_calls_issued_total{comm="[0-9a-f]\{16\}",rank="[0-9]*"} [0-9]*$' "$NCG_TMP/body")" 16 "ranks in /metrics"
# a rank's rate has no sample until its first window of a second between scrapes (never a 0
# that reads as a job not training)
for _ in $(seq 30); do
  [ "$(grep -c '^ncclguard_calls_per_second{' "$NCG_TMP/body")" -ge 16 ] && break
  sleep 0.2; code -H "$AUTH" "$URL/metrics" >/dev/null
done
for r in $(seq 0 15); do grep -q "^ncclguard_calls_per_second{comm=\"[0-9a-f]*\",rank=\"$r\"} " "$NCG_TMP/body" || fail "no rate of rank $r"; done
! grep -q '^ncclguard_calls_per_second{.*} 0.000$' "$NCG_TMP/body" || fail "a zero rate in a job making calls: $(grep calls_per_second "$NCG_TMP/body" | head -3)"
grep -q '^ncclguard_verdicts_total{kind="MISMATCH"} 0$' "$NCG_TMP/body" || fail "verdicts by kind"
if command -v promtool >/dev/null; then
  promtool check metrics <"$NCG_TMP/body" >"$NCG_TMP/promtool" 2>&1 || { cat "$NCG_TMP/promtool"; fail "promtool check metrics"; }
else
  echo "promtool not installed (apt-get install prometheus): Prometheus grammar checked by http_unit only"
fi
expect "$(code -H "$AUTH" "$URL/status")" 200 "/status"
python3 - "$NCG_TMP/body" <<'EOF' || fail "/status content: $(head -c 600 "$NCG_TMP/body")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "ncclguard-job-status" and d["version"] == 1
assert d["checker"]["embedded"] is True
assert len(d["processes"]) == 16 and sum(h["processes"] for h in d["hosts"]) == 16
(c,) = d["communicators"]
assert c["size"] == 16 and c["active"] == 16 and c["verdict"] is None
assert sorted(m["rank"] for m in c["members"]) == list(range(16))
assert all(m["state"] == "active" and m["slots"] > 0 for m in c["members"])
EOF
# hostile requests: answered and closed, nothing else changes
expect "$(raw "$PORT" 'GARBAGE\r\n\r\n')" "HTTP/1.1 400 Bad Request" "garbage"
expect "$(raw "$PORT" '\x00\xff\x16\x03\x01 binary\n')" "HTTP/1.1 400 Bad Request" "binary"
expect "$(raw "$PORT" "GET /status HTTP/1.1\\r\\nHost: x\\r\\nX: $(head -c 20000 /dev/zero | tr '\0' a)\\r\\n\\r\\n")" "HTTP/1.1 431 Request Header Fields Too Large" "oversized head"
expect "$(raw "$PORT" 'GET /status HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello')" "HTTP/1.1 400 Bad Request" "a body"
expect "$(code -X POST -H "$AUTH" "$URL/status")" 405 "POST"
wait $JOB; RC=$?
expect "$RC" 0 "the job, scraped and attacked meanwhile"
OUT=$NCG_TMP/out no_verdict
! grep -q '^ncclguard:' "$NCG_TMP/out" || fail "the job printed: $(grep '^ncclguard:' "$NCG_TMP/out" | head -3)"

# a hang in warn mode: rank 5 stops calling, the others block in one more AllReduce
J2=$NCG_TMP/job2; mkdir -p "$J2"
NCCLGUARD_HTTP=127.0.0.1:0 NCCLGUARD_ACTION=warn NCCLGUARD_REPORT_DIR=$J2 LD_PRELOAD="$NCG_PRELOAD" \
  timeout -k 5 60 "$LAUNCH" -n 16 -t 30 "$APP" --calls 5 --hang-rank 5 --hold-s 20 >"$NCG_TMP/out2" 2>&1 &
JOB=$!
F=$(jobfile "$J2"); [ -n "$F" ] || fail "no job file (hang)"
URL=$(field url "$F"); AUTH="Authorization: Bearer $(field token "$F")"
for _ in $(seq 100); do
  code -H "$AUTH" "$URL/metrics" >/dev/null
  grep -q '^ncclguard_comm_slowest_rank{comm="[0-9a-f]*"} 5$' "$NCG_TMP/body" &&
    grep -q '^ncclguard_comm_lag_calls{comm="[0-9a-f]*"} 1$' "$NCG_TMP/body" && break
  sleep 0.1 # (the others' extra call is counted once each has reported it)
done
grep -q '^ncclguard_comm_slowest_rank{comm="[0-9a-f]*"} 5$' "$NCG_TMP/body" || fail "slowest rank: $(grep slowest "$NCG_TMP/body")"
grep -q '^ncclguard_comm_lag_calls{comm="[0-9a-f]*"} 1$' "$NCG_TMP/body" || fail "lag in calls"
code -H "$AUTH" "$URL/status" >/dev/null
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["communicators"][0]; assert c["behind"]==[5], c["behind"]' "$NCG_TMP/body" || fail "/status behind"
# the others' last call is the AllReduce they are blocked in (from their WAITs), with its age
lastcall() { python3 - "$NCG_TMP/body" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))["communicators"][0]
for m in c["members"]:
    assert m["completed"] <= m["slots"] and m["last_call_age_s"] >= 0 and m["report_age_s"] >= 0, m
    if m["rank"] != 5:
        lc = m["last_call"]
        assert lc and lc["kind"] == "coll" and lc["func"] == "AllReduce" and lc["seq"] == m["slots"] - 1, m
EOF
}
for _ in $(seq 50); do code -H "$AUTH" "$URL/status" >/dev/null; lastcall 2>/dev/null && break; sleep 0.1; done
lastcall || fail "/status last_call: $(head -c 1500 "$NCG_TMP/body")"
kill $JOB 2>/dev/null; wait $JOB 2>/dev/null

# the standalone checker: ncclguard coord --http, a string token
"$CLI" coord --listen 127.0.0.1:0 --token s3cret --http :0 >"$NCG_TMP/coord.log" 2>&1 &
CP=$!
for _ in $(seq 50); do grep -q 'status endpoint on' "$NCG_TMP/coord.log" && break; sleep 0.1; done
grep -qE '^ncclguard: status endpoint on http://127\.0\.0\.1:[0-9]+ \(/status /metrics /healthz\) \(token required\)$' "$NCG_TMP/coord.log" || fail "coord --http: $(cat "$NCG_TMP/coord.log")"
CPORT=$(grep -oE 'listening on [^ ]+' "$NCG_TMP/coord.log" | sed 's/.*://')
HURL=$(grep -oE 'http://[^ ]+' "$NCG_TMP/coord.log")
NCCLGUARD_COORD=127.0.0.1:$CPORT NCCLGUARD_TOKEN=s3cret LD_PRELOAD="$NCG_PRELOAD" \
  timeout -k 5 60 "$LAUNCH" -n 4 -t 30 "$APP" --calls 60 --sleep-ms 50 >"$NCG_TMP/out3" 2>&1 &
JOB=$!
for _ in $(seq 100); do
  code -H "Authorization: Bearer s3cret" "$HURL/metrics" >/dev/null
  [ "$(grep -c '^ncclguard_calls_issued_total{' "$NCG_TMP/body")" = 4 ] && break; sleep 0.1
done
expect "$(grep -c '^ncclguard_calls_issued_total{' "$NCG_TMP/body")" 4 "ranks in coord's /metrics"
grep -q '^ncclguard_checker_info{.*embedded="0"' "$NCG_TMP/body" || fail "coord's checker_info"
expect "$(code -H "Authorization: Bearer wrong" "$HURL/status")" 401 "coord /status, wrong token"
wait $JOB; expect "$?" 0 "job through coord"
kill -0 $CP || fail "coord died"
