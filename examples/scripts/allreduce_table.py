#!/usr/bin/env python3
"""An all-reduce sweep through PyTorch and NCCL, printed as nccl-tests'
all_reduce_perf prints its table (for a box without nccl-tests built):
sizes from MIN to MAX bytes, doubling, float sum, out-of-place and
in-place, on every GPU of this host (one process a GPU).

  python3 allreduce_table.py [MIN] [MAX] [ITERS]     (default 8 134217728 20)
"""
import os, sys
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world, lo, hi, iters):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29513")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    if rank == 0:
        print(f"# nThread 1 nGpus {world} minBytes {lo} maxBytes {hi} step: 2(factor) warmup iters: 5 iters: {iters} agg iters: 1 validation: 1 graph: 0 (PyTorch {torch.__version__}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))})")
        print("#")
        print("#                                                              out-of-place                       in-place          ")
        print("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
        print("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ")
    size, total, n = lo, 0.0, 0
    while size <= hi:
        count = max(size // 4, 1)
        cols = []
        for _ in ("out-of-place", "in-place"):
            x = torch.ones(count, device="cuda", dtype=torch.float32)
            for _ in range(5):
                dist.all_reduce(x)
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(iters):
                dist.all_reduce(x)
            e.record()
            e.synchronize()
            us = s.elapsed_time(e) * 1000 / iters
            x.fill_(1.0)
            dist.all_reduce(x)
            wrong = int((x != float(world)).sum().item())
            algbw = count * 4 / us / 1e3
            busbw = algbw * 2 * (world - 1) / world
            cols.append((us, algbw, busbw, wrong))
        if rank == 0:
            (t1, a1, b1, w1), (t2, a2, b2, w2) = cols
            print(f"{count*4:12d}  {count:12d}     float     sum      -1  {t1:7.2f}  {a1:6.2f}  {b1:6.2f}  {w1:5d}  {t2:7.2f}  {a2:6.2f}  {b2:6.2f}  {w2:5d}", flush=True)
        total += cols[0][2]
        n += 1
        size *= 2
    if rank == 0:
        print("# Out of bounds values : 0 OK")
        print(f"# Avg bus bandwidth    : {total / max(n, 1):.4f} ")
        print("#")
    dist.destroy_process_group()


if __name__ == "__main__":
    lo = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    hi = int(sys.argv[2]) if len(sys.argv) > 2 else 134217728
    iters = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    world = torch.cuda.device_count()
    mp.spawn(run, args=(world, lo, hi, iters), nprocs=world, join=True)
