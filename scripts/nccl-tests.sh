#!/usr/bin/env bash
# nccl-tests.sh --src DIR [options]: NVIDIA's nccl-tests on the CPU stack (tests/fakecuda's
# libcudart.so.13, tests/fakenccl's libnccl.so.2), bare and under ncclguard (LD_PRELOAD of
# build/libncclguard.so). Builds the checkout with nvcc into a build directory of ours (never
# into the checkout; with MPI too where mpicc exists), then runs a matrix of cells: every
# *_perf binary, threads (-t), several devices per thread (-g), CUDA graphs (-G), the blocking
# modes (-z), all datatypes and ops, the device API (-D, refused), the data check (-c 1, whose
# kernels do not run), mpirun. A cell passes when bare and guarded both succeed (or both fail
# as expected), their outputs are identical once timings and pids are masked, and the guarded
# one has no ncclguard line. One line per cell (PASS/FAIL/SKIP and why), then a summary; exit 1
# when a cell failed, 2 on usage or build errors. See docs/nccl-tests.md.
#   --src DIR        nccl-tests checkout (default $NCG_NCCL_TESTS_SRC)
#   --build DIR      where the binaries go (default build/nccl-tests; reused, make is incremental)
#   --out DIR        logs: per cell and mode, bare/guarded output and their diff (default a
#                    fresh $TMPDIR/ncg-nccl-tests.XXXXXX, removed at exit unless a cell failed)
#   --quick          a subset (every binary once, -g, -G, mpirun): seconds after the build
#   --cells REGEX    only the cells whose name matches (grep -E)
#   --modes "M..."   CPU NCCL modes, sync and/or async (FAKENCCL_ASYNC=1); default $NCG_MODES,
#                    else "sync async"
#   --no-mpi         skip the MPI build and cells
#   --list           print the cells' names and exit
#   --build-only     build what the selected cells need, then exit
#   --no-diverge     skip the divergence cells: a copy of the checkout whose all_reduce_perf
#                    passes count+1 on one comm rank ($NCG_DIVERGE_RANK) at its 5th call, built
#                    with MPI and run guarded under mpirun -np 2 (plain, and -g 2): the verdict
#                    must name that rank, its full block be printed and every report written
# Environment: NCG_BUILD (ncclguard's build directory, default build), CUDA_HOME
# (/usr/local/cuda), MPI_HOME (default /usr/lib/x86_64-linux-gnu/openmpi, else from mpicc),
# NVCC_GENCODE (default sm_90 only: one architecture keeps the build to a few minutes),
# NCG_NCCL_TESTS_TIMEOUT (seconds per run, default 120), NCG_PRELOAD (the guarded runs'
# LD_PRELOAD, as tests/run.sh sets it; default NCG_BUILD/libncclguard.so).
# Leaves nothing behind (at exit, also on an interrupt): the segments in /dev/shm of the guarded
# processes it ran (a divergence cell's ranks end with the verdict's exit 86 and keep theirs) and
# the default log directory, unless a cell failed (then its path is printed).
set -u
CALLER=$PWD
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
SRC=${NCG_NCCL_TESTS_SRC:-}
BUILD_DIR=""
OUT=""
QUICK=0 CELLS="" LIST=0 MPI=1 BUILD_ONLY=0 DIVERGE=1
MODES=${NCG_MODES:-sync async}
usage() { sed -n '2,35p' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --src) SRC=${2:?--src DIR}; shift ;;
    --build) BUILD_DIR=${2:?--build DIR}; shift ;;
    --out) OUT=${2:?--out DIR}; shift ;;
    --quick) QUICK=1 ;;
    --cells) CELLS=${2:?--cells REGEX}; shift ;;
    --modes) MODES=${2:?--modes \"sync async\"}; shift ;;
    --no-mpi) MPI=0 ;;
    --list) LIST=1 ;;
    --build-only) BUILD_ONLY=1 ;;
    --no-diverge) DIVERGE=0 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "nccl-tests.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
