# A program built by nvcc against the genuine headers and runtime runs on the CPU runtime:
# registration before main, <<<>>> and cudaLaunchKernel launches (checked, run nothing),
# cudaMemGetInfo, cudaDeviceReset; the first launch is named once on stderr, never again.
. "$NCG_ROOT/tests/fakecuda/lib.sh"
[ -x /usr/local/cuda/bin/nvcc ] || { echo "no /usr/local/cuda/bin/nvcc: the nvcc-built program is not built"; exit 77; }
case "${NCG_SANITIZER:-}" in *thread*)
  echo "nvcc's host compiler builds the program without ThreadSanitizer, and TSan's runtime loaded by the runtime library into an uninstrumented program crashes (the ASan pass runs it)"; exit 77 ;;
esac
need "$FC_T/kernel"
nm -D "$FC_T/kernel" | grep -q '__cudaRegisterFunction@libcudart.so.13' ||
  fail "kernel was not linked against the genuine versioned runtime (no __cudaRegisterFunction@libcudart.so.13)"
run "$FC_T/kernel"
[ $rc -eq 0 ] || fail "kernel: exit $rc: $out"
echo "$out" | grep -qx 'kernel: ok' || fail "kernel: no 'kernel: ok': $out"
n=$(echo "$out" | grep -c '^fakecuda: kernel .* launched; kernels do not run on the CPU runtime')
[ "$n" -eq 1 ] || fail "launch line printed $n times, want once: $out"
echo "$out" | grep -q '^fakecuda: kernel _Z4fillPii launched' || fail "launch line does not name the kernel _Z4fillPii: $out"
echo "ok"
