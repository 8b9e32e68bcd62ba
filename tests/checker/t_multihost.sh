# Two "hosts" on one machine: network namespaces joined by a veth pair (10.77.x.1 and .2,
# ncg-modes: sync async
# addresses of these test hosts only). Ranks 0-1 run on host A, ranks 2-3 on host B. The id
# carries host A's address (the CPU NCCL, like NCCL, writes the first non-loopback address),
# so the ranks on B reach the checker over the veth link with zero configuration: a healthy
# job completes with no verdict, a count mismatch on rank 1 (host A) ends every rank with 86.
. "$NCG_ROOT/tests/checker/lib.sh"
two_hosts 2 10.77

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
