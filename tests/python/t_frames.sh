# The incident as a Python training loop (tests/python/train.py), under Debian's python3 and
# pyenv's shared-libpython builds, calling NCCL through plain ctypes on libnccl's handle (the
# vLLM shape), then from a threading.Thread, then through a C extension linked against libnccl
# that releases the GIL around each call (tests/python/ncgext.c, the PyTorch shape): every rank
# exits 86 within 2 s of the divergence; the short rank's diagnostic shows its Python frames
# with file, line and source (save_checkpoint), the others theirs (backward); the report
# carries them (python_stack); a thread's run shows that thread's frames; the extension's
# headline names its native call sites (ncgext.c).
. "$NCG_ROOT/tests/python/lib.sh"
py=$(pythons)
[ -n "$py" ] || { echo "no CPython 3.9+ here"; exit 77; }
echo "$py"
has_pyenv311 || echo "note: no pyenv 3.11 with a shared libpython here"
N=${NCG_PY_RANKS:-16}
while read -r label PY; do
  variants="main thread ext"
  export NCG_EXT_DIR=$NCG_TMP/ext.$label
  build_ext "$PY" "$NCG_EXT_DIR" || { echo "$label: no headers for the C extension"; variants="main thread"; }
  for variant in $variants; do
    REP=$NCG_TMP/rep.$label.$variant; mkdir -p "$REP"
    OUT=$NCG_TMP/out.$label.$variant
    extra=; [ $variant = thread ] && extra=--thread; [ $variant = ext ] && extra="--via ext"
    # the default NCCLGUARD_DIAG=auto: the full blocks (with the frames) on rank 3 and rank 0;
    # every rank's report carries its frames
    env LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_REPORT_DIR="$REP" timeout -k 5 60 \
      "$LAUNCH" -n "$N" -t 30 "$PY" "$NCG_ROOT/tests/python/train.py" --odd 3 --at 5 $extra >"$OUT" 2>&1
    rc=$?
    end=$(date +%s.%N)
    expect "$rc" 86 "$label $variant: launcher status"
    expect "$(grep -cE '^ncg-launch: rank [0-9]+ exited with status 86$' "$OUT")" "$N" "$label $variant: ranks that exited 86"
    first=$(grep -oE '^diverge_at [0-9.]+' "$OUT" | awk '{print $2}' | sort -n | tail -n 1)
    secs=$(awk -v s="$first" -v e="$end" 'BEGIN{printf "%.2f", e-s}')
    awk -v s="$secs" -v f="$SLOW" 'BEGIN{exit !(s < 2.0 * f)}' || fail "$label $variant: ranks ended ${secs}s after the divergence"
    expect "$(grep -cE '^ncclguard: VERDICT: MISMATCH .* AllReduce\(count=1, float32, sum\) on rank 3 vs ReduceScatter\(count=64, bfloat16, sum\) on ranks ' "$OUT")" "$N" "$label $variant: headlines"
    expect "$(grep -cE '^ncclguard:   python stack of thread [0-9]+ \(Python thread 0x[0-9a-f]+\), innermost first:$' "$OUT")" 2 "$label $variant: python stacks (full blocks)"
    for r in 0 3; do
      b=$(block $r "$OUT")
      fn=backward; src='nccl\.ncclReduceScatter\(send, recv'
      [ $r = 3 ] && { fn=save_checkpoint; src='nccl\.ncclAllReduce\(flag, flag'; }
      if [ $variant = ext ]; then
        src='ext\.reduce_scatter\(64\)'; [ $r = 3 ] && src='ext\.all_reduce\(1\)'
      fi
      echo "$b" | grep -A1 -E "^ncclguard:     \S*train\.py:[0-9]+ in $fn$" | grep -qE "^ncclguard:         check\($src" \
        || { echo "$b"; fail "$label $variant: rank $r: no frame $fn with its source line"; }
      echo "$b" | grep -qE '^ncclguard:     \S*train\.py:[0-9]+ in train_loop$' || fail "$label $variant: rank $r: no train_loop frame"
      if [ $variant = thread ]; then
        echo "$b" | grep -qE '^ncclguard:     \S*threading\.py:[0-9]+ in run$' || { echo "$b"; fail "$label $variant: rank $r: not the thread's frames"; }
        ! echo "$b" | grep -qE ' in main$' || fail "$label $variant: rank $r: the main thread's frames shown"
      else
        echo "$b" | grep -qE '^ncclguard:     \S*train\.py:[0-9]+ in main$' || fail "$label $variant: rank $r: no main frame"
      fi
      [ $r = 3 ] && ! echo "$b" | grep -qE ' in backward$' && true
    done
    if [ $variant = ext ]; then
      grep -qE '^ncclguard:     AllReduce\(count=1, float32, sum\) +on rank 3  from ext_ncclAllReduce\+0x[0-9a-f]+ \(ncgext\S*\.so\+0x[0-9a-f]+\)' "$OUT" \
        || fail "$label ext: headline call site of rank 3 is not the extension's"
    fi
    grep -l '"python_stack":{"tid":[0-9]*,"thread":"0x[0-9a-f]*","frames":\[{"file":"[^"]*train.py","line":[0-9]*,"function":"save_checkpoint","source":"check(' "$REP"/*.json >/dev/null \
      || fail "$label $variant: no report with rank 3's python_stack"
    expect "$(grep -l '"function":"backward"' "$REP"/*.json | wc -l)" $((N - 1)) "$label $variant: reports of the others with backward"
    echo "$label $variant: $N ranks exited 86 ${secs}s after the divergence, frames shown"
  done
done <<<"$py"
echo "python frames ok"
