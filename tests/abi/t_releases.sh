# api.def's prototypes and nccl_abi.h's structs and enums against every NCCL minor release from
# 2.18 to 2.30 (tests/abi/releases/nccl-2.Y.txt: each release tag's nccl.h reduced to types by
# gen_releases.py): each function the release has must have api.def's parameter and return types
# (compiled: abi_protos.c against a header generated from the record), each struct field and
# enum value shared with nccl_abi.h the same offset, size and value. Functions added or removed
# across releases are printed as data (docs/nccl-releases.md has the table). Then proof that it
# bites: a record with ncclAllReduce's count as int, and one with ncclConfig_t's blocking moved,
# must each fail, naming what differs.
set -u
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
cd "$NCG_ROOT"
R=tests/abi/releases
n=$(ls $R/nccl-2.*.txt | wc -l)
[ "$n" -ge 13 ] || { echo "FAIL: expected the records of 2.18 .. 2.30, found $n"; exit 1; }
python3 tests/abi/releases.py check "$NCG_TMP" $R/nccl-2.*.txt >"$NCG_TMP/check.out" 2>"$NCG_TMP/check.err"
rc=$?
cat "$NCG_TMP/check.out"
[ $rc = 0 ] || { cat "$NCG_TMP/check.err"; echo "FAIL: a release disagrees with api.def or nccl_abi.h"; exit 1; }
[ "$(grep -c 'prototypes compatible;' "$NCG_TMP/check.out")" = "$n" ] || { echo "FAIL: not every release checked"; exit 1; }

# Negative controls: modified copies of the newest record.
last=$(ls $R/nccl-2.*.txt | sort -V | tail -n 1)
mkdir -p "$NCG_TMP/bad"
sed '/^fn ncclResult_t ncclAllReduce(/s/void \*, size_t,/void *, int,/' "$last" >"$NCG_TMP/bad/proto.txt"
cmp -s "$last" "$NCG_TMP/bad/proto.txt" && { echo "FAIL: the prototype control changed nothing"; exit 1; }
if python3 tests/abi/releases.py check "$NCG_TMP/bad" "$NCG_TMP/bad/proto.txt" >"$NCG_TMP/bad.out" 2>&1; then
  echo "FAIL: a record with ncclAllReduce(..., int count, ...) was accepted: the check cannot fail"; exit 1
fi
grep -q "FAIL: NCCL .*conflict.*ncclAllReduce" "$NCG_TMP/bad.out" || { cat "$NCG_TMP/bad.out"; echo "FAIL: the conflict does not name ncclAllReduce"; exit 1; }
sed '/^struct ncclConfig_t /s/int blocking; int cgaClusterSize;/int cgaClusterSize; int blocking;/' "$last" >"$NCG_TMP/bad/layout.txt"
cmp -s "$last" "$NCG_TMP/bad/layout.txt" && { echo "FAIL: the layout control changed nothing"; exit 1; }
if python3 tests/abi/releases.py check "$NCG_TMP/bad" "$NCG_TMP/bad/layout.txt" >"$NCG_TMP/bad.out" 2>&1; then
  echo "FAIL: a record with ncclConfig_t's fields swapped was accepted"; exit 1
fi
grep -q "FAIL: NCCL .*ncclConfig_t.blocking: offset/size 20/4" "$NCG_TMP/bad.out" || { cat "$NCG_TMP/bad.out"; echo "FAIL: the layout difference is not named"; exit 1; }
echo "$n releases checked; a wrong prototype and a moved field are caught"
