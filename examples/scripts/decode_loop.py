#!/usr/bin/env python3
"""A decode loop at a real dense model's shapes on one GPU, for the decode
budget: each layer's GEMMs (q, k, v, o; gate, up, down) at M = batch in
bf16 with random weights, attention over a KV cache of --context tokens a
sequence (torch's scaled_dot_product_attention), RMSNorm, the lm_head,
replayed as one CUDA graph a step (--eager: each kernel launched from
Python, host-bound). No weights are read from disk: the shapes are the
model's (config.json).

  decode_loop.py CONFIG --batch 8 [--context 1024] [--steps 50]
      appends {"batch": B, "mean_tpot_ms": T, "steps": N} to
      $GREENLIGHT_RESULTS (T from CUDA events around each step: a step is
      one token for every sequence of the batch)
  decode_loop.py CONFIG --batch 8 --trace DIR
      the same, then 10 steps under torch.profiler, each marked with
      prof.step(), the trace written to DIR/rank0.<pid>.pt.trace.json.gz
"""
import argparse, json, os, sys, time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--trace", default="")
    ap.add_argument("--eager", action="store_true", help="launch each kernel from Python (host-bound), not one CUDA graph a step")
    a = ap.parse_args()
    cfg = json.load(open(a.config))
    h, inter, L = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    heads, kvh = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    hd = cfg.get("head_dim", h // heads)
    vocab = cfg["vocab_size"]
    dev, dt, B = "cuda", torch.bfloat16, a.batch
    torch.manual_seed(0)
    w = lambda n, k: torch.randn(n, k, device=dev, dtype=dt) * 0.02
    layers = []
    for _ in range(L):
        # q, k and v fused, gate and up fused: the GEMMs vLLM runs
        # (QKVParallelLinear, MergedColumnParallelLinear), one a layer each.
        layers.append(dict(qkv=w((heads + 2 * kvh) * hd, h), o=w(h, heads * hd),
                           gate_up=w(2 * inter, h), down=w(h, inter),
                           kc=torch.randn(B, kvh, a.context, hd, device=dev, dtype=dt),
                           vc=torch.randn(B, kvh, a.context, hd, device=dev, dtype=dt)))
    lm = w(vocab, h)
    norm = lambda x: x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(dt)

    def step(x):
        for ly in layers:
            r = x
            y = norm(x)
            qkv = y @ ly["qkv"].T  # the new token's K and V with q (the cache is not grown: a fixed context)
            q = qkv[:, : heads * hd].reshape(B, 1, heads, hd).transpose(1, 2)
            att = torch.nn.functional.scaled_dot_product_attention(q, ly["kc"], ly["vc"], enable_gqa=kvh != heads)
            x = r + att.transpose(1, 2).reshape(B, heads * hd) @ ly["o"].T
            r = x
            y = norm(x)
            gu = y @ ly["gate_up"].T
            x = r + (torch.nn.functional.silu(gu[:, :inter]) * gu[:, inter:]) @ ly["down"].T
        return (norm(x) @ lm.T).argmax(-1)

    x = torch.randn(B, h, device=dev, dtype=dt)
    for _ in range(5):
        step(x)
    torch.cuda.synchronize()
    run = lambda: step(x)
    if not a.eager:
        # One CUDA graph a step, as vLLM's engine replays one: the host
        # launches a step, not its kernels one by one.
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step(x)
        run = g.replay
        for _ in range(3):
            run()
        torch.cuda.synchronize()
    times = []
    for _ in range(a.steps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        run()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    tpot = sum(times) / len(times)
    row = {"batch": B, "mean_tpot_ms": round(tpot, 4), "median_tpot_ms": round(times[len(times) // 2], 4), "steps": a.steps, "cuda_graph": not a.eager}
    if a.trace:
        os.makedirs(a.trace, exist_ok=True)
        sched = torch.profiler.schedule(wait=1, warmup=2, active=10)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA], schedule=sched) as prof:
            for _ in range(13):
                run()
                torch.cuda.synchronize()
                prof.step()
        path = os.path.join(a.trace, "rank0.%d.pt.trace.json.gz" % os.getpid())
        prof.export_chrome_trace(path)
        row["max_concurrency"] = B
    print(json.dumps(row))
    out = os.environ.get("GREENLIGHT_RESULTS")
    if out:
        with open(out, "a") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    sys.exit(main())
