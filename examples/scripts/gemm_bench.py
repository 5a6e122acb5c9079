#!/usr/bin/env python3
"""GEMM micro-benchmark at a model's exact projection shapes.

Sweeps M (tokens in flight: decode batch sizes, then prefill chunks) over the
N x K of each projection of a Kimi-K2.5-style MoE model (hidden size 7168,
MLA attention, 384 experts), as one GPU of a tensor-parallel group sees them.
Shapes come from the model's config.json when --config is given, else from
built-in Kimi-K2.5 values. Times CUDA-graph replays (so launch overhead does not hide small GEMMs)
with CUDA events after warm-up and appends
one JSON line per shape to $GREENLIGHT_RESULTS (stdout when unset):
shape, M, N, K, dtype, time_us, TFLOP/s and achieved GB/s.

  python3 gemm_bench.py --tp 8 --dtype bf16
  python3 gemm_bench.py --config /models/Kimi-K2.5/config.json --dtype int4
  python3 gemm_bench.py --dry-run          # list the shapes; needs no GPU
"""
import argparse
import json
import os
import sys

# Kimi-K2.5 text model (DeepSeek-V3 architecture) as published in its config.json.
KIMI_K25 = {
    "hidden_size": 7168,
    "moe_intermediate_size": 2048,
    "n_routed_experts": 384,
    "num_experts_per_tok": 8,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "num_attention_heads": 64,
    "vocab_size": 163840,
}

DECODE_M = [1, 2, 4, 8, 16, 32, 64, 128, 256]
PREFILL_M = [512, 1024, 2048, 4096, 8192]


def load_config(path):
    """Read the text model's sizes from a Hugging Face config.json."""
    with open(path) as f:
        cfg = json.load(f)
    cfg = cfg.get("text_config", cfg)  # multimodal configs nest the LLM
    out = dict(KIMI_K25)
    for k in out:
        if k in cfg and cfg[k] is not None:
            out[k] = int(cfg[k])
    return out


