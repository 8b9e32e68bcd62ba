# Slurm's srun runs 4-rank jobs with the shim on a single-node cluster of this host started for
# ncg-modes: sync async
# the test by the recipe "slurm" of docs/launchers.md (lib.sh slurm_start: munged, slurmctld,
# slurmd with their own socket, key and ports in $NCG_TMP, all stopped at exit), then the
# recipes "setup" and "srun", run as written (lib.sh, launched_recipe): a healthy job ends 0
# without a line from ncclguard; the count mismatch (rank 1's AllReduce has 9 elements at slot
# 100) ends srun with status 86, rank 1's full diagnostic printed and all 4 reports written.
# srun -l labels each line with its task (rank 1's lines are those labelled "1: ").
. "$NCG_ROOT/tests/launchers/lib.sh"
case "${NCG_SANITIZER:-}" in *thread*)
  echo "under ThreadSanitizer the preloaded runtime reports on Slurm's own libslurmfull (a lock-order inversion), not on ncclguard: this launcher runs in the plain and ASan passes"; exit 77 ;;
esac
slurm_start
LABELED=1
launched_recipe healthy srun healthy
expect "$RC" 0 "srun status (healthy)"
no_ncclguard
grep -q '^0: scen: healthy done$' "$OUT" || fail "the healthy job did not finish"
launched_recipe count srun
expect "$RC" 86 "srun status (count mismatch)"
check_incident
