# The shim exports exactly the NCCL host API of api.def plus dlsym/dlvsym (interpose/shim/dlsym.c),
# the CUDA runtime's capture and graph functions of interpose/shim/graph.c and its synchronizations,
# queries and event records of interpose/shim/hostwait.c (each one the genuine libcudart.so.13
# exports); nothing else of ours, no pnccl*; at run time it needs only glibc.
. "$NCG_ROOT/tests/shim/lib.sh"
need "$SHIMLIB" "$NCG_BUILD/tests/shim/api_names"
"$NCG_BUILD/tests/shim/api_names" 2>"$NCG_TMP/count" | sort >"$NCG_TMP/want"
nm -D --defined-only "$SHIMLIB" | awk '{print $3}' | sed 's/@.*//' | grep -vx 'dlsym\|dlvsym\|ncclDevCommCreate' | grep -v '^cuda' | sort >"$NCG_TMP/have"
# the device API's entry point (interpose/shim/devapi.c: one line that its kernels' traffic is unseen)
[ "$(nm -D --defined-only "$SHIMLIB" | awk '{print $3}' | grep -cx ncclDevCommCreate)" = 1 ] || fail "ncclDevCommCreate not exported"
nm -D --defined-only "$SHIMLIB" | awk '{print $3}' | grep '^cuda' | sort >"$NCG_TMP/cuda"
sed -n 's/^NCG_EXPORT int \(cuda[A-Za-z_]*\)(.*/\1/p' "$NCG_ROOT/interpose/shim/graph.c" \
  "$NCG_ROOT/interpose/shim/hostwait.c" | sort >"$NCG_TMP/cuda_want"
diff "$NCG_TMP/cuda_want" "$NCG_TMP/cuda" || fail "exported CUDA functions differ from graph.c's and hostwait.c's definitions (< sources, > exported)"
[ "$(wc -l <"$NCG_TMP/cuda")" = 27 ] || fail "want 27 CUDA functions exported (16 graph, 11 host waits)"
cudart=/usr/local/cuda/lib64/libcudart.so.13
if [ -e "$cudart" ]; then
  nm -D --defined-only "$cudart" | awk '{print $3}' | sed 's/@.*//' | sort -u >"$NCG_TMP/cudart"
  missing=$(comm -23 "$NCG_TMP/cuda" "$NCG_TMP/cudart")
  [ -z "$missing" ] || fail "exported but not in the genuine libcudart.so.13: $missing"
fi
[ "$(nm -D --defined-only "$SHIMLIB" | awk '{print $3}' | grep -cx 'dlsym\|dlvsym')" = 2 ] || fail "dlsym and dlvsym not exported"
cat "$NCG_TMP/count"
diff "$NCG_TMP/want" "$NCG_TMP/have" || fail "exported symbols differ from api.def (< api.def, > exported)"
grep -q '^64 functions$' "$NCG_TMP/count" || fail "api.def should list the 64 host functions of NCCL 2.30.7's nccl.h"
# Every exported function is one nccl.h declares (the genuine library's list, when present).
real=/usr/local/cuda/lib64/libnccl.so.2
if [ -e "$real" ]; then
  nm -D --defined-only "$real" | awk '{print $3}' | grep '^nccl' | sort >"$NCG_TMP/real"
  # the functions nccl.h gained after 2.28 (2.30.7) are absent from an older genuine library
  since228='ncclCommGetUniqueId ncclCommGrow ncclCommSuspend ncclCommResume ncclCommMemStats
    ncclWinGetUserPtr ncclPutSignal ncclSignal ncclWaitSignal ncclParamBind ncclParamGetI8
    ncclParamGetI16 ncclParamGetI32 ncclParamGetI64 ncclParamGetU8 ncclParamGetU16 ncclParamGetU32
    ncclParamGetU64 ncclParamGetStr ncclParamGet ncclParamGetParameter ncclParamGetAllParameterKeys
    ncclParamDumpAll'
  missing=$(comm -23 "$NCG_TMP/have" "$NCG_TMP/real" | grep -vxF "$(echo $since228 | tr ' ' '\n')")
  [ -z "$missing" ] || fail "exported but not in the genuine libnccl: $missing"
fi
if [ -z "$NCG_SANITIZER" ]; then
  deps=$(readelf -d "$SHIMLIB" | awk '/NEEDED/{print $5}' | tr -d '[]' | sort | tr '\n' ' ')
  echo "NEEDED: $deps"
  [ "$deps" = "libc.so.6 " ] || fail "runtime dependencies beyond glibc: $deps"
fi
echo "exports ok"