def shapes(cfg, tp):
    """(name, N, K) of each projection on one GPU of a TP group of size tp."""
    if tp < 1:
        raise ValueError("tp must be at least 1")
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    qk = cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]
    inter = cfg["moe_intermediate_size"]
    for name, dim in (("moe_intermediate_size", inter), ("num_attention_heads", heads), ("vocab_size", cfg["vocab_size"])):
        if dim % tp:
            raise ValueError(f"{name}={dim} does not split over tp={tp}")
    return [
        ("q_a_proj", cfg["q_lora_rank"], h),
        ("kv_a_proj_with_mqa", cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"], h),
        ("q_b_proj", heads * qk // tp, cfg["q_lora_rank"]),
        ("o_proj", h, heads * cfg["v_head_dim"] // tp),
        ("expert_gate_up", 2 * inter // tp, h),
        ("expert_down", h, inter // tp),
        ("lm_head", cfg["vocab_size"] // tp, h),
    ]


def parse_ms(s):
    out = []
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        v = int(part)
        if v < 1:
            raise argparse.ArgumentTypeError(f"M must be positive, got {v}")
        out.append(v)
    if not out:
        raise argparse.ArgumentTypeError("give at least one M")
    return out


def record(row, out=None):
    """Append one result row as a JSON line where greenlight reads it."""
    line = json.dumps(row, separators=(", ", ": "))
    path = os.environ.get("GREENLIGHT_RESULTS")
    if out is not None:
        out.write(line + "\n")
    elif path:
        with open(path, "a") as f:
            f.write(line + "\n")
            f.flush()
    else:
        print(line, flush=True)
    return line


def row_for(name, m, n, k, dtype, seconds, weight_bytes_per_elem):
    """The result row: FLOPs are 2*M*N*K; bytes are A, B and C once each."""
    flops = 2.0 * m * n * k
    act = 2  # bf16 activations and output
    moved = m * k * act + n * k * weight_bytes_per_elem + m * n * act
    return {
        "shape": name, "M": m, "N": n, "K": k, "dtype": dtype,
        "time_us": round(seconds * 1e6, 2),
        "TFLOP/s": round(flops / seconds / 1e12, 2),
        "GB/s": round(moved / seconds / 1e9, 1),
    }


def bench(args, cfg):
    import torch  # imported late: --dry-run and the tests need no torch

    if not torch.cuda.is_available():
        sys.exit("no CUDA device: run on a GPU machine, or use --dry-run")
    dev = torch.device(args.device)
    torch.manual_seed(0)
    int4 = args.dtype == "int4"
    if int4 and not hasattr(torch, "_weight_int4pack_mm"):
        sys.exit("this PyTorch has no _weight_int4pack_mm: int4 weight-only GEMM is not available")
    todo = [s for s in shapes(cfg, args.tp) if not args.shapes or s[0] in args.shapes]
    total, done = len(todo) * len(args.m), 0
    for name, n, k in todo:
        if int4:
            packed = pack_int4(torch, n, k, args.inner_k_tiles, dev)
            scales = torch.rand(k // args.group_size, n, 2, dtype=torch.bfloat16, device=dev)
        else:
            b = torch.randn(k, n, dtype=torch.bfloat16, device=dev)
        for m in args.m:
            a = torch.randn(m, k, dtype=torch.bfloat16, device=dev)
            if int4:
                fn = lambda: torch._weight_int4pack_mm(a, packed, args.group_size, scales)  # noqa: E731
            else:
                fn = lambda: a @ b  # noqa: E731
            seconds = time_it(torch, fn, args.warmup, args.iters, graph=not args.eager)
            record(row_for(name, m, n, k, args.dtype, seconds, 0.5 if int4 else 2))
            done += 1
            print(f"\rgemm: {100 * done // total}%| {done}/{total} [{name} M={m}]", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)


def time_it(torch, fn, warmup, iters, graph=True):
    """Seconds per call, from CUDA events around iters calls after warm-up.
    With graph, the calls are captured in one CUDA graph and replayed, so a
    small GEMM is timed, not Python's launch overhead (~10 us a call)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    run = lambda: [fn() for _ in range(iters)]  # noqa: E731
    if graph:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()  # warm the allocator on the capture stream
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            run()
        run = g.replay
        run()
        torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / iters


def pack_int4(torch, n, k, inner_k_tiles, dev):
    """Random int4 weights in the tinygemm layout. PyTorch 2.5 and later
    take uint8 [n, k/2] (two values a byte); older ones int32 [n, k]."""
    q = torch.randint(0, 16, (n, k), dtype=torch.int32, device=dev)
    try:
        u8 = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)
        return torch._convert_weight_to_int4pack(u8, inner_k_tiles)
    except (RuntimeError, TypeError):
        return torch._convert_weight_to_int4pack(q, inner_k_tiles)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", help="the model's config.json (default: built-in Kimi-K2.5 sizes)")
    p.add_argument("--tp", type=int, default=8, help="tensor-parallel size the shapes are split for")
    p.add_argument("--dtype", choices=["bf16", "int4"], default="bf16", help="int4 = weight-only int4, bf16 activations")
    p.add_argument("--m", type=parse_ms, default=DECODE_M + PREFILL_M, help="comma list of M (tokens)")
    p.add_argument("--shapes", type=lambda s: s.split(","), help="only these projections")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--group-size", type=int, default=128)
    p.add_argument("--inner-k-tiles", type=int, default=8)
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--eager", action="store_true", help="time plain launches instead of CUDA-graph replays")
    p.add_argument("--dry-run", action="store_true", help="print the shapes and exit")
    args = p.parse_args(argv)
    if args.iters < 1:
        p.error("--iters must be at least 1")
    cfg = load_config(args.config) if args.config else dict(KIMI_K25)
    try:
        sh = shapes(cfg, args.tp)
    except ValueError as e:
        p.error(str(e))
    if args.dry_run:
        for name, n, k in sh:
            print(f"{name:20s} N={n:6d} K={k:6d}  M in {args.m}")
        return 0
    bench(args, cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
