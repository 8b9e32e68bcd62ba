# ncg-modes: sync async
# The loaded NCCL release (interpose/shim/libver*.c): at the first communicator the shim reads
# the library's ncclGetVersion and its dynamic symbol table, and one process (the launcher's
# rank 0) prints one line naming the NCCL API functions the library exports that this build
# does not know. Checked on the CPU NCCL rebuilt with an extra ncclFooBar (and its pncclFooBar
# twin, as NCCL_API defines them; ncclFooHelper, without a twin, is not API and not named), on
# the CPU NCCL as built, and, by the same rule applied to `nm -D`, on the genuine libnccl.so.2
# (its ncclCommInitRank needs a GPU, so the shim's own reading of it is not run here).
. "$NCG_ROOT/tests/shim/lib.sh"
REL=$NCG_BUILD/tests/shim/libver_test
need "$SHIMLIB" "$LAUNCH" "$CALLS" "$REL" "$FAKE_DIR/libnccl.so.2"
export NCG_ID_TIMEOUT_S=60
"$REL" || fail "libver_test"
command -v nm >/dev/null || { echo "no nm (binutils): the library checks need it"; exit 77; }
exported() { nm -D --defined-only "$1" | awk '$2 ~ /^[TtWwiI]$/ {print $3}'; }

# The CPU NCCL's objects, linked again with one function more (and a helper without a twin).
lib=$NCG_TMP/foobar
mkdir -p "$lib"
cat >"$lib/foobar.c" <<'EOF'
int pncclFooBar(int x) { return x + 1; }
int ncclFooBar(int x) __attribute__((weak, alias("pncclFooBar")));
int ncclFooHelper(int x) { return x - 1; }
EOF
cc -O1 -fPIC -c -o "$lib/foobar.o" "$lib/foobar.c" || fail "build foobar.o"
cc -shared -Wl,-soname,libnccl.so.2 -Wl,--version-script="$NCG_ROOT/tests/fakenccl/libnccl.map" \
  -o "$lib/libnccl.so.2" "$FAKE_DIR"/obj/*.o "$lib/foobar.o" -lm -lpthread -ldl \
  || fail "link the CPU NCCL with ncclFooBar"

# run LABEL LIBDIR [env...]: 2 ranks of calls' bcast scenario on the NCCL in LIBDIR, guarded.
run() {
  local label=$1 dir=$2; shift 2
  env LD_LIBRARY_PATH="$dir" LD_PRELOAD="$NCG_PRELOAD" "$@" "$LAUNCH" -n 2 -t 60 -- "$CALLS" bcast \
    >"$NCG_TMP/$label.out" 2>"$NCG_TMP/$label.err" || { cat "$NCG_TMP/$label.err"; fail "$label: run"; }
  [ "$(grep -c 'bcast ok' "$NCG_TMP/$label.out")" = 2 ] || fail "$label: not every rank finished"
  grep 'does not know' "$NCG_TMP/$label.err" >"$NCG_TMP/$label.lines" || true
}
# The list the line names, one a line.
named() { sed -n 's/.*pass[es]* through unchecked: //p' "$1" | tr -d ' ' | tr ',' '\n'; }

run foobar "$lib"
cat "$NCG_TMP/foobar.lines"
[ "$(wc -l <"$NCG_TMP/foobar.lines")" = 1 ] || { cat "$NCG_TMP/foobar.err"; fail "foobar: expected exactly one line (rank 0's)"; }
grep -q '^ncclguard: NCCL 2\.[0-9]*\.[0-9]* (.*libnccl\.so\.2) exports' "$NCG_TMP/foobar.lines" \
  || fail "foobar: the line should name the version and the library"
named "$NCG_TMP/foobar.lines" | grep -qx ncclFooBar || fail "foobar: ncclFooBar not named"
named "$NCG_TMP/foobar.lines" | grep -q ncclFooHelper && fail "foobar: ncclFooHelper (no pnccl twin) named"
# What the shim read in memory = the same rule over the file's table as nm reads it.
exported "$lib/libnccl.so.2" >"$NCG_TMP/foobar.syms"
"$REL" unknown "$NCG_TMP/foobar.syms" >"$NCG_TMP/foobar.want" || fail "libver_test unknown"
diff <(named "$NCG_TMP/foobar.lines") "$NCG_TMP/foobar.want" || fail "foobar: the line differs from nm's table"

# NCCLGUARD_VERBOSE=1: every process says it, and which library it loaded.
run verbose "$lib" NCCLGUARD_VERBOSE=1
[ "$(wc -l <"$NCG_TMP/verbose.lines")" = 2 ] || fail "verbose: expected one line per process"
[ "$(grep -c '^ncclguard: NCCL 2\.[0-9]*\.[0-9]* loaded from .*/foobar/libnccl\.so\.2$' "$NCG_TMP/verbose.err")" = 2 ] \
  || { cat "$NCG_TMP/verbose.err"; fail "verbose: the loaded library not named"; }

# The CPU NCCL as built: the line names exactly what it exports beyond this build, or is absent.
run plain "$FAKE_DIR"
exported "$FAKE_DIR/libnccl.so.2" >"$NCG_TMP/plain.syms"
"$REL" unknown "$NCG_TMP/plain.syms" >"$NCG_TMP/plain.want"
if [ -s "$NCG_TMP/plain.want" ]; then
  [ "$(wc -l <"$NCG_TMP/plain.lines")" = 1 ] || fail "plain: expected one line"
  diff <(named "$NCG_TMP/plain.lines") "$NCG_TMP/plain.want" || fail "plain: wrong names"
else
  [ ! -s "$NCG_TMP/plain.lines" ] || { cat "$NCG_TMP/plain.lines"; fail "plain: a line for a library with nothing unknown"; }
fi

# The genuine NCCL (where installed): what the shim would name, by the same rule.
real=/usr/local/cuda/lib64/libnccl.so.2
if [ -e "$real" ]; then
  exported "$real" >"$NCG_TMP/real.syms"
  grep -qx pncclAllReduce "$NCG_TMP/real.syms" || fail "genuine: nm found no pncclAllReduce"
  "$REL" unknown "$NCG_TMP/real.syms" >"$NCG_TMP/real.want"
  echo "genuine $real: $(wc -l <"$NCG_TMP/real.syms") functions, unknown to this build: $(tr '\n' ' ' <"$NCG_TMP/real.want")"
  [ ! -s "$NCG_TMP/real.want" ] || fail "genuine NCCL 2.28.9 exports API functions this build does not know"
else
  echo "no genuine NCCL at $real: that part skipped"
fi
echo "libver ok"
