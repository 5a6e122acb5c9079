#!/usr/bin/env python3
"""A decode-like loop under torch.profiler on every GPU of this host: a
matmul of a decode step's shape and an NCCL all-reduce of hidden x tokens
x 2 bytes a step, 20 profiler steps, one Chrome trace a rank written to
DIR (default traces/).

  python3 allreduce_trace.py [DIR] [HIDDEN] [TOKENS]   (default traces 7168 64)
"""
import os, sys
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world, out, hidden, tokens):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    x = torch.randn(tokens, hidden, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(hidden, hidden, device="cuda", dtype=torch.bfloat16)
    for _ in range(5):  # warm up NCCL and the GEMM
        dist.all_reduce(x @ w)
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(20):
            y = x @ w
            dist.all_reduce(y)
            prof.step()
        torch.cuda.synchronize()
    os.makedirs(out, exist_ok=True)
    prof.export_chrome_trace(os.path.join(out, f"rank{rank}.pt.trace.json"))
    dist.destroy_process_group()


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "traces"
    hidden = int(sys.argv[2]) if len(sys.argv) > 2 else 7168
    tokens = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    world = torch.cuda.device_count()
    mp.spawn(run, args=(world, out, hidden, tokens), nprocs=world)
