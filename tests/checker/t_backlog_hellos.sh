# A checker that was stopped while the job's processes connected (a busy or descheduled host at
# the job's start): on resuming, it accepts a backlog of hundreds of connections, each holding its
# HELLO already. Every one is welcomed: none is taken for a silent connection against the cap on
# connections without a HELLO (64, the oldest dropped), which would leave that process unguarded
# (the simulator's finding 3, docs/simulator.md). 200 connections, each sending a HELLO as it
# connects, to a standalone checker stopped meanwhile; a flood of silent ones is still capped
# (t_relay_flood.sh, t_flood.sh).
. "$NCG_ROOT/tests/checker/lib.sh"
RAW=$B/tests/checker/rawconn
[ -x "$B/ncclguard" ] && [ -x "$RAW" ] || { echo "ncclguard CLI or rawconn not built"; exit 77; }
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 1024 ] || ulimit -n 1024 2>/dev/null ||
  { echo "needs 1024 descriptors"; exit 77; }
coord_start
kill -STOP $CP
timeout 30 "$RAW" 127.0.0.1 "$PORT" hellos 200 >"$NCG_TMP/raw.out" 2>&1 &
RP=$!
sleep 1.5 # every connection in the listener's backlog, its HELLO sent
kill -CONT $CP
wait $RP
OUT=$NCG_TMP/raw.out
grep -q 'rawconn: hellos x200:' "$OUT" || fail "rawconn did not finish"
expect "$(sed -n 's/.*welcomed \([0-9]*\),.*/\1/p' "$OUT")" 200 "connections welcomed after the stop"
expect "$(sed -n 's/.*dropped \([0-9]*\),.*/\1/p' "$OUT")" 0 "connections dropped"
echo "ok: $(cat "$OUT")"
