# The checker's host leaves first: in zero-config the process that made the id
# (rank 0) hosts the checker; when its application returns while the others still run or still
# connect, it stays (its exit waits) until they leave, and its checker keeps judging meanwhile.
# It used to leave at once: a rank that connected after it printed "cannot reach the checker
# ...; running unguarded" and then hung unjudged, and a comm without rank 0 ran unchecked.
#   hostskip 1: rank 0 returns right after init (before the others' links were up, in about a
#     third of the runs before the change), the others wait in their first AllReduce: RANK
#     EXITED of rank 0 on every other rank (exit 86) within 5 s, nobody unguarded. Three runs;
#     then ITERS 20.
#   hostfirst: healthy, rank 0 returns after its last collective, the others make 20 more
#     AllReduces on a split child without it 1.5 s later: exit 0 everywhere, no verdict, the
#     host's one line saying it stays for 3 processes.
#   hostfirst with rank 2 SIGKILLed in the split child's phase: RANK DIED on the others (the
#     host's checker, still there, sees the connection lost). Before: a silent hang.
#   late: every rank exits but rank 3, which makes one more AllReduce a second later: RANK
#     EXITED on it from the host's checker within 2 s (t_late_exit.sh: the host leaving anyway).
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
STAYS='^ncclguard: this process hosts the checker of 3 other guarded processes still running; it stays until they leave$'
# took NAME BOUND: seconds from the diverging rank's mark to the end of the job, at most BOUND
took() {
  local t0; t0=$(grep -oE '^scen: diverge at [0-9.]+' "$OUT" | head -1 | awk '{print $4}')
  [ -n "$t0" ] || fail "$1: no diverge mark"
  awk -v a="$t0" -v b="$END" -v n="$1" -v s="$SLOW" -v m="$2" 'BEGIN { d = b - a; printf "%s: ended %.2f s after the divergence\n", n, d; exit !(d < m * s) }' ||
    fail "$1: more than $2 s from the divergence to the end"
}
skip() { # NAME ITERS
  guarded "$NCG_TMP/$1" "$LAUNCH" -n 4 -t 30 "$SCEN" hostskip "$2"
  END=$(date +%s.%N)
  expect "$(nlines '^ncg-launch: rank [1-3] exited with status 86$')" 3 "$1: ranks 1-3 exit 86"
  expect "$(nlines 'running unguarded')" 0 "$1: nobody unguarded"
  [ "$(nlines "^ncclguard: VERDICT: RANK EXITED on comm [0-9a-f]+ \\(4 ranks\\): (rank 0|rank holding the checker \\(global rank 0\\)) exited while ranks? [0-9,-]+ issued calls it will never match\$")" -ge 3 ] || fail "$1: fewer than 3 RANK EXITED headlines"
  for r in 1 2 3; do
    grep -qE "^ncclguard:   this process \\(comm rank $r, global rank $r, " "$OUT" || fail "$1: rank $r printed no verdict"
  done
  took "$1" 5
}
for k in 1 2 3; do skip "skip_init$k" 1; done
skip skip_half 20

guarded "$NCG_TMP/first" "$LAUNCH" -n 4 -t 30 "$SCEN" hostfirst 20
expect "$RC" 0 "hostfirst: launcher status"
expect "$(nlines '^scen: rank [0-3] done$')" 4 "hostfirst: every rank done"
no_verdict
expect "$(nlines 'running unguarded')" 0 "hostfirst: nobody unguarded"
expect "$(nlines "$STAYS")" 1 "hostfirst: the host's one line"
expect "$(nlines '^ncclguard:')" 1 "hostfirst: nothing else"

SCEN_VICTIM=2 guarded "$NCG_TMP/firstkill" "$LAUNCH" -n 4 -t 30 "$SCEN" hostfirst 20
END=$(date +%s.%N)
expect "$(nlines '^ncg-launch: rank [13] exited with status 86$')" 2 "hostfirst kill: ranks 1, 3 exit 86"
expect "$(nlines '^ncg-launch: rank 0 exited')" 0 "hostfirst kill: the host, finished, exits 0"
expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \([34] ranks\): rank [12] died: pid [0-9]+ on .*connection lost without goodbye')" 3 "hostfirst kill: RANK DIED on the others and the host"
expect "$(nlines 'running unguarded')" 0 "hostfirst kill: nobody unguarded"
took "hostfirst kill" 5
# scen late at the defaults (t_late_exit.sh bounds the stay instead): every rank destroys its
# comm and exits, rank 3 a second later after one more AllReduce; the host stays for it, and its
# checker names the ranks that left (before: rank 3 judged from the host's SHUTDOWN).
SCEN_VICTIM=3 guarded "$NCG_TMP/late" "$LAUNCH" -n 4 -t 30 "$SCEN" late 20
END=$(date +%s.%N)
expect "$(nlines '^ncg-launch: rank 3 exited with status 86$')" 1 "late: the late rank exits 86"
expect "$(nlines '^ncg-launch: rank [0-2] exited')" 0 "late: ranks 0-2 exit 0 (the host, finished, keeps its status)"
grep -qE '^ncclguard:   action: none here \(this process had already finished: its exit status is kept\)' "$OUT" ||
  fail "late: the host does not say it keeps its status"
[ "$(nlines '^ncclguard: VERDICT: RANK EXITED on comm [0-9a-f]+ \(4 ranks\): (ranks 0-2 exited while rank 3 issued calls they|rank holding the checker \(global rank 0\) exited while rank 3 issued calls it|rank holding the checker \(global rank 0\) and the ranks that left before it exited while rank 3 issued calls they) will never match$')" -ge 1 ] ||
  fail "late: no RANK EXITED headline"
grep -qE "^ncclguard:   this process \(comm rank 3, global rank 3, " "$OUT" || fail "late: rank 3 printed no verdict"
took late 2
echo "host leaves ok"
