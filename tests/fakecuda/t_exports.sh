# Soname libcudart.so.13; every export is a cuda* (or nvcc's __cuda*) function in the genuine
# version node libcudart.so.13, and the genuine library exports it too (same name, same
# version); nothing else leaks. The test programs are linked against the genuine library yet
# run on the fake.
. "$NCG_ROOT/tests/fakecuda/lib.sh"
command -v nm >/dev/null && command -v readelf >/dev/null || { echo "binutils not installed"; exit 77; }
readelf -d "$FC_LIB" | grep -q 'SONAME.*\[libcudart.so.13\]' || fail "soname is not libcudart.so.13"
readelf -V "$FC_LIB" | grep -q 'Flags: none.*Name: libcudart.so.13' || fail "no version node libcudart.so.13"
got=$(nm -D --defined-only "$FC_LIB" | awk '{print $3}' | sort)
bad=$(echo "$got" | grep -Ev '^(__)?cuda[A-Za-z_]*@@libcudart\.so\.13$' | grep -v '^libcudart\.so\.13$' || true)
[ -z "$bad" ] || fail "unexpected exports: $bad"
n=$(echo "$got" | grep -c '^cuda')
[ "$n" -ge 50 ] || fail "only $n cuda* exports"
[ -e "$NCG_BUILD/fakecuda/libcudart.so" ] || fail "no libcudart.so symlink"
if [ -f "$REAL_CUDART" ]; then
  real=$(nm -D --defined-only "$REAL_CUDART" | awk '{print $3}' | sort)
  missing=$(comm -23 <(echo "$got" | grep -E '^(__)?cuda') <(echo "$real"))
  [ -z "$missing" ] || fail "exported but not by the genuine library: $missing"
  objdump -p "$FC_T/hang" | grep -q 'NEEDED.*libcudart.so.13' || fail "hang does not need libcudart.so.13"
  nm -D "$FC_T/hang" | grep -q 'cudaLaunchHostFunc@libcudart.so.13' ||
    fail "hang was not linked against the genuine versioned library"
fi
echo "ok: $n symbols"
