# scripts/gpu-check.sh --dry-run on this machine: the JSON summary is valid, has the 5 steps,
# each passed or was skipped with a reason (what needs PyTorch or a GPU), and the steps that run
# on the CPU stand-ins passed: 1 (the build loads here), 3 (the C probe on the CPU NCCL and CUDA
# runtime: 10,000 calls, the id's tail stamped and accepted), 4 (torchlike on the CUDA-aware CPU
# NCCL: incident 86, healthy clean, fail action), 5 (stack of thread). Within its time bound.
case "${NCG_SANITIZER:-}" in ?*) echo "the device runs the plain build: the dry run is checked in the plain pass, not under ${NCG_SANITIZER}"; exit 77;; esac
set -u
B=$NCG_BUILD
for f in "$B/libncclguard.so" "$B/ncclguard" "$B/tests/ncg-launch" "$B/fakenccl/libnccl.so.2"; do
  [ -e "$f" ] || { echo "missing $f (run make first)"; exit 77; }
done
[ -e "$B/fakecuda/libcudart.so.13" ] || { echo "no CPU CUDA runtime (needs /usr/local/cuda headers)"; exit 77; }
fail() { echo "FAIL: $*"; sed 's/^/  | /' "$O/gpu-check.log" 2>/dev/null | tail -n 60; exit 1; }
O=$NCG_TMP/out
t0=$(date +%s)
NCG_BUILD=$B GPU_CHECK_TOTAL_S=120 timeout 200 "$NCG_ROOT/scripts/gpu-check.sh" --dry-run "$O" >"$NCG_TMP/stdout" 2>&1
rc=$?
cat "$NCG_TMP/stdout"
[ $rc -eq 0 ] || fail "gpu-check.sh --dry-run exit $rc"
[ $(( $(date +%s) - t0 )) -le 120 ] || fail "took longer than its bound"
[ -s "$O/gpu-check.log" ] || fail "no log"
python3 -m json.tool "$O/gpu-check.json" >/dev/null || fail "invalid JSON: $(cat "$O/gpu-check.json")"
grep -v '^gpu-check: ' "$NCG_TMP/stdout" && fail "stdout lines without the gpu-check: prefix"
python3 - "$O/gpu-check.json" <<'PY' || fail "summary"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "ncclguard-gpu-check" and d["version"] == 1 and d["dry_run"] is True, d
steps = {s["step"]: s for s in d["steps"]}
assert sorted(steps) == [1, 2, 3, 4, 5], steps.keys()
for s in d["steps"]:
    assert s["status"] in ("pass", "skipped"), s
    assert s["reason"], s
for n in (1, 3, 4, 5):
    assert steps[n]["status"] == "pass", steps[n]
assert steps[2]["status"] == "skipped" and "PyTorch" in steps[2]["reason"], steps[2]
f3 = steps[3]["figures"]
assert f3["idtail_tag_guarded"] == 1 and f3["enqueue_ns_bare"] > 0 and f3["enqueue_ns_guarded"] > 0, f3
assert steps[4]["figures"]["incident_ranks_86"] == 2, steps[4]
assert steps[5]["figures"]["frames"] > 2, steps[5]
assert isinstance(d["versions"]["glibc"], str), d["versions"]
assert d["summary"] == {"pass": 4, "fail": 0, "skipped": 1}, d["summary"]
PY
echo "gpucheck dry run ok"
