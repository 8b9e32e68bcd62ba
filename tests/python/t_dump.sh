# `ncclguard dump` on a 16-rank Python job hung in warn mode (rank 3 waits in save_checkpoint's
# AllReduce, the others in backward's ReduceScatter): 16 dumps within 2 s, each with the
# threads' stacks and the communicator's records, and `ncclguard report DIR` groups them with
# the odd rank first. Then NCCLGUARD_DUMP_ON_WARN=1: every rank dumps on its LAG warning.
. "$NCG_ROOT/tests/python/lib.sh"
[ -x /usr/bin/python3 ] || { echo "no /usr/bin/python3"; exit 77; }
PY=${NCG_DUMP_PYTHON:-/usr/bin/python3}
CLI=$B/ncclguard
D=$NCG_TMP/dumps; mkdir -p "$D" "$NCG_TMP/rep"
OUT=$NCG_TMP/job
tag=ncgdump$$   # only this job's processes are asked (other jobs may run on this host)
env LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_ACTION=warn NCCLGUARD_REPORT_DIR="$NCG_TMP/rep" \
  "$LAUNCH" -n 16 -t 30 "$PY" "$NCG_ROOT/tests/python/train.py" --odd 3 --hang --tag "$tag" >"$OUT" 2>&1 &
job=$!
for _ in $(seq 100); do [ "$(grep -c '^ncclguard: VERDICT' "$OUT")" = 16 ] && break; sleep 0.1; done
expect "$(grep -c '^ncclguard: VERDICT' "$OUT")" 16 "warn-mode diagnostics before the dump"
start=$(date +%s.%N)
"$CLI" dump --dir "$D" --match "$tag" >"$NCG_TMP/dump.out" 2>&1; rc=$?
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.2f", e-s}')
cat "$NCG_TMP/dump.out"
kill "$job" 2>/dev/null; wait "$job" 2>/dev/null
expect "$rc" 0 "dump status"
expect "$(ls "$D" | grep -c '^ncclguard-dump\..*\.json$')" 16 "dump files"
awk -v s="$secs" -v f="$SLOW" 'BEGIN{exit !(s < 2.0 * f)}' || fail "dumps took ${secs}s"
grep -q '"format":"ncclguard-dump","version":1' "$D"/*.json || fail "dump format"
grep -l '"python":\[{"file":"[^"]*train.py","line":[0-9]*,"function":"save_checkpoint"' "$D"/*.json | grep -q . || fail "no Python frames in rank 3's dump"
grep -l '"records":\[{"ring":"coll","seq":0,' "$D"/*.json | grep -q . || fail "no records in the dumps"
"$CLI" report "$D" >"$NCG_TMP/report" 2>&1 || { cat "$NCG_TMP/report"; fail "report DIR"; }
cat "$NCG_TMP/report"
grep -qE '^ncclguard: dumps: .* \(16 ranks\): 2 distinct, odd ones first$' "$NCG_TMP/report" || fail "grouped header"
# the odd rank comes first, then the 15 others once
first=$(grep -m1 -E '^ncclguard:   ranks? ' "$NCG_TMP/report")
echo "$first" | grep -qE '^ncclguard:   rank 3 \(1 of 16\): 6 calls issued, latest AllReduce\(count=1, float32, sum\)$' || fail "odd rank not first: $first"
grep -qE '^ncclguard:   ranks 0-2,4-15 \(15 of 16\): 6 calls issued, latest ReduceScatter' "$NCG_TMP/report" || fail "the 15 others not grouped"
grep -A1 -E '^ncclguard:   rank 3 ' "$NCG_TMP/report" | grep -qE 'train\.py:[0-9]+ in save_checkpoint$' || fail "rank 3's frame"
echo "16 dumps in ${secs}s, grouped"
# NCCLGUARD_DUMP_ON_WARN=1: a LAG warning (rank 3 pauses 3 s in save_checkpoint's sleep) makes
# every affected rank dump into NCCLGUARD_REPORT_DIR.
R2=$NCG_TMP/rep2; mkdir -p "$R2"
env LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_DUMP_ON_WARN=1 NCCLGUARD_LAG_WARN_S=0.5 NCCLGUARD_REPORT_DIR="$R2" \
  "$LAUNCH" -n 4 -t 30 "$PY" "$NCG_ROOT/tests/python/train.py" --odd 3 --pause 3 >"$NCG_TMP/lag" 2>&1 \
  || { cat "$NCG_TMP/lag"; fail "lag job"; }
grep -q '^ncclguard: WARNING: LAG' "$NCG_TMP/lag" || { cat "$NCG_TMP/lag"; fail "no LAG warning"; }
n=$(ls "$R2" | grep -c '^ncclguard-dump\..*\.json$')
[ "$n" -ge 1 ] || fail "no dump on the LAG warning"
grep -q '"reason":"lag warning"' "$R2"/ncclguard-dump.*.json || fail "dump reason"
echo "dump on warn: $n dumps"
echo "dump ok"
