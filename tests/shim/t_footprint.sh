# What a guarded process costs in /dev/shm: the segment has its full size (sparse), but only
# the header and the slots of communicators in use are reserved, about 84 KiB for a process
# with one communicator (not the 5.3 MB the 64 slots would take). Checked on a running job.
. "$NCG_ROOT/tests/shim/lib.sh"
APP=$NCG_BUILD/tests/cli/cliapp
need "$APP" "$LAUNCH" "$SHIMLIB"
TAG=footprint$$
LD_PRELOAD="$NCG_PRELOAD" LD_LIBRARY_PATH=$FAKE_DIR NCCLGUARD_COORD=off \
  "$LAUNCH" -n 2 -t 60 -- "$APP" --calls 5 --hang-rank 1 --hold-s 30 --tag $TAG >"$NCG_TMP/out" 2>&1 &
JOB=$!
trap 'kill $JOB 2>/dev/null; pkill -KILL -f "$TAG" 2>/dev/null' EXIT
pids=""
for _ in $(seq 100); do
  pids=$(pgrep -f -- "--tag $TAG" | while read -r p; do [ -e "/dev/shm/ncclguard.$(id -u).$p" ] && echo "$p"; done)
  [ "$(echo "$pids" | grep -c .)" -ge 2 ] && break
  sleep 0.1
done
[ "$(echo "$pids" | grep -c .)" -ge 2 ] || { cat "$NCG_TMP/out"; fail "job segments did not appear"; }
sleep 0.5 # both ranks past their first calls
for p in $pids; do
  seg=/dev/shm/ncclguard.$(id -u).$p
  read -r blocks bsize size <<<"$(stat -c '%b %B %s' "$seg")"
  used=$((blocks * bsize))
  echo "pid $p: segment size $size bytes, reserved $used bytes"
  [ "$size" -gt 5000000 ] || fail "segment size $size: expected the full layout (sparse)"
  [ "$used" -ge 65536 ] || fail "reserved $used bytes: the communicator's slot is not reserved"
  [ "$used" -le 262144 ] || fail "reserved $used bytes for one communicator: expected about 84 KiB"
done
echo ok
