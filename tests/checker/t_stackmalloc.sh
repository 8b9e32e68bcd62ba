# The stack capture interrupts threads spinning in malloc/free (issue 13, item 5): the signal
# handler only copies the registers and parks the thread while the checker thread walks its
# stack (no allocation, lock or first TLS touch in the handler, which could deadlock a thread
# interrupted inside malloc). Under NCCLGUARD_ACTION=warn the survivors of a SIGKILLed rank
# print their stacks, taken inside malloc or free, and go on spinning to the end. Three times.
. "$NCG_ROOT/tests/checker/lib.sh"
# every rank's full block is checked (the default prints it on two ranks)
export NCCLGUARD_DIAG=full
case "${NCG_SANITIZER:-}" in *thread*)
  echo "ThreadSanitizer defers asynchronous signals to its own safe points: no stacks under TSan"; exit 77;; esac
for i in 1 2 3; do
  NCCLGUARD_ACTION=warn guarded "$NCG_TMP/out$i" "$LAUNCH" -n 4 -t 40 "$SCEN" mallocspin 3
  expect "$RC" 137 "run $i: only the killed rank fails"
  expect "$(nlines '^ncclguard: VERDICT: RANK DIED on comm [0-9a-f]+ \(4 ranks\): rank 1 died')" 3 "run $i: survivors' diagnostics"
  expect "$(nlines '^ncclguard:   stack of thread')" 3 "run $i: survivors' stacks"
  expect "$(nlines '^scen: rank [023] spun [0-9]+ mallocs$')" 3 "run $i: no survivor left hung"
  # glibc's allocator, or the sanitizer's (ASan replaces malloc; its C++ frames come out
  # demangled, __asan::... and __sanitizer::..., or mangled where no demangler is found)
  [ "$(nlines '^ncclguard:     #[0-9] (malloc|free|__libc_free|__libc_malloc|_int_malloc|_int_free|__default_morecore|tcache|_ZN6__asan|_ZN11__sanitizer|__asan::|__sanitizer::)')" -ge 1 ] ||
    fail "run $i: no stack taken inside malloc/free"
done
echo "stacks in malloc ok"
