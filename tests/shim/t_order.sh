# Slot numbering: nested groups (each collective its own slot, flagged in-group), ncclBcast
# counted once (NCCL's internal ncclBroadcast not recorded again), threads on their own comms
# and taking turns on a shared one, on 2 ranks.
. "$NCG_ROOT/tests/shim/lib.sh"
need "$CALLS" "$LAUNCH" "$SHIMLIB"
export NCG_ID_TIMEOUT_S=60
for sc in groups bcast "threads 4 30"; do
  LD_PRELOAD="$NCG_PRELOAD" NCG_DUMP="$NCG_TMP/dump" "$LAUNCH" -n 2 -t 120 -- "$CALLS" $sc \
    >"$NCG_TMP/out" 2>"$NCG_TMP/err" || { cat "$NCG_TMP/out" "$NCG_TMP/err"; fail "calls $sc"; }
done
python3 - "$NCG_TMP/dump" <<'PY'
import sys
from segcheck import load, check
base = sys.argv[1]
for r in range(2):
    g = load("%s.groups.%d" % (base, r))["comms"][0]
    check([x["count"] for x in g["colls"]] == [1, 2, 3, 4, 5], "groups: counts %s" % g["colls"])
    check([x["seq"] for x in g["colls"]] == [0, 1, 2, 3, 4], "groups: slots")
    check([x["flags"] for x in g["colls"]] == [0, 1, 1, 1, 0], "groups: in-group flags %s" % [x["flags"] for x in g["colls"]])
    b = load("%s.bcast.%d" % (base, r))["comms"][0]
    check(b["coll_seq"] == 2 and [(x["func"], x["count"]) for x in b["colls"]] == [(2, 4), (2, 3)],
          "bcast: %s" % b["colls"])
    t = load("%s.threads.%d" % (base, r))
    check(len(t["comms"]) == 5, "threads: %d comms" % len(t["comms"]))
    shared, own = t["comms"][0], t["comms"][1:]
    check(shared["coll_seq"] == 16 and [x["seq"] for x in shared["colls"]] == list(range(16)), "shared comm slots")
    check(len({x["tid"] for x in shared["colls"]}) == 4, "shared comm: calls from 4 threads")
    for i, c in enumerate(own):
        check(c["coll_seq"] == 30 and all(x["count"] == 10 + i for x in c["colls"]), "thread %d's comm" % i)
        check(len({x["tid"] for x in c["colls"]}) == 1, "thread %d's comm: one thread" % i)
t0, t1 = load(base + ".threads.0"), load(base + ".threads.1")
check([c["id"] for c in t0["comms"]] == [c["id"] for c in t1["comms"]], "threads: comm ids differ across ranks")
check(len({c["id"] for c in t0["comms"]}) == 5, "threads: comm ids not distinct")
check(t0["comms"][0]["colls"][-1]["digest"] == t1["comms"][0]["colls"][-1]["digest"], "shared comm digest")
print("order ok")
PY
