#!/usr/bin/env python3
"""Decode load for an OpenAI-compatible endpoint (vLLM), standard library only.

Sends --requests completions, --concurrency at a time, streaming, and
measures what a decode profile needs: output token throughput, time to first
token and time per output token. Prints a summary in the format of vLLM's
benchmark_serving (so greenlight's results regex reads it) and appends one
JSON line to $GREENLIGHT_RESULTS when set.

  python3 decode_load.py --base http://localhost:8000 --model moonshotai/Kimi-K2.5 \\
      --requests 64 --concurrency 16 --max-tokens 256
"""
import argparse
import json
import os
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request


def percentile(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    i = min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))
    return xs[i]


def one_request(base, model, prompt, max_tokens, timeout):
    """Stream one completion; returns (ttft_s, total_s, output_tokens)."""
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens,
                       "temperature": 0, "ignore_eos": True, "stream": True}).encode()
    req = urllib.request.Request(base.rstrip("/") + "/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    ttft, chunks = None, 0
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        for raw in resp:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            if ttft is None:
                ttft = time.perf_counter() - start
            chunks += 1
    total = time.perf_counter() - start
    return (ttft if ttft is not None else total), total, chunks


def summarize(results, wall):
    """Aggregate per-request (ttft, total, tokens) into the summary row."""
    ok = [r for r in results if r is not None]
    tokens = sum(r[2] for r in ok)
    tpots = [(r[1] - r[0]) / (r[2] - 1) * 1e3 for r in ok if r[2] > 1]
    return {
        "requests": len(ok),
        "failed": len(results) - len(ok),
        "duration_s": round(wall, 2),
        "output_tok_s": round(tokens / wall, 2) if wall > 0 else 0.0,
        "mean_ttft_ms": round(statistics.mean(r[0] for r in ok) * 1e3, 2) if ok else None,
        "mean_tpot_ms": round(statistics.mean(tpots), 2) if tpots else None,
        "p99_tpot_ms": round(percentile(tpots, 99), 2) if tpots else None,
    }


def print_summary(row, out=sys.stdout):
    out.write("============ Serving Benchmark Result ============\n")
    out.write(f"{'Successful requests:':<40} {row['requests']}\n")
    out.write(f"{'Failed requests:':<40} {row['failed']}\n")
    out.write(f"{'Benchmark duration (s):':<40} {row['duration_s']:.2f}\n")
    out.write(f"{'Output token throughput (tok/s):':<40} {row['output_tok_s']:.2f}\n")
    for key, label in (("mean_ttft_ms", "Mean TTFT (ms):"), ("mean_tpot_ms", "Mean TPOT (ms):"), ("p99_tpot_ms", "P99 TPOT (ms):")):
        if row[key] is not None:
            out.write(f"{label:<40} {row[key]:.2f}\n")
    out.write("==================================================\n")
    out.flush()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", default="http://localhost:8000")
    p.add_argument("--model", required=True)
    p.add_argument("--requests", type=int, default=64)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--prompt-words", type=int, default=512)
    p.add_argument("--timeout", type=float, default=600)
    args = p.parse_args(argv)
    if args.requests < 1 or args.concurrency < 1:
        p.error("--requests and --concurrency must be at least 1")
    prompt = " ".join(["profile"] * args.prompt_words)
    results = [None] * args.requests
    next_i, lock, done = [0], threading.Lock(), [0]

    def worker():
        while True:
            with lock:
                i = next_i[0]
                next_i[0] += 1
            if i >= args.requests:
                return
            try:
                results[i] = one_request(args.base, args.model, prompt, args.max_tokens, args.timeout)
            except (urllib.error.URLError, OSError, ValueError) as e:
                print(f"request {i} failed: {e}", file=sys.stderr)
            with lock:
                done[0] += 1
                print(f"\r{100 * done[0] // args.requests:3d}%| {done[0]}/{args.requests} [requests]", end="", file=sys.stderr, flush=True)

    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(min(args.concurrency, args.requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(file=sys.stderr)
    row = summarize(results, time.perf_counter() - start)
    print_summary(row)
    if os.environ.get("GREENLIGHT_RESULTS"):
        with open(os.environ["GREENLIGHT_RESULTS"], "a") as f:
            f.write(json.dumps(row) + "\n")
    return 0 if row["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
