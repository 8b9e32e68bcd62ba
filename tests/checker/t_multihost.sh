# Two "hosts" on one machine: network namespaces joined by a veth pair (10.77.x.1 and .2,
# ncg-modes: sync async
# addresses of these test hosts only). Ranks 0-1 run on host A, ranks 2-3 on host B. The id
# carries host A's address (the CPU NCCL, like NCCL, writes the first non-loopback address),
# so the ranks on B reach the checker over the veth link with zero configuration: a healthy
# job completes with no verdict, a count mismatch on rank 1 (host A) ends every rank with 86.
. "$NCG_ROOT/tests/checker/lib.sh"
command -v ip >/dev/null || { echo "iproute2 not installed"; exit 77; }
A=ncgA$$ B=ncgB$$ NET=10.77.$(( $$ % 250 ))
ip netns add $A 2>/dev/null || { echo "cannot create network namespaces here"; exit 77; }
trap 'ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null' EXIT
ip netns add $B || fail "netns $B"
ip link add va$$ netns $A type veth peer name vb$$ netns $B || fail "veth"
ip -n $A addr add $NET.1/24 dev va$$ && ip -n $B addr add $NET.2/24 dev vb$$ || fail "addresses"
ip -n $A link set va$$ up && ip -n $B link set vb$$ up || fail "link up"
ip -n $A link set lo up && ip -n $B link set lo up
# run each rank in its host's namespace
cat >"$NCG_TMP/onhost.sh" <<EOS
#!/bin/sh
if [ "\$RANK" -lt 2 ]; then ns=$A; else ns=$B; fi
exec ip netns exec \$ns "\$@"
EOS
chmod +x "$NCG_TMP/onhost.sh"

guarded "$NCG_TMP/out" "$LAUNCH" -n 4 -t 90 "$NCG_TMP/onhost.sh" "$SCEN" healthy 200
expect "$RC" 0 "healthy job across two hosts"
no_verdict
! grep -q "cannot reach the checker" "$OUT" || fail "a rank ran unguarded"

guarded "$NCG_TMP/out2" "$LAUNCH" -n 4 -t 90 "$NCG_TMP/onhost.sh" "$SCEN" count
grep -q "cannot reach the checker" "$OUT" && fail "a rank could not reach the checker across hosts"
expect "$RC" 86 "launcher status"
expect "$(exited 86)" 4 "ranks that exited 86 on both hosts"
expect "$(printers)" "0 1 2 3 " "ranks that printed the diagnostic"
grep -qE '^ncclguard: VERDICT: MISMATCH .*AllReduce\(count=9, float32, sum\) on rank 1 vs AllReduce\(count=8, float32, sum\) on ranks 0,2-3$' "$OUT" || fail "headline"
echo ok
