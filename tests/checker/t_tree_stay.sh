#!/usr/bin/env bash
# The relay tree's root stays at its process's clean exit while the processes it checks run
# (as the flat checker's host does, t_host_leaves.sh): 8 ranks in 2 "nodes" of 4
# (NCCLGUARD_TREE=on), rank 0 (the root) returns after its last collective while the others make
# 20 more AllReduces on a split child 1.5 s later: exit 0 everywhere, no verdict, the root's one
# line; and with rank 2 SIGKILLed in that phase, RANK DIED on the others (the root, still
# there, sees it). Before: the root left at once, its clients lost their checker in silence.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
export NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=4
guarded "$NCG_TMP/first" "$LAUNCH" -n 8 -t 30 "$SCEN" hostfirst 20
expect "$RC" 0 "hostfirst: launcher status"
expect "$(nlines '^scen: rank [0-7] done$')" 8 "hostfirst: every rank done"
no_verdict
expect "$(nlines 'running unguarded|CHECKER LOST|lost')" 0 "hostfirst: nobody unguarded or lost"
expect "$(nlines '^ncclguard: this process hosts the checker of [0-9]+ other guarded process(es)? still running; it stays until they leave$')" 1 "hostfirst: the root's one line"

SCEN_VICTIM=2 guarded "$NCG_TMP/firstkill" "$LAUNCH" -n 8 -t 30 "$SCEN" hostfirst 20
expect "$(nlines '^ncg-launch: rank 0 exited')" 0 "hostfirst kill: the root, finished, exits 0"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \([78] ranks\): rank [12] died: ')" 7 "hostfirst kill: RANK DIED on every other rank and the root"
echo "tree stay ok"