for m in $MODES; do
  case "$m" in sync | async) ;; *) echo "nccl-tests.sh: unknown mode $m (sync, async)" >&2; exit 2 ;; esac
done
NCG=${NCG_BUILD:-build}
case "$NCG" in /*) ;; *) NCG=$ROOT/$NCG ;; esac
# paths given by the caller are relative to where it ran from
abs() { case "$1" in /* | "") echo "$1" ;; *) echo "$CALLER/$1" ;; esac; }
SRC=$(abs "$SRC") OUT=$(abs "$OUT") BUILD_DIR=$(abs "$BUILD_DIR")
[ -n "$BUILD_DIR" ] || BUILD_DIR=$ROOT/build/nccl-tests
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC_GENCODE=${NVCC_GENCODE:--gencode=arch=compute_90,code=sm_90}
LIMIT=${NCG_NCCL_TESTS_TIMEOUT:-120}
SIZES="-b 8 -e 1K -f 4 -n 3 -w 1 -c 0"

# --- the cells: NAME|LAUNCH|BINARY|ARGS|EXPECT (LAUNCH: local or mpi; EXPECT: ok; witness: the
# guarded run has NCCLGUARD_VERBOSE=2 and must show the shim saw every rank's communicator, so
# the other cells' silence is not that of an absent shim; devapi: both runs fail cleanly on
# ncclDevCommCreate; kernels: -c 1, one kernel line per process). Quick cells start with '+'.
BINS="all_reduce all_gather broadcast reduce_scatter reduce alltoall alltoallv scatter gather sendrecv hypercube"
cells() {
  local b
  echo "+shim witness: all_reduce -t 2|local|all_reduce|-t 2|witness:2"
  for b in $BINS; do echo "+$b -t 2|local|$b|-t 2|ok"; done
  echo "all_reduce -t 1|local|all_reduce|-t 1|ok"
  echo "+all_reduce -g 2|local|all_reduce|-g 2|ok"
  echo "all_reduce -t 2 -g 2|local|all_reduce|-t 2 -g 2|ok"
  echo "sendrecv -g 3|local|sendrecv|-g 3|ok"
  echo "+all_reduce -t 2 -G 2|local|all_reduce|-t 2 -G 2|ok"
  echo "reduce_scatter -t 2 -G 2|local|reduce_scatter|-t 2 -G 2|ok"
  echo "alltoall -t 2 -G 2|local|alltoall|-t 2 -G 2|ok"
  echo "sendrecv -g 2 -G 2|local|sendrecv|-g 2 -G 2|ok"
  echo "all_reduce -t 2 -z 1|local|all_reduce|-t 2 -z 1|ok"
  echo "all_reduce -t 2 -z 3|local|all_reduce|-t 2 -z 3|ok"
  echo "all_reduce -t 2 -m 4|local|all_reduce|-t 2 -m 4|ok"
  echo "all_reduce -t 2 -d all -o all|local|all_reduce|-t 2 -d all -o all|ok"
  echo "all_reduce -t 2 -y 1|local|all_reduce|-t 2 -y 1|ok"
  echo "all_gather -g 2 -y 1|local|all_gather|-g 2 -y 1|ok"
  echo "all_reduce -t 2 -p 1|local|all_reduce|-t 2 -p 1|ok"
  echo "reduce_scatter -t 2 -u 1|local|reduce_scatter|-t 2 -u 1|ok"
  echo "broadcast -t 3 -r 2|local|broadcast|-t 3 -r 2|ok"
  echo "all_gather -t 2 -R 1|local|all_gather|-t 2 -R 1|ok"
  echo "all_reduce -t 4 -e 64K -n 300|local|all_reduce|-t 4 -e 64K -n 300|ok"
  echo "all_reduce -t 2 -D 1 -R 2|local|all_reduce|-t 2 -D 1 -R 2|devapi"
  echo "all_reduce -t 2 -c 1|local|all_reduce|-t 2 -c 1|kernels"
  echo "+shim witness: mpirun -np 2 all_reduce -g 2|mpi|all_reduce|-g 2|witness:4"
  echo "+mpirun -np 2 all_reduce|mpi|all_reduce||ok"
  echo "mpirun -np 2 all_reduce -g 2|mpi|all_reduce|-g 2|ok"
  echo "mpirun -np 2 all_gather -t 2|mpi|all_gather|-t 2|ok"
  echo "mpirun -np 2 sendrecv|mpi|sendrecv||ok"
  echo "mpirun -np 2 alltoall -G 2|mpi|alltoall|-G 2|ok"
  echo "mpirun -np 2 hypercube|mpi|hypercube||ok"
  echo "mpirun -np 2 all_reduce -t 2 -e 64K -n 300|mpi|all_reduce|-t 2 -e 64K -n 300|ok"
}
selected() {
  cells | while IFS= read -r c; do
    [ $QUICK = 1 ] && [ "${c:0:1}" != + ] && continue
    c=${c#+}
    [ -n "$CELLS" ] && ! printf '%s\n' "${c%%|*}" | grep -qE -- "$CELLS" && continue
    printf '%s\n' "$c"
  done
}
if [ $LIST = 1 ]; then selected | cut -d'|' -f1; exit 0; fi

# --- prerequisites and build
[ -n "$SRC" ] || { echo "nccl-tests.sh: no checkout (--src DIR or NCG_NCCL_TESTS_SRC)" >&2; exit 2; }
[ -f "$SRC/src/common.cu" ] || { echo "nccl-tests.sh: $SRC is not an nccl-tests checkout (no src/common.cu)" >&2; exit 2; }
SRC=$(cd "$SRC" && pwd)
for f in "$NCG/libncclguard.so" "$NCG/fakecuda/libcudart.so.13" "$NCG/fakenccl/libnccl.so.2"; do
  [ -e "$f" ] || { echo "nccl-tests.sh: missing $f (build it: make)" >&2; exit 2; }
done
[ -x "$CUDA_HOME/bin/nvcc" ] || { echo "nccl-tests.sh: no $CUDA_HOME/bin/nvcc" >&2; exit 2; }
[ -f "$CUDA_HOME/include/nccl.h" ] || { echo "nccl-tests.sh: no $CUDA_HOME/include/nccl.h" >&2; exit 2; }
OUT_TMP=0 KEEP_OUT=0
if [ -z "$OUT" ]; then OUT=$(mktemp -d -t ncg-nccl-tests.XXXXXX) && OUT_TMP=1 || exit 2; fi
mkdir -p "$OUT" "$BUILD_DIR" || exit 2
OUT=$(cd "$OUT" && pwd)
# cleanup (at exit): the segments of this run's guarded processes whose process is gone (their
# command line names a binary under BUILD_DIR; a live one is never touched), and the default log
# directory unless something failed (KEEP_OUT=1: the FAIL lines and build errors point into it).
cleanup() {
  "$NCG/ncclguard" clean --quiet --grace 0 --match "$BUILD_DIR/" >/dev/null 2>&1
  [ $OUT_TMP = 1 ] && [ $KEEP_OUT = 0 ] && rm -rf "$OUT"
  return 0
}
trap cleanup EXIT
trap 'KEEP_OUT=1; exit 130' INT TERM
KEEP_OUT=1 # until the cells have run without a failure
MPI_HOME=${MPI_HOME:-}
if [ $MPI = 1 ] && command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
  if [ -z "$MPI_HOME" ]; then
    if [ -f /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h ]; then
      MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi
    else
      inc=$(mpicc --showme:incdirs 2>/dev/null | awk '{print $1}')
      [ -n "$inc" ] && MPI_HOME=$(dirname "$inc")
    fi
  fi
else
  [ $MPI = 1 ] && MPI_WHY="no mpicc/mpirun" || MPI_WHY="--no-mpi"
  MPI=0
fi
t0=$(date +%s.%N)
# build DIR LAUNCH [make args...]: the binaries the selected cells of LAUNCH (local, mpi) need
build() {
  local dir=$1 launch=$2 targets
  shift 2
  targets=$(selected | awk -F'|' -v l="$launch" -v d="$dir" '$2 == l {print d "/" $3 "_perf"}' | sort -u)
  [ -n "$targets" ] || return 0
  echo "building nccl-tests into $dir: $(echo "$targets" | xargs -n1 basename | xargs)"
  # shellcheck disable=SC2086 # targets are words
  make -C "$SRC/src" -j2 BUILDDIR="$dir" CUDA_HOME="$CUDA_HOME" NCCL_HOME="$CUDA_HOME" \
    NVCC_GENCODE="$NVCC_GENCODE" "$@" $targets >"$OUT/build-$(basename "$dir").log" 2>&1
}
build "$BUILD_DIR/plain" local || { tail -n 30 "$OUT/build-plain.log"; echo "nccl-tests.sh: build failed (log: $OUT/build-plain.log)" >&2; exit 2; }
if [ $MPI = 1 ]; then
  if ! build "$BUILD_DIR/mpi" mpi MPI=1 MPI_HOME="$MPI_HOME"; then
    tail -n 10 "$OUT/build-mpi.log"
    MPI=0 MPI_WHY="the MPI build failed (log: $OUT/build-mpi.log)"
  fi
fi
# The divergence: a patched copy of the checkout (never the checkout itself), MPI build only.
# The copy is made afresh in src-diverge.new and replaces src-diverge only when it differs, so
# that an unchanged checkout rebuilds nothing.
if [ $DIVERGE = 1 ] && [ $MPI = 1 ] && [ -z "$CELLS" ]; then
  rm -rf "$BUILD_DIR/src-diverge.new" && mkdir -p "$BUILD_DIR/src-diverge.new" &&
    tar -C "$SRC" --exclude=.git -cf - . | tar -C "$BUILD_DIR/src-diverge.new" -xf -
  call='NCCLCHECK(ncclAllReduce(sptr, rptr, count, type, op, comm, stream));'
  f=$BUILD_DIR/src-diverge.new/src/all_reduce.cu
  if grep -qF "$call" "$f" 2>/dev/null; then
    awk -v call="$call" '{ i = index($0, call)
      if (!i) { print; next }
      print substr($0, 1, i - 1) "{ static int ncg_n; int ncg_r = -1; const char *ncg_e = getenv(\"NCG_DIVERGE_RANK\");"
      print "  size_t ncg_c = count; ncclCommUserRank(comm, &ncg_r);"
      print "  if (ncg_e && ncg_r == atoi(ncg_e) && ++ncg_n == 5) ncg_c = count + 1; /* ncclguard divergence */"
      print "  NCCLCHECK(ncclAllReduce(sptr, rptr, ncg_c, type, op, comm, stream)); }" }' "$f" >"$f.new" && mv "$f.new" "$f"
    if diff -rq "$BUILD_DIR/src-diverge.new" "$BUILD_DIR/src-diverge" >/dev/null 2>&1; then
      rm -rf "$BUILD_DIR/src-diverge.new"
    else
      rm -rf "$BUILD_DIR/src-diverge" && mv "$BUILD_DIR/src-diverge.new" "$BUILD_DIR/src-diverge"
    fi
    echo "building the divergence (a patched all_reduce_perf) into $BUILD_DIR/mpi-diverge"
    make -C "$BUILD_DIR/src-diverge/src" -j2 BUILDDIR="$BUILD_DIR/mpi-diverge" CUDA_HOME="$CUDA_HOME" \
      NCCL_HOME="$CUDA_HOME" NVCC_GENCODE="$NVCC_GENCODE" MPI=1 MPI_HOME="$MPI_HOME" \
      "$BUILD_DIR/mpi-diverge/all_reduce_perf" >"$OUT/build-diverge.log" 2>&1 || { DIVERGE=0; DIVERGE_WHY="its build failed (log: $OUT/build-diverge.log)"; }
  else
    rm -rf "$BUILD_DIR/src-diverge.new"
    DIVERGE=0 DIVERGE_WHY="all_reduce.cu has no '$call' to patch (another nccl-tests version)"
  fi
