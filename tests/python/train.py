"""The incident as a Python training loop calling NCCL through plain ctypes on libnccl's own
handle (the vLLM/SGLang pynccl shape). One rank per process (ncg-launch sets RANK, WORLD_SIZE,
NCG_ID_FILE). Each step's backward pass is a ReduceScatter(64, bfloat16); the odd rank enters
the epoch-end barrier of save_checkpoint (AllReduce(1, float32)) at step ODD instead.
  train.py [--via ctypes|ext] [--odd RANK] [--at STEP] [--steps N] [--thread] [--hang]
--via ext: the same calls through the C extension ncgext (tests/python/ncgext.c, linked against
libnccl: the PyTorch shape), imported from $NCG_EXT_DIR;
--thread runs the loop in a threading.Thread ("trainer"); --hang: ranks that finish wait in an
extra AllReduce (the job hangs inside NCCL, as in warn mode); --pause S: the odd rank sleeps S
seconds in save_checkpoint, then issues the same calls as the others (a LAG, not a mismatch);
--tag STR: only marks the command line (for `ncclguard dump --match`)."""
import argparse, ctypes, os, sys, threading, time

NCCL_FLOAT32, NCCL_BFLOAT16, NCCL_SUM = 7, 9, 0


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 128)]


_pre = argparse.ArgumentParser(add_help=False)
_pre.add_argument("--via", choices=("ctypes", "ext"), default="ctypes")
VIA = _pre.parse_known_args()[0].via
if VIA == "ext":
    sys.path.insert(0, os.environ["NCG_EXT_DIR"])
    import ncgext as ext
else:
    nccl = ctypes.CDLL("libnccl.so.2")  # RTLD_LOCAL; every function looked up on this handle
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def share_id():
    path, uid = os.environ["NCG_ID_FILE"], UniqueId()
    if rank == 0:
        if VIA == "ext":
            ctypes.memmove(ctypes.byref(uid), ext.unique_id(), 128)
        else:
            assert nccl.ncclGetUniqueId(ctypes.byref(uid)) == 0
        with open(path + ".tmp", "wb") as f:
            f.write(bytes(uid.internal))
        os.rename(path + ".tmp", path)
    else:
        while not os.path.exists(path):
            time.sleep(0.01)
        with open(path, "rb") as f:
            ctypes.memmove(ctypes.byref(uid), f.read(128), 128)
    return uid


comm = ctypes.c_void_p()
send = (ctypes.c_uint16 * (64 * world))()
recv = (ctypes.c_uint16 * 64)()
flag = (ctypes.c_float * 1)()


def check(rc, what):
    if rc != 0:
        sys.exit("train.py: rank %d: %s failed (%d)" % (rank, what, rc))


def backward(step):
    if VIA == "ext":
        check(ext.reduce_scatter(64), "ReduceScatter")
        return
    check(nccl.ncclReduceScatter(send, recv, ctypes.c_size_t(64), NCCL_BFLOAT16, NCCL_SUM, comm, None),
          "ReduceScatter")


def save_checkpoint(step):
    if VIA == "ext":
        check(ext.all_reduce(1), "AllReduce")
        return
    check(nccl.ncclAllReduce(flag, flag, ctypes.c_size_t(1), NCCL_FLOAT32, NCCL_SUM, comm, None),
          "AllReduce")


def train_loop(args):
    for step in range(args.steps):
        if step == args.at:
            print("diverge_at %.6f" % time.time(), flush=True)
        if rank == args.odd and step == args.at and args.pause:
            time.sleep(args.pause)
        elif rank == args.odd and step == args.at:
            save_checkpoint(step)
            return
        backward(step)
    if args.hang:
        save_checkpoint(args.steps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--odd", type=int, default=-1)
    ap.add_argument("--at", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--thread", action="store_true")
    ap.add_argument("--hang", action="store_true")
    ap.add_argument("--pause", type=float, default=0)
    ap.add_argument("--tag", default="")
    ap.add_argument("--via", choices=("ctypes", "ext"), default="ctypes")
    args = ap.parse_args()
    uid = share_id()
    if VIA == "ext":
        ext.init(bytes(uid.internal), world, rank)
    else:
        check(nccl.ncclCommInitRank(ctypes.byref(comm), world, uid, rank), "CommInitRank")
    if args.thread:
        t = threading.Thread(target=train_loop, args=(args,), name="trainer")
        t.start()
        t.join()
    else:
        train_loop(args)
    ext.destroy() if VIA == "ext" else nccl.ncclCommDestroy(comm)
    print("rank %d done" % rank, flush=True)


main()
