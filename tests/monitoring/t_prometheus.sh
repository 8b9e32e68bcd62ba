# A real Prometheus server (Debian's, on loopback with its own port and data directory) scraping
# a guarded job's checker every second with the shipped rules (scripts/prometheus/
# ncclguard-rules.yml) and the scrape config of docs/monitoring.md: a healthy job raises no
# alert, pending or firing, while Prometheus sees its ranks; the incident (a count mismatch)
# fires NcclguardDesync for its communicator within seconds. The checker is `ncclguard coord
# --http` (NCCLGUARD_COORD), as docs/monitoring.md advises for alerting: its endpoint outlives
# the ranks a verdict ends.
. "$NCG_ROOT/tests/checker/lib.sh"
command -v prometheus >/dev/null || { echo "prometheus not installed (scripts/install-deps.sh --prometheus)"; exit 77; }
command -v curl >/dev/null || { echo "curl not installed"; exit 77; }
CLI=$B/ncclguard
"$CLI" coord --listen 127.0.0.1:0 --http 127.0.0.1:0 >"$NCG_TMP/coord.log" 2>&1 &
CP=$!
PP=
trap 'kill $CP ${PP:-} 2>/dev/null; wait 2>/dev/null' EXIT
for _ in $(seq 50); do grep -q 'status endpoint on' "$NCG_TMP/coord.log" && break; sleep 0.1; done
CPORT=$(grep -oE 'listening on [^ ]+' "$NCG_TMP/coord.log" | sed 's/.*://')
HOSTPORT=$(grep -oE 'http://[^ ]+' "$NCG_TMP/coord.log" | sed 's|http://||')
[ -n "$CPORT" ] && [ -n "$HOSTPORT" ] || fail "coord did not start: $(cat "$NCG_TMP/coord.log")"
PPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$NCG_TMP/prometheus.yml" <<EOC
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $NCG_ROOT/scripts/prometheus/ncclguard-rules.yml
scrape_configs:
  - job_name: ncclguard
    static_configs:
      - targets: ['$HOSTPORT']
EOC
prometheus --config.file="$NCG_TMP/prometheus.yml" --storage.tsdb.path="$NCG_TMP/data" \
  --web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$NCG_TMP/prom.log" 2>&1 &
PP=$!
API=http://127.0.0.1:$PPORT
for _ in $(seq 100); do curl -sf "$API/-/ready" >/dev/null && break; sleep 0.2; done
curl -sf "$API/-/ready" >/dev/null || fail "prometheus not ready: $(tail -5 "$NCG_TMP/prom.log")"
# alerts NAME STATE: the number of alerts of that name in that state ("any": every state)
alerts() {
  curl -sf "$API/api/v1/alerts" | python3 -c '
import json, sys
a = json.load(sys.stdin)["data"]["alerts"]
print(sum(1 for x in a if x["labels"]["alertname"] == sys.argv[1] and sys.argv[2] in ("any", x["state"])))' "$1" "$2"
}
allalerts() { curl -sf "$API/api/v1/alerts" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["data"]["alerts"]))'; }
query() { curl -sf "$API/api/v1/query" --data-urlencode "query=$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "none")'; }
# every alert the shipped file defines is loaded
expect "$(curl -sf "$API/api/v1/rules" | python3 -c 'import json, sys; print(sum(len(g["rules"]) for g in json.load(sys.stdin)["data"]["groups"]))')" "$(grep -c '^ *- alert: ' "$NCG_ROOT/scripts/prometheus/ncclguard-rules.yml")" "rules loaded"

# healthy: 4 ranks, an AllReduce loop for 8 s; alerts looked at while it runs and after
export NCCLGUARD_COORD=127.0.0.1:$CPORT
(guarded "$NCG_TMP/healthy" "$LAUNCH" -n 4 -t 60 "$SCEN" steady 8; exit $RC) &
JP=$!
seen=0
for _ in $(seq 40); do
  [ "$(query 'sum(ncclguard_rank_state == 1)')" = 4 ] && { seen=1; break; }
  sleep 0.25
done
[ $seen = 1 ] || fail "prometheus never saw the 4 active ranks (up: $(query 'up{job="ncclguard"}'))"
expect "$(query 'up{job="ncclguard"}')" 1 "the checker's endpoint scraped"
for _ in 1 2 3 4; do
  sleep 1
  expect "$(allalerts)" 0 "healthy job: alerts (pending or firing) while it runs"
done
wait $JP
RC=$?
OUT=$NCG_TMP/healthy
expect "$RC" 0 "healthy job's status"
no_verdict
sleep 3
expect "$(allalerts)" 0 "healthy job: alerts after it ended"

# the incident: rank 1's count differs at ITERS/2 (MISMATCH); the ranks exit 86, the
# coordinator keeps the verdict, Prometheus fires
guarded "$NCG_TMP/incident" "$LAUNCH" -n 4 -t 60 "$SCEN" count
expect "$RC" 86 "incident: launcher status"
t0=$(date +%s.%N)
for _ in $(seq 60); do
  [ "$(alerts NcclguardDesync firing)" = 1 ] && break
  sleep 0.25
done
[ "$(alerts NcclguardDesync firing)" = 1 ] || fail "incident: NcclguardDesync not firing in 15 s (verdict series: $(query 'ncclguard_comm_verdict'), up: $(query 'up{job="ncclguard"}'), alerts: $(curl -sf "$API/api/v1/alerts"), the endpoint: $(curl -sf "http://$HOSTPORT/metrics" | grep -c '^ncclguard_comm_verdict'); its /status: $(curl -sf "http://$HOSTPORT/status" | head -c 1500); the coordinator: $(tail -n 12 "$NCG_TMP/coord.log"))"
awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "NcclguardDesync fired %.1f s after the job ended\n", b - a }'
curl -sf "$API/api/v1/alerts" | python3 -c '
import json, sys
a = [x for x in json.load(sys.stdin)["data"]["alerts"] if x["labels"]["alertname"] == "NcclguardDesync"][0]
assert a["labels"]["kind"] == "MISMATCH" and len(a["labels"]["comm"]) == 16, a["labels"]
assert a["labels"]["severity"] == "critical", a["labels"]
assert "MISMATCH on communicator " + a["labels"]["comm"] == a["annotations"]["summary"][len("ncclguard: "):], a
' || fail "NcclguardDesync's labels"
expect "$(alerts NcclguardRankLost any)" 0 "incident: no rank-lost alert (every rank was ended by the verdict)"
