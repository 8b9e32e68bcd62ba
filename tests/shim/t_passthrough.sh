# What the shim must never change or break: a function the loaded NCCL lacks returns
# ncclInvalidUsage with one warning naming it (no crash); no libnccl loaded at all: the same;
# a libnccl that a library dlopen()ed RTLD_LOCAL (as Python does) is found through
# RTLD_NOLOAD and its calls are recorded.
. "$NCG_ROOT/tests/shim/lib.sh"
need "$SHIMLIB" "$NCG_BUILD/tests/shim/realnccl" "$NCG_BUILD/bench/null-norevoke/libnccl.so.2" \
  "$NCG_BUILD/tests/shim/dlopen_local" "$NCG_BUILD/tests/shim/libuses_nccl.so"
R=$NCG_BUILD/tests/shim/realnccl

LD_LIBRARY_PATH=$NCG_BUILD/bench/null-norevoke LD_PRELOAD="$NCG_PRELOAD" "$R" revoke >"$NCG_TMP/out" 2>"$NCG_TMP/err" \
  || { cat "$NCG_TMP/err"; fail "missing function crashed"; }
cat "$NCG_TMP/out" "$NCG_TMP/err"
grep -qx "revoke rc=5 rc=5" "$NCG_TMP/out" || fail "missing ncclCommRevoke should return ncclInvalidUsage (5)"
[ "$(grep -c '^ncclguard: pncclCommRevoke not found' "$NCG_TMP/err")" = 1 ] || fail "expected one warning naming pncclCommRevoke"
[ "$(wc -l <"$NCG_TMP/err")" = 1 ] || fail "unexpected output"

LD_PRELOAD="$NCG_PRELOAD" "$R" none >"$NCG_TMP/out" 2>"$NCG_TMP/err" || fail "no libnccl: crashed"
cat "$NCG_TMP/out" "$NCG_TMP/err"
grep -qx "version rc=5 v=-1" "$NCG_TMP/out" || fail "no libnccl: ncclGetVersion should return ncclInvalidUsage"
grep -q '^ncclguard: pncclGetVersion not found' "$NCG_TMP/err" || fail "no libnccl: no warning"

D=$NCG_BUILD/tests/shim/dlopen_local
"$D" "$NCG_BUILD/tests/shim/libuses_nccl.so" >"$NCG_TMP/plain" 2>&1 || { cat "$NCG_TMP/plain"; fail "RTLD_LOCAL without the shim"; }
grep -qx noseg "$NCG_TMP/plain" || fail "a segment without the shim?"
LD_PRELOAD="$NCG_PRELOAD" "$D" "$NCG_BUILD/tests/shim/libuses_nccl.so" >"$NCG_TMP/out" 2>&1 \
  || { cat "$NCG_TMP/out"; fail "RTLD_LOCAL with the shim"; }
cat "$NCG_TMP/out"
grep -qx "run rc=0" "$NCG_TMP/out" || fail "RTLD_LOCAL: NCCL calls failed through the shim"
grep -qx "recorded 1" "$NCG_TMP/out" || fail "RTLD_LOCAL: the AllReduce was not recorded"
echo "passthrough ok"
