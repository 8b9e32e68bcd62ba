# Devices (FAKECUDA_DEVICES, CUDA_VISIBLE_DEVICES as CUDA reads it), per-thread current device,
# properties, attributes, versions, memory and pointer attributes, argument errors and the
# last error, priorities, detection by dlsym(RTLD_DEFAULT, "cudaLaunchHostFunc"), fork.
. "$NCG_ROOT/tests/fakecuda/lib.sh"
need "$FC_T/api"
# TSan refuses threads in a child of a multi-threaded process unless told otherwise
case "${NCG_SANITIZER:-}" in *thread*) export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}die_after_fork=0" ;; esac
run "$FC_T/api"
[ $rc -eq 0 ] || fail "api: exit $rc: $out"
for w in "basics ok" "dlsym ok" "fork ok"; do
  echo "$out" | grep -q "api: $w" || fail "api: no '$w': $out"
done
count() { env -u CUDA_VISIBLE_DEVICES -u FAKECUDA_DEVICES "$@" "$FC_T/api" count; }
check() { local want=$1; shift; got=$(count "$@"); [ "$got" = "$want" ] || fail "$*: got '$got', want '$want'"; }
check "8 cudaSuccess"
check "3 cudaSuccess" FAKECUDA_DEVICES=3
check "0 cudaErrorNoDevice" FAKECUDA_DEVICES=0
check "2 cudaSuccess" CUDA_VISIBLE_DEVICES=5,1
check "1 cudaSuccess" CUDA_VISIBLE_DEVICES=" 3"
check "4 cudaSuccess" CUDA_VISIBLE_DEVICES=0,1,2,3
check "2 cudaSuccess" CUDA_VISIBLE_DEVICES=0,1,9,2   # stops at the first invalid entry
check "1 cudaSuccess" CUDA_VISIBLE_DEVICES=0,0,1     # ... and at a repeat
check "2 cudaSuccess" CUDA_VISIBLE_DEVICES=GPU-aaaa,MIG-bbbb
check "0 cudaErrorNoDevice" CUDA_VISIBLE_DEVICES=
check "0 cudaErrorNoDevice" CUDA_VISIBLE_DEVICES=-1
check "2 cudaSuccess" FAKECUDA_DEVICES=2 CUDA_VISIBLE_DEVICES=0,1,2,3
# the API test with fewer devices still finds two
run env FAKECUDA_DEVICES=2 "$FC_T/api"
[ $rc -eq 0 ] || fail "api with 2 devices: exit $rc: $out"
echo "ok"
