# C++ call sites (interpose/common/site.c, interpose/inspect/symbol.c): the unit tests of a call
# ncg-modes: sync async
# site's text (tests/shim/site_test), then a 2-rank C++ job (tests/apps/cxxsite.cc) whose call
# site is a method of a class template three namespaces deep, with a count mismatch. No name is
# ever cut: on stderr the call lines (the wire's 128 bytes) and "called from" hold the whole
# qualified name, template arguments and parameters as <…>/(…), "called from" with
# cxxsite.cc:LINE; the stack frame (256 bytes) and the report's call_site the whole demangled
# name; `ncclguard report` shows the site as the terminal does.
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
E=$'\xe2\x80\xa6' # the ellipsis of a shortened list
qual="trainer::distributed::checkpointing::DistributedCheckpointer<$E>::all_reduce_gradient_buckets_for_sharded_state<$E>\($E\)"
# on the wire (128 bytes) the module part and file:line give way to the whole name
site="$qual\+0x[0-9a-f]+"
# on "called from" (this process's own record) the line is long rather than the name cut
own="$qual\+0x[0-9a-f]+ at cxxsite\.cc:$LINE"
# the report: the whole demangled name (a compiler-made copy's clone suffix too)
whole="void trainer::distributed::checkpointing::DistributedCheckpointer<float, 4>::all_reduce_gradient_buckets_for_sharded_state<std::allocator<float> >\(std::vector<float, std::allocator<float> > const&, unsigned long\)( \[clone \.[a-z.0-9]+\])?\+0x[0-9a-f]+ \(cxxsite\+0x[0-9a-f]+\) at cxxsite\.cc:$LINE"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH .*: slot 20: AllReduce\(count=9, float32, sum\) on rank 1 vs AllReduce\(count=8, float32, sum\) on rank 0$')" 2 "headline"
expect "$(nlines "^ncclguard:     AllReduce\(count=[89], float32, sum\) +on rank [01]  from $site\$")" 4 "call lines with the whole qualified name"
expect "$(nlines "^ncclguard:   this process \(comm rank [01], .* called from $own\$")" 2 "own call site, with file:line"
! grep -E "(from|#[0-9]+) .*($E::|[A-Za-z0-9_]$E)" "$OUT" || fail "a name cut on stderr"
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
  python3 - "$f" "$site" "$whole" "$tsan" "${frame:-}" <<'PY' || fail "report $f"
import json, re, sys
r = json.load(open(sys.argv[1], encoding="utf-8"))
site, whole, tsan, frame = sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5]
if not re.fullmatch(whole, r["call_site"]):
    sys.exit("call_site %r is not the whole demangled name %r" % (r["call_site"], whole))
sites = [c["call_site"] for c in r["calls"]]
bad = [s for s in sites if not re.fullmatch(site, s)]
if bad or len(sites) != 2:
    sys.exit("calls' call sites %r do not all match %r" % (sites, site))
if any(len(s.encode()) > 127 for s in sites):
    sys.exit("a call's site longer than the wire's 127 bytes")
if not tsan and not any(re.fullmatch(frame, s) for s in r["stack"]):
    sys.exit("no stack frame matches %r: %r" % (frame, r["stack"]))
PY
done
expect "$n" 2 "reports"
# `ncclguard report`: the report's whole name shown as the terminal shows it
"$B/ncclguard" report "$REPORTS" >"$NCG_TMP/merged" 2>&1 || fail "ncclguard report"
OUT=$NCG_TMP/merged
expect "$(grep -cE "^    $own +ranks 0-1\$" "$OUT")" 1 "report: one call site for ranks 0-1"
expect "$(grep -cE "^    AllReduce\(count=[89], float32, sum\) +on rank [01]  from $site\$" "$OUT")" 2 "report: call lines"
echo "C++ call sites ok"
