# The shim in front of the genuine libnccl.so.2 (no GPU needed): the version and a unique id
# pass through, and ncclCommInitRank's failure on a machine without a usable GPU comes back
# with NCCL's own code, the same as without the shim.
. "$NCG_ROOT/tests/shim/lib.sh"
real=/usr/local/cuda/lib64/libnccl.so.2
[ -e "$real" ] || { echo "no genuine NCCL at $real"; exit 77; }
need "$SHIMLIB" "$NCG_BUILD/tests/shim/realnccl"
R=$NCG_BUILD/tests/shim/realnccl
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 NCCL_DEBUG=WARN
timeout 120 "$R" lib >"$NCG_TMP/plain" 2>"$NCG_TMP/plain.err" || { cat "$NCG_TMP/plain.err"; fail "without the shim"; }
LD_PRELOAD="$NCG_PRELOAD" timeout 120 "$R" lib >"$NCG_TMP/shim" 2>"$NCG_TMP/shim.err" \
  || { cat "$NCG_TMP/shim.err"; fail "with the shim"; }
cat "$NCG_TMP/plain" "$NCG_TMP/shim"
grep -q "from libnccl.so.2" "$NCG_TMP/plain" || fail "plain run did not bind to libnccl"
grep -q "from libncclguard.so" "$NCG_TMP/shim" || fail "the shim was not in front"
ours() { grep -E '^(version|uniqueid|initrank) ' "$1"; } # NCCL's own WARN lines carry pids and times
diff <(ours "$NCG_TMP/plain") <(ours "$NCG_TMP/shim") \
  || fail "results differ with the shim"
grep -q "^version rc=0 v=2" "$NCG_TMP/shim" || fail "version"
grep -qx "uniqueid rc=0 nonzero=1" "$NCG_TMP/shim" || fail "unique id"
# DESIGN.md's fact about the genuine library: bytes 40..127 of its id are zero; the shim's
# checker writes its rendezvous tail there (and only there: bytes 0..39 are compared above).
grep -qx "idtail nonzero=0 tag=0" "$NCG_TMP/plain" || fail "genuine NCCL's id tail is not zero"
grep -qE "^idtail nonzero=[1-9][0-9]* tag=1$" "$NCG_TMP/shim" || fail "the checker did not stamp the id"
NCCLGUARD_COORD=off LD_PRELOAD="$NCG_PRELOAD" timeout 120 "$R" lib >"$NCG_TMP/off" 2>&1 || fail "COORD=off run"
grep -qx "idtail nonzero=0 tag=0" "$NCG_TMP/off" || fail "with NCCLGUARD_COORD=off the id must stay NCCL's own"
if ! nvidia-smi -L >/dev/null 2>&1; then
  grep -q "^initrank rc=[1-9]" "$NCG_TMP/shim" || fail "ncclCommInitRank should fail without a usable GPU"
fi
echo "realnccl ok"
