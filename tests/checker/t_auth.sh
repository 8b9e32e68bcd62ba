# Unauthenticated, truncated, garbage and silent connections to the coordinator change
# nothing: a healthy job run meanwhile completes with no verdict, and a diverged one is still
# diagnosed. Also a wrong NCCLGUARD_TOKEN: the rank warns once and runs unguarded.
. "$NCG_ROOT/tests/checker/lib.sh"
CLI=$B/ncclguard RAW=$B/tests/checker/rawconn
[ -x "$CLI" ] && [ -x "$RAW" ] || { echo "ncclguard CLI or rawconn not built"; exit 77; }
"$CLI" coord --listen 127.0.0.1:0 --token s3cret >"$NCG_TMP/coord.log" 2>&1 &
CP=$!
trap 'kill $CP 2>/dev/null' EXIT
for _ in $(seq 50); do grep -q 'listening on' "$NCG_TMP/coord.log" && break; sleep 0.1; done
PORT=$(grep -oE 'listening on [^ ]+' "$NCG_TMP/coord.log" | sed 's/.*://')
[ -n "$PORT" ] || fail "coordinator did not start"
export NCCLGUARD_COORD=127.0.0.1:$PORT NCCLGUARD_TOKEN=s3cret
pids=""
for mode in garbage truncated badtoken silent; do
  timeout 60 "$RAW" 127.0.0.1 "$PORT" $mode 15 >"$NCG_TMP/raw.$mode" 2>&1 &
  pids="$pids $!"
done
timeout 60 "$RAW" 127.0.0.1 "$PORT" tokenhello s3cret >"$NCG_TMP/raw.tokenhello" 2>&1 &
pids="$pids $!"
guarded "$NCG_TMP/out" "$LAUNCH" -n 4 -t 90 "$SCEN" healthy 300
for p in $pids; do wait "$p"; done
expect "$RC" 0 "healthy job beside hostile connections"
no_verdict
kill -0 $CP || fail "coordinator died"
guarded "$NCG_TMP/out2" "$LAUNCH" -n 4 -t 60 "$SCEN" count
expect "$RC" 86 "still detects after the attack"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH')" 4 "verdict after the attack"
NCCLGUARD_TOKEN=wrong guarded "$NCG_TMP/out3" "$LAUNCH" -n 4 -t 60 "$SCEN" healthy 50
expect "$RC" 0 "wrong token: runs unguarded"
expect "$(nlines '^ncclguard: the checker at 127.0.0.1:[0-9]+ refused this process \(wrong NCCLGUARD_TOKEN\?\); running unguarded$')" 4 "one warning per rank"
