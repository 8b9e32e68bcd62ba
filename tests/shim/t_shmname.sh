# The segment's name is ncclguard.<uid>.<pid>; a live process holds a shared flock on its
# segment. An existing file under our name that nobody holds (a crashed process whose pid we
# reuse, our own image before an exec) is replaced; one that is held (a live process with our
# pid in another pid namespace sharing /dev/shm) is left alone: the shim records privately and
# says so once.
. "$NCG_ROOT/tests/shim/lib.sh"
need "$CALLS" "$SHIMLIB"
# sh plants a segment header under its own pid, optionally has it held by a background
# `flock -s`, then execs the program (same pid).
plant='
python3 - "$$" <<PY
import os, struct, sys
pid = int(sys.argv[1])
hdr = struct.pack("<QIIIIIIiIQ", 0x314452415547434e, 1, 1024, 0, 64, 1024, 256, pid, 1, 1)
open("/dev/shm/ncclguard.%d.%d" % (os.getuid(), pid), "wb").write(hdr.ljust(1024, b"\0"))
PY
seg=/dev/shm/ncclguard.$(id -u).$$
echo $$ >"$1"
if [ "$0" = held ]; then
  flock -s "$seg" sleep 60 &
  echo $! >"$1.holder"
  sleep 0.3
fi
exec "$2" bcast'
export NCG_ID_FILE=$NCG_TMP/id
LD_PRELOAD="$NCG_PRELOAD" sh -c "$plant" held "$NCG_TMP/pid" "$CALLS" >"$NCG_TMP/out" 2>"$NCG_TMP/err"
rc=$?
pid=$(cat "$NCG_TMP/pid")
seg=/dev/shm/ncclguard.$(id -u).$pid
# checked while the holder still holds it: a live process's segment must be intact
[ $rc -eq 0 ] || { kill "$(cat "$NCG_TMP/pid.holder")"; cat "$NCG_TMP/err"; rm -f "$seg"; fail "run beside a live process's segment"; }
cat "$NCG_TMP/err"
grep -q "bcast ok" "$NCG_TMP/out" || { kill "$(cat "$NCG_TMP/pid.holder")"; fail "bcast"; }
[ -e "$seg" ] || { kill "$(cat "$NCG_TMP/pid.holder")"; fail "a live process's segment was removed"; }
python3 -c "import struct,sys; d=open(sys.argv[1],'rb').read(48); t=struct.unpack('<QIIIIIIiIQ', d); sys.exit(0 if t[3]==0 and t[9]==1 else 1)" "$seg" \
  || { kill "$(cat "$NCG_TMP/pid.holder")"; rm -f "$seg"; fail "a live process's segment was overwritten"; }
kill "$(cat "$NCG_TMP/pid.holder")" 2>/dev/null
rm -f "$seg"
[ "$(grep -c "^ncclguard: /dev/shm/ncclguard.$(id -u).$pid belongs to a live process" "$NCG_TMP/err")" = 1 ] || fail "no warning"

rm -f "$NCG_TMP/id"
LD_PRELOAD="$NCG_PRELOAD" sh -c "$plant" stale "$NCG_TMP/pid" "$CALLS" >"$NCG_TMP/out" 2>"$NCG_TMP/err" \
  || { cat "$NCG_TMP/err"; fail "run over a stale segment"; }
pid=$(cat "$NCG_TMP/pid")
grep -q "bcast ok" "$NCG_TMP/out" || fail "bcast (stale case)"
! grep -q "^ncclguard:" "$NCG_TMP/err" || { cat "$NCG_TMP/err"; fail "warned about a stale segment"; }
[ ! -e "/dev/shm/ncclguard.$(id -u).$pid" ] || { rm -f "/dev/shm/ncclguard.$(id -u).$pid"; fail "stale segment not replaced (and removed at exit)"; }
echo "shmname ok"
