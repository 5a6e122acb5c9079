#!/usr/bin/env python3
"""One bf16 GEMM shape, timed for a roofline: C[m,n] = A[m,k] @ B[k,n].

Runs the product for about SECONDS (so the GPU's clock is read while it
runs), timed with CUDA events, and appends one JSON line to
$GREENLIGHT_RESULTS (stdout when unset): m, n, k, time_ms (one product),
tflops. With --once it runs a few products and nothing else (for ncu).
With --decode it runs the product as a decode step does: x @ W.T, each on
a weight of its own from memory (enough of them to pass the L2 cache),
one CUDA graph of them replayed.

  python3 gemm_roof.py 8192 8192 8192
  python3 gemm_roof.py 16 8192 8192 --seconds 3
"""
import argparse, json, os, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("m", type=int)
    ap.add_argument("n", type=int)
    ap.add_argument("k", type=int)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--once", action="store_true", help="a few products, for a profiler")
    ap.add_argument("--decode", action="store_true",
                    help="as a decode step runs it: x @ W.T with W an N×K weight, and as many weights in turn as fill 256 MiB, so each product reads its weight from memory, not the L2 cache")
    a = ap.parse_args()
    import torch
    A = torch.randn(a.m, a.k, device="cuda", dtype=torch.bfloat16)
    C = torch.empty(a.m, a.n, device="cuda", dtype=torch.bfloat16)
    per = 1  # products a call of run() makes
    if a.decode:
        # A decode step reads each weight once: as many weights as fill
        # 256 MiB, each product on the next, replayed as one CUDA graph
        # (launches cost nothing, as in a step's graph).
        per = max(2, -(-256 * 2**20 // (2 * a.n * a.k)))
        Ws = [torch.randn(a.n, a.k, device="cuda", dtype=torch.bfloat16) for _ in range(per)]
        for W in Ws:
            torch.matmul(A, W.T, out=C)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for W in Ws:
                torch.matmul(A, W.T, out=C)
        run = g.replay
    else:
        B = torch.randn(a.k, a.n, device="cuda", dtype=torch.bfloat16)

        def run():
            torch.matmul(A, B, out=C)
    for _ in range(5):
        run()
    torch.cuda.synchronize()
    if a.once:
        for _ in range(3):
            run()
        torch.cuda.synchronize()
        return
    # How many calls fill the time, from one timed batch.
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(10):
        run()
    e.record()
    e.synchronize()
    one = s.elapsed_time(e) / 10
    iters = max(10, int(a.seconds * 1000 / max(one, 1e-3)))
    s.record()
    for _ in range(iters):
        run()
    e.record()
    e.synchronize()
    ms = s.elapsed_time(e) / iters / per
    row = {"m": a.m, "n": a.n, "k": a.k, "time_ms": ms, "tflops": 2 * a.m * a.n * a.k / (ms / 1000) / 1e12}
    out = os.environ.get("GREENLIGHT_RESULTS")
    line = json.dumps(row)
    if out:
        with open(out, "a") as f:
            f.write(line + "\n")
    print(line)


if __name__ == "__main__":
    sys.exit(main())
