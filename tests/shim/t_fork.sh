# fork after init on 2 ranks: the child starts without the parent's segment or comms, makes
# its own segment for its own comm and removes it at exit; the parent's is intact and counting.
. "$NCG_ROOT/tests/shim/lib.sh"
need "$CALLS" "$LAUNCH" "$SHIMLIB"
export NCG_ID_TIMEOUT_S=60
# ThreadSanitizer refuses new threads in the child of a multi-threaded fork unless told: the
# child here starts the shim's checker thread, which is what this test checks.
case "${NCG_SANITIZER:-}" in *thread*) export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}die_after_fork=0" ;; esac
LD_PRELOAD="$NCG_PRELOAD" NCG_DUMP="$NCG_TMP/dump" "$LAUNCH" -n 2 -t 120 -- "$CALLS" fork \
  >"$NCG_TMP/out" 2>"$NCG_TMP/err" || { cat "$NCG_TMP/out" "$NCG_TMP/err"; fail "calls fork"; }
[ "$(grep -c 'fork ok' "$NCG_TMP/out")" = 2 ] || fail "fork"
python3 - "$NCG_TMP/dump.fork" <<'PY'
import sys
from segcheck import load, check
for r in range(2):
    s = load("%s.%d" % (sys.argv[1], r))
    c = s["comms"]
    check(len(c) == 1 and c[0]["coll_seq"] == 2, "rank %d: parent comm after fork %s" % (r, c))
    check([x["count"] for x in c[0]["colls"]] == [1, 3], "rank %d: the child's call leaked into the parent" % r)
print("fork ok")
PY
