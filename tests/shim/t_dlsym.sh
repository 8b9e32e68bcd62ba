# NCCL reached only through dlopen(RTLD_LOCAL) + dlsym/dlvsym (how ctypes bindings such as
# vLLM's pynccl call it): the shim's dlsym hands out its wrappers for libnccl's API functions, so
# the calls are recorded and a divergence is caught; everything else is the real lookup (pnccl*,
# unknown names, a non-NCCL library's own ncclAllReduce, RTLD_NEXT/RTLD_DEFAULT for the caller),
# and NCCLGUARD=0 returns the real answer.
. "$NCG_ROOT/tests/shim/lib.sh"
P=$NCG_BUILD/tests/shim/dlsym_nccl
OWN=$NCG_BUILD/tests/shim/libown_nccl.so
need "$P" "$SHIMLIB" "$LAUNCH"
export LD_LIBRARY_PATH=$FAKE_DIR NCG_OWN_LIB=$OWN
check() { # MODE(on|off|plain) KEY WANT
  got=$(awk -v k="$2" '$1" "$2 == k { print $3 }' "$NCG_TMP/$1")
  [ "$got" = "$3" ] || { cat "$NCG_TMP/$1"; fail "$1: $2 resolved to '$got', want '$3'"; }
}
"$P" check >"$NCG_TMP/plain" 2>&1 || fail "without the shim"
LD_PRELOAD="$NCG_PRELOAD" "$P" check >"$NCG_TMP/on" 2>&1 || { cat "$NCG_TMP/on"; fail "with the shim"; }
LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD=0 "$P" check >"$NCG_TMP/off" 2>&1 || fail "NCCLGUARD=0"
cat "$NCG_TMP/on"
for k in "handle ncclAllReduce" "handle ncclGetVersion" "default ncclAllReduce"; do
  check on "$k" libncclguard.so
done
# Under a sanitizer runtime the shim answers RTLD_NEXT as glibc does from itself (interpose/
# dlsym.c, docs/shim.md): the caller-relative checks apply to plain builds only.
if [ -z "${NCG_SANITIZER:-}" ]; then
  check on "next ncclAllReduce" libncclguard.so
  check on "next malloc" libc.so.6
  check on "default printf" libc.so.6
fi
check plain "handle ncclAllReduce" libnccl.so.2
check on "handle pncclAllReduce" libnccl.so.2
# the device API is not wrapped: the library's own (the CPU NCCL has it, refusing with
# ncclInvalidUsage, as NCCL 2.28 does on a host without the device support)
check on "handle ncclDevCommCreate" libnccl.so.2
check on "handle nosuch" NULL
check on "vsym dlsym" libc.so.6
check on "vsym memcpy" libc.so.6
[ -e "$OWN" ] && check on "own ncclAllReduce" libown_nccl.so
# NCCLGUARD=0: every lookup on libnccl's handle is libnccl's own
check off "handle ncclAllReduce" libnccl.so.2
check off "handle ncclGetVersion" libnccl.so.2
! grep -q '^ncclguard:' "$NCG_TMP/on" "$NCG_TMP/off" || fail "ncclguard output from lookups alone"
# A healthy run through the looked-up functions: no verdict; then rank 1 diverges at step 5.
REP=$NCG_TMP/rep; mkdir -p "$REP"
env LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_REPORT_DIR="$REP" "$LAUNCH" -n 4 -t 60 "$P" run 20 >"$NCG_TMP/ok" 2>&1 \
  || { cat "$NCG_TMP/ok"; fail "healthy run"; }
! grep -q '^ncclguard:' "$NCG_TMP/ok" || { cat "$NCG_TMP/ok"; fail "healthy run: ncclguard output"; }
[ "$(grep -c 'done 20 steps' "$NCG_TMP/ok")" = 4 ] || fail "healthy run: not every rank finished"
start=$(date +%s.%N)
env LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_REPORT_DIR="$REP" "$LAUNCH" -n 4 -t 60 "$P" run 20 5 >"$NCG_TMP/bad" 2>&1
rc=$?
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')
[ $rc = 86 ] || { cat "$NCG_TMP/bad"; fail "divergence: launcher status $rc, want 86"; }
[ "$(grep -cE '^ncg-launch: rank [0-9]+ exited with status 86$' "$NCG_TMP/bad")" = 4 ] || fail "not every rank exited 86"
[ "$(grep -cE '^ncclguard: VERDICT: MISMATCH .*slot 5: Broadcast\(count=64, float32, root=0\) on rank 1 vs AllReduce\(count=64, float32, sum\) on ranks 0,2-3$' "$NCG_TMP/bad")" = 4 ] \
  || { cat "$NCG_TMP/bad"; fail "diagnostic headline"; }
echo "divergence caught in ${secs}s"
echo "dlsym ok"
