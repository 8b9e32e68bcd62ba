# torchrun (PyTorch's elastic agent, Debian's torch 1.13) runs 4 ranks of the test app as a
# ncg-modes: sync async
# binary (--no_python) with the shim preloaded: the recipes "setup", "torchrun" and
# "torchrun-restart" of docs/launchers.md, run as written (lib.sh, launched_recipe). A healthy
# job ends 0 without a line from ncclguard; the count mismatch (rank 1's AllReduce has 9
# elements at slot 100) makes torchrun give up with status 1 and exit code 86 in its failure
# summary, rank 1's full diagnostic printed and all 4 reports written; with --max_restarts 1
# the same job's second attempt (TORCHELASTIC_RESTART_COUNT=1, healthy by then) runs clean on a
# new unique id and torchrun ends 0.
. "$NCG_ROOT/tests/launchers/lib.sh"
command -v torchrun >/dev/null 2>&1 || { echo "torchrun not installed (python3-torch: scripts/install-deps.sh --launchers)"; exit 77; }
# (the recipe's --redirects 1 --tee 1: on Python 3.11 torch 1.13's default crashes before
# starting a worker; stdout goes to per-rank logs and to the console as "[default<R>]:...",
# stderr (ncclguard's) is left as it is)
launched_recipe healthy torchrun healthy
expect "$RC" 0 "torchrun status (healthy)"
no_ncclguard
grep -q '^\[default0\]:scen: healthy done$' "$OUT" || fail "the healthy job did not finish"
launched_recipe count torchrun
expect "$RC" 1 "torchrun status (count mismatch)"
# (the process holding the checker exits last, up to a second after the others: the agent may
# stop it first at its next poll, so it need not be among them; every report is checked below)
n86=$(grep -cE '^  exitcode  : 86 \(pid: [0-9]+\)$' "$OUT")
[ "$n86" -ge 3 ] || fail "ranks with exit code 86 in torchrun's failure summary: got $n86, want 3 or 4"
check_incident
# the same job with one restart: the first attempt diverges, the second (healthy) completes
launched_recipe restart torchrun-restart
expect "$RC" 0 "torchrun status (restarted after the verdict)"
check_incident
grep -qE '^ERROR:torch\.distributed\.elastic\.multiprocessing\.api:failed \(exitcode: 86\) ' "$OUT" || fail "torchrun did not see the first attempt fail with 86"
grep -q '^\[default0\]:scen: healthy done$' "$OUT" || fail "the second attempt did not finish"
# the second attempt ran clean: no verdict of its own, no report, a unique id of its own
expect "$(grep -cE "$COUNT_HEADLINE" "$OUT")" 4 "verdicts (the first attempt's 4 only)"
expect "$(sed -n '/^\[default0\]:scen: healthy done$/,$p' "$OUT" | grep -c ncclguard)" 0 "ncclguard lines after the second attempt's end"
id0=$(ls "$NCG_TMP"/restart.tmp/ncg-id.*.0 2>/dev/null) id1=$(ls "$NCG_TMP"/restart.tmp/ncg-id.*.1 2>/dev/null)
[ -s "$id1" ] && [ -s "$id0" ] && ! cmp -s "$id0" "$id1" || fail "the second attempt did not use a new unique id"
