#!/usr/bin/env bash
# `make install` into a DESTDIR: the programs, the shim, the man pages ncclguard(1),
# ncclguard-run(1), ncclguard(7) (which `man -l` renders without warnings) and the bash
# completion (which completes commands and options).
. "$(dirname "$0")/lib.sh"
need "$NCG" "$NCG_BUILD/libncclguard.so"
D=$NCG_TMP/dest
make -s -C "$NCG_ROOT" BUILD="$NCG_BUILD" SANITIZER="${NCG_SANITIZER:-}" DESTDIR="$D" PREFIX=/opt/ncg install >"$NCG_TMP/install.out" 2>&1 \
  || { cat "$NCG_TMP/install.out"; fail "make install"; }
for f in bin/ncclguard bin/ncclguard-run lib/libncclguard.so share/man/man1/ncclguard.1 \
         share/man/man1/ncclguard-run.1 share/man/man7/ncclguard.7 \
         share/bash-completion/completions/ncclguard share/bash-completion/completions/ncclguard-run \
         share/ncclguard/prometheus/ncclguard-rules.yml; do
  [ -e "$D/opt/ncg/$f" ] || fail "not installed: $f"
done
# the completion: commands, a command's options, ncclguard-run's values
C=$D/opt/ncg/share/bash-completion/completions/ncclguard
out=$(bash -c '. "$1"; COMP_WORDS=(ncclguard st); COMP_CWORD=1; _ncclguard; echo "${COMPREPLY[*]}"' _ "$C")
[ "$out" = "status" ] || fail "completion of 'ncclguard st': '$out'"
out=$(bash -c '. "$1"; COMP_WORDS=(ncclguard status --a); COMP_CWORD=2; _ncclguard; echo "${COMPREPLY[*]}"' _ "$C")
[ "$out" = "--all" ] || fail "completion of 'ncclguard status --a': '$out'"
out=$(bash -c '. "$1"; COMP_WORDS=(ncclguard-run --diag ""); COMP_CWORD=2; _ncclguard_run; echo "${COMPREPLY[*]}"' _ "$C")
[ "$out" = "auto full short" ] || fail "completion of 'ncclguard-run --diag': '$out'"
command -v man >/dev/null || skip "man not installed: the pages are installed, their rendering not checked"
for p in man1/ncclguard.1 man1/ncclguard-run.1 man7/ncclguard.7; do
  LC_ALL=C MANWIDTH=100 man --warnings -l "$D/opt/ncg/share/man/$p" >"$NCG_TMP/page" 2>"$NCG_TMP/warn" \
    || { cat "$NCG_TMP/warn"; fail "man -l $p"; }
  [ ! -s "$NCG_TMP/warn" ] || { cat "$NCG_TMP/warn"; fail "man -l $p: warnings"; }
  grep -q "^NAME" "$NCG_TMP/page" || fail "man -l $p: no NAME section"
done
LC_ALL=C MANWIDTH=100 man -l "$D/opt/ncg/share/man/man7/ncclguard.7" | grep -q "NCCLGUARD_DIAG" || fail "ncclguard(7) lacks NCCLGUARD_DIAG"
echo ok
