# NCCLGUARD_TREE=auto (the default) picks the relay tree from 1,024 ranks on: 16 real ranks that
# the launcher places in a job of 1,024 (WORLD_SIZE=1024, nodes of 4: 256 nodes, of which 4 hold
# a guarded process) get the tree, the parents of nodes 2 and 3 being node 1's relay; the same
# job with NCCLGUARD_HTTP gets the tree too, its status endpoint served by the root and the
# node relays (said in the banner); below 1,024 ranks the flat checker, silently.
# ncg-modes: sync
. "$NCG_ROOT/tests/checker/lib.sh"
unset NCCLGUARD_TREE
export NCG_LAUNCH_PER_NODE=4
cat >"$NCG_TMP/big.sh" <<'EOS'
#!/bin/sh
NCG_TEST_WORLD=$WORLD_SIZE WORLD_SIZE=1024 exec "$@"
EOS
chmod +x "$NCG_TMP/big.sh"
guarded "$NCG_TMP/auto" "$LAUNCH" -n 16 -t 60 "$NCG_TMP/big.sh" "$SCEN" count
expect "$(exited 86)" 16 "auto, 1,024 ranks: mismatch"
expect "$(nlines '^ncclguard: checking through a relay tree: 256 nodes of 4 ranks, fan-out 16$')" 1 "auto, 1,024 ranks: the tree"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH on comm [0-9a-f]+ \(16 ranks\): slot 100: AllReduce\(count=9, float32, sum\) on rank 1 vs AllReduce\(count=8, float32, sum\) on ranks 0,2-15$')" 16 "auto: the headline"
NCCLGUARD_HTTP=127.0.0.1:0 guarded "$NCG_TMP/http" "$LAUNCH" -n 16 -t 60 "$NCG_TMP/big.sh" "$SCEN" count
expect "$(exited 86)" 16 "auto with NCCLGUARD_HTTP: mismatch"
expect "$(nlines '^ncclguard: checking through a relay tree: 256 nodes of 4 ranks, fan-out 16; status endpoint at the root and each node.s relay$')" 1 "auto with NCCLGUARD_HTTP: the tree, serving the endpoint"
expect "$(nlines 'no status endpoint|flat checker')" 0 "auto with NCCLGUARD_HTTP: no fallback"
guarded "$NCG_TMP/small" "$LAUNCH" -n 16 -t 60 "$SCEN" count
expect "$(exited 86)" 16 "auto, 16 ranks: mismatch"
expect "$(nlines 'relay tree')" 0 "auto, 16 ranks: the flat checker"
NCCLGUARD_TREE=off guarded "$NCG_TMP/off" "$LAUNCH" -n 16 -t 60 "$NCG_TMP/big.sh" "$SCEN" count
expect "$(nlines 'relay tree')" 0 "NCCLGUARD_TREE=off: the flat checker at 1,024 ranks"
echo ok
