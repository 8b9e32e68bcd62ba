# Shared by t_flood.sh and t_relay_flood.sh (sourced, after lib.sh): a connection flood on the
# port rank 0 writes into SCEN_PORT_FILE (its checker: the flat checker's listener, or the relay
# tree's root's), 1000 silent connections held open for 10 s, beside `scen steady 6` under
# `ulimit -n 256`. flood_run N: N ranks -> RC, OUT. flood_check: what both promise.
command -v prlimit >/dev/null || { echo "prlimit not installed"; exit 77; }
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
flood_run() {
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
  local fp=$!
  OUT=$NCG_TMP/out
  env LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_REPORT_DIR="$REPORTS" SCEN_PORT_FILE="$PF" SCEN_FDS=24 \
    prlimit --nofile=256:256 timeout -k 5 60 "$LAUNCH" -n "$1" -t 40 "$SCEN" steady 6 >"$OUT" 2>&1
  RC=$?
  wait $fp
  cat "$NCG_TMP/flood.out"
  grep '^scen: rank 0 opened' "$OUT"
}
# The job completes with no verdict, rank 0 opens its 24 descriptors, its checker thread does
# not spin (CPU seconds in CPU_OK).
flood_check() {
  expect "$RC" 0 "the job completes beside the flood"
  no_verdict
  grep -q '^flood: [0-9]* connections' "$NCG_TMP/flood.out" || fail "the flood did not run: $(cat "$NCG_TMP/flood.out")"
  expect "$(nlines '^scen: rank 0 opened 24 of 24 descriptors')" 1 "the application keeps its descriptors"
  CPU=$(sed -n 's/^scen: rank 0 opened .*checker thread cpu \([0-9.]*\) s$/\1/p' "$OUT")
  awk -v c="$CPU" 'BEGIN{exit !(c != "" && c < 1.5)}' || fail "the checker thread used ${CPU}s of CPU in 6 s (spinning?)"
}
