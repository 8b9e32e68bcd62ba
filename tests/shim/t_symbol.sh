# Symbolization is never wrong (interpose/inspect/symbol.c): a frame is named only when its address lies
# inside that symbol, else it reads module+offset. Every address of a test module (a static
# function between two exported ones), of its stripped copy, of libffi (where the nearest
# exported symbol below ctypes' call trampoline is ffi_prep_go_closure, 69 bytes long) and of a
# Python caller's stack through ctypes is checked against the module's own tables (nm -S).
. "$NCG_ROOT/tests/shim/lib.sh"
D=$NCG_BUILD/tests/shim
need "$D/symtest" "$D/libsymmod.so" "$D/libsymmod_stripped.so" "$D/libsymtest.so"
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
command -v nm >/dev/null || { echo "nm (binutils) not installed"; exit 77; }
check() { python3 "$NCG_ROOT/tests/shim/symcheck.py" <"$1" >"$1.chk" || { cat "$1.chk"; fail "$2"; }; tail -n 1 "$1.chk"; }

"$D/symtest" sweep "$D/libsymmod.so" 1 >"$NCG_TMP/mod" || fail "sweep of libsymmod.so"
check "$NCG_TMP/mod" "libsymmod.so: a name outside its symbol"
read -r first hidden last < <("$D/symtest" addrs "$D/libsymmod.so" | tr '\n' ' ')
# with .symtab the static function is named at its own address ...
grep -q " $hidden symmod_hidden+0x0 " "$NCG_TMP/mod" || fail "static function not named from .symtab"
"$D/symtest" sweep "$D/libsymmod_stripped.so" 1 >"$NCG_TMP/strip" || fail "sweep of the stripped copy"
check "$NCG_TMP/strip" "stripped module: a name outside its symbol"
# ... stripped, it is module+offset (never symmod_first, the exported symbol just below it)
grep -qE " $hidden libsymmod_stripped\.so\+$hidden( at |\$)" "$NCG_TMP/strip" \
  || { grep " $hidden " "$NCG_TMP/strip"; fail "static function in the stripped module not module+offset"; }
grep -q " $first symmod_first+0x0 " "$NCG_TMP/strip" || fail "exported function not named in the stripped module"
grep -q " $last symmod_last+0x0 " "$NCG_TMP/strip" || fail "exported function not named in the stripped module"

ffi=$(ldconfig -p 2>/dev/null | awk '/libffi\.so\.8 /{print $NF; exit}')
if [ -n "$ffi" ]; then
  "$D/symtest" sweep "$ffi" 1 >"$NCG_TMP/ffi" || fail "sweep of $ffi"
  check "$NCG_TMP/ffi" "libffi: a name outside its symbol"
else
  echo "libffi.so.8 not installed: its sweep skipped"
fi
# A Python caller through ctypes: the frames of libffi's trampoline have no symbol of their own
env LD_PRELOAD="$SANPRE" "$PY3" -c "import ctypes, sys; ctypes.CDLL(sys.argv[1]).symtest_frames()" "$D/libsymtest.so" \
  >"$NCG_TMP/py" 2>&1 || { cat "$NCG_TMP/py"; fail "ctypes caller"; }
cat "$NCG_TMP/py"
grep -q ' symtest_frames+0x' "$NCG_TMP/py" || fail "no frame of the ctypes-called function"
check "$NCG_TMP/py" "ctypes caller: a name outside its symbol"
# file:line from DWARF through libdw when it is there (libsymtest.so is built with -g)
if ldconfig -p 2>/dev/null | grep -q 'libdw\.so\.1 '; then
  grep -qE ' symtest_frames\+0x[0-9a-f]+ \(libsymtest\.so\+0x[0-9a-f]+\) at symtest\.c:[0-9]+$' "$NCG_TMP/py" \
    || fail "no file:line for a module built with -g"
else
  echo "libdw.so.1 not installed: file:line not checked"
fi
# libdw absent (here: a file of that name that is no library, found first): names as before,
# no file:line, and with NCCLGUARD_VERBOSE=1 one line says so
mkdir -p "$NCG_TMP/nodw" && : >"$NCG_TMP/nodw/libdw.so.1"
LD_LIBRARY_PATH=$NCG_TMP/nodw LD_PRELOAD="$SANPRE" "$PY3" -c "import ctypes, sys; ctypes.CDLL(sys.argv[1]).symtest_frames()" \
  "$D/libsymtest.so" >"$NCG_TMP/py2" 2>&1 || { cat "$NCG_TMP/py2"; fail "ctypes caller without libdw"; }
grep -qE ' symtest_frames\+0x[0-9a-f]+ \(libsymtest\.so\+0x[0-9a-f]+\)$' "$NCG_TMP/py2" || { cat "$NCG_TMP/py2"; fail "without libdw: frame"; }
! grep -q ' at [^ ]*:[0-9]*$' "$NCG_TMP/py2" || fail "without libdw: file:line printed"
SCEN=$NCG_BUILD/tests/checker/scen
if [ -x "$SCEN" ]; then
  LD_LIBRARY_PATH=$NCG_TMP/nodw:$FAKE_DIR NCCLGUARD_VERBOSE=1 NCCLGUARD_REPORT_DIR=$NCG_TMP LD_PRELOAD="$NCG_PRELOAD" \
    timeout 60 "$LAUNCH" -n 4 -t 30 "$SCEN" count >"$NCG_TMP/nodw.out" 2>&1
  [ "$(grep -c '^ncclguard: libdw.so.1 not found (Debian: libdw1): call sites without file:line$' "$NCG_TMP/nodw.out")" -ge 1 ] \
    || { tail -n 30 "$NCG_TMP/nodw.out"; fail "no verbose line for a missing libdw"; }
  grep -qE '^ncclguard: VERDICT: MISMATCH' "$NCG_TMP/nodw.out" || fail "verdict without libdw"
  ! grep -qE ' at [^ ]+\.c:[0-9]+' "$NCG_TMP/nodw.out" || fail "file:line without libdw"
fi
echo "symbolization ok"
