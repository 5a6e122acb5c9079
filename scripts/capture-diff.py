#!/usr/bin/env python3
"""Repeated torch.profiler captures of a small decoder "served" on a GPU, for
the trace diff (greenlight compare --traces, issue 57).

One process is one server: the model is built once, warmed up, then captured
CAPTURES times, each capture STEPS decode steps under a profiler schedule
(so the trace marks ProfilerStep#N), one gzipped Chrome trace a capture in
OUT/VARIANT/cNN/ (tensorboard_trace_handler, worker rank0).

Variants, each its own process:
  base   4 layers, hidden 2048, MLP inner dimension 8192
  widek  the MLP's down projection reads a larger inner dimension (12288):
         its GEMMs slower, every other kernel the same (the activation
         writes the same 8192 columns of a buffer both variants share in
         shape; the extra columns are zeros)
  extra  base plus one extra kernel a layer (a cumulative sum on the
         residual, thrown away)

Usage: capture-diff.py OUT VARIANT CAPTURES [STEPS] [SEED]
"""
import os, sys, time
import torch
import torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity, schedule, tensorboard_trace_handler

out, variant, captures = sys.argv[1], sys.argv[2], int(sys.argv[3])
steps = int(sys.argv[4]) if len(sys.argv) > 4 else 40
seed = int(sys.argv[5]) if len(sys.argv) > 5 else 0
torch.manual_seed(seed)
dev, dt = "cuda", torch.bfloat16
H, L, NH, INTER, WIDE, B, KV, V = 2048, 4, 16, 8192, 12288, 16, 1024, 32000
D = H // NH
k_inner = WIDE if variant == "widek" else INTER


def w(*shape):
    return (torch.randn(*shape, device=dev, dtype=dt) * 0.02)


layers = []
for _ in range(L):
    layers.append(dict(
        n1=torch.ones(H, device=dev, dtype=dt), n2=torch.ones(H, device=dev, dtype=dt),
        qkv=w(H, 3 * H), o=w(H, H), up=w(H, 2 * INTER),
        down=w(k_inner, H),
        kc=w(B, NH, KV, D), vc=w(B, NH, KV, D),
        # The activation's output: WIDE columns for both variants, the same
        # strided write; the down projection reads k_inner of them.
        act=torch.zeros(B, WIDE, device=dev, dtype=dt),
    ))
emb, head = w(V, H), w(H, V)


def rms(x, g):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(dt) * g


def step(tok):
    x = emb[tok]
    for ly in layers:
        h = rms(x, ly["n1"])
        q, k, v = (h @ ly["qkv"]).view(B, 1, 3, NH, D).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, ly["kc"], ly["vc"])
        x = x + a.transpose(1, 2).reshape(B, H) @ ly["o"]
        h = rms(x, ly["n2"])
        gu = h @ ly["up"]
        torch.mul(F.silu(gu[:, :INTER]), gu[:, INTER:], out=ly["act"][:, :INTER])
        x = x + ly["act"][:, :k_inner] @ ly["down"]
        if variant == "extra":
            torch.cumsum(x, dim=-1)
    return (rms(x, layers[-1]["n2"]) @ head).argmax(-1)


tok = torch.randint(0, V, (B,), device=dev)
with torch.no_grad():
    for _ in range(30):  # warm-up: cuBLAS's choices, the allocator
        tok = step(tok)
    torch.cuda.synchronize()
    for c in range(captures):
        where = os.path.join(out, variant, f"c{c:02d}")
        os.makedirs(where, exist_ok=True)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     schedule=schedule(wait=0, warmup=2, active=steps, repeat=1),
                     on_trace_ready=tensorboard_trace_handler(where, worker_name="rank0", use_gzip=True)) as prof:
            for _ in range(steps + 3):
                tok = step(tok)
                tok.cpu()  # a server reads the sampled tokens each step
                prof.step()
        time.sleep(0.2)
print(variant, "torch", torch.__version__, torch.cuda.get_device_name(), "captures", captures, "steps", steps)