else
  if [ $DIVERGE = 0 ]; then DIVERGE_WHY="--no-diverge"
  elif [ $MPI = 0 ]; then DIVERGE_WHY=${MPI_WHY:-no MPI build}
  else DIVERGE_WHY="--cells selects other cells"; fi
  DIVERGE=0
fi
tb=$(date +%s.%N)
build_s=$(awk -v s="$t0" -v e="$tb" 'BEGIN{printf "%.0f", e-s}')
if [ $BUILD_ONLY = 1 ]; then KEEP_OUT=0; echo "built in $build_s s"; exit 0; fi

# --- running
export LD_LIBRARY_PATH=$NCG/fakecuda:$NCG/fakenccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCLGUARD_REPORT_DIR=$OUT/reports
mkdir -p "$NCCLGUARD_REPORT_DIR"
PRELOAD=${NCG_PRELOAD:-$NCG/libncclguard.so}
unset FAKENCCL_ASYNC FAKENCCL_CUDA LD_PRELOAD
# run BASE MODE GUARD LAUNCH BIN ARGS...: one run (of the cell whose EXPECT is $expect): stdout
# in BASE.out, stderr in BASE.err, both in BASE.log (stderr after stdout); returns its status
run() {
  local log=$1 mode=$2 guard=$3 launch=$4 bin=$5; shift 5
  local env=() x=()
  [ "$mode" = async ] && env+=(FAKENCCL_ASYNC=1) x+=(-x FAKENCCL_ASYNC)
  [ "$guard" = guarded ] && env+=(LD_PRELOAD="$PRELOAD") x+=(-x LD_PRELOAD)
  [ "$guard" = guarded ] && [ "${expect%%:*}" = witness ] && env+=(NCCLGUARD_VERBOSE=2) x+=(-x NCCLGUARD_VERBOSE)
  if [ "$launch" = mpi ]; then
    env "${env[@]}" timeout -k 5 "$LIMIT" mpirun --oversubscribe --allow-run-as-root -np 2 \
      -x LD_LIBRARY_PATH -x NCCLGUARD_REPORT_DIR "${x[@]}" \
      "$BUILD_DIR/mpi/${bin}_perf" $SIZES "$@" </dev/null >"$log.out" 2>"$log.err"
  else
    env "${env[@]}" timeout -k 5 "$LIMIT" "$BUILD_DIR/plain/${bin}_perf" $SIZES "$@" </dev/null \
      >"$log.out" 2>"$log.err"
  fi
  local rc=$?
  cat "$log.out" "$log.err" >"$log.log"
  return $rc
}
# What may differ between two healthy runs: the timing columns of a result row (time, algbw,
# busbw, out of place and in place: the last 8 fields but each #wrong; the redop column is
# blank for some tests), the average bandwidth, pids; and the order of stderr lines against
# stdout and among threads and ranks (stderr is compared sorted).
mask() {
  awk '!/^#/ && $1 ~ /^[0-9]+$/ && NF >= 12 {
         $(NF-7) = $(NF-6) = $(NF-5) = $(NF-3) = $(NF-2) = $(NF-1) = "T" }
       /^# Avg bus bandwidth/ { sub(/:.*/, ": T") }
       { gsub(/Pid +[0-9]+/, "Pid P"); gsub(/pid [0-9]+/, "pid P"); print }' "$1"
}
pass=0 fail=0 skip=0
echo "nccl-tests: $SRC, binaries in $BUILD_DIR (built in ${build_s} s), logs in $OUT"
tr0=$(date +%s.%N)
while IFS='|' read -r name launch bin args expect; do
  for mode in $MODES; do
    id=$(printf '%s-%s' "$mode" "$name" | tr -c 'A-Za-z0-9_.-' '_')
    label=$(printf '%-5s %-44s' "$mode" "$name")
    if [ "$launch" = mpi ] && [ $MPI = 0 ]; then
      echo "SKIP $label ${MPI_WHY:-no MPI build}"; skip=$((skip + 1)); continue
    fi
    s=$(date +%s.%N)
    # shellcheck disable=SC2086 # ARGS are words
    run "$OUT/$id.bare" "$mode" bare "$launch" "$bin" $args; rb=$?
    # shellcheck disable=SC2086
    run "$OUT/$id.guarded" "$mode" guarded "$launch" "$bin" $args; rg=$?
    secs=$(awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')
    for g in bare guarded; do
      { mask "$OUT/$id.$g.out"; echo "--- stderr, sorted"; mask "$OUT/$id.$g.err" | sort; } \
        >"$OUT/$id.$g.masked"
    done
    why=""
    case "$expect" in
      devapi)
        # ncclDevCommCreate refused (ncclInvalidUsage): a clean test failure, not a crash
        [ $rb -ne 0 ] && [ $rb -lt 124 ] || why="bare: exit $rb (want a test failure, 1..123)"
        grep -q "Test NCCL failure .*'invalid usage" "$OUT/$id.bare.log" || why=${why:-"bare: no 'invalid usage' failure"}
        ;;
      *)
        [ $rb -eq 0 ] || why="bare: exit $rb"
        grep -q '^# Out of bounds values : 0 OK' "$OUT/$id.bare.log" || why=${why:-"bare: no '# Out of bounds values : 0 OK'"}
        ;;
    esac
    grep -q 'fakecuda CPU device' "$OUT/$id.bare.log" || why=${why:-"bare: not on the CPU runtime (no 'fakecuda CPU device')"}
    if [ "$expect" = kernels ]; then
      n=$(grep -c '^fakecuda: kernel .* launched; kernels do not run on the CPU runtime' "$OUT/$id.bare.log")
      want=1; [ "$launch" = mpi ] && want=2
      [ "$n" = $want ] || why=${why:-"bare: $n kernel lines, want $want (one per process)"}
    fi
    [ -z "$why" ] && [ $rg -ne $rb ] && why="guarded: exit $rg, bare $rb"
    if [ "${expect%%:*}" = witness ]; then
      n=$(grep -cE "^ncclguard: comm .* rank [0-9]+/${expect#*:}\$" "$OUT/$id.guarded.err")
      [ -z "$why" ] && [ "$n" != "${expect#*:}" ] &&
        why="guarded: the shim reported $n of ${expect#*:} ranks' communicators (NCCLGUARD_VERBOSE=2)"
      grep -v '^ncclguard: ' "$OUT/$id.guarded.err" >"$OUT/$id.guarded.err.app"
      { mask "$OUT/$id.guarded.out"; echo "--- stderr, sorted"; mask "$OUT/$id.guarded.err.app" | sort; } \
        >"$OUT/$id.guarded.masked"
    else
      [ -z "$why" ] && grep -q ncclguard "$OUT/$id.guarded.log" && why="guarded: ncclguard said: $(grep -m1 ncclguard "$OUT/$id.guarded.log")"
    fi
    if [ -z "$why" ] && ! diff "$OUT/$id.bare.masked" "$OUT/$id.guarded.masked" >"$OUT/$id.diff"; then
      why="bare and guarded outputs differ ($(grep -c '^[<>]' "$OUT/$id.diff") lines: $OUT/$id.diff)"
    fi
    if [ -z "$why" ]; then
      echo "PASS $label (${secs} s)"; pass=$((pass + 1))
    else
      echo "FAIL $label $why (logs: $OUT/$id.*.log)"; fail=$((fail + 1))
    fi
  done
