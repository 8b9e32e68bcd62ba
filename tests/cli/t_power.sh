#!/usr/bin/env bash
# The power signature (issue 12) with the fake NVML (tests/nvml): segments that name their CUDA
# device by bus id (fakeseg --bus-base); `status` shows each rank's GPU utilization and board
# power next to its progress (none without NVML: -v says why); `watch` raises exactly one alert
# when GPUs switch to the signature (busy, near-idle power, no NCCL call for --stall seconds),
# none before, none again while it lasts. Then the shim itself records the bus id the CUDA
# runtime (tests/fakecuda's) gives for the rank's device.
. "$(dirname "$0")/lib.sh"
NVDIR=$NCG_BUILD/tests/nvml
need "$NCG" "$FAKESEG" "$NVDIR/libnvidia-ml.so.1"
export FAKENVML_FILE=$NCG_TMP/gpus
D=$NCG_TMP/shm; mkdir -p "$D"
gpus() { : >"$FAKENVML_FILE.tmp"; for b in 10 11 12 13; do echo "0000:$b:00.0 $1 $2 700" >>"$FAKENVML_FILE.tmp"; done; mv "$FAKENVML_FILE.tmp" "$FAKENVML_FILE"; }
gpus 100 520
start_fakeseg fs --dir "$D" --ranks 4 --bus-base 10 --completed 1 --age 30 --tag "$NCG_TMP"

# status: the GPU columns with NVML, none without (and -v says why)
LD_LIBRARY_PATH=$NVDIR:$LD_LIBRARY_PATH "$NCG" status --dir "$D" --all >"$NCG_TMP/s1"; cat "$NCG_TMP/s1"
contains "$NCG_TMP/s1" "GPU POWER" "100% 520/700W"
[ "$(grep -c '100% 520/700W' "$NCG_TMP/s1")" = 4 ] || fail "4 ranks with GPU readings"
LD_LIBRARY_PATH=$NVDIR:$LD_LIBRARY_PATH "$NCG" status --dir "$D" --json >"$NCG_TMP/s1.json"
jcheck "$NCG_TMP/s1.json" 'sorted(p["bus_id"] for p in d["processes"]) == ["0000:%d:00.0" % b for b in (10, 11, 12, 13)] and all(p["gpu"] == {"util_pct": 100, "power_w": 520.0, "power_limit_w": 700.0} for p in d["processes"])'
"$NCG" status --dir "$D" >"$NCG_TMP/s2"
lacks "$NCG_TMP/s2" "GPU POWER" "520/700W"
"$NCG" status --dir "$D" -v >"$NCG_TMP/s3"
[ "$(grep -c '^ncclguard: no GPU columns: NVML not loaded' "$NCG_TMP/s3")" = 1 ] || { cat "$NCG_TMP/s3"; fail "-v: one line on NVML"; }

# watch: busy at full power is not the signature; busy at 35 W of 700 with no call for 30 s is
LD_LIBRARY_PATH=$NVDIR:$LD_LIBRARY_PATH "$NCG" watch --dir "$D" --stall 5 --interval 0.2 --json \
  >"$NCG_TMP/alerts" 2>&1 &
W=$!; BG_PIDS+=($W)
sleep 1.5
[ ! -s "$NCG_TMP/alerts" ] || { cat "$NCG_TMP/alerts"; fail "an alert at full power"; }
gpus 100 35
wait_until 10 test -s "$NCG_TMP/alerts"
sleep 1.5 # the signature lasts: no second alert
gpus 100 520; sleep 0.6; gpus 20 35; sleep 0.6 # idle GPUs at idle power: not the signature
kill -INT "$W"; wait "$W"
cat "$NCG_TMP/alerts"
[ "$(wc -l <"$NCG_TMP/alerts")" = 1 ] || fail "exactly one alert expected"
jcheck "$NCG_TMP/alerts" 'd["kind"] == "power" and d["ranks"] == [0, 1, 2, 3] and "0000:10:00.0 100% 35/700W" in d["detail"] and "no NCCL call for" in d["detail"]'

# the shim records the device's bus id from the process's CUDA runtime (fakecuda: bus 0x10 + device)
TL=$NCG_BUILD/tests/torchlike
if [ -x "$TL" ] && [ -e "$NCG_BUILD/fakecuda/libcudart.so.13" ]; then
  LD_LIBRARY_PATH=$NCG_BUILD/fakecuda:$LD_LIBRARY_PATH NCCLGUARD_COORD=off FAKENCCL_ASYNC=1 LD_PRELOAD=$NCG_PRELOAD \
    timeout 60 "$LAUNCH" -n 2 -t 50 -- "$TL" --steps 4 --pause 1:8 >"$NCG_TMP/tl.out" 2>&1 &
  T=$!; BG_PIDS+=($T)
  busids() { "$NCG" status --json --no-clean --match torchlike >"$NCG_TMP/tl.json" && python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["processes"]; sys.exit(not (len(p) == 2 and all(x["bus_id"] == "0000:10:00.0" for x in p)))' "$NCG_TMP/tl.json"; }
  wait_until 30 busids
  wait "$T" || { cat "$NCG_TMP/tl.out"; fail "torchlike under the shim"; }
else
  echo "torchlike or fakecuda not built: the shim's bus id not checked"
fi
echo PASS
