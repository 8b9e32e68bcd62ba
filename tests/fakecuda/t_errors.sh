# cudaGetErrorName/cudaGetErrorString give the genuine runtime's text for every code the fake
# knows (the genuine library answers these without a GPU). Skipped without it.
. "$NCG_ROOT/tests/fakecuda/lib.sh"
need "$FC_T/errnames"
fake=$("$FC_T/errnames") || fail "errnames on the fake failed"
echo "$fake" | grep -q "^400|cudaErrorInvalidResourceHandle|invalid resource handle$" ||
  fail "unexpected table: $fake"
[ -f "$REAL_CUDART" ] || { echo "no genuine $REAL_CUDART to compare with"; exit 77; }
real=$(LD_LIBRARY_PATH=$(dirname "$REAL_CUDART") "$FC_T/errnames") ||
  { echo "the genuine runtime did not run here"; exit 77; }
if [ "$fake" != "$real" ]; then
  diff <(echo "$real") <(echo "$fake")
  fail "error names/strings differ from the genuine runtime (< genuine, > fake)"
fi
echo "ok: $(echo "$fake" | wc -l) codes match"
