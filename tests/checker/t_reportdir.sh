# NCCLGUARD_REPORT_DIR that cannot take the report as given (issue 13, item 7): a missing nested
# directory is created (mkdir -p); a relative one is taken from the working directory at start
# and the path printed is absolute; a file or a read-only directory gives one warning at start
# naming the fallback, and the diagnostic says why and where the report went instead
# ($TMPDIR/ncclguard-<uid>).
. "$NCG_ROOT/tests/checker/lib.sh"
# every rank's full block is checked (the default prints it on two ranks)
export NCCLGUARD_DIAG=full
export TMPDIR=$NCG_TMP/tmp
mkdir -p "$TMPDIR"
FB=$TMPDIR/ncclguard-$(id -u)
# run4 OUT DIR: the 4-rank count mismatch with NCCLGUARD_REPORT_DIR=DIR (guarded() sets its own).
run4() {
  OUT=$1
  env LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_REPORT_DIR="$2" timeout -k 5 120 "$LAUNCH" -n 4 -t 60 "$SCEN" count >"$OUT" 2>&1
  RC=$?
}

# 1. missing, nested: created, nothing said
run4 "$NCG_TMP/out1" "$NCG_TMP/a/b/c"
expect "$RC" 86 "nested: launcher status"
expect "$(ls "$NCG_TMP/a/b/c" | grep -c '^ncclguard-report\..*\.json$')" 4 "nested: reports written"
expect "$(nlines 'no report written|NCCLGUARD_REPORT_DIR')" 0 "nested: no complaint"
expect "$(nlines "report: $NCG_TMP/a/b/c/ncclguard-report\.")" 4 "nested: path printed"

# 2. relative and missing: resolved against the working directory, printed absolute
mkdir -p "$NCG_TMP/work"
(cd "$NCG_TMP/work" && run4 "$NCG_TMP/out2" rel/dir && echo "$RC" >"$NCG_TMP/rc2")
OUT=$NCG_TMP/out2
expect "$(cat "$NCG_TMP/rc2")" 86 "relative: launcher status"
expect "$(ls "$NCG_TMP/work/rel/dir" | grep -c '\.json$')" 4 "relative: reports written"
expect "$(nlines "report: $NCG_TMP/work/rel/dir/ncclguard-report\.")" 4 "relative: absolute path printed"

# 3. a file: one warning per rank at start, the reason and the fallback in the diagnostic
: >"$NCG_TMP/afile"
run4 "$NCG_TMP/out3" "$NCG_TMP/afile"
expect "$RC" 86 "file: launcher status"
expect "$(nlines "^ncclguard: NCCLGUARD_REPORT_DIR=\"$NCG_TMP/afile\": $NCG_TMP/afile is not a directory; reports will go to $FB\$")" 4 "file: warning at start"
expect "$(nlines "^ncclguard:   action: abort \(exit status 86\); report: $FB/ncclguard-report\..*\.json\$")" 4 "file: fallback path printed"
expect "$(nlines "^ncclguard:   report: $NCG_TMP/afile is not a directory; written to $FB instead\$")" 4 "file: why"
expect "$(ls "$FB" | grep -c '\.json$')" 4 "file: reports in the fallback"
expect "$(stat -c %a "$FB")" 700 "fallback is private"
rm -f "$FB"/*.json

# 4. read-only (a read-only tmpfs in a private mount namespace: root ignores mode bits)
if unshare -m true 2>/dev/null; then
  mkdir -p "$NCG_TMP/ro"
  unshare -m sh -c "mount -t tmpfs -o ro none '$NCG_TMP/ro' && exec env LD_PRELOAD='$NCG_PRELOAD' NCCLGUARD_REPORT_DIR='$NCG_TMP/ro/sub' timeout -k 5 120 '$LAUNCH' -n 4 -t 60 '$SCEN' count" >"$NCG_TMP/out4" 2>&1
  RC=$?
  OUT=$NCG_TMP/out4
  expect "$RC" 86 "read-only: launcher status"
  expect "$(nlines "^ncclguard: NCCLGUARD_REPORT_DIR=\"$NCG_TMP/ro/sub\": cannot create $NCG_TMP/ro/sub: Read-only file system; reports will go to $FB\$")" 4 "read-only: warning at start"
  expect "$(nlines "^ncclguard:   report: cannot create $NCG_TMP/ro/sub: Read-only file system; written to $FB instead\$")" 4 "read-only: why"
  expect "$(ls "$FB" | grep -c '\.json$')" 4 "read-only: reports in the fallback"
else
  echo "no mount namespace here: read-only case not run"
fi

# 5. neither the directory nor the fallback: the diagnostic says both, "no report written"
rm -rf "$FB"; : >"$FB"
run4 "$NCG_TMP/out5" "$NCG_TMP/afile"
expect "$RC" 86 "nowhere: launcher status"
expect "$(nlines "; no report written\$")" 4 "nowhere: no report"
expect "$(nlines "^ncclguard:   report: $NCG_TMP/afile is not a directory, nor $FB is not a directory of this user\$")" 4 "nowhere: both reasons"
echo "report dir ok"