done < <(selected)
# The divergence cells: guarded only (bare, the job would hang), NCCL mode sync then async.
# diverge NAME ODD ARGS...: comm rank ODD of 2 processes (x ranks per process) diverges.
diverge() {
  local name=$1 odd=$2; shift 2
  for mode in $MODES; do
    local label id why=""
    label=$(printf '%-5s %-44s' "$mode" "divergence: $name")
    id=$(printf '%s-diverge-%s' "$mode" "$name" | tr -c 'A-Za-z0-9_.-' '_')
    if [ $DIVERGE = 0 ]; then echo "SKIP $label ${DIVERGE_WHY:-}"; skip=$((skip + 1)); continue; fi
    rm -rf "$OUT/$id.reports" && mkdir -p "$OUT/$id.reports"
    local env=(NCG_DIVERGE_RANK="$odd" LD_PRELOAD="$PRELOAD" NCCLGUARD_REPORT_DIR="$OUT/$id.reports")
    [ "$mode" = async ] && env+=(FAKENCCL_ASYNC=1)
    env "${env[@]}" timeout -k 5 "$LIMIT" mpirun --oversubscribe --allow-run-as-root -np 2 \
      -x LD_LIBRARY_PATH -x NCCLGUARD_REPORT_DIR -x LD_PRELOAD -x NCG_DIVERGE_RANK \
      $([ "$mode" = async ] && echo -x FAKENCCL_ASYNC) \
      "$BUILD_DIR/mpi-diverge/all_reduce_perf" $SIZES "$@" </dev/null >"$OUT/$id.log" 2>&1
    local rc=$? n
    n=$(grep -cE '^ncclguard: VERDICT: MISMATCH' "$OUT/$id.log")
    [ $rc -ne 0 ] || why="exit 0 (want the verdict's 86)"
    [ $rc -ne 124 ] || why="timed out: no verdict ended it"
    # (the headline names launcher ranks, the comm rank beside where they differ: with -g 2,
    # comm rank 3 is in global rank 1)
    grep -qE "^ncclguard: VERDICT: MISMATCH on comm [0-9a-f]+ \([0-9]+ ranks\): slot [0-9]+: AllReduce\(count=[0-9]+, .*\) on (rank $odd|global rank [0-9]+ \(comm rank $odd\)) vs AllReduce\(.*\) on (ranks? [-0-9,]+|global ranks? [-0-9,]+ \(comm ranks? [-0-9,]+\))\$" "$OUT/$id.log" ||
      why=${why:-"no MISMATCH naming comm rank $odd alone"}
    grep -qE "^ncclguard:   this process \(comm rank $odd, .*\): slot [0-9]+ AllReduce" "$OUT/$id.log" ||
      why=${why:-"comm rank $odd did not speak for itself"}
    awk -v r="comm rank $odd," '/^ncclguard: VERDICT:/ { buf = "" } { buf = buf $0 "\n" } index($0, r) { on = 1 } on && /^ncclguard:   action:/ { printf "%s", buf; exit }' "$OUT/$id.log" |
      grep -q 'differs:$' || why=${why:-"comm rank $odd's full block missing"}
    [ "$(ls "$OUT/$id.reports" | grep -c '^ncclguard-report\.')" = 2 ] || why=${why:-"$(ls "$OUT/$id.reports" | wc -l) reports, want 2 (one per process)"}
    if [ -z "$why" ]; then
      echo "PASS $label (mpirun exit $rc, $n diagnostics)"; pass=$((pass + 1))
    else
      echo "FAIL $label $why (log: $OUT/$id.log)"; fail=$((fail + 1))
    fi
  done
}
if [ -z "$CELLS" ] || [ $DIVERGE = 0 ]; then
  diverge "mpirun -np 2 all_reduce, rank 1" 1
  diverge "mpirun -np 2 all_reduce -g 2, rank 3" 3 -g 2
fi
v=$(cat "$OUT"/*.bare.out 2>/dev/null | grep -m1 '^# nccl-tests version')
[ -n "$v" ] && echo "$v"
run_s=$(awk -v s="$tr0" -v e="$(date +%s.%N)" 'BEGIN{printf "%.0f", e-s}')
logs="logs in $OUT"
if [ $fail -eq 0 ] && [ $OUT_TMP = 1 ]; then KEEP_OUT=0 logs="logs removed (nothing failed; --out DIR keeps them)"; fi
echo "nccl-tests matrix ($MODES): $pass passed, $fail failed, $skip skipped in ${run_s} s (build ${build_s} s); $logs"
[ $fail -eq 0 ]
