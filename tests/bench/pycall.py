"""make bench-python: time N ncclAllReduce calls from a Python loop, through ctypes on libnccl's
handle or through the C extension tests/python/ncgext.c, on a 1-rank communicator of the
do-nothing NCCL (build/bench/null). Prints "VIA ns_per_call=X" (median of 5 batches).
  pycall.py ctypes|ext N"""
import ctypes, os, sys, time

via, n = sys.argv[1], int(sys.argv[2])


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 128)]


if via == "ext":
    sys.path.insert(0, os.environ["NCG_EXT_DIR"])
    import ncgext as ext
    ext.init(ext.unique_id(), 1, 0)
    call = ext.all_reduce

    def batch():
        for _ in range(n):
            call(1)
else:
    nccl = ctypes.CDLL("libnccl.so.2")
    uid, comm = UniqueId(), ctypes.c_void_p()
    assert nccl.ncclGetUniqueId(ctypes.byref(uid)) == 0
    assert nccl.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0) == 0
    buf = (ctypes.c_float * 1)()
    ar = nccl.ncclAllReduce
    one = ctypes.c_size_t(1)

    def batch():
        for _ in range(n):
            ar(buf, buf, one, 7, 0, comm, None)

times = []
batch()  # warm up (resolution, first-call registration)
for _ in range(5):
    t0 = time.perf_counter_ns()
    batch()
    times.append((time.perf_counter_ns() - t0) / n)
print("%s ns_per_call=%.1f" % (via, sorted(times)[2]))
