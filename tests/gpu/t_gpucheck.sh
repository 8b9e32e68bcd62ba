# scripts/gpu-check.sh --dry-run on this machine: the JSON summary is valid, has the 8 steps,
# each passed or was skipped with a reason (what needs a CUDA PyTorch or a GPU), and the steps
# that run on the CPU stand-ins passed: 1 (the build loads here), 3 (the C probe on the CPU NCCL
# and CUDA runtime: 10,000 calls, the id's tail stamped and accepted), 4 (torchlike on the
# CUDA-aware CPU NCCL: incident 86, healthy clean, fail action), 5 (stack of thread); 6 (torchrun)
# passes where a PyTorch here has torch.distributed.run (Debian's CPU one: torchlike under it,
# both reports and full blocks), else is skipped; 7 (CUDA graphs) is skipped, graphs.py and
# ddp.py having compiled and parsed their arguments; 8 (nccl-tests) passes on the CPU stack or is skipped with
# one of its known reasons (no checkout, no nvcc, the binaries cannot start here, the build not
# finished within the bound). Its build is kept in $TMPDIR/ncclguard-gpucheck-UID.N/nccl-tests
# (N from the build directory's path; not under build/, which a device run carries), so only the
# first run compiles (a build cut by the bound goes on at the next run). Within its time bound.
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
# the nccl-tests build cache: outside build/ (which a device run carries), one per build dir
cache=${TMPDIR:-/tmp}/ncclguard-gpucheck-$(id -u).$(printf '%s' "$B" | cksum | cut -d' ' -f1)/nccl-tests
mkdir -p "$cache" || exit 1
NCG_BUILD=$B GPU_CHECK_TOTAL_S=120 NCCL_TESTS_BUILD=${NCCL_TESTS_BUILD:-$cache} \
  timeout 200 "$NCG_ROOT/scripts/gpu-check.sh" --dry-run "$O" >"$NCG_TMP/stdout" 2>&1
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
assert sorted(steps) == [1, 2, 3, 4, 5, 6, 7, 8], steps.keys()
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
s6, s7, s8 = steps[6], steps[7], steps[8]
assert s6["name"] == "torchrun" and s7["name"] == "graphs" and s8["name"] == "nccltests", d["steps"]
if s6["status"] == "pass":
    f6 = s6["figures"]
    assert f6["reports"] == 2 and f6["full_blocks"] == 2 and f6["actions_86"] == 2, f6
    assert f6["launcher_exit"] not in (0, 124, 137), f6
else:
    assert "no CUDA PyTorch" in s6["reason"] or "time bound" in s6["reason"], s6
assert s7["status"] == "skipped" and "no CUDA PyTorch" in s7["reason"], s7
assert "compile and parse" in s7["figures"]["smoke"], s7
if s8["status"] == "pass":
    f8 = s8["figures"]
    assert f8["runs"] >= 4 and any(k.endswith("_ratio") for k in f8), f8
else:
    known = ("no nccl-tests checkout", "no nvcc", "nccl.h", "no libnccl.so.2", "cannot start on this stack",
             "did not finish within its bound", "does not run on the CPU stack", "time bound")
    assert any(k in s8["reason"] for k in known), s8
assert isinstance(d["versions"]["glibc"], str), d["versions"]
n = {k: sum(1 for s in d["steps"] if s["status"] == v) for k, v in (("pass", "pass"), ("fail", "fail"), ("skipped", "skipped"))}
assert d["summary"] == n and n["fail"] == 0 and n["pass"] >= 4, (d["summary"], n)
for s in d["steps"]:
    print("gpucheck: step %d %s: %s" % (s["step"], s["name"], s["status"]))
PY
echo "gpucheck dry run ok"
