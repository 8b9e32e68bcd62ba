# The relay tree across two "hosts" (network namespaces joined by a veth pair, as
# t_multihost.sh): ranks 0-3 on host A (nodes 0 and 1), ranks 4-7 on host B (nodes 2 and 3),
# fan-out 2, so node 2's parent is node 1's relay on the other host, found through the root's
# directory; node-local links are each host's own abstract Unix names. A healthy job, a
# mismatch on host B, and the death of node 2's relay (rank 4, host B): every rank names it.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
command -v ip >/dev/null || { echo "iproute2 not installed"; exit 77; }
A=ncgA$$ B=ncgB$$ NET=10.78.$(( $$ % 250 ))
ip netns add $A 2>/dev/null || { echo "cannot create network namespaces here"; exit 77; }
trap 'ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null' EXIT
ip netns add $B || fail "netns $B"
ip link add va$$ netns $A type veth peer name vb$$ netns $B || fail "veth"
ip -n $A addr add $NET.1/24 dev va$$ && ip -n $B addr add $NET.2/24 dev vb$$ || fail "addresses"
ip -n $A link set va$$ up && ip -n $B link set vb$$ up || fail "link up"
ip -n $A link set lo up && ip -n $B link set lo up
cat >"$NCG_TMP/onhost.sh" <<EOS
#!/bin/sh
if [ "\$RANK" -lt 4 ]; then ns=$A; else ns=$B; fi
exec ip netns exec \$ns "\$@"
EOS
chmod +x "$NCG_TMP/onhost.sh"
export NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=2 NCCLGUARD_TREE_FANOUT=2 NCCLGUARD_VERBOSE=1

guarded "$NCG_TMP/out" "$LAUNCH" -n 8 -t 90 "$NCG_TMP/onhost.sh" "$SCEN" healthy 200
expect "$RC" 0 "healthy job across two hosts"
no_verdict
expect "$(nlines '^ncclguard: this process \(global rank (2|4|6)\) is the relay of node (1|2|3) ')" 3 "node relays on both hosts"
grep -qE "cannot reach|unguarded|node is unknown" "$OUT" && fail "a rank ran unguarded: $(grep -E 'cannot reach|unguarded|unknown' "$OUT" | head -n 2)"

SCEN_VICTIM=5 guarded "$NCG_TMP/out2" "$LAUNCH" -n 8 -t 90 "$NCG_TMP/onhost.sh" "$SCEN" kill
expect "$(exited 86)" 7 "survivors of rank 5 (host B)"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \(8 ranks\): rank 5 died: ')" 7 "RANK DIED across hosts"

guarded "$NCG_TMP/out3" "$LAUNCH" -n 8 -t 90 "$NCG_TMP/onhost.sh" env SCEN_VICTIM=6 "$SCEN" count
expect "$(exited 86)" 8 "mismatch: ranks that exited 86 on both hosts"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH .*AllReduce\(count=9, float32, sum\) on rank 1 vs AllReduce\(count=8, float32, sum\) on ranks 0,2-7$')" 8 "mismatch headline"

SCEN_VICTIM=4 guarded "$NCG_TMP/out4" "$LAUNCH" -n 8 -t 90 "$NCG_TMP/onhost.sh" "$SCEN" kill
expect "$(exited 86)" 7 "survivors of node 2's relay (rank 4, host B)"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \(8 ranks\): rank 4 died: the relay of node 2 ')" 7 "the relay's death named across hosts"
echo ok
