# The shim exports exactly the NCCL host API of api.def plus dlsym/dlvsym (interpose/dlsym.c;
# nothing else of ours, no pnccl*), and at run time needs nothing but glibc.
. "$NCG_ROOT/tests/shim/lib.sh"
need "$SHIMLIB" "$NCG_BUILD/tests/shim/api_names"
"$NCG_BUILD/tests/shim/api_names" 2>"$NCG_TMP/count" | sort >"$NCG_TMP/want"
nm -D --defined-only "$SHIMLIB" | awk '{print $3}' | sed 's/@.*//' | grep -vx 'dlsym\|dlvsym' | sort >"$NCG_TMP/have"
[ "$(nm -D --defined-only "$SHIMLIB" | awk '{print $3}' | grep -cx 'dlsym\|dlvsym')" = 2 ] || fail "dlsym and dlvsym not exported"
cat "$NCG_TMP/count"
diff "$NCG_TMP/want" "$NCG_TMP/have" || fail "exported symbols differ from api.def (< api.def, > exported)"
grep -q '^41 functions$' "$NCG_TMP/count" || fail "api.def should list the 41 host functions of NCCL 2.28"
# Every exported function is one nccl.h declares (the genuine library's list, when present).
real=/usr/local/cuda/lib64/libnccl.so.2
if [ -e "$real" ]; then
  nm -D --defined-only "$real" | awk '{print $3}' | grep '^nccl' | sort >"$NCG_TMP/real"
  missing=$(comm -23 "$NCG_TMP/have" "$NCG_TMP/real")
  [ -z "$missing" ] || fail "exported but not in the genuine libnccl: $missing"
fi
if [ -z "$NCG_SANITIZER" ]; then
  deps=$(readelf -d "$SHIMLIB" | awk '/NEEDED/{print $5}' | tr -d '[]' | sort | tr '\n' ' ')
  echo "NEEDED: $deps"
  [ "$deps" = "libc.so.6 " ] || fail "runtime dependencies beyond glibc: $deps"
fi
echo "exports ok"
