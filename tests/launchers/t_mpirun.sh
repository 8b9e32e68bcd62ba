# Open MPI's mpirun (default MCA settings) runs 4-rank jobs with the shim, forwarded with
# ncg-modes: sync async
# -x LD_PRELOAD: the recipes "setup" and "mpirun" of docs/launchers.md, run as written (lib.sh,
# launched_recipe): a healthy job ends 0 without a line from ncclguard; the count mismatch (rank
# 1's AllReduce has 9 elements at slot 100) ends the job non-zero (86, the first rank's status)
# with rank 1's full diagnostic printed and all 4 reports written, although mpirun kills every
# rank as soon as one exits non-zero.
. "$NCG_ROOT/tests/launchers/lib.sh"
case "${NCG_SANITIZER:-}" in *thread*)
  echo "under ThreadSanitizer the preloaded runtime reports on Open MPI's own libpmix (a data race), not on ncclguard: this launcher runs in the plain and ASan passes"; exit 77 ;;
esac
command -v mpirun >/dev/null 2>&1 || { echo "mpirun not installed (openmpi-bin: scripts/install-deps.sh --launchers)"; exit 77; }
launched_recipe healthy mpirun healthy
expect "$RC" 0 "mpirun status (healthy)"
no_ncclguard
grep -q '^scen: healthy done$' "$OUT" || fail "the healthy job did not finish"
launched_recipe count mpirun
expect "$RC" 86 "mpirun status (count mismatch)"
grep -q 'Exit code:    86' "$OUT" || fail "mpirun does not name exit code 86"
check_incident
