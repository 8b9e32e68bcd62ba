#!/usr/bin/env bash
# The divergence matrix's driver (tests/matrix/README.md). For each NCCL mode of the CPU NCCL and
# each case of gen.sh: the program bare (ground truth: it hangs, i.e. the launcher's 6 s timeout
# fires, or it completes with some exit status), then under the shim (15 s): a hanging program
# is caught (a "ncclguard: VERDICT:" line, the job ended before the timeout) or missed; a
# completing one must complete the same, with no VERDICT or WARNING line (else a false positive).
# Usage: run.sh [--sample] [--modes "sync async"] [--jobs N] [--out DIR] [--filter REGEX]
#   --sample      gen.sh --sample (every kind and fault once; tests/matrix/t_matrix.sh)
#   --modes M     the NCCL modes (default "sync async"; async: FAKENCCL_ASYNC=1, CPU CUDA runtime)
#   --jobs N      cases run at once (default 1; a hanging run sleeps, so 2-3 suit 2 cores)
#   --out DIR     results.tsv, cases/ (missed and false-positive cases' outputs); default a new
#                 /tmp/mx.XXXXXX
#   --filter RE   only the case lines ("ID LAYOUT NRANKS KIND FAULT COMPLETE") matching RE
# Environment: NCG_BUILD (default build), NCG_PRELOAD (default $NCG_BUILD/libncclguard.so).
# Exit status: 0 when nothing was missed and nothing was a false positive, 1 otherwise, 77 when
# nothing could run.
set -u
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
B=${NCG_BUILD:-build}
case "$B" in /*) ;; *) B=$ROOT/$B ;; esac
PRELOAD=${NCG_PRELOAD:-$B/libncclguard.so}
LAUNCH=$B/tests/ncg-launch
MX=$B/tests/matrix/mx
BARE_S=6 GUARD_S=15

sample="" modes="sync async" jobs=1 out="" filter=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sample) sample=--sample ;;
    --modes) modes=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --out) out=$2; shift ;;
    --filter) filter=$2; shift ;;
    *) sed -n '/^# Usage/,/^# nothing/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
  esac
  shift
done
for f in "$LAUNCH" "$MX" "$B/libncclguard.so" "$B/fakenccl/libnccl.so.2"; do
  [ -e "$f" ] || { echo "missing $f (run make first)"; exit 77; }
done
[ -n "$out" ] || out=$(mktemp -d /tmp/mx.XXXXXX)
mkdir -p "$out/cases" "$out/work" || exit 2
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
# Defaults only: nothing of the caller's ncclguard or CPU NCCL settings.
for v in $(compgen -e | grep -E '^(NCCLGUARD|FAKENCCL_)'); do unset "$v"; done
unset NCCLGUARD LD_PRELOAD

now() { date +%s.%N; }

# run_case MODE SEQ ID LAYOUT N KIND FAULT COMPLETE: one row into $out/work/MODE/SEQ.tsv.
run_case() {
  local mode=$1 seq=$2 id=$3 layout=$4 n=$5 kind=$6 fault=$7 complete=$8
  local dir=$out/work/$mode/$id bare guard rc t0 t1 brc grc outcome res verdict secs mark
  mkdir -p "$dir/reports"
  local victim=() # an ID ending in .v0: rank 0 (zero-config: the checker's host) applies it
  case $id in *.v0) victim=(0) ;; esac
  if [ "$layout" = proc ]; then
    bare=("$LAUNCH" -n "$n" -t $BARE_S -- "$MX" "$kind" "$fault" "${victim[@]}")
    guard=("$LAUNCH" -n "$n" -t $GUARD_S -- "$MX" "$kind" "$fault" "${victim[@]}")
  else
    bare=(timeout -k 2 $BARE_S "$MX" -T "$n" "$kind" "$fault")
    guard=(timeout -k 2 $GUARD_S "$MX" -T "$n" "$kind" "$fault")
  fi
  t0=$(now)
  MX_COMPLETE=$complete "${bare[@]}" >"$dir/bare.txt" 2>&1
  brc=$?
  t1=$(now)
  # hang: the launcher's (or timeout's) 124; 137: timeout had to SIGKILL the process
  if [ $brc = 124 ] || { [ $brc = 137 ] && awk -v a="$t0" -v b="$t1" -v l=$BARE_S 'BEGIN{exit !(b-a >= l)}'; }; then
    outcome=hang
  else
    outcome=exit:$brc
  fi
  MX_COMPLETE=$complete LD_PRELOAD=$PRELOAD NCCLGUARD_REPORT_DIR=$dir/reports \
    "${guard[@]}" >"$dir/guarded.txt" 2>&1
  grc=$?
  t1=$(now)
  verdict=$(grep -m1 '^ncclguard: VERDICT: ' "$dir/guarded.txt" | sed -E 's/^ncclguard: VERDICT: //; s/ on .*//')
  mark=$(grep -m1 -oE '^mx: diverge at [0-9.]+' "$dir/guarded.txt" | sed 's/.* //')
  secs=-
  local gdesc=$grc
  [ $grc = 124 ] && gdesc=timeout
  if [ $outcome = hang ]; then
    if [ -n "$verdict" ] && [ $grc != 124 ]; then res=caught; else res=missed; fi
    [ $res = caught ] && [ -n "$mark" ] && secs=$(awk -v a="$mark" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')
  else
    if grep -qE '^ncclguard: (VERDICT|WARNING):' "$dir/guarded.txt" || [ "exit:$grc" != "$outcome" ]; then
      res=fp
    else
      res=ok
    fi
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$id" "$layout" "$n" "$kind" \
    "$fault" "$complete" "$outcome" "$res:$gdesc" "${verdict:--}" "$secs" >"$out/work/$mode/$seq.tsv"
  if [ $res = missed ] || [ $res = fp ]; then
    local c=$out/cases/$mode.$id
    cp "$dir/bare.txt" "$c.bare.txt"
    cp "$dir/guarded.txt" "$c.guarded.txt"
    # what the guarded output showed, in one line: its first verdict or warning, else its first
    # ncclguard line, else nothing from ncclguard
    local note
    note=$(grep -m1 -E '^ncclguard: (VERDICT|WARNING):' "$dir/guarded.txt" || grep -m1 '^ncclguard:' "$dir/guarded.txt")
    [ -n "$note" ] || note="no ncclguard line"
    printf '%s\n' "${note:0:160}" >"$c.note"
    {
      printf 'cd %q && env' "$ROOT"
      printf ' %q' "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
      [ "$mode" = async ] && printf ' FAKENCCL_ASYNC=1'
      printf ' %q' "MX_COMPLETE=$complete" "LD_PRELOAD=$PRELOAD" "${guard[@]}"
      printf '\n'
    } >"$c.cmd"
  fi
  rm -rf "$dir"
  # segments of the ranks killed here (their process gone): only this build's mx
  "$B/ncclguard" clean --grace 0 --match "$MX" --quiet >/dev/null 2>&1
}

