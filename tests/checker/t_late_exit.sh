# RANK EXITED after ncclCommDestroy (issue 22, item 2): the ranks finish, destroy their comms and
# exit cleanly, the checker's host (rank 0) among them; the last rank makes one more AllReduce
# a second later, which nobody will match. It used to hang silently ("the checker ... shut
# down"): the host's SHUTDOWN carried only the comms it still held. Now it carries its destroyed
# comms too, and the lowest count each comm's members left at as its coordinator knew them, so
# the late rank names the exit and ends (86) within a second of its call: flat checker
# (4 ranks; the split child of the odd ranks, which the host is not in, the host leaving last)
# and the relay tree (16 ranks in 4 nodes, both forms).
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
# late NAME RANKS VICTIM HEADLINE [ENV...]: scen late, the victim's verdict and exit
late() {
  local name=$1 n=$2 v=$3 head=$4; shift 4
  guarded "$NCG_TMP/$name" env "$@" SCEN_VICTIM=$v "$LAUNCH" -n "$n" -t 30 "$SCEN" late 20
  local end; end=$(date +%s.%N)
  expect "$RC" 86 "$name: launcher status"
  expect "$(exited 86)" 1 "$name: the late rank exits 86"
  expect "$(nlines "^scen: rank [0-9]+ done\$")" $((n - 1)) "$name: the others end normally"
  expect "$(nlines "^ncclguard: VERDICT: RANK EXITED on comm [0-9a-f]+ \\([0-9]+ ranks\\): $head exited while (rank $v|global rank $v \\(comm rank [0-9]+\\)) issued calls (it|they) will never match\$")" 1 "$name: headline"
  expect "$(nlines '^ncclguard:   left after 20 calls; this rank issued 21$')" 1 "$name: detail"
  expect "$(nlines "^ncclguard:   this process \\(comm rank [0-9]+, global rank $v, ")" 1 "$name: printed by the late rank"
  local t0; t0=$(grep -oE '^scen: diverge at [0-9.]+' "$OUT" | head -1 | awk '{print $4}')
  awk -v a="$t0" -v b="$end" -v n="$name" -v s="$SLOW" 'BEGIN { d = b - a; printf "%s: ended %.2f s after the late call\n", n, d; exit !(d < 2.0 * s) }' ||
    fail "$name: more than 2 s from the late call to its end"
}
# (by comm rank: the checker's process (rank 0), with the ranks its SHUTDOWN says left before it;
# on the split child without rank 0, the ranks that left before the checker's process)
# (a departed rank's global rank is not in the SHUTDOWN: named by its comm rank when this one's
# differs)
HOST='ranks? 0[0-9,-]*'
BEFORE='(comm )?ranks? [0-9][0-9,-]*'
# (flat: the checker's host leaving at once, its stay bounded to a millisecond; by default it
# stays while the late rank runs, and its checker judges: t_host_leaves.sh)
late flat 4 3 "$HOST" NCCLGUARD_HOST_STAY_S=0.001
late flat_split 4 3 "$BEFORE" SCEN_LATE_SPLIT=1 NCCLGUARD_HOST_STAY_S=0.001
[ -n "${NCG_SANITIZER:-}" ] && [ $async = 1 ] && { echo "late exit: sanitizers run the tree's sync pass only"; exit 0; }
# (the tree's root stays too: bounded the same way)
late tree 16 13 "$HOST" NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=4 NCCLGUARD_HOST_STAY_S=0.001
late tree_split 16 13 "$BEFORE" NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=4 SCEN_LATE_SPLIT=1 NCCLGUARD_HOST_STAY_S=0.001
echo "late exit ok"
