#!/usr/bin/env bash
# The agent's files call one another in one direction only (docs/checker.md, architecture): from
# the agent archive's objects, which file defines and which uses each ncg_ symbol (functions and
# data); a cycle in that graph of files (a.c uses b.c's symbol, b.c, directly or not, a.c's)
# fails, naming the files in it and the symbols that make its arrows. The check is first run on
# a sample built to break it, which must fail.
set -u
cd "$NCG_ROOT"
A=$NCG_BUILD/lib/libncg_agent.a
[ -f "$A" ] || { echo "no $A (run make first)"; exit 77; }
# arrows ARCHIVE: "user definer symbol", one per use of another member's ncg_ symbol
arrows() {
  nm -A "$1" 2>/dev/null | awk '
    { n = split($1, p, ":"); f = p[n - 1]; sub(/\.o$/, "", f) }
    NF == 3 && $2 ~ /^[TDBRCGSV]$/ && $3 ~ /^ncg_/ { def[$3] = f; next }
    $(NF - 1) == "U" && $NF ~ /^ncg_/ { use[++nu] = f " " $NF }
    END { for (i = 1; i <= nu; i++) { split(use[i], u, " ");
            if ((u[2] in def) && def[u[2]] != u[1]) print u[1], def[u[2]], u[2] } }' | sort -u
}
# cycle ARCHIVE: the arrows that lie on a cycle (empty: none): tsort names one loop's files at a
# time; those files' arrows among themselves are printed
cycle() {
  local edges loop
  edges=$(arrows "$1")
  [ -n "$edges" ] || return 0
  loop=$(echo "$edges" | awk '{print $1, $2}' | tsort 2>&1 >/dev/null | sed -n 's/^tsort: //p' |
    grep -v 'loop' | sort -u)
  [ -n "$loop" ] || return 0
  echo "$edges" | awk -v l="$(echo $loop)" 'BEGIN { n = split(l, a, " "); for (i = 1; i <= n; i++) in_[a[i]] = 1 }
    ($1 in in_) && ($2 in in_) { print "  " $1 ".c -> " $2 ".c (" $3 ")" }'
}
# The sample: a.c calls b.c, b.c calls c.c, c.c calls a.c (and d.c, outside the loop).
mkdir -p "$NCG_TMP/bad"
cd "$NCG_TMP/bad"
printf 'void ncg_b(void);\nvoid ncg_a(void) { ncg_b(); }\n' >a.c
printf 'void ncg_c(void);\nvoid ncg_b(void) { ncg_c(); }\n' >b.c
printf 'void ncg_a(void);\nvoid ncg_d(void);\nvoid ncg_c(void) { ncg_a(); ncg_d(); }\n' >c.c
printf 'int ncg_e;\nvoid ncg_d(void) { ncg_e = 1; }\n' >d.c
for f in a b c d; do ${CC:-cc} -c -o $f.o $f.c || exit 1; done
ar rcs libbad.a a.o b.o c.o d.o
got=$(cycle libbad.a | sort)
want=$(printf '  a.c -> b.c (ncg_b)\n  b.c -> c.c (ncg_c)\n  c.c -> a.c (ncg_a)' | sort)
[ "$got" = "$want" ] || { echo "FAIL: the cycle check does not see a.c -> b.c -> c.c -> a.c in a sample; it says:"; echo "$got"; exit 1; }
ar rcs libgood.a b.o c.o d.o # no a.c: b -> c -> d, no cycle
[ -z "$(cycle libgood.a)" ] || { echo "FAIL: the cycle check sees a cycle in a sample without one"; exit 1; }
cd "$NCG_ROOT"
n=$(arrows "$A" | awk '{print $1, $2}' | sort -u | wc -l)
[ "$n" -gt 10 ] || { echo "FAIL: only $n arrows between the agent's files: the archive was not read"; exit 1; }
bad=$(cycle "$A")
if [ -n "$bad" ]; then
  echo "FAIL: the agent's files call one another in a circle (each must call only files below it):"
  echo "$bad"
  exit 1
fi
echo "ok: $n arrows between the agent's files ($(arrows "$A" | wc -l) symbols), no cycle; a sample's cycle is seen"
