# The relay tree with zero configuration (NCCLGUARD_TREE=on): 16 real guarded ranks in 4
# "nodes" of 4 (LOCAL_RANK / LOCAL_WORLD_SIZE from ncg-launch's NCG_LAUNCH_PER_NODE): rank 0's
# checker thread is the root, each node's LOCAL_RANK 0 its relay (4, 8, 12), the others connect
# to their node's relay. Every verdict the tree issues, named right on every rank: MISMATCH, P2P
# MISMATCH (within a node, across nodes), RANK DIED (a plain rank, a node relay killed or frozen,
# the root), RANK EXITED (a plain rank, a node relay, the root), LAG, STUCK, DEADLOCK (split,
# second root comm, p2p; a cycle across two nodes); the warn and fail
# actions; a deeper tree (fan-out 2: three levels, the parents found through the root); a rank
# whose node is unknown; a healthy job.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
# Under sanitizers the synchronous pass covers the tree's code (the modes differ in the client).
[ -n "${NCG_SANITIZER:-}" ] && [ $async = 1 ] && { echo "tree: sanitizers run the sync pass only"; exit 77; }
export NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=4 NCCLGUARD_DIAG=full
BANNER='^ncclguard: checking through a relay tree: 4 nodes of 4 ranks, fan-out 16'
# ours: ncclguard's lines other than the banner (a healthy run has none)
ours() { grep '^ncclguard:' "$OUT" | grep -vE "$BANNER|^ncclguard: (recording to|completion: )"; }
# a counts line naming a number for every rank (no "?": each rank's figures reached the root)
COUNTS='^ncclguard:   collective calls issued per rank: [0-9]+ on [0-9,-]+(; [0-9]+ on [0-9,-]+)* \(rank [0-9]+: its own'


