# torchrun (PyTorch's elastic agent, Debian's torch 1.13) runs 4 ranks of the test app as a
# ncg-modes: sync async
# binary (--no_python) with the shim preloaded: a healthy job ends 0 without a line from
# ncclguard; the count mismatch (rank 1's AllReduce has 9 elements at slot 100) makes torchrun
# give up with status 1 and exit code 86 in its failure summary, rank 1's full diagnostic
# printed and all 4 reports written; with --max_restarts 1 the same job's second attempt
# (TORCHELASTIC_RESTART_COUNT=1, healthy by then) runs clean on a new unique id and torchrun
# ends 0. docs/launchers.md shows the same commands.
. "$NCG_ROOT/tests/launchers/lib.sh"
TORCHRUN=$(command -v torchrun) || { echo "torchrun not installed (python3-torch: scripts/install-deps.sh --launchers)"; exit 77; }
# --redirects 1 --tee 1: on Python 3.11 torch 1.13's default (no redirect) crashes before
# starting a worker (its Std enum lost the value 0); stdout goes to per-rank logs and to the
# console as "[default<R>]:...", stderr (ncclguard's) is left as it is. A rendezvous port of its
# own (--standalone would always take 29400); the agent checks its workers every second.
trun() { TR=("$TORCHRUN" --nproc_per_node 4 --rdzv_backend c10d --rdzv_endpoint "localhost:$(free_port)"
  --monitor_interval 1 --redirects 1 --tee 1 --log_dir "$NCG_TMP/torchelastic.$1" "${@:2}" --no_python); }
trun healthy
launched healthy "${TR[@]}" "$RANKSH" "$SCEN" healthy
expect "$RC" 0 "torchrun status (healthy)"
no_ncclguard
grep -q '^\[default0\]:scen: healthy done$' "$OUT" || fail "the healthy job did not finish"
trun count
launched count "${TR[@]}" "$RANKSH" "$SCEN" count
expect "$RC" 1 "torchrun status (count mismatch)"
# (the process holding the checker exits last, up to a second after the others: the agent may
# stop it first at its next poll, so it need not be among them; every report is checked below)
n86=$(grep -cE '^  exitcode  : 86 \(pid: [0-9]+\)$' "$OUT")
[ "$n86" -ge 3 ] || fail "ranks with exit code 86 in torchrun's failure summary: got $n86, want 3 or 4"
check_incident
# the same job with one restart: the first attempt diverges, the second (healthy) completes
trun restart --max_restarts 1
NCG_RETRY_ARGS=healthy launched restart "${TR[@]}" "$RANKSH" "$SCEN" count
expect "$RC" 0 "torchrun status (restarted after the verdict)"
check_incident
grep -qE '^ERROR:torch\.distributed\.elastic\.multiprocessing\.api:failed \(exitcode: 86\) ' "$OUT" || fail "torchrun did not see the first attempt fail with 86"
grep -q '^\[default0\]:scen: healthy done$' "$OUT" || fail "the second attempt did not finish"
# the second attempt ran clean: no verdict of its own, no report, a unique id of its own
expect "$(grep -cE "$COUNT_HEADLINE" "$OUT")" 4 "verdicts (the first attempt's 4 only)"
expect "$(sed -n '/^\[default0\]:scen: healthy done$/,$p' "$OUT" | grep -c ncclguard)" 0 "ncclguard lines after the second attempt's end"
[ -s "$NCG_TMP/restart.id.1" ] && ! cmp -s "$NCG_TMP/restart.id.0" "$NCG_TMP/restart.id.1" || fail "the second attempt did not use a new unique id"
