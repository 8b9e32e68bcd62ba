# The fake exports exactly the genuine libnccl.so.2's host API (nccl.h, and the host side of the
# device API in nccl_device/*.h, ncclDevCommCreate & co.) plus the functions of 2.30.7's nccl.h
# the genuine library lacks (api.def's): every ncclX weak and
# every pncclX strong at the same address. Skipped when the genuine library is absent.
. "$NCG_ROOT/tests/fakenccl/lib.sh"
real=/usr/local/cuda/lib64/libnccl.so.2
hdr=/usr/local/cuda/include/nccl.h
fake=$NCG_BUILD/fakenccl/libnccl.so.2
command -v nm >/dev/null || { echo "nm not installed"; exit 77; }
[ -f "$real" ] && [ -f "$hdr" ] || { echo "no genuine NCCL under /usr/local/cuda"; exit 77; }
syms() { nm -D --defined-only "$1" | awk '$3 ~ /^p?nccl/ {print $2, $3}' | sort -k2; }
# the host API = functions nccl.h declares, plus the device API's host-side functions
# (nccl_device/*.h: "NCCL_EXTERN_C __host__ TYPE ncclX(...)")
api=$( { grep -oE '\bp?nccl[A-Za-z]+[[:space:]]*\(' "$hdr"
         cat "${hdr%/nccl.h}"/nccl_device/*.h 2>/dev/null | grep -E '^NCCL_EXTERN_C __host__' |
           grep -oE '\bnccl[A-Za-z0-9]+[[:space:]]*\(' | sed 's/^/p/; p; s/^p//'
       } | tr -d ' (' | sort -u)
want=$(syms "$real" | awk 'NR==FNR {a[$1]=1; next} ($2 in a)' <(echo "$api") -)
# plus what nccl.h gained up to 2.30.7 (interpose/shim/api.def lists every function of it; the
# genuine library here may be older): each one ncclX and pnccl, as the fake defines them
api_def=$NCG_ROOT/interpose/shim/api.def
newer=$(sed -n 's/^NCG_API([^,]*, *\(nccl[A-Za-z0-9]*\),.*/\1/p' "$api_def" | sort -u |
  comm -23 - <(syms "$real" | awk '{print $2}' | grep '^nccl' | sort -u))
got_newer=$(syms "$fake" | awk 'NR==FNR {a[$1]=1; a["p" $1]=1; next} ($2 in a)' <(echo "$newer") -)
[ "$(echo "$got_newer" | awk '{print $2}' | grep -c '^nccl')" = "$(echo "$newer" | grep -c .)" ] ||
  fail "the fake lacks functions of api.def newer than the genuine library: $newer"
want=$(printf '%s\n%s\n' "$want" "$got_newer" | grep . | sort -k2)
got=$(syms "$fake")
[ -n "$want" ] || fail "no API symbols found in $real"
if [ "$want" != "$got" ]; then
  diff <(echo "$want") <(echo "$got")
  fail "export list differs from the genuine library's host API (< genuine, > fake)"
fi
# weak ncclX and strong pncclX at the same address
nm -D --defined-only "$fake" | awk '$3 ~ /^nccl/ {w[$3]=$1} $3 ~ /^pnccl/ {s[substr($3,2)]=$1}
  END {for (k in w) if (w[k] != s[k]) {print "address differs: " k; bad=1} exit bad}' ||
  fail "ncclX and pncclX at different addresses"
echo "ok: $(echo "$got" | wc -l) symbols match"