NCCLGUARD_VERBOSE=1 guarded "$NCG_TMP/mm" "$LAUNCH" -n 16 -t 60 "$SCEN" count
expect "$RC" 86 "mismatch: launcher status"
expect "$(exited 86)" 16 "mismatch: ranks that exited 86"
expect "$(nlines "$BANNER")" 1 "the banner, once (the root)"
expect "$(nlines '^ncclguard: this process \(global rank (4|8|12)\) is the relay of node (1|2|3) ')" 3 "node relays: LOCAL_RANK 0 of nodes 1-3"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH on comm [0-9a-f]+ \(16 ranks\): slot 100: AllReduce\(count=9, float32, sum\) on rank 1 vs AllReduce\(count=8, float32, sum\) on ranks 0,2-15$')" 16 "mismatch headline"
# every rank's figures, gathered through the tree (relay_figs.c) as the flat checker has them
expect "$(nlines '^ncclguard:   communicator [0-9a-f]+, 16 ranks, global ranks 0-15 \(same as comm ranks\)$')" 16 "members line"
expect "$(grep -cE "$COUNTS" "$OUT")" 16 "counts line: every rank's count"
# (synchronous NCCL: every rank is blocked in slot 100, as the flat checker prints it)
[ $async = 1 ] || expect "$(nlines '^ncclguard:   collective calls issued per rank: 101 on 0-15 \(rank [0-9]+: its own count now')" 16 "counts line"
grep -q '"verdict":"MISMATCH"' "$REPORTS"/*.json || fail "mismatch report"

# P2P MISMATCH: rank 2 sends 33 elements to rank 3, which receives 32 (both beneath the root's
# node here; across two node relays in the fan-out 2 part below)
guarded "$NCG_TMP/p2p" "$LAUNCH" -n 16 -t 60 "$SCEN" p2p
expect "$(exited 86)" 16 "p2p: ranks that exited 86"
P2P_HEAD='^ncclguard: VERDICT: P2P MISMATCH on comm [0-9a-f]+ \(16 ranks\): Send\(count=33, float32, peer=3\) on rank 2 vs Recv\(count=32, float32, peer=2\) on rank 3$'
expect "$(nlines "$P2P_HEAD")" 16 "p2p headline"

# a plain rank (13) and a node relay (12, node 3's) killed: every survivor names the rank
for v in 13 12; do
  SCEN_VICTIM=$v guarded "$NCG_TMP/kill$v" "$LAUNCH" -n 16 -t 60 "$SCEN" kill
  expect "$(exited 86)" 15 "survivors of a SIGKILLed rank $v"
  expect "$(nlines "^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \(16 ranks\): rank $v died: ")" 15 "RANK DIED of rank $v"
  # a plain rank's last count from its node relay (a dead relay's ranks may be between relays)
  if [ $v = 13 ]; then
    expect "$(grep -cE "$COUNTS" "$OUT")" 15 "RANK DIED of rank 13: every rank's count"
  fi
done
expect "$(nlines '^ncclguard: VERDICT: RANK DIED .*: rank 12 died: the relay of node 3 \(pid [0-9]+ on .*\) was lost: connection lost without goodbye$')" 15 "the dead relay named"
# the root's process (rank 0) killed: no verdict can come from it; each rank says who died
SCEN_VICTIM=0 guarded "$NCG_TMP/kill0" "$LAUNCH" -n 16 -t 60 "$SCEN" kill
expect "$(exited 86)" 15 "survivors of the root"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \(16 ranks\): rank holding the checker \(global rank 0\) died: ')" 15 "the root's death"
# (the synchronous pass only: the same in both modes)
if [ $async = 0 ]; then
  # a frozen node relay (rank 4, SIGSTOP): its parent and its node's processes find it silent
  SCEN_VICTIM=4 NCCLGUARD_HEARTBEAT_TIMEOUT_S=2 guarded "$NCG_TMP/stop" "$LAUNCH" -n 16 -t $((5 * SLOW)) "$SCEN" stop
  expect "$RC" 124 "a stopped rank never ends"
  expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \(16 ranks\): rank 4 died: .*silent for')" 15 "frozen relay"
fi

# RANK EXITED: a plain rank (9), a node relay (8), the root (0) returning early (a relay's
# process stays a moment for its parent to hear of its goodbye: the verdict may reach it too)
for v in 9 8 0; do
  SCEN_VICTIM=$v guarded "$NCG_TMP/early$v" "$LAUNCH" -n 16 -t 60 "$SCEN" early
  expect "$RC" 86 "early $v: launcher status"
  # (the root's own: judged at the root, or by each rank from the counts it left with; it may
  # have been ended by that very verdict meanwhile)
  who="$v exited"; [ $v = 0 ] && who="(0|holding the checker \\(global rank 0\\)) (exited|was ended by ncclguard's abort)"
  n=$(nlines "^ncclguard: VERDICT: RANK EXITED on comm [0-9a-f]+ \(16 ranks\): rank $who while ranks? [0-9,.-]+ issued calls it will never match\$")
  [ "$n" -ge 15 ] || fail "RANK EXITED of rank $v: on $n ranks, want 15 or 16"
  expect "$(nlines 'RANK DIED|died')" 0 "early $v: nobody called dead"
done

# (the synchronous pass only: the same in both modes)
if [ $async = 0 ]; then
  # LAG: a warning (the job completes), then an error
  NCCLGUARD_LAG_WARN_S=1 SCEN_LAG_S=3 guarded "$NCG_TMP/lag" "$LAUNCH" -n 16 -t 60 "$SCEN" lag
  expect "$RC" 0 "lag warning: the job completes"
  expect "$(nlines '^ncclguard: WARNING: LAG on comm [0-9a-f]+ \(16 ranks\): rank 1 behind, nobody progressed')" 16 "lag warning"
  expect "$(grep -cE "$COUNTS" "$OUT")" 16 "lag warning: every rank's count"
  NCCLGUARD_LAG_WARN_S=1 NCCLGUARD_LAG_ABORT_S=2 SCEN_LAG_S=6 guarded "$NCG_TMP/lag2" "$LAUNCH" -n 16 -t 60 "$SCEN" lag
  expect "$(exited 86)" 16 "lag abort"
  expect "$(nlines '^ncclguard: VERDICT: LAG on comm')" 16 "lag verdict"
fi

# STUCK: rank 1 never finishes slot 30 of the world comm (FAKENCCL_STALL), which every rank
# issued identically: a warning on every rank naming the slot and the call (each rank's own
# ring: the root's aggregates carry no call), then an error with the abort threshold. As in
# t_stuck.sh: asynchronous mode spaces the calls 5 ms apart (one event each: the slot exact),
# and a sampled range within 3 slots of it is allowed.
[ $async = 1 ] && export SCEN_GAP_US=5000
FAKENCCL_STALL=1:30 NCCLGUARD_STUCK_WARN_S=2 guarded "$NCG_TMP/stuck" "$LAUNCH" -n 16 -t 6 "$SCEN" steady 30
expect "$RC" 124 "stuck: a stalled job stays blocked after a warning"
expect "$(stuck_slots WARNING 30 16)" 16 "stuck: a warning on every rank naming slot 30"
if [ $async = 0 ]; then
  expect "$(nlines '^ncclguard: WARNING: STUCK .*: slot 30 .*, completed on none for [0-9.]+ s$')" 16 "stuck: completed on none"
  expect "$(nlines '^ncclguard:   last slot completed on every rank: 29$')" 16 "stuck: last completed slot"
else
  expect "$(nlines '^ncclguard:   last slot completed on every rank: (at least )?(2[6-9])$')" 16 "stuck: last completed slot"
fi
expect "$(nlines '^ncclguard:   each member.s thread, call site and other communicators are not gathered through the relay tree')" 16 "stuck: member lines not gathered, said"
expect "$(nlines '^ncclguard: VERDICT:')" 0 "stuck: no error verdict"
FAKENCCL_STALL=2:12 NCCLGUARD_STUCK_WARN_S=1 NCCLGUARD_STUCK_ABORT_S=2 guarded "$NCG_TMP/stuckabort" "$LAUNCH" -n 16 -t 30 "$SCEN" steady 30
expect "$RC" 86 "stuck abort: launcher status"
expect "$(exited 86)" 16 "stuck abort: ranks that exited 86"
expect "$(stuck_slots VERDICT 12 16)" 16 "stuck abort: an error naming slot 12"
unset SCEN_GAP_US

# DEADLOCK: rank 13 (node 3) takes the world comm and its split child (or a second root comm)
# in the other order, or rank 0 sends to it on world while it is in the child: the WAITs of
# the ranks on two nodes meet at the root (synchronous NCCL: blocked threads; asynchronous:
# the order on the streams, any two ranks of the cycle)
for how in split root p2p; do
  SCEN_VICTIM=13 SCEN_INVERT=$how guarded "$NCG_TMP/dl$how" "$LAUNCH" -n 16 -t 60 "$SCEN" invert 40
  end=$(date +%s.%N)
  expect "$RC" 86 "deadlock $how: launcher status"
  expect "$(exited 86)" 16 "deadlock $how: ranks that exited 86"
  expect "$(nlines '^ncclguard: VERDICT: DEADLOCK on comm [0-9a-f]+ \(16 ranks\): global ranks (13[,-][0-9]+|[0-9]+[,-]13) wait on each other across comms [0-9a-f]+, [0-9a-f]+$')" 16 "deadlock $how: headline"
  expect "$(nlines '^ncclguard:   cycle of 2 \(each waits for the next')" 16 "deadlock $how: the cycle"
  stream=''; [ $async = 1 ] && stream=', stream [0-9]+'
  [ "$(nlines "^ncclguard:   global rank 13 \(rank 13 of comm [0-9a-f]+, pid [0-9]+ on .*, thread [0-9]+$stream\): in slot 20 AllReduce\(count=8, float32, sum\) from .*scen")" = 16 ] ||
    fail "deadlock $how: rank 13's call and call site in the cycle"
  t0=$(grep -oE '^scen: diverge at [0-9.]+' "$OUT" | head -1 | awk '{print $4}')
  awk -v a="$t0" -v b="$end" -v n="$how" -v s="$SLOW" 'BEGIN { d = b - a; printf "deadlock %s: ended in %.2f s\n", n, d; exit !(d < 3.0 * s) }' ||
    fail "deadlock $how: more than 3 s from the inversion to every rank exited"
done
[ $async = 1 ] || grep -q 'in Send(count=8, float32, peer=13) #0 of the pair' "$NCG_TMP/dlp2p" || { OUT=$NCG_TMP/dlp2p; fail "deadlock p2p: the blocked send named"; }

# the actions through the tree
NCCLGUARD_ACTION=warn guarded "$NCG_TMP/warn" "$LAUNCH" -n 16 -t $((4 * SLOW)) "$SCEN" count
expect "$RC" 124 "warn: the diverged job stays blocked"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH on comm [0-9a-f]+ \(16 ranks\)')" 16 "warn: the mismatch on every rank"
# (the launcher's timeout kills rank 0 first: a rank may also say so before its own kill)
[ "$(nlines 'action: warn')" -ge 16 ] || fail "warn: action lines: $(nlines 'action: warn'), want 16 or more"
NCCLGUARD_ACTION=fail guarded "$NCG_TMP/fail" "$LAUNCH" -n 16 -t 60 "$SCEN" count
expect "$RC" 3 "fail: the app's own error path"
expect "$(nlines "^scen: rank [0-9]+: $(failing_call ncclAllReduce).*: remote process exited or there was a network error \(ncclguard: MISMATCH on comm [0-9a-f]{16} \(16 ranks\): slot [0-9]+: AllReduce\(count=9, float32, sum\) on rank 1 vs ")" 16 "fail: the error names the verdict"

# (the synchronous pass only: the tree's shape and wiring are the same in both modes)
if [ $async = 0 ]; then
  # fan-out 2 over 8 nodes of 2: nodes 3-7 sit two and three levels down (their parents are
  # relays, found through the root); a mismatch, and the death of node 1's relay (rank 2: parent
  # of nodes 2-4)
  export NCG_LAUNCH_PER_NODE=2 NCCLGUARD_TREE_FANOUT=2
  guarded "$NCG_TMP/deep" "$LAUNCH" -n 16 -t 60 "$SCEN" count
  expect "$(exited 86)" 16 "deep tree: mismatch"
  expect "$(nlines '^ncclguard: VERDICT: MISMATCH .*on rank 1 vs AllReduce\(count=8, float32, sum\) on ranks 0,2-15$')" 16 "deep tree: headline"
  SCEN_VICTIM=2 guarded "$NCG_TMP/deepkill" "$LAUNCH" -n 16 -t 60 "$SCEN" kill
  expect "$(exited 86)" 15 "deep tree: survivors of a mid-level relay"
  expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \(16 ranks\): rank 2 died: ')" 15 "deep tree: RANK DIED of the mid-level relay"
  # nodes of 3: ranks 2 and 3 on nodes 0 and 1, their records matched at the root
  NCG_LAUNCH_PER_NODE=3 guarded "$NCG_TMP/deepp2p" "$LAUNCH" -n 16 -t 60 "$SCEN" p2p
  expect "$(nlines "$P2P_HEAD")" 16 "p2p across node relays"
  export NCG_LAUNCH_PER_NODE=4
  unset NCCLGUARD_TREE_FANOUT

  # rank 6 does not know its node (no LOCAL_WORLD_SIZE): it reports to the root directly
  printf '#!/bin/sh\n[ "$RANK" = 6 ] && unset LOCAL_WORLD_SIZE\nexec "$@"\n' >"$NCG_TMP/nolocal.sh"
  chmod +x "$NCG_TMP/nolocal.sh"
  guarded "$NCG_TMP/nolocal" "$LAUNCH" -n 16 -t 60 "$NCG_TMP/nolocal.sh" "$SCEN" count
  expect "$(exited 86)" 16 "a rank of unknown node: mismatch"
  expect "$(nlines '^ncclguard: this process.s node is unknown .*: it reports to the tree.s root at [0-9.]+:[0-9]+ directly$')" 1 "said once, by that rank"
fi

# healthy: no verdict, nothing printed but the banner (no STUCK at a 2 s threshold while rank 0
# pauses 5 s before a barrier: a LAG, not STUCK)
NCCLGUARD_STUCK_WARN_S=2 SCEN_PAUSE_S=5 guarded "$NCG_TMP/healthy" "$LAUNCH" -n 16 -t 120 "$SCEN" healthy 300
expect "$RC" 0 "healthy job"
no_verdict
[ -z "$(ours)" ] || fail "ncclguard printed something on a healthy run: $(ours | head -n 3)"
echo ok
