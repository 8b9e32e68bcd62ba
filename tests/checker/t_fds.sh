# Few file descriptors (issue 13, item 9): from the lowest `ulimit -n` at which the plain 4-rank
# job runs, up to 16 (at it, 8, 12 and 16), the guarded job runs too: below 64 descriptors the shim opens none of its
# own (private recording, no side channel) and says so once per rank. At 64 it is guarded.
. "$NCG_ROOT/tests/checker/lib.sh"
command -v prlimit >/dev/null || { echo "prlimit not installed"; exit 77; }
at() { # N PRELOAD: the healthy job under ulimit -n N -> RC, OUT
  OUT=$NCG_TMP/fd.$1.${2:+g}
  env ${2:+LD_PRELOAD="$2"} NCCLGUARD_REPORT_DIR="$REPORTS" prlimit --nofile="$1:$1" \
    timeout -k 5 60 "$LAUNCH" -n 4 -t 40 "$SCEN" healthy 20 >"$OUT" 2>&1
  RC=$?
}
low=""
for n in 5 6 7 8 9 10 11 12; do at $n ""; [ $RC = 0 ] && { low=$n; break; }; done
[ -n "$low" ] || { echo "the plain job needs more than 12 descriptors here"; exit 77; }
echo "plain job runs from ulimit -n $low"
for n in $(printf "%s\n" "$low" 8 12 16 | sort -nu); do
  at $n "$NCG_PRELOAD"
  expect "$RC" 0 "guarded job at ulimit -n $n"
  expect "$(nlines '^ncclguard: only [0-9]+ file descriptors \(ulimit -n; ncclguard needs 64 to share\): recording privately, running unguarded$')" 4 "one line per rank at $n"
  expect "$(nlines '^ncclguard:')" 4 "nothing else at $n"
done
at 64 "$NCG_PRELOAD"
expect "$RC" 0 "guarded job at ulimit -n 64"
expect "$(nlines '^ncclguard:')" 0 "guarded quietly at 64"
echo "fds ok"
