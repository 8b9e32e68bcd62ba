# Quiet at scale (issue 36, item 3): a warning printed a multi-line block on every rank (a SLOW
# episode of a 16,384-rank job: tens of thousands of lines). Now, by default, the full block
# only on the rank(s) it names and in the checker's process, the headline alone on the others;
# NCCLGUARD_DIAG=quiet: nothing on the others; a bad value: one line and the default.
# 8 ranks, rank 1 stops calling for 3 s while the others wait: a LAG warning naming rank 1.
# ncg-modes: sync async
. "$NCG_ROOT/tests/checker/lib.sh"
# units: each diagnostic (one write(2) per rank: contiguous), as "LINES RANK" (RANK -: none named)
units() {
  awk 'function out() { if (n) print n, r; n = 0 }
       /^ncclguard: (WARNING|VERDICT):/ { out(); n = 1; r = "-"; next }
       n && /^ncclguard:   / { n++ }
       n && /this process \(comm rank / { r = $0; sub(/.*this process \(comm rank /, "", r); sub(/,.*/, "", r) }
       !/^ncclguard:   / { out() }
       END { out() }' "$OUT"
}
lag() { # NAME [ENV...]
  local name=$1; shift
  guarded "$NCG_TMP/$name" env NCCLGUARD_LAG_WARN_S=1 SCEN_LAG_S=3 "$@" "$LAUNCH" -n 8 -t 60 "$SCEN" lag
  expect "$RC" 0 "$name: a warning: the job completes"
}
lag auto NCCLGUARD_DIAG=loud
expect "$(nlines '^ncclguard: NCCLGUARD_DIAG="loud": expected auto, full, short or quiet; using auto$')" 8 "a bad value: one line per process"
expect "$(nlines '^ncclguard: WARNING: LAG on comm [0-9a-f]+ \(8 ranks\): rank 1 behind, nobody progressed')" 8 "auto: the headline on every rank"
units >"$NCG_TMP/u"
expect "$(awk '$2 == "-" && $1 == 1' "$NCG_TMP/u" | wc -l)" 6 "auto: one line on the 6 ranks neither named nor hosting the checker"
expect "$(awk '$2 != "-" && $1 >= 5 { print $2 }' "$NCG_TMP/u" | sort -n | tr '\n' ' ')" "0 1 " "auto: the full block on the named rank 1 and the checker's process (rank 0)"
expect "$(awk '$2 == "-" && $1 > 1' "$NCG_TMP/u" | wc -l)" 0 "auto: at most one line elsewhere"
lag quiet NCCLGUARD_DIAG=quiet
expect "$(nlines '^ncclguard: WARNING: LAG on comm')" 2 "quiet: the headline on the named rank and the checker's process only"
units >"$NCG_TMP/u"
expect "$(awk '$1 >= 5 { print $2 }' "$NCG_TMP/u" | sort -n | tr '\n' ' ')" "0 1 " "quiet: their full blocks"
lag short NCCLGUARD_DIAG=short
units >"$NCG_TMP/u"
expect "$(awk '$1 == 3' "$NCG_TMP/u" | wc -l)" 8 "short: three lines on every rank"
echo "quiet ok"
