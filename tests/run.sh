#!/usr/bin/env bash
# Runs every test script tests/*/t_*.sh (or those given as arguments) with a time limit each.
# A script passes with exit 0, is skipped with exit 77, fails otherwise. Environment given to
# each script: NCG_ROOT (repo), NCG_BUILD (build dir), NCG_PRELOAD (what LD_PRELOAD needs for
# the shim, sanitizer runtime first), NCG_SANITIZER, NCG_TMP (a fresh scratch dir).
# A script whose header has the line "# ncg-modes: sync async" runs once per NCCL mode, with
# NCG_NCCL_MODE=sync (the CPU NCCL's calls complete before returning) or =async (they enqueue
# on CUDA streams of the CPU CUDA runtime, FAKENCCL_ASYNC=1); NCG_MODES="sync" (or "async")
# restricts that matrix. Ends with the line "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
export NCG_ROOT=$PWD
export NCG_BUILD=${NCG_BUILD:-build}
export NCG_SANITIZER=${NCG_SANITIZER:-}
case "$NCG_BUILD" in /*) ;; *) NCG_BUILD=$NCG_ROOT/$NCG_BUILD ;; esac
pre=""
case "$NCG_SANITIZER" in
  *address*) pre="$(${CC:-cc} -print-file-name=libasan.so) " ;;
  *thread*) pre="$(${CC:-cc} -print-file-name=libtsan.so) " ;;
  *undefined*) pre="$(${CC:-cc} -print-file-name=libubsan.so) " ;;
esac
export NCG_PRELOAD="${pre}$NCG_BUILD/libncclguard.so"
# Time bounds in the tests are multiplied by NCG_SLOW: ThreadSanitizer runs everything several
# times slower (the bounds are the product's promises on a normal build).
case "$NCG_SANITIZER" in *thread*) export NCG_SLOW=${NCG_SLOW:-3} ;; *) export NCG_SLOW=${NCG_SLOW:-1} ;; esac
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:verify_asan_link_order=0:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
limit=${NCG_TEST_TIMEOUT:-300}

if [ $# -gt 0 ]; then tests=("$@"); else tests=(tests/*/t_*.sh); fi
modes_allowed=${NCG_MODES:-sync async}
pass=0 fail=0 skip=0 failed=()
for t in "${tests[@]}"; do
  [ -f "$t" ] || continue
  modes=$(sed -n 's/^# ncg-modes: *//p' "$t" | head -n 1)
  [ -z "$modes" ] && modes=-
  for mode in $modes; do
    name=$t
    if [ "$mode" != - ]; then
      case " $modes_allowed " in *" $mode "*) ;; *) continue ;; esac
      name="$t [$mode]"
    fi
    export NCG_TMP NCG_NCCL_MODE=${mode/-/sync}
    NCG_TMP=$(mktemp -d /tmp/ncgtest.XXXXXX)
    # Verdict reports of jobs a script runs without naming a directory land in its scratch
    # directory, not in the checkout.
    export NCCLGUARD_REPORT_DIR=$NCG_TMP
    start=$(date +%s.%N)
    log=$NCG_TMP/log
    timeout -k 10 "$limit" bash "$t" >"$log" 2>&1
    rc=$?
    secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')
    if [ $rc -eq 0 ]; then pass=$((pass+1)); echo "PASS $name (${secs}s)"
    elif [ $rc -eq 77 ]; then skip=$((skip+1)); echo "SKIP $name: $(tail -n 1 "$log")"
    else
      fail=$((fail+1)); failed+=("$name")
      [ $rc -eq 124 ] && echo "FAIL $name (timed out after ${limit}s)" || echo "FAIL $name (exit $rc, ${secs}s)"
      sed 's/^/    | /' "$log" | tail -n 60
    fi
    rm -rf "$NCG_TMP"
    # Ranks a test killed on purpose (SIGKILL) or ended by a verdict leave their segments:
    # reclaim them so a long run does not fill /dev/shm. Only segments of processes that are gone
    # and ran a program of this build or checkout (their command line names $NCG_BUILD or
    # $NCG_ROOT/tests/) are touched: a stale segment could be taken for a new process's once
    # its pid is reused.
    # Python jobs' command lines name the test script (tests/python/train.py), not the build.
    if [ -x "$NCG_BUILD/ncclguard" ]; then
      "$NCG_BUILD/ncclguard" clean --grace 0 --match "$NCG_BUILD/" >/dev/null 2>&1
      "$NCG_BUILD/ncclguard" clean --grace 0 --match "$NCG_ROOT/tests/" >/dev/null 2>&1
    fi
  done
done
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
