# A connection flood on the checker inside rank 0 (issue 13, item 3), under `ulimit -n 256`:
# 1000 silent connections held open while the job runs. The checker caps connections that have
# not presented the token, never takes the application's last descriptors (a margin below
# RLIMIT_NOFILE), and backs off instead of spinning on EMFILE: rank 0 can still open its files,
# the checker thread stays cheap, and the job completes with no verdict.
. "$NCG_ROOT/tests/checker/lib.sh"
command -v prlimit >/dev/null || { echo "prlimit not installed"; exit 77; }
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
PF=$NCG_TMP/port
cat >"$NCG_TMP/flood.py" <<'PY'
import os, resource, socket, sys, time
port_file, n, hold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
for _ in range(600):
    if os.path.exists(port_file) and open(port_file).read().strip(): break
    time.sleep(0.05)
port = int(open(port_file).read())
socks = []
for _ in range(n):
    s = socket.socket(); s.setblocking(False)
    try: s.connect(("127.0.0.1", port))
    except BlockingIOError: pass
    except OSError: s.close(); continue
    socks.append(s)
print("flood: %d connections to port %d" % (len(socks), port), flush=True)
time.sleep(hold)
PY
python3 "$NCG_TMP/flood.py" "$PF" 1000 10 >"$NCG_TMP/flood.out" 2>&1 &
FP=$!
OUT=$NCG_TMP/out
env LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_REPORT_DIR="$REPORTS" SCEN_PORT_FILE="$PF" SCEN_FDS=24 \
  prlimit --nofile=256:256 timeout -k 5 60 "$LAUNCH" -n 4 -t 40 "$SCEN" steady 6 >"$OUT" 2>&1
RC=$?
wait $FP
cat "$NCG_TMP/flood.out"
grep '^scen: rank 0 opened' "$OUT"
expect "$RC" 0 "the job completes beside the flood"
no_verdict
grep -q '^flood: [0-9]* connections' "$NCG_TMP/flood.out" || fail "the flood did not run: $(cat "$NCG_TMP/flood.out")"
expect "$(nlines '^scen: rank 0 opened 24 of 24 descriptors')" 1 "the application keeps its descriptors"
cpu=$(sed -n 's/^scen: rank 0 opened .*checker thread cpu \([0-9.]*\) s$/\1/p' "$OUT")
awk -v c="$cpu" 'BEGIN{exit !(c != "" && c < 1.5)}' || fail "the checker thread used ${cpu}s of CPU in 6 s (spinning?)"
echo "flood ok (checker cpu ${cpu}s)"
