#!/usr/bin/env bash
# Bad arguments give a usage message on stderr and exit status 2; --help works for every command.
. "$(dirname "$0")/lib.sh"
need "$NCG"
expect_usage() {
  "$NCG" "$@" >"$NCG_TMP/out" 2>"$NCG_TMP/err"
  local rc=$?
  [ $rc -eq 2 ] || { cat "$NCG_TMP/err"; fail "ncclguard $*: exit $rc, want 2"; }
  contains "$NCG_TMP/err" "ncclguard: " "usage: ncclguard"
  [ ! -s "$NCG_TMP/out" ] || fail "ncclguard $*: usage error wrote to stdout"
}
expect_usage
expect_usage frobnicate
expect_usage status --bogus
expect_usage status --dir
expect_usage status --watch=abc
expect_usage watch --stall
expect_usage watch --stall -3
expect_usage watch --interval 0
expect_usage watch --exec ''
expect_usage watch extra
expect_usage clean --grace x
expect_usage coord --listen nope:99999
expect_usage coord --what
expect_usage report
expect_usage report a b
expect_usage report --nope x
for c in "" status watch clean coord report; do
  "$NCG" $c --help >"$NCG_TMP/out" 2>&1 || fail "ncclguard $c --help failed"
  contains "$NCG_TMP/out" "usage: ncclguard"
done
# `ncclguard help COMMAND` is that command's help
for c in status watch clean coord report; do
  "$NCG" help $c >"$NCG_TMP/out" 2>&1 || fail "ncclguard help $c failed"
  contains "$NCG_TMP/out" "usage: ncclguard $c"
done
"$NCG" clean --help | grep -q -- "--quiet" || fail "clean --help lacks --quiet"
"$NCG" version | grep -q "^ncclguard " || fail "version"
echo ok
