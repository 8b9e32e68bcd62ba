# C++ call sites (interpose/inspect/symbol.c): the unit tests of a call site's text
# ncg-modes: sync async
# (tests/shim/site_test), then a 2-rank C++ job (tests/apps/cxxsite.cc) whose call site is a
# method of a class template three namespaces deep, with a count mismatch: on stderr and in the
# reports the call site is demangled, shortened in its middle to the wire's 128 bytes with its
# offsets and cxxsite.cc:LINE whole, and the stack frame (256 bytes) shows the whole name.
. "$NCG_ROOT/tests/checker/lib.sh"
UNIT=$B/tests/shim/site_test
[ -x "$UNIT" ] || { echo "missing $UNIT (run make first)"; exit 77; }
"$UNIT" >"$NCG_TMP/unit" 2>&1 || { cat "$NCG_TMP/unit"; fail "site_test"; }
cat "$NCG_TMP/unit"
APP=$B/tests/cxxsite
[ -x "$APP" ] || { echo "no C++ compiler: $APP not built"; exit 77; }
ldconfig -p 2>/dev/null | grep -q 'libdw\.so\.1 ' || { echo "libdw.so.1 not installed: no file:line to check"; exit 77; }
LINE=$(grep -n 'ncclAllReduce(.*// the call site$' "$NCG_ROOT/tests/apps/cxxsite.cc" | cut -d: -f1)
[ -n "$LINE" ] || fail "no call site line in tests/apps/cxxsite.cc"
export NCCLGUARD_DIAG=full
guarded "$NCG_TMP/out" "$LAUNCH" -n 2 -t 60 "$APP" 40 count
expect "$RC" 86 "launcher status"
expect "$(exited 86)" 2 "ranks that exited 86"
E=$'\xe2\x80\xa6' # the ellipsis of a cut
site="trainer::distributed::[a-z:]*$E::all_reduce_gradient_buckets_for_sharded_state<$E>\($E\)\+0x[0-9a-f]+ \(cxxsite\+0x[0-9a-f]+\) at cxxsite\.cc:$LINE"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH .*: slot 20: AllReduce\(count=9, float32, sum\) on rank 1 vs AllReduce\(count=8, float32, sum\) on rank 0$')" 2 "headline"
expect "$(nlines "^ncclguard:     AllReduce\(count=[89], float32, sum\) +on rank [01]  from $site\$")" 4 "call lines with the demangled site"
expect "$(nlines "^ncclguard:   this process \(comm rank [01], .* called from $site\$")" 2 "own call site"
# asynchronous NCCL: the thread waits in the method's synchronization, a few lines after the call
FLINE=$LINE; [ $async = 1 ] && FLINE='[0-9]+'
if [ $tsan = 0 ]; then
  frame="void trainer::distributed::checkpointing::DistributedCheckpointer<float, 4>::all_reduce_gradient_buckets_for_sharded_state<std::allocator<float> >\(std::vector<float, std::allocator<float> > const&, unsigned long\)\+0x[0-9a-f]+ \(cxxsite\+0x[0-9a-f]+\) at cxxsite\.cc:$FLINE"
  expect "$(nlines "^ncclguard:     #[0-9]+ $frame\$")" 2 "stack frames with the whole demangled name"
fi
! grep -q '_ZN7trainer' "$OUT" || fail "a mangled name on stderr"
# the reports: valid JSON (the ellipsis as UTF-8), the same call sites
n=0
for f in "$REPORTS"/ncclguard-report.*.json; do
  [ -e "$f" ] || continue
  n=$((n + 1))
  python3 - "$f" "$site" "$tsan" "${frame:-}" <<'PY' || fail "report $f"
import json, re, sys
r = json.load(open(sys.argv[1], encoding="utf-8"))
site, tsan, frame = sys.argv[2], sys.argv[3] == "1", sys.argv[4]
sites = [r["call_site"]] + [c["call_site"] for c in r["calls"]]
bad = [s for s in sites if not re.fullmatch(site, s)]
if bad or len(sites) != 3:
    sys.exit("call sites %r do not all match %r" % (sites, site))
if any(len(s.encode()) > 127 for s in sites):
    sys.exit("a call site longer than the wire's 127 bytes")
if not tsan and not any(re.fullmatch(frame, s) for s in r["stack"]):
    sys.exit("no stack frame matches %r: %r" % (frame, r["stack"]))
PY
done
expect "$n" 2 "reports"
echo "C++ call sites ok"
