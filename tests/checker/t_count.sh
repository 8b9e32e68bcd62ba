# A count mismatch on one rank (AllReduce 9 vs 8 elements), a rank splitting the communicator
# ncg-modes: sync async
# while the others are in an AllReduce, zero-config rendezvous and with an
# explicit NCCLGUARD_COORD served by `ncclguard coord` (token required); through the standalone
# checker also a p2p mismatch and a SIGKILLed rank.
. "$NCG_ROOT/tests/checker/lib.sh"
# The block content on every rank (the default, NCCLGUARD_DIAG=auto, prints it on the ranks the
# verdict is about and one other: tests/checker/t_incident.sh)
export NCCLGUARD_DIAG=full
guarded "$NCG_TMP/out" "$LAUNCH" -n 4 -t 60 "$SCEN" count
expect "$RC" 86 "launcher status"
expect "$(exited 86)" 4 "ranks that exited 86"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH .*: slot 100: AllReduce\(count=9, float32, sum\) on rank 1 vs AllReduce\(count=8, float32, sum\) on ranks 0,2-3$')" 4 "headline"
expect "$(nlines '^ncclguard:   last slot all ranks agreed on: 99$')" 4 "last agreed slot"
expect "$(printers)" "0 1 2 3 " "ranks that printed"
# a rank creating a new group (ncclCommSplit) while its peers are in a collective
guarded "$NCG_TMP/outsplit" "$LAUNCH" -n 4 -t 60 "$SCEN" newgroup
expect "$RC" 86 "launcher status (split vs collective)"
expect "$(exited 86)" 4 "ranks that exited 86 (split vs collective)"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH .*: slot 100: CommSplit\(\) on rank 1 vs AllReduce\(count=8, float32, sum\) on ranks 0,2-3$')" 4 "split headline"

CLI=$B/ncclguard
[ -x "$CLI" ] || { echo "ncclguard CLI not built: NCCLGUARD_COORD part skipped"; exit 0; }
"$CLI" coord --listen 127.0.0.1:0 --token t0ken >"$NCG_TMP/coord.log" 2>&1 &
CP=$!
trap 'kill $CP 2>/dev/null' EXIT
for _ in $(seq 50); do grep -q 'listening on' "$NCG_TMP/coord.log" && break; sleep 0.1; done
PORT=$(grep -oE 'listening on [^ ]+' "$NCG_TMP/coord.log" | sed 's/.*://')
[ -n "$PORT" ] || fail "coordinator did not start: $(cat "$NCG_TMP/coord.log")"
NCCLGUARD_COORD=127.0.0.1:$PORT NCCLGUARD_TOKEN=t0ken guarded "$NCG_TMP/out2" "$LAUNCH" -n 4 -t 60 "$SCEN" count
expect "$RC" 86 "launcher status (COORD)"
expect "$(exited 86)" 4 "ranks that exited 86 (COORD)"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH .*AllReduce\(count=9, float32, sum\) on rank 1 vs')" 4 "headline (COORD)"
# the same job, healthy, completes through the standalone coordinator
NCCLGUARD_COORD=127.0.0.1:$PORT NCCLGUARD_TOKEN=t0ken guarded "$NCG_TMP/out3" "$LAUNCH" -n 4 -t 60 "$SCEN" healthy 100
expect "$RC" 0 "healthy job through COORD"
no_verdict
NCCLGUARD_COORD=127.0.0.1:$PORT NCCLGUARD_TOKEN=t0ken guarded "$NCG_TMP/out4" "$LAUNCH" -n 4 -t 60 "$SCEN" p2p
expect "$RC" 86 "p2p through COORD"
expect "$(nlines '^ncclguard: VERDICT: P2P MISMATCH .*Send\(count=33, float32, peer=3\) on rank 2 vs Recv\(count=32, float32, peer=2\) on rank 3$')" 4 "p2p headline (COORD)"
NCCLGUARD_COORD=127.0.0.1:$PORT NCCLGUARD_TOKEN=t0ken SCEN_VICTIM=0 guarded "$NCG_TMP/out5" "$LAUNCH" -n 4 -t 60 "$SCEN" kill
expect "$(exited 86)" 3 "survivors of a SIGKILLed rank 0 (COORD)"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED .*: rank 0 died: .*connection lost without goodbye$')" 3 "RANK DIED headline (COORD)"
kill -0 $CP || fail "the standalone checker died"
