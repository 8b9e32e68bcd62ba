# Blame where it belongs (issue 36, item 1): 4 ranks make 100 AllReduces, then every rank but
# one destroys the communicator and exits (the checker's process, global rank 0, among them when
# it is not the odd one); the odd one issues a 101st AllReduce that nobody will match. The
# verdict names the ranks that left and the one that made the extra call, with plural agreement,
# and the figures: the last slot all ranks agreed on is 99 (100 matched calls; it said "none
# verified yet", or 98), the counts 100 on the ranks that left and 101 on the odd one.
# Flat checker and relay tree (2 nodes of 2 ranks): the checker's process (the tree's root)
# stays while the odd rank runs (docs/checker.md), and judges. Bounding its stay to a
# millisecond, the odd rank judges alone from its SHUTDOWN, which names the counts it and the
# members before it left with, not yet which ranks they were (judge/local.c takes them when it
# does: local_test).
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
# blame NAME ODD [ENV...]: the job, the odd rank's verdict (exit 86) and the others' exit 0
blame() {
  local name=$1 odd=$2; shift 2
  guarded "$NCG_TMP/$name" env "$@" SCEN_VICTIM="$odd" SCEN_LATE_S=0.3 "$LAUNCH" -n 4 -t 30 "$SCEN" late 100
  expect "$RC" 86 "$name: launcher status"
  expect "$(exited 86)" 1 "$name: the odd rank exits 86"
  expect "$(nlines "^ncg-launch: rank $odd exited with status 86\$")" 1 "$name: it is rank $odd"
  expect "$(nlines '^scen: rank [0-9]+ done$')" 3 "$name: the others end normally"
  # the odd rank's own block (the one with its stack)
  ODD=$(awk -v r="$odd" '/^ncclguard: VERDICT:/ { blk = "" } { blk = blk $0 "\n" }
    $0 ~ "this process \\(comm rank " r ", global rank " r ", " { keep = 1 }
    /^ncclguard:   action:/ { if (keep) { printf "%s", blk; exit } }' "$OUT")
  [ -n "$ODD" ] || fail "$name: no block printed by rank $odd"
}
# has NAME REGEX: the odd rank's block holds a line matching REGEX
has() { grep -qE -- "$2" <<<"$ODD" || fail "$1: no line /$2/ in rank's block:
$ODD"; }
ABOUT='^ncclguard: VERDICT: RANK EXITED on comm [0-9a-f]+ \(4 ranks\): '

blame flat_odd1 1
has flat_odd1 "${ABOUT}ranks 0,2-3 exited while rank 1 issued calls they will never match\$"
has flat_odd1 '^ncclguard:   last slot all ranks agreed on: 99$'
has flat_odd1 '^ncclguard:   collective calls issued per rank: 100 on 0,2-3; 101 on 1 '
has flat_odd1 '^ncclguard:   left after 100 calls; others issued up to 101$'
# the checker's host, staying, prints the verdict too (its application finished: status kept)
expect "$(nlines "${ABOUT}ranks 0,2-3 exited while rank 1 issued calls they will never match\$")" 2 "flat_odd1: headlines (odd rank, host)"
# the report names who left (its "about ranks")
R=$(grep -l '"global_rank":1,' "$REPORTS"/ncclguard-report.*.json | head -1)
grep -q '"subject_ranks":"0,2-3"' "$R" || fail "flat_odd1: the report's subject: $(cat "$R")"
grep -q '"last_agreed_slot":99,' "$R" || fail "flat_odd1: the report's last agreed slot: $(cat "$R")"
rm -f "$REPORTS"/*.json

blame flat_odd0 0
has flat_odd0 "${ABOUT}ranks 1-3 exited while rank 0 issued calls they will never match\$"
has flat_odd0 '^ncclguard:   last slot all ranks agreed on: 99$'
has flat_odd0 '^ncclguard:   collective calls issued per rank: 101 on 0; 100 on 1-3 '

blame tree_odd0 0 NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=2
has tree_odd0 "${ABOUT}ranks 1-3 exited while rank 0 issued calls they will never match\$"
has tree_odd0 '^ncclguard:   last slot all ranks agreed on: 99$'
has tree_odd0 '^ncclguard:   collective calls issued per rank: 101 on 0; 100 on 1-3 '

blame tree_odd1 1 NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=2
has tree_odd1 "${ABOUT}ranks 0,2-3 exited while rank 1 issued calls they will never match\$"
has tree_odd1 '^ncclguard:   last slot all ranks agreed on: 99$'
has tree_odd1 '^ncclguard:   collective calls issued per rank: 100 on 0,2-3; 101 on 1 '

# rank 3 leaves 0.12 s after rank 2, whose process holds node 1's relay: its goodbye reaches the
# relay after the relay's last periodic RSTAT, as the relay leaves (an interval and a half after
# its own process's goodbye). Rank 3, exiting, does not reattach: the relay's RSTAT on leaving
# tells the root (it named "ranks 0,2" before: issue 35, item 5)
blame tree_leave 1 NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=2 SCEN_LATE_LEAVE=3:120
has tree_leave "${ABOUT}ranks 0,2-3 exited while rank 1 issued calls they will never match\$"
has tree_leave '^ncclguard:   collective calls issued per rank: 100 on 0,2-3; 101 on 1 '

blame left_odd1 1 NCCLGUARD_HOST_STAY_S=0.001
# the host's SHUTDOWN names its comm rank and the members that left before it, with their
# counts: the odd rank names them by rank (rank 0 alone when 2-3 had not left yet; ranks 2 and
# 3 are processes of their own: one of them may leave after the host's 1 ms stay, its goodbye
# then unread: "ranks 0,2")
has left_odd1 "${ABOUT}(ranks 0,(2-3|2|3) exited while rank 1 issued calls they|rank 0 exited while rank 1 issued calls it) will never match\$"
! grep -qE '\? on ' <<<"$ODD" || fail "left_odd1: unknown counts in the odd rank's block: $ODD"
has left_odd1 '^ncclguard:   last slot all ranks agreed on: 99$'
has left_odd1 '^ncclguard:   left after 100 calls; (this rank issued|others issued up to) 101$'
echo "blame ok"