: >"$out/results.tsv"
ran=0 start_all=$(now)
for mode in $modes; do
  export LD_LIBRARY_PATH=$B/fakenccl
  unset FAKENCCL_ASYNC
  if [ "$mode" = async ]; then
    if [ ! -e "$B/fakecuda/libcudart.so.13" ]; then
      echo "matrix: mode async skipped: no CPU CUDA runtime in $B/fakecuda"
      continue
    fi
    export FAKENCCL_ASYNC=1 LD_LIBRARY_PATH=$B/fakecuda:$B/fakenccl
  elif [ "$mode" != sync ]; then
    echo "matrix: unknown mode $mode"; exit 2
  fi
  mkdir -p "$out/work/$mode"
  mapfile -t cases < <(tests/matrix/gen.sh $sample --mode "$mode" | grep -E -- "${filter:-.}")
  echo "matrix: mode $mode: ${#cases[@]} cases, $jobs at a time, results in $out"
  t0=$(now) seq=0
  for line in "${cases[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    # shellcheck disable=SC2086
    run_case "$mode" "$(printf %04d $seq)" $line &
    seq=$((seq + 1))
  done
  wait
  cat "$out/work/$mode"/*.tsv >>"$out/results.tsv" 2>/dev/null
  rm -rf "$out/work/$mode"
  ran=$((ran + seq))
  echo "matrix: mode $mode: $seq cases in $(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.0f", b-a}') s"
done
rmdir "$out/work" 2>/dev/null
[ $ran -gt 0 ] || { echo "matrix: no case ran"; exit 77; }

# The summary: per mode and class of kind, then the missed and false-positive cases.
awk -F'\t' '
function cls(k) { return k == "mixed" ? "coll+p2p" : (k ~ /^p2p_/ ? "p2p-only" : "coll-only") }
function median(key,   n, i, j, t, a) {
  n = split(secs[key], a, " ")
  if (n <= 1) return n ? sprintf("%.2f", a[1]) : "-"
  for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  return sprintf("%.2f", n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
}
function add(key, res, s) {
  if (res == "caught" || res == "missed") hang[key]++; else comp[key]++
  cnt[key, res]++
  if (res == "caught" && s != "-") secs[key] = secs[key] " " s
}
{
  split($9, g, ":"); res = g[1]
  if (!($1 in seen)) { seen[$1] = 1; modes[++nm] = $1 }
  add($1 SUBSEP cls($5), res, $11); add($1 SUBSEP "all", res, $11); add("total", res, $11)
  if (res == "caught") vk[$1 SUBSEP $10]++
}
END {
  split("coll-only coll+p2p p2p-only all", cl, " ")
  for (m = 1; m <= nm; m++) {
    printf "\n== mode %s\n%-10s %8s %7s %7s %11s %6s %10s\n", modes[m], "class", "hanging", "caught", "missed", "completing", "f.pos", "median s"
    for (c = 1; c <= 4; c++) {
      k = modes[m] SUBSEP cl[c]
      printf "%-10s %8d %7d %7d %11d %6d %10s\n", cl[c], hang[k], cnt[k, "caught"], cnt[k, "missed"], comp[k], cnt[k, "fp"], median(k)
    }
    line = ""
    for (x in vk) { split(x, p, SUBSEP); if (p[1] == modes[m]) line = line sprintf("%s %d, ", p[2], vk[x]) }
    if (line != "") printf "verdicts of caught cases: %s\n", substr(line, 1, length(line) - 2)
  }
  printf "\nmatrix: %d hanging, %d caught, %d missed, %d completing, %d false positives\n", hang["total"], cnt["total", "caught"], cnt["total", "missed"], comp["total"], cnt["total", "fp"]
}' "$out/results.tsv" >"$out/summary.txt"

bad=0
while IFS=$'\t' read -r mode id layout n kind fault complete bare guarded verdict secs; do
  case $guarded in
    missed:*) what=MISSED ;;
    fp:*) what="FALSE POSITIVE" ;;
    *) continue ;;
  esac
  [ $bad = 0 ] && echo "== missed and false-positive cases (outputs in $out/cases/)"
  bad=$((bad + 1))
  echo "$what [$mode] $id (bare $bare, guarded ${guarded#*:}): $(cat "$out/cases/$mode.$id.note")"
  echo "  rerun: $(cat "$out/cases/$mode.$id.cmd")"
done <"$out/results.tsv"
grep -v '^matrix:' "$out/summary.txt"
echo "matrix: total time $(awk -v a="$start_all" -v b="$(now)" 'BEGIN{printf "%.0f", b-a}') s, results in $out/results.tsv"
grep '^matrix:' "$out/summary.txt"
[ $bad = 0 ]
