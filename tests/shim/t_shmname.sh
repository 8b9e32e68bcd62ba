# The segment's name is ncclguard.<uid>.<pid>. An existing file under our name is replaced only
# when it is this process's own from before an exec (same start time) or marked EXITED; one of
# another process (same pid in another pid namespace sharing /dev/shm, or a crashed one) is
# left alone: the shim records privately and says so once.
. "$NCG_ROOT/tests/shim/lib.sh"
need "$CALLS" "$SHIMLIB"
# sh writes a header for its own pid, then execs the program (same pid, same start time).
plant='
python3 - "$$" "$0" <<PY
import struct, sys
pid, mode = int(sys.argv[1]), sys.argv[2]
ticks = int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[19])
if mode == "other":
    ticks += 12345
hdr = struct.pack("<QIIIIIIiIQ", 0x314452415547434e, 1, 1024, 0, 64, 1024, 256, pid, 1, ticks)
open("/dev/shm/ncclguard.%d.%d" % (__import__("os").getuid(), pid), "wb").write(hdr.ljust(1024, b"\0"))
PY
echo $$ >"$1"
exec "$2" bcast'
export NCG_ID_FILE=$NCG_TMP/id
LD_PRELOAD="$NCG_PRELOAD" sh -c "$plant" other "$NCG_TMP/pid" "$CALLS" >"$NCG_TMP/out" 2>"$NCG_TMP/err" \
  || { cat "$NCG_TMP/err"; fail "run beside another process's segment"; }
cat "$NCG_TMP/err"
pid=$(cat "$NCG_TMP/pid")
seg=/dev/shm/ncclguard.$(id -u).$pid
grep -q "bcast ok" "$NCG_TMP/out" || fail "bcast"
[ -e "$seg" ] || fail "another process's segment was removed"
python3 -c "import struct,sys; d=open(sys.argv[1],'rb').read(48); t=struct.unpack('<QIIIIIIiIQ', d); sys.exit(0 if t[8]==1 and t[4]==64 and t[3]==0 else 1)" "$seg" \
  || fail "another process's segment was overwritten"
[ "$(grep -c "^ncclguard: /dev/shm/ncclguard.$(id -u).$pid belongs to another process" "$NCG_TMP/err")" = 1 ] || fail "no warning"
rm -f "$seg"
rm -f "$NCG_TMP/id"
LD_PRELOAD="$NCG_PRELOAD" sh -c "$plant" self "$NCG_TMP/pid" "$CALLS" >"$NCG_TMP/out" 2>"$NCG_TMP/err" \
  || { cat "$NCG_TMP/err"; fail "run over its own pre-exec segment"; }
pid=$(cat "$NCG_TMP/pid")
grep -q "bcast ok" "$NCG_TMP/out" || fail "bcast (exec case)"
! grep -q "^ncclguard:" "$NCG_TMP/err" || { cat "$NCG_TMP/err"; fail "warned about its own segment"; }
[ ! -e "/dev/shm/ncclguard.$(id -u).$pid" ] || { rm -f "/dev/shm/ncclguard.$(id -u).$pid"; fail "own segment not replaced and removed at exit"; }
echo "shmname ok"
