# Split and shrink children on 4 ranks: members of one child agree on its identity (no
# communication), different colors differ, NCCL_SPLIT_NOCOLOR members get no child but keep
# the parent's split counter in step, rank/size come from NCCL once the child is ready; each
# split takes a slot on the parent (CommSplit), whatever the color.
. "$NCG_ROOT/tests/shim/lib.sh"
need "$CALLS" "$LAUNCH" "$SHIMLIB"
export NCG_ID_TIMEOUT_S=60
LD_PRELOAD="$NCG_PRELOAD" NCG_DUMP="$NCG_TMP/dump" "$LAUNCH" -n 4 -t 120 -- "$CALLS" split \
  >"$NCG_TMP/out" 2>"$NCG_TMP/err" || { cat "$NCG_TMP/out" "$NCG_TMP/err"; fail "calls split"; }
python3 - "$NCG_TMP/dump.split" <<'PY'
import sys
from segcheck import load, check
segs = [load("%s.%d" % (sys.argv[1], r)) for r in range(4)]
world = [s["comms"][0] for s in segs]
check(len({c["id"] for c in world}) == 1, "world ids differ")
wid = world[0]["id"]
for r, s in enumerate(segs):
    by_count = {}
    for c in s["comms"][1:]:
        check(c["parent"] == wid, "rank %d: child parent %s != world %s" % (r, c["parent"], wid))
        check(c["coll_seq"] == 1, "rank %d: child with %d calls" % (r, c["coll_seq"]))
        by_count[c["colls"][0]["count"]] = c
    s["half"], s["most"], s["shrunk"] = by_count.get(2), by_count.get(3), by_count.get(4)
    # both splits take a slot on the parent (NOCOLOR rank too), the shrink does not
    wc = world[r]["colls"]
    check(world[r]["coll_seq"] == 3 and [c["func"] for c in wc] == [11, 11, 1] and wc[2]["count"] == 1,
          "rank %d: world comm calls %s" % (r, wc))
check(len({w["colls"][1]["digest"] for w in world}) == 1, "split slots digest alike on every rank")
for r, s in enumerate(segs):
    h = s["half"]
    check(h is not None and h["origin"] == 2 and h["nranks"] == 2 and h["rank"] == r // 2, "rank %d half %s" % (r, h))
check(segs[0]["half"]["id"] == segs[2]["half"]["id"] and segs[1]["half"]["id"] == segs[3]["half"]["id"], "same color, same id")
check(segs[0]["half"]["id"] != segs[1]["half"]["id"], "different colors, different ids")
check(segs[3]["most"] is None and segs[3]["shrunk"] is None, "rank 3 (NOCOLOR / excluded) has no child")
for key, origin in (("most", 2), ("shrunk", 3)):
    ids = {segs[r][key]["id"] for r in range(3)}
    check(len(ids) == 1, "%s: ids differ %s" % (key, ids))
    for r in range(3):
        c = segs[r][key]
        check(c["origin"] == origin and c["nranks"] == 3 and c["rank"] == r, "rank %d %s: %s" % (r, key, c))
check(segs[0]["most"]["id"] not in (segs[0]["half"]["id"], segs[1]["half"]["id"], segs[0]["shrunk"]["id"], wid),
      "identities not distinct")
print("split ok")
PY
