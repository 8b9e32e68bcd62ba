#!/usr/bin/env bash
# The job from another host (issue 12): `status --job` and `watch --job` through the checker's
# status endpoint of 16-rank jobs on the CPU NCCL. A hang in warn mode: the table names the
# rank behind, watch raises one stall alert; a MISMATCH in warn mode: the odd rank and the
# verdict; `watch --min-rate` on a healthy job: no alert while it runs, exactly one while every
# rank is SIGSTOPped, and watch ends with the job; a wrong token: the 401 message and no data;
# an unreachable endpoint, a file that is no job file, malformed JSON and an oversized answer:
# one clear `ncclguard:` line and exit status 3.
. "$(dirname "$0")/lib.sh"
SCEN=$NCG_BUILD/tests/checker/scen
need "$NCG" "$CLIAPP" "$LAUNCH" "$SCEN" "$NCG_BUILD/libncclguard.so"
command -v python3 >/dev/null || skip "python3 not installed"
jobfile() { ls "$1"/ncclguard-job.*.json 2>/dev/null | head -n 1 | grep .; }
# start DIR ARGS...: a 16-rank guarded job with the endpoint; sets J and F (its job file)
start() {
  local d=$1; shift; mkdir -p "$d"
  NCCLGUARD_HTTP=127.0.0.1:0 NCCLGUARD_REPORT_DIR=$d LD_PRELOAD=$NCG_PRELOAD \
    timeout -k 5 120 "$LAUNCH" -n 16 -t 100 -- "$@" >"$d/out" 2>&1 &
  J=$!; BG_PIDS+=($J)
  wait_until 30 jobfile "$d"; F=$(jobfile "$d")
}
registered() { "$NCG" status --job "$F" --json >"$NCG_TMP/st.json" && python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["communicators"]; sys.exit(not (c and c[0]["active"] == 16))' "$NCG_TMP/st.json"; }

# 1. a hang in warn mode: rank 5 stops calling, the others block in one more AllReduce
NCCLGUARD_ACTION=warn start "$NCG_TMP/hang" "$CLIAPP" --calls 5 --hang-rank 5 --hold-s 30 --tag "$NCG_TMP"
wait_until 30 registered
# (the blocked ranks' call is known to the checker once they report waiting in it: an interval)
behind() { "$NCG" status --job "$F" >"$NCG_TMP/hang.txt" && grep -q "behind: rank 5" "$NCG_TMP/hang.txt" &&
  grep -q "AllReduce(count=256, float32, sum)" "$NCG_TMP/hang.txt"; }
wait_until 20 behind
cat "$NCG_TMP/hang.txt"
contains "$NCG_TMP/hang.txt" "ncclguard: job http://127.0.0.1:" "16 guarded processes, 1 communicator" \
  "size 16  here 16 (active 16)  slots 5..6  behind: rank 5" "AllReduce(count=256, float32, sum)"
grep -qE '^ +5 +5 .* <- behind$' "$NCG_TMP/hang.txt" || fail "rank 5's row is not marked behind"
[ "$(grep -c '<- behind' "$NCG_TMP/hang.txt")" = 1 ] || fail "only rank 5 is behind"
# the JSON is the checker's own document; the token also from NCCLGUARD_TOKEN with a URL
URL=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$F"); TOK=$(sed -n 's/.*"token":"\([^"]*\)".*/\1/p' "$F")
NCCLGUARD_TOKEN=$TOK "$NCG" status --job "$URL" --json >"$NCG_TMP/hang.json" || fail "status --job URL with NCCLGUARD_TOKEN"
jcheck "$NCG_TMP/hang.json" 'd["format"] == "ncclguard-job-status" and d["communicators"][0]["behind"] == [5]'
timeout 30 "$NCG" watch --job "$F" --stall 2 --json --exit-on-alert >"$NCG_TMP/hang.alerts"; RC=$?
[ "$RC" = 1 ] || fail "watch --job on the hang: exit $RC"
[ "$(wc -l <"$NCG_TMP/hang.alerts")" = 1 ] || { cat "$NCG_TMP/hang.alerts"; fail "one alert expected"; }
jcheck "$NCG_TMP/hang.alerts" 'd["kind"] == "stall" and d["comm_rank"] == 5 and "behind: rank 5" in d["detail"]'
# 2. a wrong token: the 401 message, no data, exit 3 (status and watch)
"$NCG" status --job "$F" --token 0000000000000000 >"$NCG_TMP/401.out" 2>"$NCG_TMP/401.err"; RC=$?
[ "$RC" = 3 ] || fail "wrong token: exit $RC"
[ ! -s "$NCG_TMP/401.out" ] || fail "wrong token printed data: $(cat "$NCG_TMP/401.out")"
contains "$NCG_TMP/401.err" "ncclguard: $URL/status: 401 Unauthorized: wrong token"
NCCLGUARD_TOKEN= "$NCG" watch --job "$URL" --once >"$NCG_TMP/401w.out" 2>"$NCG_TMP/401w.err"; RC=$?
[ "$RC" = 3 ] && [ ! -s "$NCG_TMP/401w.out" ] || fail "watch without a token: exit $RC"
contains "$NCG_TMP/401w.err" "401 Unauthorized: missing token"
kill "$J" 2>/dev/null; wait "$J" 2>/dev/null

# 3. a MISMATCH in warn mode: the odd rank and the checker's verdict
NCCLGUARD_ACTION=warn start "$NCG_TMP/mm" "$SCEN" count 40
mism() { "$NCG" status --job "$F" >"$NCG_TMP/mm.txt" && grep -q "^ncclguard: verdict on ranks 0-15" "$NCG_TMP/mm.txt" && grep -q "<- odd call" "$NCG_TMP/mm.txt"; }
wait_until 30 mism
cat "$NCG_TMP/mm.txt"
contains "$NCG_TMP/mm.txt" "<- odd call (MISMATCH)" "AllReduce(count=9, float32, sum)               on rank 1" \
  "(16 processes in the job): MISMATCH on comm"
[ "$(grep -c '<- odd call' "$NCG_TMP/mm.txt")" = 1 ] || fail "rank 1 alone is odd"
kill "$J" 2>/dev/null; wait "$J" 2>/dev/null

# 4. the throughput floor: a healthy job (about 40 calls/s), paused with SIGSTOP on every rank
start "$NCG_TMP/rate" "$CLIAPP" --calls 500 --sleep-ms 20 --tag "$NCG_TMP"
wait_until 30 registered
PIDS=$(python3 -c 'import json,sys; print(" ".join(str(m["pid"]) for m in json.load(open(sys.argv[1]))["communicators"][0]["members"]))' "$NCG_TMP/st.json")
timeout 100 "$NCG" watch --job "$F" --min-rate 5 --stall 3 --interval 0.5 --json \
  --exec 'echo "$NCCLGUARD_ALERT_KIND" >>'"$NCG_TMP/hook" >"$NCG_TMP/rate.alerts" 2>"$NCG_TMP/rate.err" &
W=$!; BG_PIDS+=($W)
sleep 5
[ ! -s "$NCG_TMP/rate.alerts" ] || { cat "$NCG_TMP/rate.alerts"; fail "an alert while the job runs"; }
kill -STOP $PIDS
wait_until 20 test -s "$NCG_TMP/rate.alerts"
sleep 4 # still paused: no second alert
kill -CONT $PIDS
wait "$J"; RC=$?
[ "$RC" = 0 ] || { tail "$NCG_TMP/rate/out"; fail "the paused job: exit $RC"; }
wait "$W"; RC=$?
cat "$NCG_TMP/rate.alerts" "$NCG_TMP/rate.err"
[ "$RC" = 1 ] || fail "watch --min-rate: exit $RC"
[ "$(wc -l <"$NCG_TMP/rate.alerts")" = 1 ] || fail "exactly one alert expected"
jcheck "$NCG_TMP/rate.alerts" 'd["kind"] == "rate" and "below the floor of 5 calls/s" in d["detail"]'
contains "$NCG_TMP/rate.err" "ncclguard: the job ended"
[ "$(cat "$NCG_TMP/hook")" = rate ] || fail "--exec: $(cat "$NCG_TMP/hook")"

# 5. nothing there, not a job file, malformed or oversized answers: one line, exit 3
err3() { local out=$1; shift; "$NCG" "$@" >"$NCG_TMP/e.out" 2>"$NCG_TMP/e.err"; local rc=$?
  [ "$rc" = 3 ] || fail "$*: exit $rc"; [ ! -s "$NCG_TMP/e.out" ] || fail "$*: stdout $(cat "$NCG_TMP/e.out")"
  contains "$NCG_TMP/e.err" "$out"; }
err3 "ncclguard: $URL: connection refused" status --job "$URL"
err3 "connection refused" watch --job "$F" --once
err3 "ncclguard: --job $NCG_TMP/nope.json: No such file" status --job "$NCG_TMP/nope.json"
echo '{"format":"other"}' >"$NCG_TMP/other.json"
err3 "not a job file" status --job "$NCG_TMP/other.json"
err3 "not a URL" status --job "http://:80"
python3 - "$NCG_TMP/port" <<'PY' &
import socket, sys, threading
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
def serve(c):
    req = c.recv(65536).decode()
    if "/status" not in req:
        return c.close()
    path = req.split()[1]
    if "big" in req:  # a job named "big": more than 64 MiB
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"x\":\"")
        try:
            for _ in range(70):
                c.sendall(b"a" * (1 << 20))
        except OSError:
            pass
    else:
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"format\": oops")
    c.close()
for _ in range(4):
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,)).start()
PY
BG_PIDS+=($!)
wait_until 10 test -s "$NCG_TMP/port"
P=$(cat "$NCG_TMP/port")
err3 "ncclguard: http://127.0.0.1:$P/status: malformed JSON near byte" status --job "http://127.0.0.1:$P"
err3 "/status: the answer is larger than 67108864 bytes" status --job "http://127.0.0.1:$P" --token big
echo "PASS"
