# The divergence matrix's sample (tests/matrix/README.md): gen.sh --sample, every kind and every
# fault at least once on 2-4 ranks, each case bare (hangs or completes) and under the shim
# (caught, or completes unchanged and silent). Fails on any missed case or false positive. First
# it proves the driver can fail: a hanging case run with a preload that is not ncclguard must
# come out missed.
# ncg-modes: sync async
set -u
B=$NCG_BUILD
# Under a sanitizer the sample would repeat, several times slower, paths t_shapes.sh and the
# checker's tests run there already: CI time goes to those (the plain build runs the sample).
case "${NCG_SANITIZER:-}" in
  ?*) echo "the matrix's sample runs in the plain build (sanitizers: t_shapes.sh)"; exit 77 ;;
esac
[ -x "$B/tests/matrix/mx" ] || { echo "missing $B/tests/matrix/mx (run make first)"; exit 77; }
if [ "$NCG_NCCL_MODE" = sync ]; then
  NCG_PRELOAD=$B/fakenccl/libnccl.so.2 tests/matrix/run.sh --modes sync --filter '^ar\.count\.t4 ' \
    --out "$NCG_TMP/selfcheck" >"$NCG_TMP/selfcheck.txt" 2>&1
  rc=$?
  [ $rc = 77 ] && { tail -n 1 "$NCG_TMP/selfcheck.txt"; exit 77; }
  if [ $rc != 1 ] || ! grep -q '^MISSED \[sync\] ar\.count\.t4 ' "$NCG_TMP/selfcheck.txt"; then
    sed 's/^/  | /' "$NCG_TMP/selfcheck.txt"
    echo "FAIL: an unguarded hang was not reported missed (exit $rc)"; exit 1
  fi
fi
tests/matrix/run.sh --sample --modes "$NCG_NCCL_MODE" --jobs 3 --out "$NCG_TMP/matrix"
rc=$?
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || { echo "FAIL: the sample has missed cases or false positives (above)"; exit 1; }
echo ok
