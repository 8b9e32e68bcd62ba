# The relay tree across two "hosts" (network namespaces joined by a veth pair, as
# t_multihost.sh): ranks 0-3 on host A (nodes 0 and 1), ranks 4-7 on host B (nodes 2 and 3),
# fan-out 2, so node 2's parent is node 1's relay on the other host, found through the root's
# directory; node-local links are each host's own abstract Unix names. A healthy job, a rank
# killed on host B, a mismatch, the death of node 2's relay (rank 4, host B): every rank names it,
# a DEADLOCK with a rank of host B, and a frozen root.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
two_hosts 4 10.79
export NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=2 NCCLGUARD_TREE_FANOUT=2 NCCLGUARD_VERBOSE=1

guarded "$NCG_TMP/out" "$LAUNCH" -n 8 -t 90 "$NCG_TMP/onhost.sh" "$SCEN" healthy 200
expect "$RC" 0 "healthy job across two hosts"
no_verdict
expect "$(nlines '^ncclguard: this process \(global rank (2|4|6)\) is the relay of node (1|2|3) ')" 3 "node relays on both hosts"
grep -qE "cannot reach|unguarded|node is unknown" "$OUT" && fail "a rank ran unguarded: $(grep -E 'cannot reach|unguarded|unknown' "$OUT" | head -n 2)"

SCEN_VICTIM=5 guarded "$NCG_TMP/out2" "$LAUNCH" -n 8 -t 90 "$NCG_TMP/onhost.sh" "$SCEN" kill
expect "$(exited 86)" 7 "survivors of rank 5 (host B)"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \(8 ranks\): rank 5 died: ')" 7 "RANK DIED across hosts"

guarded "$NCG_TMP/out3" "$LAUNCH" -n 8 -t 90 "$NCG_TMP/onhost.sh" "$SCEN" count
expect "$(exited 86)" 8 "mismatch: ranks that exited 86 on both hosts"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH .*AllReduce\(count=9, float32, sum\) on rank 1 vs AllReduce\(count=8, float32, sum\) on ranks 0,2-7$')" 8 "mismatch headline"

SCEN_VICTIM=4 guarded "$NCG_TMP/out4" "$LAUNCH" -n 8 -t 90 "$NCG_TMP/onhost.sh" "$SCEN" kill
expect "$(exited 86)" 7 "survivors of node 2's relay (rank 4, host B)"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \(8 ranks\): rank 4 died: the relay of node 2 ')" 7 "the relay's death named across hosts"
# DEADLOCK across hosts: rank 5 (host B, node 2, whose relay's parent is on host A) takes the
# world comm and its split child in the other order (the cycle's two ranks in compact form:
# "4-5" when the other is a neighbour)
SCEN_VICTIM=5 guarded "$NCG_TMP/dl" "$LAUNCH" -n 8 -t 90 "$NCG_TMP/onhost.sh" "$SCEN" invert 40
expect "$(exited 86)" 8 "deadlock: ranks that exited 86 on both hosts"
expect "$(nlines '^ncclguard: VERDICT: DEADLOCK on comm [0-9a-f]+ \(8 ranks\): global ranks ([0-4],5|5,[6-7]|4-5|5-6) wait on each other across comms ')" 8 "deadlock across hosts: headline"
# the root (rank 0, host A) frozen: host B's relays get no answer from it (its backlog accepts
# connections), give up after 2 s, and count it lost after the heartbeat (synchronous mode only:
# the tree's code is the same in both)
if [ $async = 0 ]; then
  SCEN_VICTIM=0 NCCLGUARD_HEARTBEAT_TIMEOUT_S=2 guarded "$NCG_TMP/out5" "$LAUNCH" -n 8 -t $((10 * SLOW)) "$NCG_TMP/onhost.sh" "$SCEN" stop
  expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \(8 ranks\): rank holding the checker \(global rank 0\) died: ')" 7 "a frozen root: every other rank says so"
fi
echo ok
