#!/usr/bin/env python3
"""torch.profiler capture of a small transformer's forward passes.

Writes a Chrome trace to $GREENLIGHT_ARTIFACTS (or --out) and a markdown
table of the top CUDA kernels by total time to $GREENLIGHT_SUMMARY (or
stdout), so the results file shows where the time went.
"""
import argparse
import os
import sys


def kernel_table(rows, top):
    """rows: (name, calls, total_us). A markdown table of the top ones."""
    rows = sorted(rows, key=lambda r: r[2], reverse=True)
    total = sum(r[2] for r in rows) or 1.0
    out = ["| kernel | calls | total (ms) | share |", "|---|---:|---:|---:|"]
    for name, calls, us in rows[:top]:
        name = name.replace("|", "\\|")
        if len(name) > 80:
            name = name[:77] + "..."
        out.append(f"| `{name}` | {calls} | {us / 1e3:.3f} | {100 * us / total:.1f} % |")
    return "\n".join(out) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--tokens", type=int, default=256)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--out", default=os.environ.get("GREENLIGHT_ARTIFACTS", "."))
    args = p.parse_args(argv)
    import torch
    from torch.profiler import ProfilerActivity, profile

    if not torch.cuda.is_available():
        sys.exit("no CUDA device")
    layer = lambda: torch.nn.TransformerEncoderLayer(args.hidden, nhead=32, dim_feedforward=4 * args.hidden, batch_first=True)  # noqa: E731
    model = torch.nn.Sequential(*[layer() for _ in range(args.layers)]).cuda().to(torch.bfloat16).eval()
    x = torch.randn(1, args.tokens, args.hidden, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        for _ in range(3):
            model(x)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(args.steps):
                model(x)
            torch.cuda.synchronize()
    os.makedirs(args.out, exist_ok=True)
    trace = os.path.join(args.out, "forward.pt.trace.json")
    prof.export_chrome_trace(trace)
    rows = []
    for e in prof.key_averages():
        us = getattr(e, "device_time_total", None)
        if us is None:
            us = getattr(e, "cuda_time_total", 0)
        if us and e.device_type == torch.autograd.DeviceType.CUDA:
            rows.append((e.key, e.count, float(us)))
    md = f"Top CUDA kernels over {args.steps} forward passes ({args.layers} layers, hidden {args.hidden}, {args.tokens} tokens, bf16):\n\n" + kernel_table(rows, args.top)
    summary = os.environ.get("GREENLIGHT_SUMMARY")
    if summary:
        with open(summary, "a") as f:
            f.write(md)
    print(md)
    print(f"trace: {trace} ({os.path.getsize(trace)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
