# Every collective (all ops, a user PreMulSum op) and a p2p ring on 3 ranks of the CPU NCCL gives
# bit-identical results with and without the shim, and with NCCLGUARD=0; with the shim every
# rank records the same slots, fingerprints and digests on the same communicator identity.
. "$NCG_ROOT/tests/shim/lib.sh"
need "$CALLS" "$LAUNCH" "$SHIMLIB"
export NCG_ID_TIMEOUT_S=60
N=3
run() { # label, then env assignments
  local label=$1; shift
  env "$@" "$LAUNCH" -n $N -t 120 -- sh -c '"$0" colls "$1.$RANK"' "$CALLS" "$NCG_TMP/$label" \
    >"$NCG_TMP/$label.out" 2>"$NCG_TMP/$label.err" || { cat "$NCG_TMP/$label.err"; fail "run $label"; }
  [ "$(grep -c 'colls ok' "$NCG_TMP/$label.out")" = $N ] || fail "$label: not every rank finished"
}
run plain
run shim LD_PRELOAD="$NCG_PRELOAD" NCG_DUMP="$NCG_TMP/dump"
run off LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD=0 NCG_DUMP="$NCG_TMP/offdump"
for r in $(seq 0 $((N - 1))); do
  [ -s "$NCG_TMP/plain.$r" ] || fail "no results from rank $r"
  cmp "$NCG_TMP/plain.$r" "$NCG_TMP/shim.$r" || fail "rank $r: results differ with the shim"
  cmp "$NCG_TMP/plain.$r" "$NCG_TMP/off.$r" || fail "rank $r: results differ with NCCLGUARD=0"
  grep -qx noseg "$NCG_TMP/offdump.colls.$r" || fail "NCCLGUARD=0 made a segment"
done
[ ! -s "$NCG_TMP/off.err" ] || { cat "$NCG_TMP/off.err"; fail "NCCLGUARD=0 printed something"; }
python3 - "$NCG_TMP/dump.colls" $N <<'PY'
import sys
from segcheck import load, check
base, n = sys.argv[1], int(sys.argv[2])
segs = [load("%s.%d" % (base, r)) for r in range(n)]
for r, s in enumerate(segs):
    check(s is not None, "rank %d has no segment" % r)
    check(not s["errors"], "rank %d: unreadable records %s" % (r, s["errors"]))
    check(len(s["comms"]) == 1, "rank %d: %d comms" % (r, len(s["comms"])))
    check(s["proc"]["rank"] == str(r) and s["proc"]["world"] == str(n), "rank %d: RANK/WORLD_SIZE in header" % r)
comms = [s["comms"][0] for s in segs]
check(len({c["id"] for c in comms}) == 1, "comm ids differ across ranks")
for r, c in enumerate(comms):
    check(c["rank"] == r and c["nranks"] == n and c["origin"] == 1, "rank %d: rank/nranks/origin %s" % (r, c))
# 5 double AllReduce + 4 int (no Avg) + Broadcast + Bcast + Reduce + AllGather + ReduceScatter +
# AlltoAll + Gather + Scatter (+ PreMulSum when the library has it)
seqs = {c["coll_seq"] for c in comms}
check(len(seqs) == 1 and seqs.pop() in (17, 18), "coll_seq %s" % [c["coll_seq"] for c in comms])
funcs = [x["func"] for x in comms[0]["colls"]]
check(funcs[:17] == [1] * 9 + [2, 2, 3, 4, 5, 6, 7, 8], "function sequence %s" % funcs)
check([x["redop"] for x in comms[0]["colls"][:9]] == [0, 0, 1, 1, 2, 2, 3, 3, 4], "reduction ops")
check(all(x["redop"] == 255 for x in comms[0]["colls"][9:11]) and comms[0]["colls"][11]["redop"] == 0, "no-op class for Broadcast/Bcast")
if len(funcs) == 18:
    check(comms[0]["colls"][17]["redop"] == 254, "PreMulSum recorded as the user-op class")
check(comms[0]["colls"][9]["root"] == n - 1 and comms[0]["colls"][10]["root"] == 0, "roots")
for k in range(len(funcs)):
    recs = [c["colls"][k] for c in comms]
    check(len({(x["seq"], x["func"], x["count"], x["dtype"], x["redop"], x["root"], x["digest"]) for x in recs}) == 1,
          "slot %d differs across ranks: %s" % (k, recs))
    check(recs[0]["seq"] == k and recs[0]["pc"] == 1 and recs[0]["flags"] == 0, "slot %d: %s" % (k, recs[0]))
# p2p: per rank 2 sends to the right, 2 receives from the left, pair sequence 0 then 1, in groups
for r, c in enumerate(comms):
    p = c["p2ps"]
    check(c["p2p_seq"] == 4 and len(p) == 4, "rank %d: p2p records %d" % (r, len(p)))
    sends = [x for x in p if x["func"] == 9]
    recvs = [x for x in p if x["func"] == 10]
    check([x["seq"] for x in sends] == [0, 1] and all(x["peer"] == (r + 1) % n for x in sends), "sends %s" % sends)
    check([x["seq"] for x in recvs] == [0, 1] and all(x["peer"] == (r - 1) % n for x in recvs), "recvs %s" % recvs)
    check(all(x["flags"] == 1 and x["count"] == 64 for x in p), "p2p in-group flag/count")
print("segments agree across %d ranks: %d slots, digests equal" % (n, len(funcs)))
PY
[ $? -eq 0 ] || exit 1
echo "colls ok"
