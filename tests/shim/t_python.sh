# The way PyTorch meets NCCL: a Python process loads an extension linked with -lnccl through
# ctypes (RTLD_LOCAL, like Python's import), so libnccl sits in a local scope RTLD_NEXT cannot
# see. With the shim preloaded the extension's NCCL calls still work and are recorded in this
# Python process's segment (read here from /dev/shm with the layout of include/ncclguard/shm.h).
. "$NCG_ROOT/tests/shim/lib.sh"
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
EXT=$NCG_BUILD/tests/shim/libuses_nccl.so
need "$EXT" "$SHIMLIB"
cat >"$NCG_TMP/job.py" <<'PY'
import ctypes, os, struct, sys
ext = ctypes.CDLL(sys.argv[1])  # RTLD_LOCAL, as `import` loads extension modules
rc = ext.uses_nccl_run()
seg = "/dev/shm/ncclguard.%d.%d" % (os.getuid(), os.getpid())
if not os.path.exists(seg):
    print("run rc=%d noseg" % rc)
else:
    with open(seg, "rb") as f:
        data = f.read(2048)
    magic, version = struct.unpack_from("<QI", data, 0)
    hsize, csize = struct.unpack_from("<II", data, 12)
    state, origin, comm_id, parent, rank, nranks, coll_seq = struct.unpack_from("<IIQQiiQ", data, hsize)
    print("run rc=%d magic=%x version=%d state=%d nranks=%d coll_seq=%d" % (rc, magic, version, state, nranks, coll_seq))
print("fini rc=%d" % ext.uses_nccl_fini())
PY
LD_LIBRARY_PATH=$FAKE_DIR LD_PRELOAD="$SANPRE" "$PY3" "$NCG_TMP/job.py" "$EXT" >"$NCG_TMP/plain" 2>&1 || { cat "$NCG_TMP/plain"; fail "without the shim"; }
grep -qx "run rc=0 noseg" "$NCG_TMP/plain" || { cat "$NCG_TMP/plain"; fail "without the shim: $(cat "$NCG_TMP/plain")"; }
LD_LIBRARY_PATH=$FAKE_DIR LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_COORD=off "$PY3" "$NCG_TMP/job.py" "$EXT" >"$NCG_TMP/out" 2>&1 \
  || { cat "$NCG_TMP/out"; fail "with the shim"; }
cat "$NCG_TMP/out"
# (the define may wrap its value onto the next line, with a comment beside it)
V=$(grep -A1 '^#define NCG_SHM_LAYOUT_VERSION' "$NCG_ROOT/include/ncclguard/shm.h" | tr -d '\\\n' |
  sed -n 's/^#define NCG_SHM_LAYOUT_VERSION *\([0-9]*\)u.*/\1/p')
[ -n "$V" ] || fail "no NCG_SHM_LAYOUT_VERSION in include/ncclguard/shm.h"
grep -qx "run rc=0 magic=314452415547434e version=$V state=1 nranks=1 coll_seq=1" "$NCG_TMP/out" \
  || fail "the extension's AllReduce was not recorded in the Python process's segment"
grep -qx "fini rc=0" "$NCG_TMP/out" || fail "destroy through the shim"
! grep -q "^ncclguard:" "$NCG_TMP/out" || fail "unexpected ncclguard output"
echo "python ok"
