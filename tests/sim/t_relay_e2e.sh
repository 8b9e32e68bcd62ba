# Real guarded processes (the shim's client, the CPU NCCL) through a tree of standalone relays
# (build/tests/ncg-relayd): 16 ranks in 4 "nodes" of 4 (LOCAL_WORLD_SIZE), node relays 1..3
# under the root relay 0 in three levels (1 -> 0, 2 -> 1, 3 -> 1); each rank reaches its node's
# relay through NCCLGUARD_COORD. A count mismatch on rank 1, a SIGKILLed rank 13 (beneath two
# relays), rank 10 returning early (RANK EXITED), rank 1 lagging 3 s (a LAG warning, the job
# completes), and a healthy run: verdicts named right on every rank, through the real client.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
RD=$B/tests/ncg-relayd
[ -x "$RD" ] || { echo "ncg-relayd not built"; exit 1; }
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done' EXIT
start_relay() { # node [parent-node]
  local node=$1 par=${2:-}
  # a restarted relay's log must not show the last one's port: the background job truncates
  # it only when it gets to run
  rm -f "$NCG_TMP/relay.$node" "$NCG_TMP/port.$node"
  if [ -n "$par" ]; then
    "$RD" --node "$node" --token t0ken --parent "127.0.0.1:$(cat "$NCG_TMP/port.$par")" >"$NCG_TMP/relay.$node" 2>&1 &
  else
    "$RD" --node "$node" --token t0ken >"$NCG_TMP/relay.$node" 2>&1 &
  fi
  local pid=$! st=running t0=$SECONDS port=
  pids="$pids $pid"
  # the deadline is wall-clock time (not a count of sleeps), and the port is read whole: CI
  # once failed here after 5 s with the relay alive and its log empty
  while [ $((SECONDS - t0)) -lt $((10 * SLOW)) ]; do
    port=$(grep -oE 'listening on [0-9.]+:[0-9]+' "$NCG_TMP/relay.$node" 2>/dev/null | sed 's/.*://')
    [ -n "$port" ] && break
    sleep 0.1
  done
  echo "$port" >"$NCG_TMP/port.$node"
  kill -0 "$pid" 2>/dev/null || { wait "$pid"; st="exited with status $?"; }
  [ -n "$port" ] || { OUT=; fail "relay $node (pid $pid, $st) did not start: $((SECONDS - t0)) s, log $(wc -c <"$NCG_TMP/relay.$node" 2>&1) bytes: $(cat "$NCG_TMP/relay.$node" 2>&1)"; }
}
start_tree() { # a fresh tree: (re)start relays 0..3
  for p in $pids; do kill $p 2>/dev/null; wait $p 2>/dev/null; done
  pids=""
  start_relay 0
  start_relay 1 0
  start_relay 2 1
  start_relay 3 1
}
start_tree
# each rank: its node's relay (RANK / 4) as its checker
W=$NCG_TMP/wrap.sh
cat >"$W" <<WEOF
#!/bin/sh
export NCCLGUARD_COORD=127.0.0.1:\$(cat $NCG_TMP/port.\$((RANK / 4))) NCCLGUARD_TOKEN=t0ken
export LOCAL_WORLD_SIZE=4 LOCAL_RANK=\$((RANK % 4))
exec "\$@"
WEOF
chmod +x "$W"
export NCCLGUARD_DIAG=full
guarded "$NCG_TMP/out" "$LAUNCH" -n 16 -t 60 "$W" "$SCEN" count
expect "$RC" 86 "launcher status (mismatch)"
expect "$(exited 86)" 16 "ranks that exited 86 (mismatch)"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH .*\(16 ranks\): slot 100: AllReduce\(count=9, float32, sum\) on rank 1 vs AllReduce\(count=8, float32, sum\) on ranks 0,2-15$')" 16 "mismatch headline through relays"
SCEN_VICTIM=13 guarded "$NCG_TMP/out2" "$LAUNCH" -n 16 -t 60 "$W" "$SCEN" kill
expect "$(exited 86)" 15 "survivors of a SIGKILLed rank 13"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED .*: rank 13 died: .*connection lost without goodbye$')" 15 "RANK DIED headline through relays"
SCEN_VICTIM=10 guarded "$NCG_TMP/out4" "$LAUNCH" -n 16 -t 60 "$W" "$SCEN" early
expect "$(exited 86)" 15 "ranks ended after rank 10 returned early"
expect "$(nlines '^ncclguard: VERDICT: RANK EXITED on comm [0-9a-f]+ \(16 ranks\): rank 10 exited while ranks? [0-9,.-]+ issued calls it will never match$')" 15 "RANK EXITED headline through relays"
guarded "$NCG_TMP/out3" "$LAUNCH" -n 16 -t 60 "$W" "$SCEN" healthy 200
expect "$RC" 0 "healthy job through relays"
no_verdict
for n in 0 1 2 3; do
  grep -q 'verdict' "$NCG_TMP/relay.$n" && [ $n != 0 ] && fail "relay $n issued a verdict: $(cat "$NCG_TMP/relay.$n")"
done
expect "$(grep -c '^ncg-relayd: verdict:' "$NCG_TMP/relay.0")" 3 "verdicts issued by the root relay"
# LAG, with a 1 s threshold in the root relay (a tree of its own: the healthy runs above keep
# the default, as a short threshold also warns about a slow start)
NCCLGUARD_LAG_WARN_S=1 start_tree
SCEN_LAG_S=3 guarded "$NCG_TMP/out5" "$LAUNCH" -n 16 -t 60 "$W" "$SCEN" lag
expect "$RC" 0 "LAG is a warning: the job completes"
expect "$(nlines '^ncclguard: WARNING: LAG on comm [0-9a-f]+ \(16 ranks\): rank 1 behind, nobody progressed')" 16 "LAG warning through relays"
expect "$(nlines '^ncclguard: VERDICT:')" 0 "no error verdict with the LAG warning"
expect "$(grep -c '^ncg-relayd: warning: LAG' "$NCG_TMP/relay.0")" 1 "warnings issued by the root relay"
echo "ok: mismatch, rank died, rank exited, LAG and healthy through a 3-level relay tree"
