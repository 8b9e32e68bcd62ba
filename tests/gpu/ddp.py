"""ddp.py: the PyTorch job of scripts/gpu-check.sh (steps 2 and 4), on the one GPU of the device
machine. Every rank (RANK, WORLD_SIZE, LOCAL_RANK from ncg-launch; MASTER_ADDR/PORT set by the
script) trains a small MLP under DistributedDataParallel with init_process_group("nccl",
init_method="env://"), all ranks on cuda:0.

  --steps N            steps per rank (default 300)
  --short-rank R       the incident: rank R has --short-steps steps only, then every rank calls
  --short-steps K      dist.barrier() before its "checkpoint" (R's barrier meets the others' DDP
                       gradient all-reduce: a deadlock on NCCL)
  --evenfix            every rank first agrees on the minimum step count (all_reduce MIN)
  --status CMD         run CMD (ncclguard status --json) at the middle step, output to --status-out
  --json PATH          this rank's figures (step time, versions, the libnccl it mapped)

Prints "ddp: rank R barrier at T" (wall clock) before the barrier and "ddp: ok" at the end."""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time


def init_nccl(timeout):
    """The process group of this rank (RANK, WORLD_SIZE, MASTER_ADDR/PORT from the launcher),
    every rank on cuda:0; returns (rank, world, device). Shared with graphs.py."""
    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    dev = torch.device("cuda", 0)  # every rank on the one GPU
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", init_method="env://", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout))
    return rank, world, dev


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--short-rank", type=int, default=-1)
    p.add_argument("--short-steps", type=int, default=0)
    p.add_argument("--evenfix", action="store_true")
    p.add_argument("--status", default="")
    p.add_argument("--status-out", default="")
    p.add_argument("--json", default="")
    p.add_argument("--timeout", type=float, default=120)
    a = p.parse_args()

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank, world, dev = init_nccl(a.timeout)
    torch.manual_seed(1234 + rank)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10)).to(dev)
    ddp = DDP(model, device_ids=[0])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    steps = a.steps
    if rank == a.short_rank:
        steps = a.short_steps
    if a.evenfix:
        t = torch.tensor([steps], dtype=torch.int64, device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MIN)
        steps = int(t.item())
    x = torch.randn(64, 256, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    loss_fn = nn.CrossEntropyLoss()
    warm = min(20, steps // 4)
    t0 = None
    for step in range(steps):
        if step == warm:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        loss = loss_fn(ddp(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if a.status and step == steps // 2:
            torch.cuda.synchronize()
            r = subprocess.run(a.status.split(), capture_output=True, text=True, timeout=30)
            with open(a.status_out, "w") as f:
                f.write(r.stdout)
        if step % 50 == 49:
            loss.item()  # the host waits for the device now and then, as a training loop logs
    torch.cuda.synchronize()
    step_ms = (time.perf_counter() - t0) * 1e3 / max(1, steps - warm) if t0 else 0.0
    print("ddp: rank %d barrier at %.6f after %d steps" % (rank, time.time(), steps), flush=True)
    dist.barrier(device_ids=[0])
    torch.cuda.synchronize()
    if a.json:
        libs = sorted({ln.split()[-1] for ln in open("/proc/self/maps")
                       if "libnccl" in ln or "libncclguard" in ln})
        with open(a.json, "w") as f:
            json.dump({"rank": rank, "world": world, "steps": steps, "step_ms": step_ms,
                       "loss": float(loss.item()), "torch": torch.__version__,
                       "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                       "nccl_libs": libs}, f)
    dist.destroy_process_group()
    print("ddp: rank %d ok, %d steps, %.3f ms/step" % (rank, steps, step_ms), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
