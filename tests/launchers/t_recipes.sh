# The recipes of docs/launchers.md (fenced blocks after "<!-- recipe: NAME -->"): each one is
# ncg-modes: sync async
# run as written by a test of tests/launchers (t_mpirun.sh, t_torchrun.sh, t_srun.sh, this
# one), so the page and the tests cannot drift apart; and the one that needs no launcher,
# "ncg-launch" (the project's own launcher, build/tests/ncg-launch): the count mismatch ends it
# with status 86, each rank named with its status, rank 1's full diagnostic and 4 reports.
. "$NCG_ROOT/tests/launchers/lib.sh"
names=$(sed -nE 's/^<!-- recipe: ([a-z0-9-]+) -->$/\1/p' "$DOC")
[ -n "$names" ] || fail "docs/launchers.md marks no recipe"
# run_by_test NAME: a script of tests/launchers runs the recipe NAME
# (a call of a function whose name has "recipe" in it with NAME as its first or second word)
run_by_test() {
  grep -qE "(\b[a-z_]*recipe[a-z_]* ([^ ]+ )?$1([ )]|\$)|RECIPE_SETUP=$1( |\$))" \
    "$NCG_ROOT"/tests/launchers/t_*.sh "$NCG_ROOT"/tests/launchers/lib.sh
}
for n in $names; do
  recipe "$n" >/dev/null
  run_by_test "$n" || fail "the recipe '$n' of docs/launchers.md is run by no test in tests/launchers"
done
! run_by_test no-such || fail "the check finds a test for a recipe no test runs"

# (the recipe preloads the shim alone: a sanitizer build needs its runtime first)
if [ -n "${NCG_SANITIZER:-}" ]; then echo "the recipe ncg-launch runs in the plain pass only"; exit 0; fi
RECIPE_SETUP=""
launched_recipe count ncg-launch
# ncg-launch starts the app by the relative path of the recipe: its ranks' segments (left by the
# verdict's exit 86) are removed by the pids of their reports
at_exit() {
  local p
  for p in $(grep -ho '"pid":[0-9]*' "$REPORTS"/*.json 2>/dev/null | cut -d: -f2); do
    kill -0 "$p" 2>/dev/null || rm -f "/dev/shm/ncclguard.$(id -u).$p"
  done
}
expect "$RC" 86 "ncg-launch status (count mismatch)"
expect "$(grep -cE '^ncg-launch: rank [0-3] exited with status 86$' "$OUT")" 4 "ranks named exiting with 86"
check_incident
