# The ring: unit test (stamps, "not yet" vs "gone", wrap, many producers with a reader thread),
# then through the shim: more calls than the ring holds on the CPU NCCL (count keeps going,
# the newest NCG_COLL_RING records readable, older ones reported gone).
. "$NCG_ROOT/tests/shim/lib.sh"
need "$NCG_BUILD/tests/shim/ring_test" "$CALLS" "$LAUNCH" "$SHIMLIB"
"$NCG_BUILD/tests/shim/ring_test" || fail "ring_test"
export NCG_ID_TIMEOUT_S=60
LD_PRELOAD="$NCG_PRELOAD" "$LAUNCH" -n 2 -t 120 -- "$CALLS" wrap 2600 >"$NCG_TMP/out" 2>"$NCG_TMP/err" \
  || { cat "$NCG_TMP/out" "$NCG_TMP/err"; fail "calls wrap"; }
cat "$NCG_TMP/out"
[ "$(grep -c 'wrap ok' "$NCG_TMP/out")" = 2 ] || fail "wrap"

# More communicators than the segment's 64 slots: destroyed ones' slots are recycled; live ones
# beyond 64 are counted as dropped, still forwarded, with one warning.
NCG_ID_FILE=$NCG_TMP/id LD_PRELOAD="$NCG_PRELOAD" "$CALLS" many >"$NCG_TMP/out" 2>"$NCG_TMP/err" \
  || { cat "$NCG_TMP/out" "$NCG_TMP/err"; fail "calls many"; }
grep -q "many ok" "$NCG_TMP/out" || fail "many"
[ "$(grep -c '^ncclguard: more than 64 communicators' "$NCG_TMP/err")" = 1 ] || { cat "$NCG_TMP/err"; fail "expected one warning about dropped comms"; }
echo "ring ok"
