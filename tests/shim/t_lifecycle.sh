# Communicators made other ways: ncclCommInitAll (one process, every member: a local identity,
# ranks 0..n-1, NCCL's own ncclGetUniqueId not counted), a nonblocking root comm (recorded from
# the init arguments while NCCL reports ncclInProgress) and a nonblocking split child (rank and
# size from NCCL once ready), on 3 ranks.
. "$NCG_ROOT/tests/shim/lib.sh"
need "$CALLS" "$LAUNCH" "$SHIMLIB"
export NCG_ID_TIMEOUT_S=60
NCG_ID_FILE=$NCG_TMP/id LD_PRELOAD="$NCG_PRELOAD" NCG_DUMP="$NCG_TMP/dump" "$CALLS" initall \
  >"$NCG_TMP/out" 2>"$NCG_TMP/err" || { cat "$NCG_TMP/out" "$NCG_TMP/err"; fail "calls initall"; }
LD_PRELOAD="$NCG_PRELOAD" NCG_DUMP="$NCG_TMP/dump" "$LAUNCH" -n 3 -t 120 -- "$CALLS" nonblocking \
  >"$NCG_TMP/out" 2>"$NCG_TMP/err" || { cat "$NCG_TMP/out" "$NCG_TMP/err"; fail "calls nonblocking"; }
python3 - "$NCG_TMP/dump" <<'PY'
import sys
from segcheck import load, check
base = sys.argv[1]
s = load(base + ".initall.0")
cs = s["comms"]
check(len(cs) == 3 and len({c["id"] for c in cs}) == 1, "initall: %d comms, ids %s" % (len(cs), {c["id"] for c in cs}))
check([(c["rank"], c["nranks"], c["origin"]) for c in cs] == [(0, 3, 4), (1, 3, 4), (2, 3, 4)], "initall ranks")
check(all(c["coll_seq"] == 1 and c["colls"][0]["flags"] == 1 for c in cs), "initall: one grouped call each")
segs = [load("%s.nonblocking.%d" % (base, r)) for r in range(3)]
for r, s in enumerate(segs):
    check(len(s["comms"]) == 2, "rank %d: %d comms" % (r, len(s["comms"])))
    root, child = s["comms"]
    check(root["rank"] == r and root["nranks"] == 3 and root["origin"] == 1 and root["coll_seq"] == 2, "root %s" % root)
    check([c["func"] for c in root["colls"]] == [11, 1], "split, then AllReduce on the root: %s" % root)
    check(child["origin"] == 2 and child["parent"] == root["id"], "child %s" % child)
    check(child["nranks"] == 3 and child["rank"] == 2 - r, "child rank/size from NCCL: %s" % child)
    check(child["coll_seq"] == 1 and child["colls"][0]["count"] == 2, "child call recorded")
check(len({s["comms"][1]["id"] for s in segs}) == 1, "child ids differ")
print("lifecycle ok")
PY
