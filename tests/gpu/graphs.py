"""graphs.py: PyTorch collectives captured in CUDA graphs and replayed, the PyTorch counterpart
of tests/apps/graphs.c (scripts/gpu-check.sh step 8), every rank on cuda:0. Each rank (RANK,
WORLD_SIZE from ncg-launch, MASTER_ADDR/PORT from the script; init_process_group("nccl",
env://)) runs one eager all_reduce (the communicator is created outside any capture), then
captures, with torch.cuda.graph:
  graph A = { all_reduce(1024 float32, sum), reduce_scatter_tensor(256 float32 per rank, sum) }
  graph B = the same two calls in the other order
(each preceded by copies of the inputs, so every replay starts from the same data), and replays
A --replays times, synchronizing and checking the results every --sync-every replays.

  --replays N          replays (default 100)
  --odd R --at K       rank R replays B instead of A at replay K (0-based), after printing
                       "graphs: replay_at <unix time>": the collectives mismatch (the job hangs
                       without ncclguard)
  --sync-every M       default 10
  --timeout S          the process group's timeout (default 120)

Prints "graphs: rank R: N replays ok" and exits 0, 1 on wrong data. Arguments are parsed before
torch is imported (--help works without PyTorch)."""
import argparse
import sys
import time

AR_COUNT = 1024
RS_COUNT = 256  # per rank


def main():
    p = argparse.ArgumentParser(description="PyTorch collectives in CUDA graphs (gpu-check step 8)")
    p.add_argument("--replays", type=int, default=100)
    p.add_argument("--odd", type=int, default=-1)
    p.add_argument("--at", type=int, default=-1)
    p.add_argument("--sync-every", type=int, default=10)
    p.add_argument("--timeout", type=float, default=120)
    a = p.parse_args()
    if a.replays < 1 or a.sync_every < 1 or (a.odd >= 0) != (a.at >= 0):
        p.error("--replays and --sync-every must be >= 1; --odd and --at go together")

    import torch
    import torch.distributed as dist

    sys.dont_write_bytecode = True  # no __pycache__ in the working tree
    from ddp import init_nccl  # tests/gpu/ddp.py, beside this file
    rank, world, dev = init_nccl(a.timeout)

    # inputs depend on the rank; the sums over ranks are W(W+1)/2 times a position factor
    ar_src = torch.tensor([(rank + 1) * (i % 7 + 1) for i in range(AR_COUNT)],
                          dtype=torch.float32, device=dev)
    rs_src = torch.tensor([(rank + 1) * (j % 5 + 1) for j in range(RS_COUNT * world)],
                          dtype=torch.float32, device=dev)
    tri = world * (world + 1) / 2
    ar_want = torch.tensor([tri * (i % 7 + 1) for i in range(AR_COUNT)], dtype=torch.float32,
                           device=dev)
    rs_want = torch.tensor([tri * ((rank * RS_COUNT + k) % 5 + 1) for k in range(RS_COUNT)],
                           dtype=torch.float32, device=dev)
    ar = torch.empty_like(ar_src)
    rs_in = torch.empty_like(rs_src)
    rs_out = torch.empty(RS_COUNT, dtype=torch.float32, device=dev)

    def issue_a():
        ar.copy_(ar_src)
        rs_in.copy_(rs_src)
        dist.all_reduce(ar)
        dist.reduce_scatter_tensor(rs_out, rs_in)

    def issue_b():
        ar.copy_(ar_src)
        rs_in.copy_(rs_src)
        dist.reduce_scatter_tensor(rs_out, rs_in)
        dist.all_reduce(ar)

    # eager first, on a side stream as PyTorch's graph docs ask: the communicator exists before
    # any capture (NCCL cannot create one inside it); the same order on every rank
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            issue_a()
            issue_b()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()

    def capture(fn):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        return g

    ga = capture(issue_a)
    gb = capture(issue_b)
    torch.cuda.synchronize()

    def check(replay):
        torch.cuda.synchronize()
        if not torch.equal(ar, ar_want) or not torch.equal(rs_out, rs_want):
            print("graphs: rank %d: wrong data after replay %d" % (rank, replay), flush=True)
            sys.exit(1)

    for r in range(a.replays):
        if rank == a.odd and r == a.at:
            print("graphs: replay_at %.6f" % time.time(), flush=True)
            gb.replay()
        else:
            ga.replay()
        if (r + 1) % a.sync_every == 0:
            check(r)
    check(a.replays - 1)
    del ga, gb  # the graphs go before the communicator
    torch.cuda.synchronize()
    dist.destroy_process_group()
    print("graphs: rank %d: %d replays ok" % (rank, a.replays), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
