#!/usr/bin/env python3
"""One bf16 GEMM shape, timed for a roofline: C[m,n] = A[m,k] @ B[k,n].

Runs the product for about SECONDS (so the GPU's clock is read while it
runs), timed with CUDA events, and appends one JSON line to
$GREENLIGHT_RESULTS (stdout when unset): m, n, k, time_ms (one product),
tflops. With --once it runs a few products and nothing else (for ncu).

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
    a = ap.parse_args()
    import torch
    A = torch.randn(a.m, a.k, device="cuda", dtype=torch.bfloat16)
    B = torch.randn(a.k, a.n, device="cuda", dtype=torch.bfloat16)
    C = torch.empty(a.m, a.n, device="cuda", dtype=torch.bfloat16)
    for _ in range(5):
        torch.matmul(A, B, out=C)
    torch.cuda.synchronize()
    if a.once:
        for _ in range(3):
            torch.matmul(A, B, out=C)
        torch.cuda.synchronize()
        return
    # How many products fill the time, from one timed batch.
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(10):
        torch.matmul(A, B, out=C)
    e.record()
    e.synchronize()
    per = s.elapsed_time(e) / 10
    iters = max(10, int(a.seconds * 1000 / max(per, 1e-3)))
    s.record()
    for _ in range(iters):
        torch.matmul(A, B, out=C)
    e.record()
    e.synchronize()
    ms = s.elapsed_time(e) / iters
    row = {"m": a.m, "n": a.n, "k": a.k, "time_ms": ms, "tflops": 2 * a.m * a.n * a.k / (ms / 1000) / 1e12}
    out = os.environ.get("GREENLIGHT_RESULTS")
    line = json.dumps(row)
    if out:
        with open(out, "a") as f:
            f.write(line + "\n")
    print(line)


if __name__ == "__main__":
    sys.exit(main())
