# ncclguard's own NCCL declarations agree with NVIDIA's nccl.h: sizes, field offsets, enum
# values, constants and NCCL_CONFIG_INITIALIZER (same output from both headers), and every
# prototype of api.def that nccl.h declares is compatible with nccl.h's (a redeclaration
# compiles; a deliberately wrong one does not, proving the check bites). Skipped without
# /usr/local/cuda/include/nccl.h. Every release from 2.18 on: t_releases.sh.
set -u
H=/usr/local/cuda/include
[ -e "$H/nccl.h" ] || { echo "no $H/nccl.h"; exit 77; }
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
CC=${CC:-cc}
cd "$NCG_ROOT"
src=tests/abi/abi_dump.c
$CC -std=gnu11 -DNCG_USE_REAL_NCCL_H -I"$H" -Iinclude -o "$NCG_TMP/real" $src || { echo "FAIL: build with nccl.h"; exit 1; }
$CC -std=gnu11 -Iinclude -o "$NCG_TMP/ours" $src || { echo "FAIL: build with nccl_abi.h"; exit 1; }
"$NCG_TMP/real" >"$NCG_TMP/real.txt" && "$NCG_TMP/ours" >"$NCG_TMP/ours.txt" || { echo "FAIL: run"; exit 1; }
diff "$NCG_TMP/real.txt" "$NCG_TMP/ours.txt" || { echo "FAIL: ABI differs (< nccl.h, > nccl_abi.h)"; exit 1; }
echo "$(wc -l <"$NCG_TMP/ours.txt") ABI facts agree"
# api.def may wrap functions of releases newer than this nccl.h: their types (absent here) get
# placeholders from the release records (tests/abi/releases), so those functions compile as
# new declarations; every function this nccl.h has is compared.
minor=$(sed -n 's/^#define NCCL_MINOR \([0-9]*\).*/\1/p' "$H/nccl.h")
mkdir -p "$NCG_TMP/inc"
{ echo "#include \"$H/nccl.h\""
  python3 tests/abi/releases.py placeholders "2.$minor" tests/abi/releases/nccl-2.*.txt; } >"$NCG_TMP/inc/nccl.h" \
  || { echo "FAIL: no placeholders for NCCL 2.$minor"; exit 1; }
$CC -std=gnu11 -Wall -Werror -I"$NCG_TMP/inc" -I"$H" -Iinterpose/shim -c -o "$NCG_TMP/p.o" tests/abi/abi_protos.c \
  || { echo "FAIL: an api.def prototype conflicts with nccl.h"; exit 1; }
if $CC -std=gnu11 -I"$NCG_TMP/inc" -I"$H" -Iinterpose/shim -DNCG_ABI_NEGATIVE_CONTROL -c -o "$NCG_TMP/n.o" tests/abi/abi_protos.c 2>/dev/null; then
  echo "FAIL: a wrong prototype was accepted: the check cannot fail"; exit 1
fi
echo "$(grep -c '^NCG_API(' interpose/shim/api.def) api.def prototypes (and their pnccl twins) compiled against nccl.h 2.$minor"
