#!/usr/bin/env bash
# `watch --job`'s slow alert on a stand-in status endpoint (python) whose comm's "slow" names
# rank 2 (two polls), again rank 2 a second later (the same episode), then none (it ended), rank
# 2 anew (a second episode), then rank 3: one alert per episode and one for the change, 3 in all,
# about the named rank (its global rank, pid, host), the endpoint as the segment.
. "$(dirname "$0")/lib.sh"
need "$NCG"
command -v python3 >/dev/null || skip "python3 not installed"
python3 - "$NCG_TMP/port" <<'PY' &
import json, os, socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
# per poll: the rank named (None: none) and its episode, since_s growing with time from the
# episode's first poll (the first one begun 5 s before)
plan = [(2, 0), (2, 0), (2, 0), (None, 0), (None, 0), (2, 1), (2, 1), (3, 2), (3, 2)]
start = {0: time.time() - 5}
n = 0
while True:
    c, _ = s.accept()
    req = c.recv(65536).decode()
    rank, ep = plan[min(n, len(plan) - 1)]; n += 1
    w = None
    if rank is not None:
        t0 = start.setdefault(ep, time.time())
        w = {"rank": rank, "global_rank": 10 + rank, "host": "node-b", "pid": 500 + rank,
             "share": 0.145, "since_s": round(time.time() - t0, 1), "side": "gpu"}
    doc = {"format": "ncclguard-job-status", "version": 1, "time_unix": 1.0,
           "checker": {"host": "ck", "pid": 1}, "processes": [],
           "communicators": [{"id": "00000000000000ee", "size": 4, "members": [], "slow": w}]}
    body = json.dumps(doc).encode()
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
              % len(body) + body)
    c.close()
PY
BG_PIDS+=($!)
wait_until 10 test -s "$NCG_TMP/port"
URL=http://127.0.0.1:$(cat "$NCG_TMP/port")
timeout -s TERM 8 "$NCG" watch --job "$URL" --json --interval 0.3 >"$NCG_TMP/a" 2>"$NCG_TMP/e"
cat "$NCG_TMP/a" "$NCG_TMP/e"
grep '"kind":"slow"' "$NCG_TMP/a" >"$NCG_TMP/s"
[ "$(wc -l <"$NCG_TMP/s")" -eq 3 ] || fail "want 3 slow alerts (rank 2, rank 2 again after it ended, rank 3)"
sed -n 1p "$NCG_TMP/s" >"$NCG_TMP/s1"; sed -n 2p "$NCG_TMP/s" >"$NCG_TMP/s2"; sed -n 3p "$NCG_TMP/s" >"$NCG_TMP/s3"
jcheck "$NCG_TMP/s1" 'd["rank"]==12 and d["comm_rank"]==2 and d["pid"]==502 and d["comm"]=="00000000000000ee" and d["segment"]=="'"$URL"'"'
jcheck "$NCG_TMP/s1" 'd["detail"]=="rank 2 (global rank 12, pid 502 on node-b) is the one the others wait for: they lose 14.5% of the step, for 5 s, late on its GPU"'
jcheck "$NCG_TMP/s2" 'd["comm_rank"]==2 and "for 0 s" in d["detail"]'
jcheck "$NCG_TMP/s3" 'd["rank"]==13 and d["comm_rank"]==3 and d["pid"]==503'
echo ok
